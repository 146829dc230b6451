#!/usr/bin/env python3
"""Builds the tutorial notebooks from their plain-text sources in src/.

The .ipynb files are generated: edit src/<name>.txt and run

    python notebooks/build.py            # every notebook
    python notebooks/build.py 01         # the ones whose name starts with 01
    python notebooks/build.py --run      # ... and run them, saving their outputs

A source file is a sequence of cells. A line `%% md` starts a markdown cell, a line
`%% code` starts a Rust cell; everything up to the next marker is the cell's text (leading
and trailing blank lines are dropped).

The notebooks are committed WITH the outputs of a real run, so a reader browsing the
repository sees the plots, images and measured numbers (the first code cell of each names the
machine that produced them). `--run` executes each notebook top to bottom on the installed
gpulab kernel (or $GPULAB_KERNEL_NAME) and saves the outputs. Without `--run`, a notebook whose
cells did not change keeps its saved outputs; one whose cells changed is written without
outputs, and tests/test_notebooks.py fails until it is re-run with `--run`.
"""

import os
import pathlib
import sys

import nbformat

HERE = pathlib.Path(__file__).resolve().parent

METADATA = {
    "kernelspec": {"name": "gpulab", "display_name": "Rust + GPU (gpulab)", "language": "rust"},
    "language_info": {
        "name": "rust",
        "file_extension": ".rs",
        "mimetype": "text/rust",
        "codemirror_mode": "rust",
        "pygments_lexer": "rust",
    },
}


def parse(text):
    cells, kind, lines = [], None, []

    def flush():
        if kind is None:
            return
        body = "\n".join(lines).strip("\n")
        if not body.strip():
            return
        if kind == "md":
            cells.append(nbformat.v4.new_markdown_cell(body))
        else:
            cells.append(nbformat.v4.new_code_cell(body))

    for line in text.splitlines():
        marker = line.strip()
        if marker in ("%% md", "%% code"):
            flush()
            kind, lines = marker[3:], []
        else:
            lines.append(line)
    flush()
    return cells


def same_cells(a, b):
    """Whether two lists of cells have the same types and sources, in order."""
    return len(a) == len(b) and all(
        x.cell_type == y.cell_type and x.source == y.source for x, y in zip(a, b)
    )


def ran_with_cuda(nb):
    """Whether the run that produced `nb`'s outputs had a CUDA device, read from the first
    code cell's `machine()` table (None when the notebook has no outputs)."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            text = out.get("data", {}).get("text/plain", "")
            if "GPU" in text:
                return "no CUDA device" not in text
        return None
    return None


def execute(nb, path, kernel_name=None):
    """Runs `nb` on the gpulab kernel, filling in its outputs (raises on a cell error)."""
    from nbclient import NotebookClient

    NotebookClient(
        nb,
        kernel_name=kernel_name or os.environ.get("GPULAB_KERNEL_NAME", "gpulab"),
        timeout=600,
        startup_timeout=300,
        allow_errors=False,
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    return nb


def build(src, run=False):
    nb = nbformat.v4.new_notebook()
    nb.metadata = dict(METADATA)
    nb.cells = parse(src.read_text(encoding="utf-8"))
    # Stable ids: a rebuild of an unchanged source gives an identical file.
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{src.stem[:2]}-{i:03d}"
    out = HERE / (src.stem + ".ipynb")
    if run:
        execute(nb, out)
    elif out.exists():
        old = nbformat.read(str(out), as_version=4)
        if same_cells(old.cells, nb.cells):
            nb = old  # unchanged: keep the saved outputs
        else:
            print(f"{out.name}: cells changed; outputs dropped: run build.py --run {src.stem[:2]}")
    nbformat.validate(nb)
    nbformat.write(nb, str(out))
    return out


def main(args):
    run = "--run" in args
    prefixes = [a for a in args if a != "--run"]
    for src in sorted((HERE / "src").glob("*.txt")):
        if prefixes and not any(src.stem.startswith(p) for p in prefixes):
            continue
        print(build(src, run=run).relative_to(HERE.parent), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
