"""The crates' top-level modules depend on each other in layers, without cycles.

ARCHITECTURE.md draws the layers; this test reads every `crate::…` path in the sources (test
modules left out) and fails on a cycle between two top-level modules, naming the files that
close it. One mutual dependency is by design and listed in ALLOWED: a tensor records its
autograd node and the autograd rules are written with tensor ops (candle's backprop and
torch's autograd are built the same way).
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CRATES = {"prelude": ROOT / "prelude" / "src", "kernel": ROOT / "kernel" / "src"}
ALLOWED = {"prelude": {frozenset({"autograd", "tensor"})}, "kernel": set()}


def _code(src):
    """The source without comments (docs mention other modules freely) and without its
    `#[cfg(test)]` module, the crates' convention for unit tests."""
    cut = src.find("#[cfg(test)]\nmod tests")
    src = src if cut < 0 else src[:cut]
    return re.sub(r"//[^\n]*", "", src)


def _names_in_group(text, start):
    """The first path segment of each item in the `{…}` group opening at text[start]."""
    depth, item, names = 0, "", []
    for ch in text[start:]:
        if ch == "{":
            depth += 1
            if depth == 1:
                continue
        elif ch == "}":
            depth -= 1
            if depth == 0:
                break
        if depth == 1 and ch == ",":
            names.append(item)
            item = ""
        else:
            item += ch
    names.append(item)
    heads = (re.match(r"\s*(\w+)", n) for n in names)
    return [m.group(1) for m in heads if m and m.group(1) != "self"]


def _paths(src):
    """First segments of every `crate::…` path in src."""
    out = [m.group(1) for m in re.finditer(r"\bcrate::(\w+)", src)]
    out += [n for m in re.finditer(r"\bcrate::\{", src) for n in _names_in_group(src, m.end() - 1)]
    return out


def _module_of(path, src_dir):
    rel = path.relative_to(src_dir)
    return rel.parts[0].removesuffix(".rs")


def _graph(src_dir):
    files = sorted(src_dir.rglob("*.rs"))
    modules = {_module_of(f, src_dir) for f in files} - {"lib", "main"}
    # Names the crate root re-exports (`pub use tensor::{Tensor, …}`) or exports as macros
    # resolve to the module that defines them.
    alias = {}
    lib = src_dir / "lib.rs"
    if lib.exists():
        text = lib.read_text()
        for m in re.finditer(r"pub use (\w+)::(\{|\w+)", text):
            names = _names_in_group(text, m.start(2)) if m.group(2) == "{" else [m.group(2)]
            for n in names:
                alias[n] = m.group(1)
            # `pub use x::{a as b}` and `x::y as z`
            for a in re.finditer(r"\bas (\w+)", text[m.start() : text.find(";", m.start())]):
                alias[a.group(1)] = m.group(1)
    for f in files:
        for m in re.finditer(r"macro_rules!\s*(\w+)", f.read_text()):
            alias[m.group(1)] = _module_of(f, src_dir)
    edges = {}
    for f in files:
        mod = _module_of(f, src_dir)
        if mod in ("lib", "main"):
            continue
        for name in _paths(_code(f.read_text())):
            target = name if name in modules else alias.get(name)
            if target and target != mod:
                edges.setdefault((mod, target), set()).add(str(f.relative_to(src_dir.parent)))
    return modules, edges


def _cycles(modules, edges):
    """Pairs (a, b) with a path a -> b and a path b -> a."""
    succ = {m: {b for (a, b) in edges if a == m} for m in modules}

    def reach(a):
        seen, todo = set(), [a]
        while todo:
            for b in succ.get(todo.pop(), ()):
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
        return seen

    r = {m: reach(m) for m in modules}
    return {frozenset({a, b}) for (a, b) in edges if a in r[b]}


@pytest.mark.parametrize("crate", sorted(CRATES))
def test_top_level_modules_form_layers_without_cycles(crate):
    modules, edges = _graph(CRATES[crate])
    assert len(modules) > 5 and edges, "the scan found no modules: has the layout changed?"
    bad = _cycles(modules, edges) - ALLOWED[crate]
    detail = []
    for pair in sorted(bad, key=sorted):
        a, b = sorted(pair)
        for x, y in ((a, b), (b, a)):
            via = sorted(edges.get((x, y), {"(through other modules)"}))
            detail.append(f"{x} -> {y}: {', '.join(via)}")
    assert not bad, f"{crate}: module cycles\n" + "\n".join(detail)


def test_the_scan_sees_a_cycle_when_there_is_one(tmp_path):
    src = tmp_path / "src"
    (src / "a").mkdir(parents=True)
    (src / "lib.rs").write_text("pub mod a; mod b; mod c;\npub use b::Thing;\n")
    (src / "a" / "mod.rs").write_text("use crate::{c::{X, Y}, Thing};\n")
    (src / "b.rs").write_text("/// Not `crate::c`.\npub struct Thing;\nuse crate::a;\n")
    (src / "c.rs").write_text(
        "pub struct X;\n#[cfg(test)]\nmod tests {\n    use crate::a;\n}\n"
    )
    modules, edges = _graph(src)
    assert set(edges) == {("a", "c"), ("a", "b"), ("b", "a")}
    assert _cycles(modules, edges) == {frozenset({"a", "b"})}
