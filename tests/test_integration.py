"""End-to-end behaviour of the real kernel through jupyter_client."""

import os
import tempfile
import time

from jupyter_client.session import Session as WireSession

from conftest import Session, has_cuda_device


def types(outputs):
    return [m["msg_type"] for m in outputs]


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
    reply, elapsed = k.interrupt_after("loop { std::hint::spin_loop(); }", delay=3)
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
    code = "for _ in progress(0..10_000) { std::thread::sleep(std::time::Duration::from_millis(10)); }"
    reply, _ = k.interrupt_after(code, delay=4)
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


def test_no_gpu_notice_is_shown_once(fresh_kernel):
    if has_cuda_device():
        return
    reply, outputs = fresh_kernel.execute("1")
    stderr = "".join(m["content"]["text"] for m in outputs if m["msg_type"] == "stream" and m["content"]["name"] == "stderr")
    assert "no CUDA device" in stderr
    reply, outputs = fresh_kernel.execute("2")
    assert not any(m["msg_type"] == "stream" and "no CUDA device" in m["content"]["text"] for m in outputs)


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
    msg_id = kernel.kc.execute('let name = input("Your name? "); println!("hello {name}");', allow_stdin=True)
    ask = kernel.kc.get_stdin_msg(timeout=120)
    assert ask["msg_type"] == "input_request"
    assert ask["content"]["prompt"] == "Your name? "
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
