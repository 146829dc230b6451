"""A class under JupyterHub: N simulated students, each with their own home and single-user
server, all start the `gpulab` kernel through the hub and run a tutorial notebook top to bottom
at the same time.

Everything is real: JupyterHub (tests/requirements-hub.txt) with its proxy
configurable-http-proxy (tests/hub/package.json, `npm ci` by ./install --test), the shared-password
authenticator a teacher would use for a workshop, SimpleLocalProcessSpawner (each student's home
under a temporary folder), `jupyterhub-singleuser` (jupyter_server) per student, and the installed
gpulab kernelspec, found through JUPYTER_PATH as a system-wide kernelspec would be. Each student
acts with their own API token: spawn the server through the hub's REST API, start a kernel with
the server's kernels API, then send the notebook's cells over the kernel's websocket, all through
the proxy, as JupyterLab in a browser does.

    .venv/bin/python -m pytest -s tests/test_jupyterhub.py                        # 4 students
    GPULAB_HUB_STUDENTS=8 .venv/bin/python -m pytest -s tests/test_jupyterhub.py  # a bigger class
    GPULAB_HUB_NOTEBOOK=notebooks/01-cpu-vs-gpu-speed-tests.ipynb ...             # another lesson

No retries anywhere: a session that comes up without its prelude (the start-up race of issue 11)
must fail this test, not be hidden by it.
"""

import asyncio
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
import uuid

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
KERNEL_NAME = os.environ.get("GPULAB_KERNEL_NAME", "gpulab")
STUDENTS = int(os.environ.get("GPULAB_HUB_STUDENTS", "4"))
NOTEBOOK = ROOT / os.environ.get("GPULAB_HUB_NOTEBOOK", "notebooks/00-start-here.ipynb")
PROXY = ROOT / "tests/hub/node_modules/.bin/configurable-http-proxy"
# Per cell: a cold build slot compiles the prelude first (about a minute alone on 2 cores, several
# when the whole class compiles at once).
CELL_TIMEOUT = 900
SPAWN_TIMEOUT = 180
# What 00-start-here must show (as tests/test_notebooks.py checks it outside the hub): pictures
# that reached the student's browser side, not only text.
REQUIRED_MIMES = {"00-start-here.ipynb": {"image/png", "image/svg+xml", "text/html", "text/markdown"}}

try:
    import jupyterhub  # noqa: F401
    from tornado.httpclient import AsyncHTTPClient, HTTPRequest
    from tornado.websocket import websocket_connect
except ImportError:  # pragma: no cover - reported by the skip below
    jupyterhub = None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kernelspec_parent():
    """The folder holding kernels/gpulab, as the test's Jupyter sees it: a student's server gets
    it on JUPYTER_PATH, where a class server would have it under sys.prefix/share/jupyter."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec_dir = pathlib.Path(KernelSpecManager().get_kernel_spec(KERNEL_NAME).resource_dir)
    return spec_dir.parent.parent


def toolchain_env():
    """RUSTUP_HOME/CARGO_HOME from this user's home: the students get homes of their own, and
    rustup's cargo proxy would otherwise look for a toolchain in each student's empty home."""
    env = {}
    home = pathlib.Path.home()
    for var, default in (("RUSTUP_HOME", home / ".rustup"), ("CARGO_HOME", home / ".cargo")):
        value = os.environ.get(var) or (str(default) if default.exists() else None)
        if value:
            env[var] = value
    return env


CONFIG = """
c = get_config()  # noqa
c.JupyterHub.bind_url = {bind_url!r}
c.JupyterHub.hub_bind_url = {hub_url!r}
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.ConfigurableHTTPProxy.api_url = {proxy_api!r}
c.ConfigurableHTTPProxy.auth_token = {proxy_token!r}
c.JupyterHub.db_url = "sqlite:///" + {db!r}
c.JupyterHub.cookie_secret_file = {cookie!r}
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = "lesson-password-1"
c.Authenticator.allow_all = True
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {homes!r} + "/{{username}}"
c.Spawner.cmd = [{singleuser!r}]
c.Spawner.args = {args!r}
c.Spawner.environment = {env!r}
c.Spawner.start_timeout = {spawn_timeout}
c.Spawner.http_timeout = {spawn_timeout}
c.JupyterHub.concurrent_spawn_limit = 0
c.JupyterHub.services = [{{"name": "class-test", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{
    "name": "class-test",
    "scopes": ["admin:users", "admin:servers", "tokens"],
    "services": ["class-test"],
}}]
"""


class Hub:
    """A running JupyterHub in a temporary folder; stopped (with every student's server) by
    `stop`."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.url = f"http://127.0.0.1:{free_port()}"
        self.token = uuid.uuid4().hex
        self.homes = tmp / "home"
        self.homes.mkdir()
        env = {
            "JUPYTER_PATH": str(kernelspec_parent()),
            # Build slots and evcxr's dependency cache stay where `./install` warmed them, as a
            # system-wide prebuilt prelude would be shared (the kernel's own defaults would put
            # them in each student's empty home: every student would compile the prelude from
            # scratch); everything else (extracted prelude, Jupyter data) is per home.
            "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME", str(pathlib.Path.home() / ".cache")),
            **{k: os.environ[k] for k in ("GPULAB_CACHE_DIR",) if k in os.environ},
            **toolchain_env(),
        }
        args = ["--allow-root"] if os.getuid() == 0 else []
        bindir = pathlib.Path(sys.executable).parent
        (tmp / "jupyterhub_config.py").write_text(
            CONFIG.format(
                bind_url=self.url + "/",
                hub_url=f"http://127.0.0.1:{free_port()}",
                proxy=str(PROXY),
                proxy_api=f"http://127.0.0.1:{free_port()}",
                proxy_token=uuid.uuid4().hex,
                db=str(tmp / "jupyterhub.sqlite"),
                cookie=str(tmp / "cookie_secret"),
                homes=str(self.homes),
                singleuser=str(bindir / "jupyterhub-singleuser"),
                args=args,
                env=env,
                spawn_timeout=SPAWN_TIMEOUT,
                token=self.token,
            )
        )
        self.log = open(tmp / "jupyterhub.log", "w")
        path = f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(tmp / "jupyterhub_config.py")],
            cwd=tmp,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, PATH=path),
            start_new_session=True,
        )

    def log_tail(self, lines=40):
        self.log.flush()
        return "\n".join((self.tmp / "jupyterhub.log").read_text().splitlines()[-lines:])

    def stop(self):
        if self.proc.poll() is None:
            # SIGTERM: the hub stops every single-user server it spawned, then the proxy.
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


