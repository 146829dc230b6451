"""End-to-end behaviour of the real kernel through jupyter_client."""

import os
import re
import tempfile
import time
import uuid

import pytest

from jupyter_client.session import Session as WireSession

from conftest import Session, has_cuda_device


def types(outputs):
    return [m["msg_type"] for m in outputs if m["msg_type"] != "status"]


def test_panic_is_an_error_and_earlier_variables_survive(kernel):
    reply, _ = kernel.execute("let kept = 41;")
    assert reply["status"] == "ok"
    reply, outputs = kernel.execute('let doomed = 1; panic!("deliberate: {}", kept + 1);')
    assert reply["status"] == "error"
    assert reply["ename"] == "panic"
    assert "deliberate: 42" in reply["evalue"]
    assert "error" in types(outputs)
    reply, outputs = kernel.execute("kept + 1")
    assert reply["status"] == "ok"
    assert kernel.result_text(outputs) == "42"


def test_compile_error_is_reported_with_the_compiler_message(kernel):
    reply, outputs = kernel.execute("let x: i32 = \"not a number\";")
    assert reply["status"] == "error"
    assert reply["ename"] == "CompilationError"
    assert "mismatched types" in reply["evalue"]
    assert any("mismatched types" in line for line in reply["traceback"])


def test_stdout_is_streamed_while_the_cell_runs(kernel):
    code = 'for i in 0..3 { println!("tick {i}"); std::thread::sleep(std::time::Duration::from_millis(400)); }'
    msg_id = kernel.kc.execute(code)
    first_seen = None
    start = time.monotonic()
    while True:
        msg = kernel.kc.get_iopub_msg(timeout=60)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream" and first_seen is None:
            first_seen = time.monotonic() - start
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    total = time.monotonic() - start
    assert first_seen is not None
    # The first line arrives before the last sleep has finished.
    assert first_seen < total - 0.5, (first_seen, total)


def test_shell_escape_and_time_magic(kernel):
    reply, outputs = kernel.execute("!echo hello from the shell")
    assert reply["status"] == "ok"
    assert "hello from the shell" in kernel.stdout(outputs)
    reply, outputs = kernel.execute("%%time\nlet s: u64 = (0..1000u64).sum();")
    assert reply["status"] == "ok"
    out = kernel.stdout(outputs)
    assert "compile:" in out and "run:" in out, out


def test_timeit_magic_reports_as_ipython_and_gives_no_time_for_failed_work(kernel):
    reply, _ = kernel.execute("let ta = Tensor::ones((32, 32), Device::Cpu)?;")
    assert reply["status"] == "ok"
    # IPython's line magic: loops chosen so a run takes about 0.2 s, 7 runs.
    reply, outputs = kernel.execute("%timeit ta.matmul(&ta)")
    assert reply["status"] == "ok", reply
    out = kernel.stdout(outputs)
    assert re.fullmatch(r"[\d.]+ (ns|µs|ms|s) ± [\d.]+ (ns|µs|ms|s) per loop "
                        r"\(mean ± std\. dev\. of 7 runs, \d+ loops? each\)\n", out), out
    # The cell magic, with -n and -r, `?` inside, and a value of any type.
    reply, outputs = kernel.execute("%%timeit -n 3 -r 2\nlet tb = ta.matmul(&ta)?;\n[tb.sum()?.item::<f32>()?; 2]")
    assert reply["status"] == "ok", reply
    assert "of 2 runs, 3 loops each)" in kernel.stdout(outputs)
    # Work that fails: the error, and no time.
    reply, outputs = kernel.execute("%timeit ta.matmul(&Tensor::ones((3, 3), Device::Cpu)?)")
    assert reply["status"] == "error" and "matmul" in reply["evalue"], reply
    assert "per loop" not in kernel.stdout(outputs)
    # A compile error in a %%timeit cell points at the line the student wrote.
    reply, _ = kernel.execute('%%timeit\nlet q = 1;\nlet z: i32 = "x";')
    assert reply["status"] == "error" and reply["ename"] == "CompilationError", reply
    assert re.search(r"\b3 \S* *let z: i32", re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(reply["traceback"]))), reply
    reply, _ = kernel.execute("%timeit -r 0 ta.sum()")
    assert reply["status"] == "error" and reply["ename"] == "UsageError" and "-r" in reply["evalue"], reply


