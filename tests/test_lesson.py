"""The kernel in a lesson, end to end through jupyter_client: Run All stops at the first error,
a panic inside the kernel does not wedge it, and busy shows the moment a cell is sent."""

import os
import pathlib
import tempfile
import time

import pytest
from jupyter_client.manager import start_new_kernel

from conftest import KERNEL_NAME, STARTUP_TIMEOUT, ready_session


@pytest.fixture(scope="module")
def lesson():
    # The kernel's test-only requests switched on.
    s = ready_session(env={"GPULAB_TEST_HOOKS": "1"})
    yield s
    s.close()


def visible(outputs):
    """What a notebook would show: everything but status messages and execute_input."""
    return [m for m in outputs if m["msg_type"] not in ("status", "execute_input")]


def test_run_all_stops_at_the_first_error_and_the_next_cell_runs(lesson):
    kc = lesson.kc
    first = kc.execute("let lesson_a = 20;")
    failing = kc.execute('let lesson_b: u32 = "not a number";')
    # Queued behind the failing cell, as Run All sends them.
    queued = [kc.execute(f'println!("queued {i}"); let lesson_q{i} = {i};') for i in range(5)]

    reply, _ = lesson.collect(first, STARTUP_TIMEOUT)
    assert reply["status"] == "ok", reply
    count = reply["execution_count"]
    reply, outputs = lesson.collect(failing, STARTUP_TIMEOUT)
    assert reply["status"] == "error", reply
    assert reply["ename"] == "CompilationError", reply
    started = time.monotonic()
    for msg_id in queued:
        reply, outputs = lesson.collect(msg_id, 30)
        assert reply == {"status": "aborted"}, reply
        assert visible(outputs) == [], outputs
    # Aborting is a reply, not a compile: five cells in well under a second.
    assert time.monotonic() - started < 2

    # The queue is drained: the next cell runs, sees the variables from before the error, and
    # the aborted cells neither ran nor took an execution count.
    reply, outputs = lesson.execute('println!("{}", lesson_a + 1);')
    assert reply["status"] == "ok", reply
    assert lesson.stdout(outputs) == "21\n"
    assert reply["execution_count"] == count + 2
    reply, outputs = lesson.execute("lesson_q0")
    assert reply["status"] == "error", "an aborted cell defined its variable"


def test_stop_on_error_false_runs_the_queue(lesson):
    kc = lesson.kc
    failing = kc.execute('let lesson_c: u32 = "still not a number";', stop_on_error=False)
    after = kc.execute('println!("ran anyway");')
    reply, _ = lesson.collect(failing, STARTUP_TIMEOUT)
    assert reply["status"] == "error", reply
    reply, outputs = lesson.collect(after, STARTUP_TIMEOUT)
    assert reply["status"] == "ok", reply
    assert lesson.stdout(outputs) == "ran anyway\n"


def test_a_panic_inside_the_kernel_is_an_error_reply_and_the_kernel_goes_on(lesson):
    kc = lesson.kc
    msg = kc.session.msg("gpulab_test_panic_request", {})
    kc.shell_channel.send(msg)
    deadline = time.monotonic() + 30
    while True:
        reply = kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
        if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            break
    assert reply["msg_type"] == "gpulab_test_panic_reply"
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KernelPanic"
    assert "deliberate panic" in reply["content"]["evalue"]
    # The worker survived: cells still run, with their variables.
    reply, outputs = lesson.execute("lesson_a * 2")
    assert reply["status"] == "ok", reply
    assert lesson.result_text(outputs) == "40"


def first_cell_of_a_fresh_kernel(code, on_busy=None):
    """Starts a kernel, sends `code` at once (start-up is still running); returns (seconds to
    its busy, seconds to its idle, reply content, iopub outputs between busy and idle).
    `on_busy(start-up log so far)` is called as busy arrives (GPULAB_LOG_STARTUP=1)."""
    log = tempfile.NamedTemporaryFile("w+", suffix=".log")
    env = dict(os.environ, GPULAB_LOG_STARTUP="1")
    km, kc = start_new_kernel(kernel_name=KERNEL_NAME, startup_timeout=STARTUP_TIMEOUT, env=env, stderr=log)
    try:
        sent = time.monotonic()
        msg_id = kc.execute(code)
        busy_after = None
        outputs = []
        deadline = sent + STARTUP_TIMEOUT
        while True:
            msg = kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            state = msg["content"].get("execution_state") if msg["msg_type"] == "status" else None
            if state == "busy" and busy_after is None:
                busy_after = time.monotonic() - sent
                if on_busy:
                    on_busy(pathlib.Path(log.name).read_text())
                continue
            if state == "idle":
                break
            outputs.append(msg)
        idle_after = time.monotonic() - sent
        reply = kc.get_shell_msg(timeout=10)
        assert reply["parent_header"]["msg_id"] == msg_id
        return busy_after, idle_after, reply["content"], outputs
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        log.close()


def test_busy_arrives_at_once_while_a_fresh_kernel_starts():
    logs_at_busy = []
    busy_after, idle_after, reply, _ = first_cell_of_a_fresh_kernel('println!("first");', logs_at_busy.append)
    assert reply["status"] == "ok", reply
    assert busy_after is not None and busy_after < 1.0, busy_after
    # Start-up (evcxr, the prelude) was still running when busy went out: the kernel had not
    # yet logged the prelude as loaded. (Timed margins broke once start-up got faster.)
    assert logs_at_busy and "prelude loaded" not in logs_at_busy[0], logs_at_busy


def test_a_fresh_kernels_failing_first_cell_is_one_error_output():
    # What jupyter_kernel_test's test_error asks of any failing cell, here as the first cell of
    # a session: the reply is an error and the only output is the error (no start-up notice).
    busy_after, _, reply, outputs = first_cell_of_a_fresh_kernel('let x: u32 = "first cell, compile error";')
    assert busy_after is not None and busy_after < 1.0, busy_after
    assert reply["status"] == "error", reply
    assert reply["ename"] == "CompilationError", reply
    shown = visible(outputs)
    assert [m["msg_type"] for m in shown] == ["error"], shown
