"""Shared helpers: start the installed gpulab kernel through jupyter_client and run cells."""

import os
import queue
import subprocess
import sys
import time

import pytest
from jupyter_client.manager import start_new_kernel

KERNEL_NAME = os.environ.get("GPULAB_KERNEL_NAME", "gpulab")
# The first cell of a session waits for evcxr and the prelude to load.
STARTUP_TIMEOUT = 300


def has_cuda_device() -> bool:
    return any(os.path.exists(p) for p in ("/dev/nvidia0", "/dev/nvidiactl"))


class Session:
    """A running kernel and a blocking client, with a helper that runs one cell."""

    def __init__(self, env=None):
        """`env`: extra environment variables for the kernel (on top of this process's)."""
        kw = {"env": dict(os.environ, **env)} if env else {}
        self.km, self.kc = start_new_kernel(kernel_name=KERNEL_NAME, startup_timeout=STARTUP_TIMEOUT, **kw)

    def execute(self, code, timeout=STARTUP_TIMEOUT, allow_stdin=False, client=None):
        """Runs `code`; returns (reply content, list of iopub messages up to idle)."""
        kc = client or self.kc
        msg_id = kc.execute(code, allow_stdin=allow_stdin)
        return self.collect(msg_id, timeout, kc)

    def collect(self, msg_id, timeout, kc=None):
        kc = kc or self.kc
        deadline = time.monotonic() + timeout
        reply = None
        while reply is None:
            msg = kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
            if msg["parent_header"].get("msg_id") == msg_id:
                reply = msg
        outputs = []
        while True:
            msg = kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
            outputs.append(msg)
        return reply["content"], outputs

    def interrupt(self, timeout=60):
        """Sends interrupt_request on the control channel and waits for its reply. An interrupt
        names no cell: one still in flight when the next cell arrives interrupts that one, in
        any kernel. Waiting for the reply makes a test's next cell come after it."""
        msg = self.kc.session.msg("interrupt_request", {})
        self.kc.control_channel.send(msg)
        deadline = time.monotonic() + timeout
        while True:
            reply = self.kc.control_channel.get_msg(timeout=max(0.1, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                assert reply["msg_type"] == "interrupt_reply", reply
                return

    def interrupt_after(self, code, delay, timeout=60):
        """Starts `code`, interrupts it after `delay` seconds; returns (reply content, seconds
        from the interrupt to the reply)."""
        msg_id = self.kc.execute(code)
        time.sleep(delay)
        start = time.monotonic()
        self.km.interrupt_kernel()
        reply, _ = self.collect(msg_id, timeout)
        return reply, time.monotonic() - start

    def result_text(self, outputs):
        """The text/plain of the cell's execute_result."""
        return [m for m in outputs if m["msg_type"] == "execute_result"][0]["content"]["data"]["text/plain"]

    def stdout(self, outputs):
        return "".join(m["content"]["text"] for m in outputs if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def ready_session(env=None):
    """A Session whose first cell has run (it waits for the prelude), for module fixtures."""
    s = Session(env)
    reply, _ = s.execute("1")
    assert reply["status"] == "ok", reply
    return s


@pytest.fixture(scope="module")
def kernel():
    s = ready_session()
    yield s
    s.close()


@pytest.fixture
def fresh_kernel():
    s = Session()
    yield s
    s.close()


def drain(q_get):
    try:
        while True:
            q_get(timeout=0.05)
    except queue.Empty:
        pass


@pytest.fixture
def busy_machine():
    """Keeps every core busy with throw-away Python processes while a test runs, as a class on
    shared cores would: start-up, builds and timers all run late."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    try:
        yield
    finally:
        for p in burners:
            p.kill()
        for p in burners:
            p.wait()
