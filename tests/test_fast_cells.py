"""The two evcxr patches that make cells fast (vendor/evcxr/GPULAB-PATCHES.md), end to end:

- cells built by calling rustc directly once cargo has built the session's crate, and cargo
  again whenever something only cargo would notice may have changed (a local path dependency);
- rust-analyzer asked only by cells that declare variables, and warmed on its own thread.

Each test reads the kernel's phase log (GPULAB_LOG_TIMING=1) to see which way a cell was built.
"""

import os
import time

import pytest
from jupyter_client.manager import KernelManager

from conftest import KERNEL_NAME, STARTUP_TIMEOUT


class LoggedSession:
    """A kernel whose stderr (the phase log) goes to a file the test reads."""

    def __init__(self, log_path):
        self.log_path = log_path
        self.km = KernelManager(kernel_name=KERNEL_NAME)
        self.log = open(log_path, "w")
        self.km.start_kernel(env=dict(os.environ, GPULAB_LOG_TIMING="1"), stderr=self.log)
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


def test_a_first_cell_that_declares_variables_gets_their_types(session):
    # The very first cell declares variables, so rust-analyzer loads now, inline (nothing warmed
    # it yet); their types are what later cells need to use them.
    run_ok(session, "let v = vec![1u8, 2, 3];\nlet t = Tensor::ones([2, 3], Device::Cpu).unwrap();")
    assert run_ok(session, "(v.len(), t.shape().to_vec())")[0] == "(3, [2, 3])"


def test_variables_declared_while_the_analyzer_warms_up_keep_their_types(session):
    # Cells without `let` run while rust-analyzer warms up on its own thread; the first `let`
    # waits for it and still gets the right type.
    for code in ["machine()", "2 + 2", 'println!("hi")', 'let words = String::from("warm analyzer");']:
        run_ok(session, code)
    assert run_ok(session, "words.split(' ').count()")[0] == "2"


def test_the_analyzer_warm_up_never_rewrites_the_file_builds_read(tmp_path):
    # rust-analyzer warms up on its own thread while cells build. Upstream evcxr wrote the
    # analysed source to the crate's src/lib.rs, the file rustc compiles: landing between a
    # cell's write and rustc's read, that made rustc build the analysis code, and the child
    # ended (exit 99, variables lost) when it could not find the cell's function. Seen in
    # bench/kernel_bench.py; here the warm-up is given time to run, then the file must still
    # hold the last build's code.
    cache = tmp_path / "cache"
    km = KernelManager(kernel_name=KERNEL_NAME)
    km.start_kernel(env=dict(os.environ, GPULAB_CACHE_DIR=str(cache)))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=STARTUP_TIMEOUT)
        # The warm-up starts once start-up has loaded the prelude, with no cell sent; after
        # it, nothing else writes the file until the next cell.
        time.sleep(20)
        sources = list(cache.glob("slots/slot-*/src/lib.rs"))
        assert len(sources) == 1, sources
        text_now = sources[0].read_text()
        assert "gpulab_warm_up" not in text_now and "evcxr_analysis_wrapper" not in text_now, text_now[-500:]
        for code in ["let first = 1;", "first + 2"]:
            reply = kc.execute_interactive(code, timeout=STARTUP_TIMEOUT, output_hook=lambda m: None)
            assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


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