async def request(method, url, token, body=None, timeout=60):
    client = AsyncHTTPClient()
    req = HTTPRequest(
        url,
        method=method,
        headers={"Authorization": f"token {token}"},
        body=None if body is None else json.dumps(body),
        allow_nonstandard_methods=True,
        request_timeout=timeout,
    )
    resp = await client.fetch(req, raise_error=False)
    if resp.code >= 400:
        raise RuntimeError(f"{method} {url}: HTTP {resp.code}: {resp.body[:500]!r}")
    return json.loads(resp.body) if resp.body else None


async def wait_for_hub(hub):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if hub.proc.poll() is not None:
            raise RuntimeError(f"jupyterhub exited with {hub.proc.returncode}:\n{hub.log_tail()}")
        try:
            await request("GET", f"{hub.url}/hub/api/", hub.token, timeout=5)
            return
        except Exception:
            await asyncio.sleep(0.5)
    raise RuntimeError(f"jupyterhub did not answer within 60 s:\n{hub.log_tail()}")


def message(msg_type, content, session):
    return {
        "header": {
            "msg_id": uuid.uuid4().hex,
            "msg_type": msg_type,
            "username": "student",
            "session": session,
            "date": "",
            "version": "5.3",
        },
        "parent_header": {},
        "metadata": {},
        "content": content,
        "channel": "shell",
        "buffers": [],
    }


async def run_cell(ws, session, code):
    """Sends one execute_request over the kernel's websocket; returns (reply content, outputs
    as nbformat-like dicts) once the kernel is idle for it."""
    msg = message("execute_request", {"code": code, "silent": False, "store_history": True,
                                      "user_expressions": {}, "allow_stdin": False,
                                      "stop_on_error": True}, session)
    msg_id = msg["header"]["msg_id"]
    await ws.write_message(json.dumps(msg))
    reply, outputs, idle = None, [], False
    deadline = time.monotonic() + CELL_TIMEOUT
    while reply is None or not idle:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no reply within {CELL_TIMEOUT} s")
        raw = await asyncio.wait_for(ws.read_message(), left)
        if raw is None:
            raise RuntimeError("the kernel's websocket closed")
        m = json.loads(raw)
        if m.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        t = m["msg_type"]
        if m["channel"] == "shell" and t == "execute_reply":
            reply = m["content"]
        elif t == "status" and m["content"]["execution_state"] == "idle":
            idle = True
        elif t in ("stream", "display_data", "execute_result", "error"):
            outputs.append({"output_type": t, **m["content"]})
    return reply, outputs


