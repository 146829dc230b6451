"""The tutorial notebooks as Rust programs (notebooks/to_program.py): every notebook converts and
builds, and a program's outputs land in the right cells of a notebook copy.

No GPU is needed: this is what makes a notebook that stops compiling fail CI, and it runs the
start-here notebook's program on the CPU. The programs are bins of one cargo package outside the
workspace; they share the workspace's target folder, so the prelude is not compiled again.

    .venv/bin/python -m pytest tests/test_notebook_programs.py
"""

import importlib.util
import json
import pathlib
import shutil
import subprocess

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
EDGE = ROOT / "tests" / "data" / "program-edge-cases.ipynb"
OUT = ROOT / "target" / "notebook-programs"

spec = importlib.util.spec_from_file_location("to_program", ROOT / "notebooks" / "to_program.py")
to_program = importlib.util.module_from_spec(spec)
spec.loader.exec_module(to_program)


@pytest.fixture(scope="module")
def built():
    if shutil.which("cargo") is None:
        pytest.fail("cargo is not on PATH: the notebook programs cannot be built")
    to_program.convert([*NOTEBOOKS, EDGE], OUT)
    bins, errors = to_program.build(OUT)
    assert not errors, "a notebook does not compile as a program:\n\n" + "\n\n".join(errors)
    return bins


def test_every_notebook_builds_as_a_program(built):
    assert NOTEBOOKS, "no notebooks found"
    for nb in NOTEBOOKS:
        name = to_program.bin_name(nb)
        assert name in built, f"{nb.name}: no program was built"
        assert pathlib.Path(built[name]).is_file()


def outputs_by_id(nb):
    return {c["id"]: c.get("outputs", []) for c in nb["cells"] if c["cell_type"] == "code"}


def mimes(outputs, kind=("display_data", "execute_result")):
    return {m for o in outputs if o["output_type"] in kind for m in o.get("data", {})}


def test_start_here_outputs_land_in_their_cells(built, tmp_path):
    nb_path = ROOT / "notebooks" / "00-start-here.ipynb"
    out = tmp_path / "00.ipynb"
    summary = to_program.run(built[to_program.bin_name(nb_path)], nb_path, out, timeout=120)
    assert summary["status"] == 0 and not summary["errors"], summary
    nb = json.loads(out.read_text())
    nbformat.validate(nbformat.reads(out.read_text(), as_version=4))
    cells = outputs_by_id(nb)
    counts = [c["execution_count"] for c in nb["cells"] if c["cell_type"] == "code"]
    assert counts == list(range(1, len(counts) + 1))
    # The first code cell names the machine (machine()'s table).
    assert "machine" in "".join(o.get("data", {}).get("text/html", "") for o in cells["00-001"])
    assert cells["00-003"] == [{"output_type": "stream", "name": "stdout", "text": "Hello from Rust! 2 + 2 = 4\n"}]
    # A trailing expression is the cell's execute_result, as evcxr shows it ({:?} of a String).
    result = [o for o in cells["00-005"] if o["output_type"] == "execute_result"]
    assert result and result[0]["data"]["text/plain"] == '"Hello from Rust, again (15 characters)"'
    assert {"text/html", "text/markdown"} <= mimes(cells["00-007"])
    assert "<table>" in cells["00-007"][0]["data"]["text/html"]
    assert "image/png" in mimes(cells["00-009"])
    png = next(o for o in cells["00-009"] if "image/png" in o.get("data", {}))["data"]["image/png"]
    import base64
    assert base64.b64decode(png)[:8] == b"\x89PNG\r\n\x1a\n"
    assert "image/svg+xml" in mimes(cells["00-011"])
    # The progress bar's updates were applied to its one output: it shows the finished bar.
    bars = [o for o in cells["00-014"] if o["output_type"] == "display_data"]
    assert len(bars) == 1 and "40/40" in bars[0]["data"]["text/plain"]
    assert cells["00-014"][-1]["data"]["text/plain"] == "780"
    assert cells["00-016"][-1]["data"]["text/plain"] in ("device(type='cpu')", "device(type='cuda', index=0)")
    shell = "".join(o.get("text", "") for o in cells["00-022"] if o["output_type"] == "stream")
    assert "kernel running on" in shell
    assert nb["metadata"]["gpulab_program_run"]["status"] == 0


