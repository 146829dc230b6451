"""The evcxr patches (vendor/evcxr/GPULAB-PATCHES.md), end to end:

- cells built by calling rustc directly once cargo has built the session's crate, and cargo
  again whenever something only cargo would notice may have changed (a local path dependency);
- the types of the variables a cell declares named by rustc in that cell's build, so that
  rust-analyzer is only loaded for completions, hover, and builds that go through cargo;
- only the variables a cell names moved through it;
- `:opt` setting the cell crate's level only, so no dependency is rebuilt and no variable lost.

Each test reads the kernel's phase log (GPULAB_LOG_TIMING=1) to see which way a cell was built.
"""

import os
import time
from pathlib import Path

import pytest
from jupyter_client.manager import KernelManager

from conftest import KERNEL_NAME, STARTUP_TIMEOUT


class LoggedSession:
    """A kernel whose stderr (the phase log) goes to a file the test reads."""

    def __init__(self, log_path, env=None):
        self.log_path = log_path
        self.km = KernelManager(kernel_name=KERNEL_NAME)
        self.log = open(log_path, "w")
        self.km.start_kernel(env=dict(os.environ, GPULAB_LOG_TIMING="1", **(env or {})), stderr=self.log)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=STARTUP_TIMEOUT)

    def run(self, code, timeout=STARTUP_TIMEOUT):
        """Runs a cell; returns (reply content, outputs, the phase line it logged or None)."""
        before = self.phase_lines()
        outputs = []
        reply = self.kc.execute_interactive(code, timeout=timeout, output_hook=outputs.append)
        # The phase line is written before the reply is sent; allow the pipe a moment.
        deadline = time.monotonic() + 5
        while len(self.phase_lines()) == len(before) and time.monotonic() < deadline:
            if reply["content"]["status"] != "ok":
                break
            time.sleep(0.05)
        after = self.phase_lines()
        return reply["content"], outputs, (after[-1] if len(after) > len(before) else None)

    def phase_lines(self):
        self.log.flush()
        with open(self.log_path) as f:
            return [l for l in f if "phases:" in l]

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)
        self.log.close()


def run_ok(session, code):
    """Runs a cell that must succeed; returns (its text output, its phase line)."""
    reply, outputs, phase = session.run(code)
    assert reply["status"] == "ok", (code, reply)
    return text(outputs).strip(), phase


def text(outputs):
    parts = []
    for m in outputs:
        c = m["content"]
        if m["msg_type"] == "stream":
            parts.append(c["text"])
        elif m["msg_type"] in ("execute_result", "display_data"):
            parts.append(c["data"].get("text/plain", ""))
    return "".join(parts)


@pytest.fixture
def session(tmp_path):
    s = LoggedSession(tmp_path / "kernel.log")
    yield s
    s.close()


def test_cells_after_the_first_build_call_rustc_directly(session):
    built = []
    for code in ["1 + 1", "let x = 40;", "x + 2", 'format!("{}", x)']:
        reply, outputs, phase = session.run(code)
        assert reply["status"] == "ok", reply
        assert phase is not None, f"no phase line logged for {code!r}"
        built.append(phase)
    reply, outputs, _ = session.run("x + 2")
    assert text(outputs).strip() == "42"
    # The session's crate is built by cargo at start-up; from then on nothing cargo would look
    # at changes, so every cell goes straight to rustc.
    assert all("Final compile (rustc)" in p for p in built[1:]), built


def test_a_compile_error_on_the_direct_path_is_reported_and_the_next_cell_stays_direct(session):
    for code in ["1", "2"]:
        assert session.run(code)[0]["status"] == "ok"
    reply, _, _ = session.run('let n: u32 = "not a number";')
    assert reply["status"] == "error"
    assert reply["ename"] == "CompilationError"
    assert "mismatched types" in reply["evalue"], reply["evalue"]
    reply, outputs, phase = session.run("3 * 3")
    assert reply["status"] == "ok", reply
    assert text(outputs).strip() == "9"
    assert "Final compile (rustc)" in phase, phase


