"""Runs every tutorial notebook in notebooks/ top to bottom on the installed gpulab kernel.

A notebook passes when no cell fails (nbclient stops at the first error) and it produced the
rich outputs it is meant to show: images, plots and tables, not only text. These checks catch a
notebook that runs but whose pictures silently went missing (e.g. a display that fell back to
its text form).

    .venv/bin/python -m pytest tests/test_notebooks.py
"""

import os
import pathlib
import time

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
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


def test_there_are_notebooks():
    names = [p.name for p in NOTEBOOKS]
    assert len(names) >= 5, names
    assert names[0].startswith("00-"), names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_and_shows_its_figures(path):
    source = nbformat.read(str(path), as_version=4)
    assert source.metadata["kernelspec"]["name"] == "gpulab"
    for cell in source.cells:
        if cell.cell_type == "code":
            assert not cell.get("outputs"), f"{path.name}: commit notebooks with outputs cleared"

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