def test_edge_cases_updates_scopes_and_a_panic(built, tmp_path):
    out = tmp_path / "edge.ipynb"
    written = pathlib.Path("/tmp/gpulab-edge-writefile.txt")  # the %%writefile cell's file
    written.unlink(missing_ok=True)
    summary = to_program.run(built[to_program.bin_name(EDGE)], EDGE, out, timeout=60)
    assert summary["status"] != 0
    nb = json.loads(out.read_text())
    nbformat.validate(nbformat.reads(out.read_text(), as_version=4))
    cells = outputs_by_id(nb)
    assert cells["e-001"][0]["text"] == 'x a } b; // not a comment raw ";" }\n'
    assert cells["e-002"][-1]["data"]["text/plain"] == "{1: 'a'}"
    # %%time: the updated display, the result, and the run-time line
    shown = [o for o in cells["e-003"] if o["output_type"] == "display_data"]
    assert [o["data"]["text/plain"] for o in shown] == ["second"]
    assert cells["e-003"][-1]["data"]["text/plain"] == "42"
    assert any("run:" in o.get("text", "") for o in cells["e-003"])
    # the redefined fn is the one used after it
    assert cells["e-004"][-1]["data"]["text/plain"] == "[0, 3, 6]"
    assert {"output_type": "stream", "name": "stderr", "text": "to stderr\n"} in cells["e-004"]
    # %%timeit: the kernel's wrapper, its report on stdout
    timed = "".join(o.get("text", "") for o in cells["e-008"])
    assert "per loop (mean ± std. dev. of 3 runs, 2 loops each)" in timed, cells["e-008"]
    # %%writefile: the file, and IPython's line
    assert written.read_text() == "written by the program\n"
    assert cells["e-009"][0]["text"] == f"Writing {written}\n"
    # %env: set (IPython's line), read by Rust code, shown
    assert cells["e-010"][0]["text"] == "env: GPULAB_EDGE_ENV=set by %env\n"
    assert cells["e-011"][-1]["data"]["text/plain"] == '"set by %env"'
    assert cells["e-012"][0]["text"] == "set by %env\n"
    # %%bash: the script, with the environment %env set
    assert cells["e-013"][0]["text"] == "from bash 5 set by %env\n"
    # %cd and %pwd: the program moves, says where, and comes back quietly
    tmp = str(pathlib.Path("/tmp").resolve())
    assert cells["e-015"][0]["text"] == f"{tmp}\n"
    assert cells["e-016"][-1]["data"]["text/plain"] == f'"{tmp}"'
    assert cells["e-017"] == []
    # %%html: a display_data, as the kernel sends it
    assert cells["e-014"] == [{"output_type": "display_data", "metadata": {},
                               "data": {"text/html": '<b>bold</b> "quoted" #', "text/plain": "<HTML>"}}]
    assert cells["e-005"] == []
    errors = [o for o in cells["e-006"] if o["output_type"] == "error"]
    assert len(errors) == 1 and errors[0]["ename"] == "panic" and "index out of bounds" in errors[0]["evalue"]
    assert cells["e-006"][0]["text"] == "before the panic\n"
    # Run All stops at the failing cell.
    after = next(c for c in nb["cells"] if c.get("id") == "e-007")
    assert after["outputs"] == [] and after["execution_count"] is None


def test_a_compile_error_names_the_notebook_and_cell(built, tmp_path):
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": "b-000", "metadata": {}, "outputs": [], "execution_count": None,
         "source": "let fine = 1;"},
        {"cell_type": "markdown", "id": "b-001", "metadata": {}, "source": "text"},
        {"cell_type": "code", "id": "b-002", "metadata": {}, "outputs": [], "execution_count": None,
         "source": "let a = 1;\nlet x: i32 = \"text\";"},
    ]}
    path = tmp_path / "broken.ipynb"
    path.write_text(json.dumps(nb))
    to_program.convert([path], tmp_path / "prog")
    bins, errors = to_program.build(tmp_path / "prog")
    assert bins == {}
    assert len(errors) == 1, errors
    assert "broken.ipynb: cell 2 (id b-002), line 2 of the cell" in errors[0]
    assert "E0308" in errors[0] and "mismatched types" in errors[0]


