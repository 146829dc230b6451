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
machine. Training cells print a `TRAINED name=... first_loss=... last_loss=... val_acc=...
chance=...` line; the tests check from it that each run's loss fell and that its accuracy beat
chance by a stated margin (see TRAINING_RUNS below), in the committed outputs and in the fresh
run. After editing a source, refresh the committed outputs with

    .venv/bin/python notebooks/build.py --run

    .venv/bin/python -m pytest tests/test_notebooks.py
"""

import os
import pathlib
import re
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


# Training cells print one machine-readable line per training run, e.g.
#   TRAINED name=mnist_cnn first_loss=1.92 last_loss=0.14 val_acc=0.968 chance=0.1
# (first_loss/last_loss: the training loss at the start and at the end of the run; val_acc:
# accuracy on held-out data; chance: what always answering the most common class scores).
# Each run must lower its loss, and a classifier must beat chance by ACCURACY_MARGIN
# (absolute). The runs each notebook must report, so that removing one fails the test:
TRAINING_RUNS = {"01": {"dense", "mnist_cnn"}, "02": {"amp_mlp"}, "04": {"cat_dog_cnn"}}
ACCURACY_MARGIN = {"mnist_cnn": 0.5, "cat_dog_cnn": 0.15, "amp_mlp": 0.4}
# A regression run (no accuracy) must end at most this fraction of its starting loss.
LOSS_FALL = {"dense": 0.8}
TRAINED = re.compile(r"^TRAINED (.*)$", re.M)


def training_runs(nb):
    """The TRAINED lines of a notebook's stdout, as {name: {field: value}}."""
    runs = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        text = "".join(o.get("text", "") for o in cell.get("outputs", [])
                       if o.get("output_type") == "stream" and o.get("name") == "stdout")
        for m in TRAINED.finditer(text):
            fields = dict(kv.split("=", 1) for kv in m.group(1).split())
            name = fields.pop("name")
            runs[name] = {k: float(v) for k, v in fields.items()}
    return runs


def check_training(name, nb):
    """Asserts that every training run of notebook `name` learned: its loss fell, and its
    accuracy (classifiers) beat chance by the stated margin."""
    runs = training_runs(nb)
    missing = TRAINING_RUNS.get(name[:2], set()) - set(runs)
    assert not missing, f"{name}: no TRAINED line for {sorted(missing)}; found {sorted(runs)}"
    for run_name, f in runs.items():
        first, last = f["first_loss"], f["last_loss"]
        assert last < first, f"{name}: {run_name}'s loss did not fall: {first} -> {last}"
        if run_name in LOSS_FALL:
            assert last <= LOSS_FALL[run_name] * first, (
                f"{name}: {run_name}'s loss fell only from {first} to {last} "
                f"(must reach {LOSS_FALL[run_name]:.0%} of the start)")
        if "val_acc" in f:
            margin = ACCURACY_MARGIN.get(run_name, 0.1)
            assert f["val_acc"] >= f["chance"] + margin, (
                f"{name}: {run_name}'s accuracy {f['val_acc']} does not beat chance "
                f"{f['chance']} by {margin}")
    return runs


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
    # The committed training runs learned (the fresh run is checked the same way below).
    check_training(path.name, committed)


def _notebook_printing(lines):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="".join(lines))]
    nb.cells = [cell]
    return nb


def test_check_training_accepts_learning_and_rejects_the_rest():
    """Fast, no kernel: the training check itself can fail."""
    good = ["noise\n", "TRAINED name=mnist_cnn first_loss=1.9 last_loss=0.2 val_acc=0.9 chance=0.1\n",
            "TRAINED name=dense first_loss=1.0 last_loss=0.3\n"]
    assert set(check_training("01-x.ipynb", _notebook_printing(good))) == {"mnist_cnn", "dense"}
    bad = {
        "did not fall": "TRAINED name=dense first_loss=1.0 last_loss=1.1\n",
        "fell only": "TRAINED name=dense first_loss=1.0 last_loss=0.9\n",
        "beat chance": "TRAINED name=cat_dog_cnn first_loss=0.9 last_loss=0.6 val_acc=0.55 chance=0.5\n",
    }
    for why, line in bad.items():
        with pytest.raises(AssertionError, match=why):
            check_training("04-x.ipynb" if "cat" in line else "00-x.ipynb", _notebook_printing([line]))
    with pytest.raises(AssertionError, match="no TRAINED line"):
        check_training("04-x.ipynb", _notebook_printing(["nothing\n"]))


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

    # Each training cell's loss fell and its accuracy beat chance by the stated margin.
    for run_name, f in check_training(path.name, nb).items():
        print(f"{path.name}: trained {run_name}: {f}")

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