def test_writefile_lsmagic_and_an_unknown_magic(kernel, tmp_path):
    path = tmp_path / "add.cu"
    reply, outputs = kernel.execute(f'%%writefile {path}\nextern "C" __global__ void add() {{}}')
    assert reply["status"] == "ok", reply
    assert kernel.stdout(outputs) == f"Writing {path}\n"
    assert path.read_text() == 'extern "C" __global__ void add() {}\n'
    reply, outputs = kernel.execute(f"%%writefile -a {path}\n// more")
    assert reply["status"] == "ok" and path.read_text().endswith("{}\n// more\n")
    reply, outputs = kernel.execute("%lsmagic")
    assert reply["status"] == "ok" and "%%timeit" in kernel.stdout(outputs)
    # IPython's answer to a magic it does not have, not a Rust compiler error about `%`.
    reply, _ = kernel.execute("%matplotlib inline")
    assert reply["status"] == "error" and reply["ename"] == "UsageError", reply
    assert "Line magic `%matplotlib` not found" in reply["evalue"] and "%timeit" in reply["evalue"]
    # %who lists the session's variables, %whos as a table with their types, both by type too.
    reply, _ = kernel.execute("let listed_here = 7u8; let also_here = String::new();")
    # (The session is shared with other tests, so other variables may be listed too.)
    reply, outputs = kernel.execute("%who")
    names = kernel.stdout(outputs).rstrip("\n").split("\t ")
    assert reply["status"] == "ok" and {"also_here", "listed_here"} <= set(names), (reply, outputs)
    assert names == sorted(names), names
    reply, outputs = kernel.execute("%whos u8")
    lines = kernel.stdout(outputs).splitlines()
    assert lines[0].split() == ["Variable", "Type"] and set(lines[1]) == {"-"}, lines
    rows = [line.split() for line in lines[2:]]
    assert ["listed_here", "u8"] in rows and all(r[1] == "u8" for r in rows), lines


def test_env_sets_the_cell_process_shells_and_restarted_processes(fresh_kernel):
    k = fresh_kernel
    name = f"GPULAB_TEST_ENV_{uuid.uuid4().hex[:8].upper()}"
    reply, outputs = k.execute(f"%env {name}=two words")
    assert reply["status"] == "ok", reply
    assert k.stdout(outputs) == f"env: {name}=two words\n"
    # Rust code in the cell process, a shell, %env itself and the listing all see it.
    reply, outputs = k.execute(f'std::env::var("{name}").unwrap()')
    assert k.result_text(outputs) == '"two words"', outputs
    reply, outputs = k.execute(f"!echo ${name}")
    assert k.stdout(outputs) == "two words\n"
    reply, outputs = k.execute(f"%env {name}")
    assert reply["status"] == "ok" and k.stdout(outputs) == "two words\n"
    reply, outputs = k.execute("%env")
    assert f"\n{name}=two words\n" in "\n" + k.stdout(outputs)
    # The cell process ends (as after an interrupt of code that never checks); the next one
    # evcxr starts still has it.
    reply, _ = k.execute("std::process::exit(3);")
    assert reply["status"] == "error", reply
    reply, outputs = k.execute(f'std::env::var("{name}").unwrap()')
    assert reply["status"] == "ok" and k.result_text(outputs) == '"two words"', (reply, outputs)
    # A variable that is not there is IPython's UsageError, and no variable is left behind.
    reply, _ = k.execute(f"%env {name}_MISSING")
    assert reply["status"] == "error" and reply["ename"] == "UsageError", reply
    assert reply["evalue"] == f"Environment does not have key: {name}_MISSING"
    reply, _ = k.execute("%env A b=c")
    assert reply["ename"] == "UsageError" and "not a variable name" in reply["evalue"], reply
    reply, outputs = k.execute(":vars")
    assert "__gpulab" not in k.stdout(outputs) + (k.result_text(outputs) or "")


def test_cd_moves_the_cell_process_shells_writefile_and_restarted_processes(fresh_kernel, tmp_path):
    k = fresh_kernel
    reply, outputs = k.execute("%pwd")
    start = k.result_text(outputs).strip('"')
    (tmp_path / "sub dir").mkdir()
    target = (tmp_path / "sub dir").resolve()
    reply, outputs = k.execute(f"%cd {tmp_path}/sub dir")
    assert reply["status"] == "ok", reply
    assert k.stdout(outputs) == f"{target}\n"
    reply, outputs = k.execute("%pwd")
    assert k.result_text(outputs) == f'"{target}"'
    reply, outputs = k.execute("std::env::current_dir().unwrap().display().to_string()")
    assert k.result_text(outputs) == f'"{target}"', outputs
    reply, outputs = k.execute("!pwd")
    assert k.stdout(outputs) == f"{target}\n"
    reply, outputs = k.execute("%%writefile here.txt\nmade after %cd")
    assert k.stdout(outputs) == "Writing here.txt\n" and (target / "here.txt").read_text() == "made after %cd\n"
    # The cell process ends and evcxr starts another: it starts in the same folder, and the
    # prelude still works from there.
    reply, _ = k.execute("std::process::exit(3);")
    assert reply["status"] == "error", reply
    reply, outputs = k.execute("std::env::current_dir().unwrap().display().to_string()")
    assert k.result_text(outputs) == f'"{target}"', outputs
    reply, outputs = k.execute("Tensor::ones(3, Device::Cpu)?.sum()?.item::<f32>()?")
    assert reply["status"] == "ok" and k.result_text(outputs) == "3.0", (reply, outputs)
    # Back with `-`, quietly with -q; a folder that is not there is IPython's error.
    reply, outputs = k.execute("%cd -q -")
    assert reply["status"] == "ok" and k.stdout(outputs) == ""
    reply, outputs = k.execute("%pwd")
    assert k.result_text(outputs) == f'"{start}"'
    reply, _ = k.execute("%cd no-such-folder")
    assert reply["status"] == "error" and reply["ename"] == "OSError", reply
    assert reply["evalue"] == "[Errno 2] No such file or directory: 'no-such-folder'"