def test_a_local_path_dependency_edited_between_cells_is_rebuilt_by_cargo(session, tmp_path):
    crate = tmp_path / "localdep"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "localdep"\nversion = "0.1.0"\nedition = "2021"\n')
    lib = crate / "src" / "lib.rs"
    lib.write_text("pub fn value() -> i32 { 1 }\n")
    reply, _, _ = session.run(f':dep localdep = {{ path = "{crate}" }}')
    assert reply["status"] == "ok", reply
    reply, outputs, phase = session.run("localdep::value()")
    assert reply["status"] == "ok", reply
    assert text(outputs).strip() == "1"
    # Edited between cells: only cargo notices, so with a local path dependency every cell
    # goes through cargo (the direct path is for dependencies that cannot change).
    time.sleep(1.1)  # a new mtime even on coarse file systems
    lib.write_text("pub fn value() -> i32 { 2 }\n")
    reply, outputs, phase = session.run("localdep::value()")
    assert reply["status"] == "ok", reply
    assert text(outputs).strip() == "2", text(outputs)
    assert "Final compile (cargo)" in phase, phase
    # A build through cargo cannot have rustc name the types (the flag would reach every
    # crate), so rust-analyzer types this variable.
    reply, outputs, phase = session.run("let got = localdep::value();")
    assert reply["status"] == "ok", reply
    assert "Final compile (cargo)" in phase, phase
    assert run_ok(session, "got * 10")[0] == "20"


def test_a_dep_that_rebuilds_the_prelude_restarts_the_process_and_says_so(tmp_path):
    # A crate asking for a feature of one of the prelude's own dependencies (libc's
    # extra_traits): cargo builds one libc with both feature sets, so it rebuilds the prelude's
    # dylib under the name the session's process has loaded. The next cell used to end the
    # process (exit 99) with no word of why. Its own build slot (a fresh one, seeded from the
    # prebuilt prelude), so the rebuild stays out of the slots other tests use; offline, as
    # every crate involved is already in cargo's cache.
    crate = tmp_path / "libcfeature"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text(
        '[package]\nname = "libcfeature"\nversion = "0.1.0"\nedition = "2021"\n\n'
        '[dependencies]\nlibc = { version = "0.2", features = ["extra_traits"] }\n'
    )
    (crate / "src" / "lib.rs").write_text("pub fn answer() -> i32 { 42 }\n")
    s = LoggedSession(tmp_path / "kernel.log", env={"GPULAB_CACHE_DIR": str(tmp_path / "cache"), "CARGO_NET_OFFLINE": "true"})
    try:
        run_ok(s, "let before = 7;")
        reply, outputs, _ = s.run(f':dep libcfeature = {{ path = "{crate}" }}', timeout=900)
        assert reply["status"] == "ok", reply
        said = "".join(m["content"]["text"] for m in outputs if m["msg_type"] == "stream")
        assert "prelude was rebuilt" in said and "variables lost: before" in said, said
        assert any("Compiling gpulab" in l for l in open(s.log_path)), "the prelude was expected to be rebuilt"
        assert run_ok(s, "libcfeature::answer()")[0] == "42"
        assert run_ok(s, "Tensor::ones([3], Device::Cpu)?.sum()?.item::<f32>()?")[0] == "3.0"
        reply, _, _ = s.run("before")
        assert reply["status"] == "error" and "cannot find value" in reply["evalue"], reply
        # A dependency that leaves the prelude alone restarts nothing.
        plain = tmp_path / "plaincrate"
        (plain / "src").mkdir(parents=True)
        (plain / "Cargo.toml").write_text('[package]\nname = "plaincrate"\nversion = "0.1.0"\nedition = "2021"\n')
        (plain / "src" / "lib.rs").write_text("pub fn one() -> i32 { 1 }\n")
        run_ok(s, "let after = 5;")
        reply, outputs, _ = s.run(f':dep plaincrate = {{ path = "{plain}" }}')
        assert reply["status"] == "ok", reply
        assert "prelude was rebuilt" not in text(outputs), text(outputs)
        assert run_ok(s, "after + plaincrate::one()")[0] == "6"
    finally:
        s.close()


