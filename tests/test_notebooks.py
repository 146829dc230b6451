"""Runs every tutorial notebook in notebooks/ top to bottom on the installed gpulab kernel.

A notebook passes when no cell fails (nbclient stops at the first error) and it produced the
rich outputs it is meant to show: images, plots and tables, not only text. These checks catch a
notebook that runs but whose pictures silently went missing (e.g. a display that fell back to
its text form).

The notebooks are committed with the outputs of a real run. The tests check that those outputs
come from the current sources: the committed cells equal the cells built from
notebooks/src/*.txt, every code cell has outputs from a run, and a fresh run gives the same
STRUCTURE (per cell: the sequence of output kinds, such as text on stdout, an HTML table, an
SVG plot, a PNG image), not the same numbers, which change from run to run and machine to
machine. After editing a source, refresh the committed outputs with

    .venv/bin/python notebooks/build.py --run

    .venv/bin/python -m pytest tests/test_notebooks.py
"""

import os
import pathlib
import sys
import time

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "notebooks"))
import build  # noqa: E402  (notebooks/build.py: the source parser and the run's CUDA flag)

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SOURCES = sorted((ROOT / "notebooks" / "src").glob("*.txt"))
REFRESH = ".venv/bin/python notebooks/build.py --run"
KERNEL_NAME = os.environ.get("GPULAB_KERNEL_NAME", "gpulab")

# Seconds per cell. Generous: the first cell of a session may wait for the prelude to build.
CELL_TIMEOUT = 600

RICH = {"image/png", "image/svg+xml", "text/html", "text/markdown"}

# MIME types a notebook must show at least once (beyond "some rich output"), by name prefix.
REQUIRED = {
    "00": {"image/png", "image/svg+xml", "text/html", "text/markdown"},
    "01": {"image/svg+xml", "text/html"},
    "02": {"image/svg+xml", "image/png", "text/html"},
    "03": {"image/svg+xml", "text/html"},
    "04": {"image/png", "image/svg+xml", "text/html"},
}


def run(path):
    nb = nbformat.read(str(path), as_version=4)
    client = NotebookClient(
        nb,
        kernel_name=KERNEL_NAME,
        timeout=CELL_TIMEOUT,
        startup_timeout=300,
        allow_errors=False,
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.monotonic()
    client.execute()
    return nb, time.monotonic() - start


def mimes_shown(nb):
    shown = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") in ("display_data", "execute_result"):
                shown.update(out.get("data", {}).keys())
    return shown


def kind_of(mime):
    """The kind of thing a reader sees for a MIME type."""
    return {
        "image/png": "png",
        "image/svg+xml": "svg",
        "text/html": "html",
        "text/markdown": "markdown",
        "text/plain": "text",
    }.get(mime, mime)


def structure(cell):
    """A code cell's outputs as a list of kinds: ("stream", "stdout"), ("rich", ("html",
    "text")), ("error",). Consecutive writes to one stream count once, since how a program's
    output is split into messages depends on timing."""
    kinds = []
    for out in cell.get("outputs", []):
        t = out["output_type"]
        if t == "stream":
            k = ("stream", out["name"])
            if kinds and kinds[-1] == k:
                continue
        elif t in ("display_data", "execute_result"):
            k = ("rich", tuple(sorted(kind_of(m) for m in out.get("data", {}))))
        else:
            k = (t,)
        kinds.append(k)
    return kinds


def test_there_are_notebooks():
    names = [p.name for p in NOTEBOOKS]
    assert len(names) >= 5, names
    assert names[0].startswith("00-"), names
    assert [p.stem for p in SOURCES] == [p.stem for p in NOTEBOOKS]


@pytest.mark.parametrize("src", SOURCES, ids=[p.stem for p in SOURCES])
def test_committed_notebook_is_built_and_run_from_its_source(src):
    """Fast, no kernel: the .ipynb holds exactly the source's cells, and outputs of a run."""
    path = ROOT / "notebooks" / (src.stem + ".ipynb")
    committed = nbformat.read(str(path), as_version=4)
    assert committed.metadata["kernelspec"]["name"] == "gpulab"
    want = build.parse(src.read_text(encoding="utf-8"))
    assert build.same_cells(committed.cells, want), (
        f"{path.name} is not built from {src.name}: run {REFRESH} {src.stem[:2]}"
    )
    code = [c for c in committed.cells if c.cell_type == "code"]
    not_run = [i for i, c in enumerate(code) if not isinstance(c.get("execution_count"), int)]
    assert not not_run, f"{path.name}: code cells {not_run} have no outputs; run {REFRESH}"
    errors = [c.source[:60] for c in code if ("error",) in structure(c)]
    assert not errors, f"{path.name}: committed outputs hold errors in {errors}"
    # The first code cell names the machine that produced every number below it.
    first = "".join(o.get("data", {}).get("text/plain", "") for o in code[0].outputs)
    for field in ("CPU", "cores", "GPU", "OS"):
        assert field in first, f"{path.name}: the first cell does not name the machine: {first!r}"
    assert build.ran_with_cuda(committed) is not None


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_and_shows_its_figures(path):
    committed = nbformat.read(str(path), as_version=4)
    nb, seconds = run(path)
    print(f"{path.name}: {seconds:.1f} s")

    errors = [
        out
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert not errors, errors

    shown = mimes_shown(nb)
    assert shown & RICH, f"{path.name} showed no rich output at all: {sorted(shown)}"
    missing = REQUIRED.get(path.name[:2], set()) - shown
    assert not missing, f"{path.name} never showed {sorted(missing)}; it showed {sorted(shown)}"

    # Every code cell ran (nbclient numbers each execution).
    counts = [c.get("execution_count") for c in nb.cells if c.cell_type == "code"]
    assert all(isinstance(n, int) for n in counts), counts

    # The committed outputs have the structure of this run's (numbers aside). A run on the
    # other kind of machine (GPU vs none) takes other branches, so then only the cells are
    # compared, and the test says so.
    assert build.same_cells(committed.cells, nb.cells)
    if build.ran_with_cuda(committed) != build.ran_with_cuda(nb):
        print(f"{path.name}: committed outputs come from a run "
              f"{'with' if build.ran_with_cuda(committed) else 'without'} CUDA, this run is "
              f"not: output structure not compared (cells are)")
        return
    code_old = [c for c in committed.cells if c.cell_type == "code"]
    code_new = [c for c in nb.cells if c.cell_type == "code"]
    for old, new in zip(code_old, code_new):
        assert structure(old) == structure(new), (
            f"{path.name}: the committed outputs of the cell starting "
            f"{new.source.splitlines()[0]!r} are not what the current sources give: "
            f"{structure(old)} vs {structure(new)}; run {REFRESH} {path.name[:2]}"
        )