def test_display_magics_show_the_cell_as_html_markdown_svg_and_latex(kernel):
    for magic, mime, body in [("%%html", "text/html", "<b>bold</b>"),
                              ("%%markdown", "text/markdown", "# Title\n\n*it*"),
                              ("%%svg", "image/svg+xml", '<svg xmlns="http://www.w3.org/2000/svg"/>'),
                              ("%%latex", "text/latex", "$$e^{i\\pi} + 1 = 0$$")]:
        reply, outputs = kernel.execute(f"{magic}\n{body}")
        assert reply["status"] == "ok", reply
        shown = [m["content"]["data"] for m in outputs if m["msg_type"] == "display_data"]
        assert len(shown) == 1 and shown[0][mime] == body and "text/plain" in shown[0], (magic, outputs)
    reply, _ = kernel.execute("%%html --isolated\n<b>")
    assert reply["ename"] == "UsageError" and "takes no options" in reply["evalue"], reply


def test_bash_and_sh_cells_run_as_scripts_and_fail_on_a_non_zero_exit(kernel):
    # A bash script (arithmetic, a loop, [[ ]]), its output streamed into the cell.
    reply, outputs = kernel.execute('%%bash\necho $((6 * 7))\nfor i in 1 2; do echo "line $i"; done\n'
                                    '[[ -n "$BASH_VERSION" ]] && echo bash')
    assert reply["status"] == "ok", reply
    assert kernel.stdout(outputs) == "42\nline 1\nline 2\nbash\n"
    reply, outputs = kernel.execute("%%sh\necho to stderr >&2")
    assert reply["status"] == "ok" and "to stderr" in "".join(
        m["content"]["text"] for m in outputs if m["msg_type"] == "stream" and m["content"]["name"] == "stderr")
    # A failing script is the cell's error, as IPython's CalledProcessError, unless told not to.
    reply, outputs = kernel.execute("%%bash\necho before\nexit 3")
    assert reply["status"] == "error" and reply["ename"] == "CalledProcessError", reply
    assert "non-zero exit status 3" in reply["evalue"] and kernel.stdout(outputs) == "before\n"
    reply, _ = kernel.execute("%%bash --no-raise-error\nexit 3")
    assert reply["status"] == "ok", reply
    reply, _ = kernel.execute("%%bash -x\necho")
    assert reply["ename"] == "UsageError" and "--no-raise-error" in reply["evalue"], reply
    # The interrupt button ends a script and what it started; the session goes on.
    reply, _, elapsed = interrupt_once_started(kernel, "%%bash\necho started\nsleep 60 & wait", 0.3)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply
    assert elapsed < 20, elapsed
    reply, outputs = kernel.execute("1 + 1")
    assert kernel.result_text(outputs) == "2"


def test_an_interrupt_ends_timeit_between_loops_and_keeps_variables(fresh_kernel):
    k = fresh_kernel
    reply, _ = k.execute("let precious = 42;")
    assert reply["status"] == "ok"
    # 5 loops of 50 ms a run, 7 runs: about 2.5 s, interrupted after 1.5 s (between loops).
    code = ('%%timeit\nstatic STARTED: std::sync::Once = std::sync::Once::new();\n'
            'STARTED.call_once(|| println!("started"));\n'
            'std::thread::sleep(std::time::Duration::from_millis(50))')
    reply, outputs, elapsed = interrupt_once_started(k, code, 1.5)
    assert elapsed < 10, elapsed
    # Runs finished before the interrupt are reported as such; none gives KeyboardInterrupt.
    out = k.stdout(outputs)
    if reply["status"] == "ok":
        assert "interrupted, so fewer runs than asked" in out, out
    else:
        assert reply["ename"] == "KeyboardInterrupt", reply
    reply, outputs = k.execute("precious + 1")
    assert reply["status"] == "ok" and k.result_text(outputs) == "43"


