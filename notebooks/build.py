#!/usr/bin/env python3
"""Builds the tutorial notebooks from their plain-text sources in src/.

The .ipynb files are generated: edit src/<name>.txt and run

    python notebooks/build.py            # every notebook
    python notebooks/build.py 01         # the ones whose name starts with 01

A source file is a sequence of cells. A line `%% md` starts a markdown cell, a line
`%% code` starts a Rust cell; everything up to the next marker is the cell's text (leading
and trailing blank lines are dropped). Notebooks are written with no outputs, so that a diff
shows only what a person changed.
"""

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


def build(src):
    nb = nbformat.v4.new_notebook()
    nb.metadata = METADATA
    nb.cells = parse(src.read_text(encoding="utf-8"))
    # Stable ids: a rebuild of an unchanged source gives an identical file.
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{src.stem[:2]}-{i:03d}"
    nbformat.validate(nb)
    out = HERE / (src.stem + ".ipynb")
    nbformat.write(nb, str(out))
    return out


def main(prefixes):
    for src in sorted((HERE / "src").glob("*.txt")):
        if prefixes and not any(src.stem.startswith(p) for p in prefixes):
            continue
        print(build(src).relative_to(HERE.parent))


if __name__ == "__main__":
    main(sys.argv[1:])
