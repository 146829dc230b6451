"""Every tutorial notebook opened in JupyterLab in a real headless browser, all cells run there,
and what a reader sees checked in the page: PNG images and SVG plots as decoded pictures, HTML
tables as tables, progress bars as bars, markdown tables as tables with no stray formula
(04's `\\$` prices), and no rich output fallen back to its raw text.

Chromium and its driver come from the system packages (Debian: `apt-get install chromium
chromium-driver`); Selenium (tests/requirements-browser.txt) drives them and never downloads
a browser. Without them the test says "skipped: no chromium".

    .venv/bin/python -m pytest tests/test_notebooks_browser.py -k 03

It runs by default (about 3 minutes on 2 cores); GPULAB_BROWSER_TEST=0 turns it off.

When a notebook times out, the failure lists the kernel messages the page sent and received
(all of them in `ws-<notebook>.log` next to the server's `lab.log` in the test's temporary
folder). GPULAB_BROWSER_DEBUG=1 starts JupyterLab with --debug (every kernel message's
activity in lab.log); GPULAB_BROWSER_RUN_TIMEOUT=<seconds> shortens the wait for a run.
"""

import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
KERNEL_NAME = os.environ.get("GPULAB_KERNEL_NAME", "gpulab")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
TOKEN = "gpulab-browser-test"
# seconds for all cells of one notebook on a slow shared CI machine
# (each takes 20-60 s here; a hang must not eat CI's 90 minutes)
RUN_TIMEOUT = int(os.environ.get("GPULAB_BROWSER_RUN_TIMEOUT", "420"))

# What each notebook must show in the page (the same figures tests/test_notebooks.py requires).
REQUIRED = {
    "00": {"png", "svg", "table", "progress"},
    "01": {"svg", "table", "progress"},
    "02": {"png", "svg", "table", "progress"},
    "03": {"svg", "table", "progress"},
    "04": {"png", "svg", "table"},
}

# The notebook panel for one path (arguments[0]), found among the open tabs rather than taken
# as the current tab: while JupyterLab restores a layout, the current tab can for a while be
# another notebook, and a check or a Run All aimed at "the current notebook" then goes there.
PANEL_JS = r"""
const app = window.jupyterapp;
const panel = app ? [...app.shell.widgets('main')].find(
    w => w.context && w.context.path === arguments[0] && w.content && w.sessionContext) : null;
"""

# Counts what the page shows, inside the notebook's output areas.
COUNT_JS = PANEL_JS + r"""
const root = panel.content.node;
const outs = [...root.querySelectorAll('.jp-OutputArea-output')];
const imgs = (sel) => outs.flatMap(o => [...o.querySelectorAll(sel)]);
const decoded = (list) => list.filter(i => i.complete && i.naturalWidth > 0).length;
const png = imgs('img[src^="data:image/png"]');
const svgImg = imgs('.jp-RenderedSVG img, img[src^="data:image/svg"]');
const svgInline = imgs('svg').filter(s => s.querySelector('rect, path, line, polyline, text'));
const tables = imgs('.jp-RenderedHTMLCommon table');
const progress = outs.filter(o => /\d+\/\d+ \[/.test(o.textContent)
    && o.querySelector('div[style*="width"] > div[style*="background"]'));
const rawText = outs.filter(o => o.classList.contains('jp-RenderedText'))
    .map(o => o.textContent)
    .filter(t => /<(svg|table|div|img)[\s>]/i.test(t));
const md = [...root.querySelectorAll('.jp-MarkdownOutput')];
return {
  png: decoded(png), png_total: png.length,
  svg: decoded(svgImg) + svgInline.length, svg_img_total: svgImg.length,
  table: tables.length, progress: progress.length, raw_text: rawText.slice(0, 3),
  md_tables: md.flatMap(m => [...m.querySelectorAll('table')]).map(t => ({
      rows: t.querySelectorAll('tbody tr').length, text: t.textContent,
      math: t.querySelectorAll('mjx-container, .MathJax, .katex').length})),
};
"""

STATE_JS = PANEL_JS + r"""
if (!app) return {ready: false, why: 'no jupyterapp'};
if (!panel) return {ready: false, why: 'no panel for ' + arguments[0]};
const w = panel;
const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
const code = w.content.widgets.filter(c => c.model.type === 'code');
const errors = [];
let pending = 0, running = 0;
for (const c of code) {
  if (c.model.executionCount === null) pending += 1;
  if (c.model.executionState === 'running') running += 1;  // scheduled or running ([*])
  for (const o of c.model.outputs.toJSON()) {
    if (o.output_type === 'error') errors.push(o.ename + ': ' + o.evalue);
  }
}
// Ready for Run All: the document loaded, the session settled on a kernel, and the kernel's
// websocket connected (a request sent before that waits in the page, not at the kernel).
const ready = !!kernel && w.context.isReady && w.sessionContext.isReady
    && kernel.connectionStatus === 'connected';
return {ready, status: kernel ? kernel.status : null, pending, running, cells: code.length, errors,
        connection: kernel ? kernel.connectionStatus : null, id: w.id,
        current: app.shell.currentWidget === w, kernel_id: kernel ? kernel.id.slice(0, 8) : null};
"""