def test_timing_command_reports_each_cells_time_until_turned_off(fresh_kernel):
    # evcxr's `:timing` was accepted ("Timing: true") and then showed nothing.
    reply, outputs = fresh_kernel.execute(":timing")
    assert reply["status"] == "ok" and fresh_kernel.result_text(outputs).strip() == "Timing: true", outputs
    reply, outputs = fresh_kernel.execute("40 + 2")
    assert reply["status"] == "ok"
    assert re.search(r"^Took \d+(\.\d+)? (ms|s|µs)$", fresh_kernel.stdout(outputs).strip()), outputs
    assert fresh_kernel.result_text(outputs) == "42"
    fresh_kernel.execute(":timing")
    reply, outputs = fresh_kernel.execute("1")
    assert "Took" not in fresh_kernel.stdout(outputs)


def test_fmt_and_types_change_how_results_show(fresh_kernel):
    # The prelude gives every Debug value an evcxr_display, which hid evcxr's `:fmt` and
    # `:types`: both were accepted and then changed nothing (evcxr patch 7).
    k = fresh_kernel
    reply, outputs = k.execute("#[derive(Debug)] struct P { x: i32, y: i32 }")
    assert reply["status"] == "ok", outputs
    reply, outputs = k.execute("P { x: 1, y: 2 }")
    assert k.result_text(outputs) == "P { x: 1, y: 2 }", outputs
    reply, outputs = k.execute(":fmt {:#?}")
    assert reply["status"] == "ok", outputs
    reply, outputs = k.execute("P { x: 1, y: 2 }")
    assert k.result_text(outputs) == "P {\n    x: 1,\n    y: 2,\n}", outputs
    # A value the format does not apply to (no Debug) still shows through its evcxr_display.
    reply, outputs = k.execute(
        "struct Shown; impl Shown { fn evcxr_display(&self) { "
        "println!(\"EVCXR_BEGIN_CONTENT text/plain\\nshown\\nEVCXR_END_CONTENT\"); } }"
    )
    assert reply["status"] == "ok", outputs
    reply, outputs = k.execute("Shown")
    assert k.result_text(outputs) == "shown", outputs
    reply, outputs = k.execute(":fmt {}")
    reply, outputs = k.execute("255u8")
    assert k.result_text(outputs) == "255", outputs
    reply, outputs = k.execute(":fmt {:x}")
    reply, outputs = k.execute("255u8")
    assert k.result_text(outputs) == "ff", outputs
    reply, outputs = k.execute(":fmt {:?}")
    reply, outputs = k.execute(":types")
    assert reply["status"] == "ok", outputs
    reply, outputs = k.execute("vec![1u8, 2]")
    assert k.result_text(outputs) == ": Vec<u8> = [1, 2]", outputs
    k.execute(":types")
    # Back to the defaults: a value with its own evcxr_display shows as HTML again, a plain
    # value as Debug.
    reply, outputs = k.execute('Html::new("<b>bold</b>")')
    assert any("text/html" in o["content"].get("data", {}) for o in outputs if o["msg_type"] == "execute_result"), outputs
    reply, outputs = k.execute("P { x: 3, y: 4 }")
    assert k.result_text(outputs) == "P { x: 3, y: 4 }", outputs


def test_forged_signature_is_not_executed(kernel, tmp_path):
    marker = tmp_path / "forged-ran"
    forged = WireSession(key=b"not-the-kernel-key", username="mallory")
    msg = forged.msg("execute_request", {"code": f'std::fs::write("{marker}", "x").unwrap();', "silent": False,
                                         "store_history": True, "user_expressions": {}, "allow_stdin": False})
    forged.send(kernel.kc.shell_channel.socket, msg)
    # The kernel must go on answering properly signed requests.
    reply, _ = kernel.execute("2 + 2")
    assert reply["status"] == "ok"
    time.sleep(0.5)
    assert not marker.exists(), "a message with a forged signature was executed"


def test_interrupt_of_code_that_never_checks_returns_control_and_names_lost_variables(fresh_kernel):
    k = fresh_kernel
    reply, _ = k.execute("let precious = vec![1, 2, 3];")
    assert reply["status"] == "ok"
    # Interrupted once the code runs: an interrupt during the build would keep every variable.
    reply, _, elapsed = interrupt_once_started(k, 'println!("started"); loop { std::hint::spin_loop(); }', 1.0)
    assert reply["status"] == "error"
    assert reply["ename"] == "KeyboardInterrupt"
    assert "precious" in reply["evalue"], reply["evalue"]
    assert elapsed < 30, elapsed
    # The session still runs cells afterwards.
    reply, outputs = k.execute("1 + 1")
    assert reply["status"] == "ok"


def test_interrupt_of_a_prelude_loop_keeps_variables(fresh_kernel):
    k = fresh_kernel
    reply, _ = k.execute("let precious = vec![1, 2, 3];")
    assert reply["status"] == "ok"
    code = 'println!("started"); for _ in progress(0..10_000) { std::thread::sleep(std::time::Duration::from_millis(10)); }'
    reply, _, _ = interrupt_once_started(k, code, 1.0)
    assert reply["status"] == "error"
    assert reply["ename"] == "KeyboardInterrupt"
    reply, outputs = k.execute("precious.len()")
    assert reply["status"] == "ok"
    assert k.result_text(outputs) == "3"