def test_a_first_cell_that_declares_variables_gets_their_types(session):
    # The very first cell declares variables; their types are what later cells need to use them.
    run_ok(session, "let v = vec![1u8, 2, 3];\nlet t = Tensor::ones([2, 3], Device::Cpu).unwrap();")
    assert run_ok(session, "(v.len(), t.shape().to_vec())")[0] == "(3, [2, 3])"


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


def test_variable_types_come_from_rustc_without_loading_the_analyzer(session):
    # The types of new variables are named by rustc in the cell's own build (full paths, so a
    # later cell can write them even when the cell used a path nobody imported). rust-analyzer,
    # several hundred MB once loaded, is not started for any of this.
    cells = [
        "let m = std::collections::HashMap::<String, Vec<std::time::Instant>>::new();",
        "let started = std::time::Instant::now();",
        "struct Point { x: i32 }\nlet p = Point { x: 3 };",
        'let (mut count, label) = (1u64, "pair");',
        "let Some(q) = Some(3u16) else { panic!() };",
        'let parsed: u8 = "7".parse()?;',
        "let tensors = vec![Tensor::ones([2, 2], Device::Cpu)?];",
        "let boxed: Box<dyn Fn(i32) -> i32> = Box::new(|a| a + 1);",
        # The prelude's f16 (half's), not rustc's unstable primitive of the same name.
        "let half_t = Tensor::from_vec(vec![f16::from_f32(0.5), f16::ONE], [2], Device::Cpu)?;",
        "count += 1;",
    ]
    phases = [run_ok(session, code)[1] for code in cells]
    assert all(p is not None and "Final compile (rustc)" in p for p in phases), phases
    out, _ = run_ok(
        session,
        "(m.len(), started.elapsed().as_secs() < 600, p.x, count, label, q, parsed, tensors[0].shape().to_vec(), boxed(1), half_t.to_vec::<f16>()?)",
    )
    assert out == '(0, true, 3, 2, "pair", 3, 7, [2, 2], 2, [0.5, 1.0])', out
    reply, outputs, _ = session.run(":vars")
    listed = text(outputs)
    assert "std::collections::HashMap<std::string::String, std::vec::Vec<std::time::Instant>>" in listed, listed
    assert "gpulab::Tensor" in listed, listed
    kernel_mb = rss_mb(session.km.provisioner.process.pid)
    assert kernel_mb < 150, f"kernel process holds {kernel_mb:.0f} MB: was rust-analyzer loaded?"


def test_a_closure_variable_is_refused_with_a_clear_error(session):
    for code in ["let add = |a: i32| a + 1;", "let doubled = (0..3).map(|x| x * 2);"]:
        reply, _, _ = session.run(code)
        assert reply["status"] == "error", (code, reply)
        assert "cannot be persisted" in reply["evalue"], reply["evalue"]
    # Boxed, a closure is kept; the session goes on.
    run_ok(session, "let add: Box<dyn Fn(i32) -> i32> = Box::new(|a| a + 1);")
    assert run_ok(session, "add(41)")[0] == "42"


def test_a_completion_loads_the_analyzer_which_never_rewrites_the_file_builds_read(session):
    # rust-analyzer starts on the first completion. Upstream evcxr wrote the analysed source
    # to the crate's src/lib.rs, the file rustc compiles; a later build could then compile
    # the analysis code (the child ended, exit 99, when the cell's function was missing).
    run_ok(session, "let first = vec![1, 2, 3];")
    code = "first.le"
    msg_id = session.kc.complete(code, len(code))
    reply = session.kc.get_shell_msg(timeout=STARTUP_TIMEOUT)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = session.kc.get_shell_msg(timeout=STARTUP_TIMEOUT)
    matches = reply["content"]["matches"]
    assert any(m.startswith("len") for m in matches), matches
    assert rss_mb(session.km.provisioner.process.pid) > 150, "the analyzer was expected to be loaded now"
    assert run_ok(session, "first.len() + 1")[0] == "4"
    assert run_ok(session, "let second = first.len() * 2;\nsecond")[0] == "6"