def test_magics_are_read_as_the_kernel_reads_them():
    assert to_program.classify("%%timeit -n 2\nlet a = 1;\na") == ("timeit", (2, None, "let a = 1;\na", True))
    assert to_program.classify("%timeit -r 3 -n 5 f(1)") == ("timeit", (5, 3, "f(1)", False))
    assert to_program.classify("%%time\nx") == ("time", "x")
    assert to_program.classify("%%writefile -a k.cu\nint x;") == ("writefile", ("k.cu", True, "int x;"))
    assert to_program.classify("%%bash\necho 1\nexit 3") == ("script", ("bash", "echo 1\nexit 3", True))
    assert to_program.classify("%%sh --no-raise-error\nfalse") == ("script", ("sh", "false", False))
    assert to_program.classify("%%html\n<b>x</b>") == ("show", ("text/html", "<HTML>", "<b>x</b>"))
    assert to_program.classify("%%markdown\n# T") == ("show", ("text/markdown", "# T", "# T"))
    assert to_program.classify("%pwd") == ("pwd", None)
    assert to_program.classify("%cd -q 'my data'") == ("cd", ("my data", True))
    assert to_program.classify("%cd") == ("cd", (None, False))
    assert to_program.classify("%env") == ("env", None)
    assert to_program.classify("%env CUDA_VISIBLE_DEVICES") == ("env", ("CUDA_VISIBLE_DEVICES", None))
    assert to_program.classify("%env A = b c") == ("env", ("A", "b c"))
    assert to_program.classify("%env A b") == ("env", ("A", "b"))
    assert to_program.classify("%env A=") == ("env", ("A", ""))
    for bad in ["%timeit", "%%timeit", "%timeit a\nb", "%%timeit a\nb", "%timeit -n 0 a", "%%timex\nx",
                "%env =x", "%env A=1\nB=2", "%alias", "%%bash -x\necho", "%%html --isolated\n<b>", "%cd -b x"]:
        with pytest.raises(ValueError):
            to_program.classify(bad)


def test_statement_boundaries():
    code = "let a = '{';\nlet b = \"}\"; // }\nfor i in 0..3 { }\nif a == '{' { 1 } else { 2 }"
    parts = [(code[s:e].strip(), t) for s, e, t in to_program.statements(code)]
    assert parts == [("let a = '{';", True), ('let b = "}";', True),
                     ("// }\nfor i in 0..3 { }", True), ("if a == '{' { 1 } else { 2 }", False)]
    assert to_program.is_item("#[derive(Debug)]\nstruct A;")
    assert to_program.is_item("pub(crate) fn f() {}")
    assert not to_program.is_item("unsafe { f() }")
    assert to_program.statements("x.iter()\n  .map(|v: &'static str| v)\n  .count()")[-1][2] is False


def test_fill_reports_a_returned_error_and_a_killed_program():
    nb = {"cells": [{"cell_type": "code", "source": "a", "outputs": []},
                    {"cell_type": "code", "source": "b", "outputs": []},
                    {"cell_type": "code", "source": "c", "outputs": []}]}
    out = "\x1egpulab-nb:{\"cell\":0}\nok\n\x1egpulab-nb:{\"cell\":1}\n" \
          "\x1egpulab-nb:{\"error\":{\"ename\":\"Error\",\"evalue\":\"CUDA is not available\"}}\n"
    filled = to_program.fill(nb, out, "", 1)
    assert filled["cells"][0]["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "ok\n"}]
    assert filled["cells"][1]["outputs"][-1]["evalue"] == "CUDA is not available"
    assert filled["cells"][2]["execution_count"] is None
    killed = to_program.fill(nb, "\x1egpulab-nb:{\"cell\":0}\n\x1egpulab:not json\n", "", -11,
                             {"ended": "the program was ended by signal 11"})
    outs = killed["cells"][0]["outputs"]
    assert outs[0]["text"] == "\x1egpulab:not json\n"  # a line that does not parse stays text
    assert outs[-1]["ename"] == "ProcessEnded" and "signal 11" in outs[-1]["evalue"]