def test_kernel_runs_without_a_gpu(kernel):
    reply, outputs = kernel.execute('println!("available={}", cuda::is_available());')
    assert reply["status"] == "ok"
    out = kernel.stdout(outputs)
    if has_cuda_device():
        assert "available=true" in out
    else:
        assert "available=false" in out
        # Asking for a GPU tensor is an error with a reason, not a crash of the session.
        reply, _ = kernel.execute('Tensor::zeros([2], Device::Cuda(0)).unwrap()')
        assert reply["status"] == "error"
        assert "driver" in reply["evalue"].lower() or "cuda" in reply["evalue"].lower(), reply["evalue"]
        reply, _ = kernel.execute("1 + 1")
        assert reply["status"] == "ok"


def test_two_images_in_one_cell_are_two_display_data(kernel):
    code = """
let a = Mandelbrot::new().size(64, 32).iterations(20).cpu_serial().unwrap();
display(&a);
let b = Mandelbrot::new().size(64, 32).iterations(50).cpu_parallel().unwrap();
display(&b);
"""
    reply, outputs = kernel.execute(code)
    assert reply["status"] == "ok", reply
    shown = [m for m in outputs if m["msg_type"] == "display_data"]
    assert len(shown) == 2
    for m in shown:
        assert "image/png" in m["content"]["data"]


def test_update_display_data_replaces_an_output(kernel):
    code = """
let h = display(&Html::new("<b>step 1</b>"));
h.update(&Html::new("<b>step 2</b>"));
"""
    reply, outputs = kernel.execute(code)
    assert reply["status"] == "ok", reply
    first = [m for m in outputs if m["msg_type"] == "display_data"]
    updates = [m for m in outputs if m["msg_type"] == "update_display_data"]
    assert len(first) == 1 and len(updates) == 1
    display_id = first[0]["content"]["transient"]["display_id"]
    assert display_id and updates[0]["content"]["transient"]["display_id"] == display_id
    assert "step 2" in updates[0]["content"]["data"]["text/html"]


def test_progress_bar_updates_in_place(kernel):
    code = "for _ in progress(0..5) { std::thread::sleep(std::time::Duration::from_millis(150)); }"
    reply, outputs = kernel.execute(code)
    assert reply["status"] == "ok", reply
    first = [m for m in outputs if m["msg_type"] == "display_data"]
    updates = [m for m in outputs if m["msg_type"] == "update_display_data"]
    assert len(first) == 1 and len(updates) >= 1
    assert {u["content"]["transient"]["display_id"] for u in updates} == {first[0]["content"]["transient"]["display_id"]}


def test_no_gpu_notice_is_one_line_on_the_first_successful_cell(fresh_kernel):
    if has_cuda_device():
        pytest.skip("skipped: the notice is for machines without a CUDA device")
    k = fresh_kernel
    # A failing first cell shows exactly its error (jupyter_kernel_test counts the outputs).
    reply, outputs = k.execute("let x: u32 = ;")
    assert reply["status"] == "error"
    assert types(outputs) == ["execute_input", "error"], types(outputs)
    reply, outputs = k.execute("1")
    notices = [m for m in outputs if m["msg_type"] == "display_data"]
    assert len(notices) == 1, types(outputs)
    text = notices[0]["content"]["data"]["text/plain"]
    assert "No CUDA device" in text and "\n" not in text.strip(), text
    assert not [m for m in outputs if m["msg_type"] == "stream" and m["content"]["name"] == "stderr"]
    reply, outputs = k.execute("2")
    assert types(outputs) == ["execute_input", "execute_result"], types(outputs)


def heavy_cell(statements=3000):
    """A cell whose build takes several seconds at opt-level 2 (about 10 s here)."""
    body = "\n".join(
        f"    acc = acc.wrapping_mul({i * 2 + 3}).rotate_left({i % 31 + 1}) ^ (acc >> {i % 17 + 1}); v.push(acc.count_ones() as u64 + {i});"
        for i in range(statements))
    return "fn heavy_build() -> Vec<u64> {\n    let mut v = Vec::new();\n    let mut acc: u64 = 1;\n" + body + "\n    v\n}\nheavy_build().len()"


def test_interrupt_during_a_build_stops_the_build_and_keeps_variables(fresh_kernel):
    k = fresh_kernel
    reply, _ = k.execute("let precious = 7;")
    assert reply["status"] == "ok"
    # After a fresh session's first cell the kernel warms rust-analyzer while idle (seconds on a
    # busy machine); a cell sent then waits for it, and an interrupt meanwhile cancels the cell
    # before its build (as during start-up). This cell waits out the warm-up, so the interrupt
    # below lands in the build it is meant to test.
    reply, _ = k.execute("precious")
    assert reply["status"] == "ok"
    reply, elapsed = k.interrupt_after(heavy_cell(), delay=2.5)
    assert reply["status"] == "error"
    assert reply["ename"] == "KeyboardInterrupt", reply
    assert "build" in reply["evalue"], reply["evalue"]
    assert elapsed < 5, f"the build went on for {elapsed:.1f} s after the interrupt"
    reply, outputs = k.execute("precious * 6")
    assert reply["status"] == "ok"
    assert k.result_text(outputs) == "42"