_WS_KERNEL = {}  # CDP websocket request id -> the first 8 characters of its kernel's id


def ws_messages(driver):
    """The kernel messages the page sent and received since the last call, from Chromium's
    performance log (CDP Network.webSocketFrame* events): (kernel, direction, channel, msg_type,
    msg_id, parent msg_id, execution_state or status). Evidence for a run that never starts."""
    import base64

    out = []
    for entry in driver.get_log("performance"):
        ev = json.loads(entry["message"])["message"]
        if ev["method"] == "Network.webSocketCreated":  # which kernel each socket talks to
            url = ev["params"]["url"]
            if "/api/kernels/" in url:
                _WS_KERNEL[ev["params"]["requestId"]] = url.split("/api/kernels/")[1][:8]
            continue
        kind = {"Network.webSocketFrameSent": "sent", "Network.webSocketFrameReceived": "recv"}.get(ev["method"])
        kernel = _WS_KERNEL.get(ev["params"].get("requestId"))
        if not kind or not kernel:  # other sockets (documents, events) are not kernel messages
            continue
        frame = ev["params"]["response"]
        try:
            if frame.get("opcode") == 2:  # v1.kernel.websocket.jupyter.org binary frame
                data = base64.b64decode(frame["payloadData"])
                n = int.from_bytes(data[:8], "little")
                offs = [int.from_bytes(data[8 * (i + 1):8 * (i + 2)], "little") for i in range(n)]
                channel = data[offs[0]:offs[1]].decode()
                parts = [json.loads(data[offs[i]:offs[i + 1]] or b"{}") for i in range(1, 5)]
                header, parent, _, content = parts
            else:
                msg = json.loads(frame["payloadData"])
                channel, header, parent, content = (msg.get("channel"), msg.get("header", {}),
                                                    msg.get("parent_header", {}), msg.get("content", {}))
        except Exception as e:  # a frame we cannot read is still evidence
            out.append((kernel, kind, "?", f"undecodable: {e}", "", "", ""))
            continue
        out.append((kernel, kind, channel, header.get("msg_type"), header.get("msg_id", "")[:8],
                    (parent or {}).get("msg_id", "")[:8],
                    content.get("execution_state") or content.get("status") or ""))
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    # About 3 minutes on 2 cores (every notebook run in a real JupyterLab; it was 30 before the
    # kernel's cells got fast), so it runs by default wherever Chromium is installed.
    if os.environ.get("GPULAB_BROWSER_TEST") == "0":
        pytest.skip("skipped: browser test turned off (GPULAB_BROWSER_TEST=0)")
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("skipped: no chromium (install the system packages chromium and chromium-driver)")
    pytest.importorskip("selenium", reason="skipped: selenium not installed (tests/requirements-browser.txt)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    base = tmp_path_factory.mktemp("lab")
    work = base / "notebooks"
    work.mkdir()
    for nb_path in NOTEBOOKS:
        nb = nbformat.read(str(nb_path), as_version=4)
        for cell in nb.cells:  # run fresh in the browser, not show the saved outputs
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        nbformat.write(nb, str(work / nb_path.name))
    # Every cell in the page, so the checks see all outputs (JupyterLab may otherwise leave
    # cells outside the view out of the page).
    settings = base / "settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(base / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"))
    port = free_port()
    jupyter = pathlib.Path(sys.executable).parent / "jupyter"
    server = subprocess.Popen(
        [str(jupyter), "lab", "--no-browser", "--allow-root", f"--port={port}",
         "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={TOKEN}",
         f"--ServerApp.root_dir={work}", *(["--debug"] if os.environ.get("GPULAB_BROWSER_DEBUG") else []), "--LabApp.expose_app_in_browser=True",
         "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        env=env, stdout=subprocess.DEVNULL, stderr=open(base / "lab.log", "wb"),
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert server.poll() is None, (base / "lab.log").read_text()[-3000:]
            time.sleep(0.5)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(arg)
    # The page's websocket frames, so a run that never starts can be told apart: requests not
    # sent, sent and not answered, or answered and not shown.
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must not download anything
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_script_timeout(60)
    try:
        yield driver, port, base
    finally:
        driver.quit()
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


def wait_for(driver, path, what, check, timeout, trace=None):
    deadline = time.monotonic() + timeout
    state = None
    while time.monotonic() < deadline:
        state = driver.execute_script(STATE_JS, path.name)
        if trace is not None:
            trace.extend(ws_messages(driver))
        if check(state):
            return state
        time.sleep(1)
    tail = "\n".join(" ".join(map(str, m)) for m in (trace or [])[-60:])
    raise AssertionError(f"timed out waiting for {what}: {state}\nlast kernel messages:\n{tail}")


def test_there_are_notebooks_to_open():
    assert len(NOTEBOOKS) >= 5


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_renders_in_jupyterlab(lab, path):
    driver, port, base = lab
    ws_messages(driver)  # drop the previous notebook's frames
    trace = []
    # `reset`: this notebook alone, not the earlier ones' tabs restored from the saved workspace
    # (with them, the current tab was for a while the previous notebook, and the checks and the
    # Run All went to it: 03 then sat with every cell unrun).
    driver.get(f"http://127.0.0.1:{port}/lab/tree/{path.name}?reset&token={TOKEN}")
    try:
        _run_and_check(driver, path, trace)
    finally:
        (base / f"ws-{path.stem}.log").write_text("\n".join(" ".join(map(str, m)) for m in trace))
        try:
            _shut_down_kernels(port)
        except OSError as e:  # cleanup must not hide the test's own failure
            print(f"{path.name}: could not shut its kernel down: {e}")


def _shut_down_kernels(port):
    """Ends this notebook's kernel, so the next notebook does not share two cores with it."""
    import urllib.request

    api = f"http://127.0.0.1:{port}/api/sessions"
    headers = {"Authorization": f"token {TOKEN}"}
    with urllib.request.urlopen(urllib.request.Request(api, headers=headers), timeout=30) as r:
        sessions = json.load(r)
    for s in sessions:
        req = urllib.request.Request(f"{api}/{s['id']}", headers=headers, method="DELETE")
        urllib.request.urlopen(req, timeout=60).close()


def _run_and_check(driver, path, trace):
    state = wait_for(driver, path, "the notebook and its kernel",
                     lambda s: s.get("ready") and s["status"] == "idle", 300, trace)
    assert driver.execute_script(PANEL_JS + "return panel.sessionContext.kernelDisplayName", path.name), \
        "no kernel selected"
    kernel = state["kernel_id"]
    # Run all, on this notebook's panel by its id (not "the current notebook"). Once the
    # websocket is connected a request goes out at once; should the page still hold it back,
    # the trace shows no execute_request to this kernel, and only then is Run All re-issued
    # (re-issuing after one was sent would run every cell twice).
    for attempt in range(3):
        driver.execute_script(
            "window.jupyterapp.commands.execute('notebook:run-all-cells', {widgetId: arguments[0]})",
            state["id"])
        try:
            wait_for(driver, path, "the run to start",
                     lambda s: s.get("running", 0) > 0 or s.get("pending", 0) < s.get("cells", 0), 60,
                     trace)
            break
        except AssertionError:
            sent = [m for m in trace if m[0] == kernel and m[1] == "sent" and m[3] == "execute_request"]
            if sent or attempt == 2:
                raise
    state = wait_for(
        driver, path, "all cells to run",
        lambda s: s.get("errors") or (s.get("pending") == 0 and s.get("running") == 0
                                      and s.get("status") == "idle"),
        RUN_TIMEOUT, trace,
    )
    assert not state["errors"], f"{path.name}: cells failed in JupyterLab: {state['errors']}"
    time.sleep(2)  # let images decode
    seen = driver.execute_script(COUNT_JS, path.name)
    print(f"{path.name}: {json.dumps({k: v for k, v in seen.items() if k != 'md_tables'})}")
    shown = {k for k in ("png", "svg", "table", "progress") if seen[k] > 0}
    missing = REQUIRED[path.name[:2]] - shown
    assert not missing, f"{path.name}: the page shows no {sorted(missing)}: {seen}"
    assert seen["png"] == seen["png_total"], f"{path.name}: a PNG did not decode: {seen}"
    assert not seen["raw_text"], f"{path.name}: rich output shown as raw text: {seen['raw_text']}"
    for t in seen["md_tables"]:
        assert t["math"] == 0, f"{path.name}: a markdown table was typeset as a formula: {t}"
    if path.name.startswith("04"):
        prices = [t for t in seen["md_tables"] if "$0.526" in t["text"]]
        assert prices, f"04: the cloud-price table lost its dollar signs: {seen['md_tables']}"
        assert prices[0]["rows"] == 3 and "$98.32" in prices[0]["text"], prices