async def student(hub, name, cells, start_gate):
    """One student: their own token, server and kernel; runs `cells` in order. Returns a dict of
    what happened (never raises: the class's results are reported together)."""
    r = {"name": name, "ok": False, "cells": 0, "errors": [], "mimes": set()}
    t0 = time.monotonic()
    kernel_id = None
    try:
        await request("POST", f"{hub.url}/hub/api/users/{name}", hub.token)
        token = (await request("POST", f"{hub.url}/hub/api/users/{name}/tokens", hub.token,
                               {"note": "class test"}))["token"]
        await start_gate.wait()  # everyone presses "start my server" at the same moment
        t0 = time.monotonic()
        await request("POST", f"{hub.url}/hub/api/users/{name}/server", token, {}, timeout=SPAWN_TIMEOUT)
        deadline = time.monotonic() + SPAWN_TIMEOUT
        while True:
            model = await request("GET", f"{hub.url}/hub/api/users/{name}", token)
            server = model.get("servers", {}).get("")
            if server and server.get("ready"):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"server not ready after {SPAWN_TIMEOUT} s: {model}")
            await asyncio.sleep(0.5)
        r["spawn_s"] = time.monotonic() - t0
        base = f"{hub.url}/user/{name}"
        specs = await request("GET", f"{base}/api/kernelspecs", token)
        if KERNEL_NAME not in specs["kernelspecs"]:
            raise RuntimeError(f"the single-user server has no {KERNEL_NAME} kernelspec: {list(specs['kernelspecs'])}")
        kernel_id = (await request("POST", f"{base}/api/kernels", token, {"name": KERNEL_NAME}))["id"]
        ws = await websocket_connect(
            HTTPRequest(base.replace("http", "ws", 1) + f"/api/kernels/{kernel_id}/channels",
                        headers={"Authorization": f"token {token}"}),
            max_message_size=256 * 1024 * 1024,
        )
        session = uuid.uuid4().hex
        for i, code in enumerate(cells):
            c0 = time.monotonic()
            reply, outputs = await run_cell(ws, session, code)
            if i == 0:
                r["first_result_s"] = time.monotonic() - t0
            errors = [o for o in outputs if o["output_type"] == "error"]
            if reply.get("status") != "ok" or errors:
                detail = errors[0] if errors else reply
                r["errors"].append(
                    f"cell {i + 1} ({time.monotonic() - c0:.1f} s): {detail.get('ename')}: {detail.get('evalue')}"
                )
                break
            for o in outputs:
                r["mimes"].update(o.get("data", {}).keys())
            r["cells"] += 1
        ws.close()
        await request("DELETE", f"{base}/api/kernels/{kernel_id}", token)
        r["ok"] = not r["errors"] and r["cells"] == len(cells)
    except Exception as e:  # noqa: BLE001 - reported per student below
        r["errors"].append(f"{type(e).__name__}: {e}")
    r["total_s"] = time.monotonic() - t0
    return r


async def lesson(hub, cells):
    await wait_for_hub(hub)
    gate = asyncio.Event()
    tasks = [asyncio.create_task(student(hub, f"student{i + 1}", cells, gate)) for i in range(STUDENTS)]
    await asyncio.sleep(1)  # every student's account and token exist before the lesson starts
    gate.set()
    results = await asyncio.gather(*tasks)
    for i in range(STUDENTS):  # stop the servers through the hub, as the hub's idle culler would
        try:
            await request("DELETE", f"{hub.url}/hub/api/users/student{i + 1}/server", hub.token, timeout=60)
        except Exception as e:  # noqa: BLE001 - the hub's own shutdown stops them too
            print(f"stopping student{i + 1}'s server: {e}")
    return results


def test_a_class_runs_a_notebook_through_jupyterhub(tmp_path):
    if jupyterhub is None:
        pytest.skip("skipped: jupyterhub not installed (./install --test installs tests/requirements-hub.txt)")
    if not PROXY.exists():
        pytest.skip("skipped: configurable-http-proxy not installed (needs Node.js; ./install --test runs npm ci in tests/hub)")
    nb = nbformat.read(str(NOTEBOOK), as_version=4)
    cells = [c.source for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    assert cells, NOTEBOOK

    hub = Hub(tmp_path)
    start = time.monotonic()
    try:
        results = asyncio.run(lesson(hub, cells))
    finally:
        hub.stop()
    wall = time.monotonic() - start

    print(f"\n{STUDENTS} students, {NOTEBOOK.name} ({len(cells)} code cells) through JupyterHub, {wall:.0f} s in all")
    for r in results:
        status = "finished without errors" if r["ok"] else "FAILED: " + "; ".join(r["errors"])
        times = ", ".join(f"{k[:-2].replace('_', ' ')} {r[k]:.1f} s"
                          for k in ("spawn_s", "first_result_s", "total_s") if k in r)
        print(f"  {r['name']}: {r['cells']}/{len(cells)} cells, {times}: {status}")
    failed = [r for r in results if not r["ok"]]
    assert not failed, f"{len(failed)} of {STUDENTS} students' notebooks failed; hub log:\n{hub.log_tail()}"
    for r in results:
        missing = REQUIRED_MIMES.get(NOTEBOOK.name, set()) - r["mimes"]
        assert not missing, f"{r['name']} never saw {sorted(missing)}"
    # Each student really had a home of their own (the spawner ran their server there).
    homes = sorted(p.name for p in hub.homes.iterdir())
    assert homes == sorted(f"student{i + 1}" for i in range(STUDENTS)), homes