def test_interrupt_kills_a_shell_escape(kernel):
    reply, elapsed = kernel.interrupt_after("!sleep 60", delay=1.5, timeout=30)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    assert elapsed < 5
    reply, _ = kernel.execute("1")
    assert reply["status"] == "ok"


def test_a_fresh_sessions_first_question_mark_cell_keeps_its_image(fresh_kernel):
    # evcxr turns `?` support on only after a cell fails for want of it, and that failure used
    # to cost the cell its rich display; the kernel turns it on at start-up.
    reply, outputs = fresh_kernel.execute("Mandelbrot::default().size(96, 64).cpu_serial()?")
    assert reply["status"] == "ok", reply
    result = [m for m in outputs if m["msg_type"] == "execute_result"]
    assert "image/png" in result[0]["content"]["data"]
    # A unit value shows nothing, as a statement would.
    reply, outputs = fresh_kernel.execute('match 1 { _ => println!("x") }')
    assert reply["status"] == "ok"
    assert not [m for m in outputs if m["msg_type"] == "execute_result"]
    assert fresh_kernel.stdout(outputs) == "x\n"


def test_input_asks_the_frontend_on_stdin(kernel):
    msg_id = kernel.kc.execute('let name = input("Your name: "); println!("hello {name}");', allow_stdin=True)
    ask = kernel.kc.get_stdin_msg(timeout=120)
    assert ask["msg_type"] == "input_request"
    # Whole, although the line protocol it travels through cuts at colons.
    assert ask["content"]["prompt"] == "Your name: "
    kernel.kc.input("Ada")
    reply, outputs = kernel.collect(msg_id, timeout=120)
    assert reply["status"] == "ok", reply
    assert "hello Ada" in kernel.stdout(outputs)


def test_two_plots_in_one_cell_are_two_svg_display_data(kernel):
    code = """
let xs: Vec<f64> = (0..50).map(|i| i as f64 / 10.0).collect();
let ys: Vec<f64> = xs.iter().map(|x| x.sin()).collect();
display(&Figure::new("sine").line("sin", &xs, &ys));
display(&bar_chart("speed", &["CPU", "GPU"], &[1.0, 20.0]));
"""
    reply, outputs = kernel.execute(code)
    assert reply["status"] == "ok", reply
    shown = [m for m in outputs if m["msg_type"] == "display_data"]
    assert len(shown) == 2
    for m in shown:
        assert m["content"]["data"]["image/svg+xml"].lstrip().startswith("<svg")


def test_kernel_starts_when_cargo_is_not_on_path():
    # As when JupyterLab is started from a desktop launcher: the kernelspec records the
    # toolchain's folder at install time and the kernel falls back to it.
    from jupyter_client.manager import start_new_kernel
    from conftest import KERNEL_NAME, STARTUP_TIMEOUT
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep)
                                  if not os.path.isfile(os.path.join(p, "cargo")))
    km, kc = start_new_kernel(kernel_name=KERNEL_NAME, startup_timeout=STARTUP_TIMEOUT, env=env)
    try:
        reply = kc.execute_interactive("Tensor::ones([2], Device::Cpu).unwrap().sum().unwrap().item::<f32>().unwrap()",
                                       timeout=STARTUP_TIMEOUT)
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def start_then_interrupt(session, code, delay, allow_stdin=False):
    """Sends `code`, interrupts after `delay` s; returns (reply, seconds from interrupt to reply)."""
    msg_id = session.kc.execute(code, allow_stdin=allow_stdin)
    time.sleep(delay)
    start = time.monotonic()
    # Answered once the kernel has acted on it, so the caller's next cell cannot receive it
    # (a cell that ends just as the interrupt is sent would otherwise pass it on).
    session.interrupt()
    reply, _ = session.collect(msg_id, 120)
    return reply, time.monotonic() - start


def assert_session_whole(k, var="precious", value=42):
    """The session kept `var` (6 * 7 = 42) and still has the prelude in scope."""
    reply, outputs = k.execute(f"{var} * 6")
    assert reply["status"] == "ok", reply
    assert k.result_text(outputs) == str(value)
    reply, outputs = k.execute("Tensor::zeros(3, Device::Cpu)?.numel()")
    assert reply["status"] == "ok", reply
    assert k.result_text(outputs) == "3"


