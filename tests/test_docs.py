"""The docs' Rust examples run in the real kernel: every ```rust block of a guide is a cell, run
in order in one session, and a ```text block right after one holds lines its stdout must
contain, in that order (other lines, such as the no-GPU notice, may come between)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GUIDES = ["docs/from-pytorch.md"]


def cells(text):
    """[(code, expected lines or None)] for the guide's ```rust blocks."""
    blocks = re.findall(r"```(\w+)\n(.*?)```", text, flags=re.S)
    out = []
    for i, (lang, body) in enumerate(blocks):
        if lang != "rust":
            continue
        nxt = blocks[i + 1] if i + 1 < len(blocks) else None
        expected = nxt[1].splitlines() if nxt and nxt[0] == "text" else None
        out.append((body, expected))
    return out


def contains_in_order(lines, expected):
    at = 0
    for line in lines:
        if at < len(expected) and line.rstrip() == expected[at].rstrip():
            at += 1
    return at == len(expected)


@pytest.mark.parametrize("guide", GUIDES)
def test_every_example_runs_and_prints_what_the_guide_shows(kernel, guide):
    examples = cells((ROOT / guide).read_text())
    assert len(examples) >= 5, "the guide's examples were not found"
    for code, expected in examples:
        reply, outputs = kernel.execute(code)
        assert reply["status"] == "ok", f"{guide}: cell failed:\n{code}\n{reply.get('evalue')}"
        if expected:
            out = kernel.stdout(outputs).splitlines()
            assert contains_in_order(out, expected), (
                f"{guide}: the cell\n{code}\nprinted\n" + "\n".join(out) + "\nnot\n" + "\n".join(expected))