def test_variables_a_cell_does_not_name_stay_in_the_store_and_keep_their_values(session):
    # Only the variables a cell names are moved out of the store and back (the third patch);
    # the others must come through any number of cells, panics included, unchanged.
    steps = [
        ("let mut count = 1u32;\nlet label = String::from(\"kept\");\nlet t = Tensor::ones([2, 2], Device::Cpu)?;", None),
        ("count += 1;", None),
        ("1 + 1", "2"),
        ('panic!("a cell that fails");', "panic"),
        ('println!("{label} {count}")', "kept 2"),
        ("let count = \"now a string\";", None),
        ("(count, t.sum()?.item::<f32>()?)", '("now a string", 4.0)'),
        ("// label is named only in this comment\n2 + 2", "4"),
        ("label.len()", "4"),
    ]
    for code, expected in steps:
        reply, outputs, _ = session.run(code)
        if expected == "panic":
            assert reply["status"] == "error", reply
            continue
        assert reply["status"] == "ok", (code, reply)
        if expected is not None:
            assert text(outputs).strip() == expected, (code, text(outputs))


def test_opt_sets_the_cells_level_only_and_keeps_every_variable(session):
    # `:opt` used to set the level of every crate: cargo rebuilt the prelude (~35 s here) as a
    # new dylib under the name the session's process had loaded, the next cell could not link,
    # and the process ended with every variable.
    run_ok(session, "let keep = 41;\nlet t = Tensor::ones([3], Device::Cpu)?;")
    compiled_before = compiling_lines(session)
    for level in ["0", "1", "s", "3"]:
        assert run_ok(session, f":opt {level}")[0] == f"Optimization: {level}"
        assert run_ok(session, "keep + 1")[0] == "42"
        manifest = (cell_dir(session) / "Cargo.toml").read_text()
        assert "[profile.dev]\nopt-level = 2" in manifest, manifest
        expected = level if level.isdigit() else f'"{level}"'
        assert f"[profile.dev.package.ctx]\nopt-level = {expected}" in manifest, manifest
    assert compiling_lines(session) == compiled_before, "a dependency was rebuilt"
    assert run_ok(session, "t.sum()?.item::<f32>()? + keep as f32")[0] == "44.0"
    # Only cargo's levels go into the manifest; anything else is refused and changes nothing.
    reply, _, _ = session.run(":opt fast")
    assert reply["status"] == "error"
    assert "`fast` is not one of cargo's" in reply["evalue"], reply["evalue"]
    output, phase = run_ok(session, "keep * 2")
    assert output == "82"
    assert "Final compile (rustc)" in phase, phase


def test_the_prelude_is_built_with_release_settings_and_comes_prebuilt(session):
    # The prelude runs every tensor op and training step: at the cells' settings (opt-level 2,
    # debug assertions, overflow checks, incremental codegen) a CPU training step took about 1.5
    # times as long. Its own profile section must be in the session's manifest, and the slot,
    # seeded from the shared prebuilt prelude, must not compile it again (it would, were the
    # prebuilt one built with other settings).
    run_ok(session, "1 + 1")
    manifest = (cell_dir(session) / "Cargo.toml").read_text()
    section = manifest[manifest.index("[profile.dev.package.gpulab]"):]
    section = section[: section.index("[dependencies]")]
    for setting in ["opt-level = 3", "debug-assertions = false", "overflow-checks = false",
                    "incremental = false"]:
        assert f"\n{setting}\n" in section, section
    # The cells keep the checks.
    assert "[profile.dev]\nopt-level = 2" in manifest and "overflow-checks = true" in manifest
    assert not [l for l in compiling_lines(session) if "gpulab" in l], compiling_lines(session)


def compiling_lines(session):
    session.log.flush()
    with open(session.log_path) as f:
        return [l for l in f if l.strip().startswith("Compiling ")]


def cell_dir(session):
    return Path(run_ok(session, ":last_compile_dir")[0])