@pytest.mark.parametrize("delay", [0.3, 2.0, 5.0])
def test_interrupt_during_start_up_never_breaks_the_session(delay, busy_machine):
    # kernel_info is answered at once, so a student can press stop while the session starts.
    k = Session()
    try:
        reply, _ = start_then_interrupt(k, "let first = 1;", delay)
        # Cancelled while waiting for start-up, or run if start-up had already ended.
        assert reply["status"] == "ok" or reply["ename"] == "KeyboardInterrupt", reply
        reply, _ = k.execute("let precious = 7;")
        assert reply["status"] == "ok", reply
        assert_session_whole(k)
    finally:
        k.close()


@pytest.mark.parametrize("delay", [0.05, 0.4, 2.5])
def test_interrupt_before_the_code_runs_keeps_variables_on_a_busy_machine(fresh_kernel, delay, busy_machine):
    # 0.05 s lands in evcxr's analysis, later ones in the build; none may end the child.
    k = fresh_kernel
    reply, _ = k.execute("let precious = 7;")
    assert reply["status"] == "ok"
    reply, elapsed = start_then_interrupt(k, heavy_cell(), delay)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply
    assert "lost" not in reply["evalue"], reply["evalue"]
    assert elapsed < 15, f"the build went on for {elapsed:.1f} s after the interrupt"
    assert_session_whole(k)


def interrupt_once_started(k, code, after=0.0, allow_stdin=False):
    """Runs `code` (whose first statement prints "started"), interrupts `after` seconds after
    that line arrives; returns (reply, outputs, seconds from the interrupt to the reply)."""
    msg_id = k.kc.execute(code, allow_stdin=allow_stdin)
    deadline = time.monotonic() + 180
    while True:
        msg = k.kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream" and "started" in msg["content"]["text"]:
            break
    time.sleep(after)
    start = time.monotonic()
    k.km.interrupt_kernel()
    reply, outputs = k.collect(msg_id, 60)
    return reply, outputs, time.monotonic() - start


def test_interrupt_of_a_flag_checking_loop_keeps_variables_on_a_busy_machine(fresh_kernel, busy_machine):
    k = fresh_kernel
    reply, _ = k.execute("let precious = 7;")
    assert reply["status"] == "ok"
    code = 'println!("started"); for _ in progress(0..100_000) { std::thread::sleep(std::time::Duration::from_millis(10)); }'
    reply, _, _ = interrupt_once_started(k, code, 0.5)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply
    assert "lost" not in reply["evalue"], reply["evalue"]
    assert_session_whole(k)


def test_interrupt_of_code_that_ignores_the_flag_ends_it_on_a_busy_machine(fresh_kernel, busy_machine):
    k = fresh_kernel
    reply, _ = k.execute("let precious = 7;")
    assert reply["status"] == "ok"
    reply, _, elapsed = interrupt_once_started(k, 'println!("started"); loop { std::hint::spin_loop(); }', 0.5)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply
    assert "precious" in reply["evalue"], reply["evalue"]
    assert elapsed < 30
    reply, outputs = k.execute("Tensor::zeros(3, Device::Cpu)?.numel()")
    assert reply["status"] == "ok", reply


def test_interrupt_just_before_input_releases_the_kernel(fresh_kernel):
    # The reproduction: the interrupt lands while the cell sleeps, before it asks.
    k = fresh_kernel
    reply, _ = k.execute("let precious = 7;")
    assert reply["status"] == "ok"
    code = 'println!("started"); std::thread::sleep(std::time::Duration::from_secs(2)); let s = input("x: "); println!("got {s}");'
    reply, outputs, elapsed = interrupt_once_started(k, code, 1.0, allow_stdin=True)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply
    assert elapsed < 8, f"the kernel stayed busy {elapsed:.1f} s after the interrupt"
    assert "got" not in k.stdout(outputs)
    t0 = time.monotonic()
    assert_session_whole(k)
    assert time.monotonic() - t0 < 60


def test_interrupt_while_input_waits_releases_the_kernel(fresh_kernel):
    k = fresh_kernel
    reply, _ = k.execute("let precious = 7;")
    assert reply["status"] == "ok"
    msg_id = k.kc.execute('let s = input("Name: "); println!("after {s}");', allow_stdin=True)
    ask = k.kc.get_stdin_msg(timeout=120)
    assert ask["content"]["prompt"] == "Name: "
    start = time.monotonic()
    k.km.interrupt_kernel()
    reply, outputs = k.collect(msg_id, 60)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply
    assert time.monotonic() - start < 8
    assert "after" not in k.stdout(outputs)
    assert_session_whole(k)


def test_a_failed_question_mark_is_an_error(kernel):
    reply, outputs = kernel.execute('let n: i32 = "12x".parse()?;\nprintln!("not reached");')
    assert reply["status"] == "error", reply
    assert reply["ename"] == "Error"
    assert reply["evalue"] == "invalid digit found in string", reply["evalue"]
    errors = [m for m in outputs if m["msg_type"] == "error"]
    assert len(errors) == 1 and errors[0]["content"]["evalue"] == "invalid digit found in string"
    assert "not reached" not in kernel.stdout(outputs)
    # The session goes on; a `?` that succeeds is not an error.
    reply, outputs = kernel.execute('let m: i32 = "12".parse()?;\nm + 1')
    assert reply["status"] == "ok", reply
    assert kernel.result_text(outputs) == "13"


def test_clear_empties_the_session_but_keeps_the_prelude(fresh_kernel):
    # evcxr's `:clear` also dropped `use gpulab::*`, so every later cell failed with
    # "cannot find type `Tensor`" until the kernel was restarted.
    assert fresh_kernel.execute("let before_clear = 41;")[0]["status"] == "ok"
    reply, _ = fresh_kernel.execute(":clear")
    assert reply["status"] == "ok", reply
    reply, _ = fresh_kernel.execute("before_clear")
    assert reply["status"] == "error" and "cannot find value" in reply["evalue"], reply
    reply, outputs = fresh_kernel.execute("Tensor::ones([2], Device::Cpu)?.sum()?.item::<f32>()?")
    assert reply["status"] == "ok", reply
    assert fresh_kernel.result_text(outputs) == "2.0"
    # The panic hook came back with the prelude: a panic still names the cell's own line.
    reply, _ = fresh_kernel.execute('let z = 0;\npanic!("after clear {z}");')
    assert reply["status"] == "error" and "cell line 2" in "\n".join(reply["traceback"]), reply


def test_a_panic_points_at_the_cells_own_line(kernel):
    reply, outputs = kernel.execute('let a = 1;\nlet b = a + 1;\nif b == 2 { panic!("boom {b}"); }\nlet c = 3;')
    assert reply["status"] == "error" and reply["ename"] == "panic", reply
    text = "\n".join(reply["traceback"])
    assert "cell line 3" in text, text
    assert "src/lib.rs" not in text, text


def test_completions_insert_no_placeholder_text(kernel):
    code = "Tensor::zer"
    msg_id = kernel.kc.complete(code, len(code))
    reply = kernel.kc.get_shell_msg(timeout=120)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kernel.kc.get_shell_msg(timeout=120)
    matches = reply["content"]["matches"]
    assert "zeros(" in matches or "Tensor::zeros(" in matches, matches
    assert not any("shape" in m or "$" in m for m in matches), matches


def complete(kernel, code, cursor=None):
    msg_id = kernel.kc.complete(code, len(code) if cursor is None else cursor)
    reply = kernel.kc.get_shell_msg(timeout=120)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kernel.kc.get_shell_msg(timeout=120)
    return reply["content"]


def test_tab_completes_magic_names_and_not_shell_text(fresh_kernel):
    c = complete(fresh_kernel, "%ti")
    assert c["matches"] == ["%time", "%timeit"] and (c["cursor_start"], c["cursor_end"]) == (0, 3), c
    c = complete(fresh_kernel, "%%ba")
    assert c["matches"] == ["%%bash"], c
    # In a shell-script cell Tab offers nothing, and does not load rust-analyzer (several
    # hundred MB in the kernel process) to find that.
    c = complete(fresh_kernel, "%%bash\nech")
    assert c["matches"] == [], c
    with open(f"/proc/{fresh_kernel.km.provisioner.process.pid}/status") as f:
        rss_mb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024
    assert rss_mb < 150, f"kernel process holds {rss_mb:.0f} MB: was rust-analyzer loaded?"


def test_replies_and_outputs_carry_the_kernels_session_for_every_client(kernel):
    # JupyterLab takes the kernel_info_reply's header session as the kernel's and drops iopub
    # messages that name another one; the Jupyter server nudges the kernel with its own client
    # session. So every message from the kernel names one kernel session, whichever client
    # asked (the kernel used to echo the asking client's session).
    other = kernel.km.client()
    other.session.session = str(uuid.uuid4())  # km.client() would reuse the manager's session id
    other.start_channels()
    try:
        other.wait_for_ready(timeout=60)
        assert other.session.session != kernel.kc.session.session
        sessions = set()
        for kc in (kernel.kc, other):
            msg_id = kc.kernel_info()
            reply = kc.get_shell_msg(timeout=30)
            while reply["parent_header"].get("msg_id") != msg_id:
                reply = kc.get_shell_msg(timeout=30)
            sessions.add(reply["header"]["session"])
        assert len(sessions) == 1, sessions
        (kernel_session,) = sessions
        assert kernel_session not in (kernel.kc.session.session, other.session.session)
        reply, outputs = kernel.execute("40 + 2", client=other)
        assert reply["status"] == "ok", reply
        assert outputs, "no iopub messages for the cell"
        for m in outputs:
            assert m["header"]["session"] == kernel_session, m["msg_type"]
    finally:
        other.stop_channels()
