#!/usr/bin/env python3
"""Turns the tutorial notebooks into Rust programs, and a program's output back into a notebook.

    to_program.py convert [--out DIR] [NOTEBOOK ...]
        Writes a cargo project (default target/notebook-programs) with one bin per notebook
        (`nb-<stem>`): the notebook's code cells, in order, in one function, plus
        DIR/cellmap.json, which maps each line of a generated file back to its cell.
    to_program.py run --bin PROGRAM --notebook NB --out OUT.ipynb [--timeout S] [--log DIR]
        Runs PROGRAM, and writes a copy of NB with the outputs it produced (see `fill`).
    to_program.py build [--out DIR] [--target-dir DIR]
        cargo build --release of that project; a compile error is reported with the notebook,
        the cell and the line in the cell it comes from. Prints the built programs as JSON.
    to_program.py fill --notebook NB --stdout FILE --stderr FILE --status N --out OUT.ipynb
        The same from a run recorded elsewhere.

A cell becomes what the gpulab kernel would run for it (ARCHITECTURE.md, "A cell's journey"):
  - Rust: its statements. Items (`fn`, `struct`, `use`) are legal in a function body. A
    trailing expression is shown as the kernel shows it: `(expr).evcxr_display()`, which the
    prelude's `EvcxrDisplay` gives every `Debug` type (rich types have their own).
    `?` works because the function returns `Result<(), CellError>`.
  - `!cmd` lines (a cell of nothing else): `sh -c cmd`, output shown, failure not fatal.
  - `%%time` / `%time`: the code, then its run time. `%%timeit` / `%timeit`: the code in the
    kernel's wrapper (the prelude's `timeit_cell`). `%env`: `program_rt::env`. `%%bash` / `%%sh`: `program_rt::script`.
    `%%html`, `%%markdown`, `%%svg`, `%%latex`: the body shown through the prelude's `display`.
    `%cd` / `%pwd`: `program_rt::cd` / `pwd` (the program is the cell process). `?name`, `:doc name` and other `:`
    commands are help or evcxr settings: left out, with a comment saying so.
The program prints a marker before each cell (notebooks/program_rt.rs), so `fill` can sort
stdout (plain text, the prelude's display-channel lines, evcxr MIME blocks) and stderr back
into the cells as nbformat outputs: stream, display_data (update_display_data applied to the
output carrying that display_id), execute_result, error.

Uses only the standard library: the GPU machine that runs `run` may not have nbformat.
"""

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_OUT = ROOT / "target" / "notebook-programs"
RT_MARK = "\x1egpulab-nb:"
DISPLAY_MARK = "\x1egpulab:"

ITEM_WORDS = {
    "fn", "pub", "struct", "enum", "union", "impl", "trait", "type", "mod", "use", "extern",
    "const", "static", "macro_rules", "async",
}

# ---------------------------------------------------------------------------------------
# A small Rust lexer: enough to find top-level statement boundaries in a cell.


def _skip_ws_comments(s, i):
    n = len(s)
    while i < n:
        if s[i].isspace():
            i += 1
        elif s.startswith("//", i):
            j = s.find("\n", i)
            i = n if j < 0 else j + 1
        elif s.startswith("/*", i):
            i = _skip_block_comment(s, i)
        else:
            break
    return i


def _skip_block_comment(s, i):
    depth, i = 1, i + 2
    while i < len(s) and depth:
        if s.startswith("/*", i):
            depth, i = depth + 1, i + 2
        elif s.startswith("*/", i):
            depth, i = depth - 1, i + 2
        else:
            i += 1
    return i


def _skip_string(s, i):
    """s[i] is the opening quote of a normal string; returns the index after the closing one."""
    i += 1
    while i < len(s):
        if s[i] == "\\":
            i += 2
        elif s[i] == '"':
            return i + 1
        else:
            i += 1
    return i


def _raw_string_at(s, i):
    """If a raw string (r"..", r#".."#, br"..") starts at i, the index after it; else None."""
    m = re.match(r'(?:b|c)?r(#*)"', s[i:i + 300])
    if not m or (i > 0 and (s[i - 1].isalnum() or s[i - 1] == "_")):
        return None
    end = s.find('"' + m.group(1), i + m.end())
    return len(s) if end < 0 else end + 1 + len(m.group(1))


def statements(code):
    """Top-level statements of a cell as (start, end, terminated): `terminated` is False only
    for the text after the last `;` or block statement, i.e. a possible trailing expression."""
    out, depth, start, i, n = [], 0, 0, 0, len(code)
    while i < n:
        c = code[i]
        if code.startswith("//", i) or code.startswith("/*", i):
            i = _skip_ws_comments(code, i)
            continue
        raw = _raw_string_at(code, i) if c in "rbc" else None
        if raw is not None:
            i = raw
            continue
        if c == '"':
            i = _skip_string(code, i)
            continue
        if c == "b" and code.startswith("b'", i) and not (i and (code[i - 1].isalnum() or code[i - 1] == "_")):
            i += 1
            c = "'"
        if c == "'":
            # char literal ('a', '\n', '\u{1F600}') or a lifetime / label ('a, 'static)
            if code.startswith("\\", i + 1):
                j = i + 2
                while j < n and code[j] != "'":
                    j += 1
                i = j + 1
            elif i + 2 < n and code[i + 2] == "'":
                i += 3
            else:
                i += 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0 and c == "}":
                j = _skip_ws_comments(code, i + 1)
                nxt = code[j:j + 5]
                continues = (
                    j < n
                    and (nxt[:1] in tuple(".?+-*/%^|&=<>,)]:;")
                         or re.match(r"(else|as)\b", code[j:j + 5]))
                )
                if not continues and j < n:
                    out.append((start, i + 1, True))
                    start = i + 1
        elif c == ";" and depth == 0:
            out.append((start, i + 1, True))
            start = i + 1
        i += 1
    if code[start:].strip() and _skip_ws_comments(code, start) < n:
        out.append((start, n, False))
    return out


def _first_word(text):
    t = _skip_ws_comments(text, 0)
    while text.startswith("#[", t) or text.startswith("#![", t):  # attributes
        depth, t = 0, t + 1
        while t < len(text):
            depth += {"[": 1, "]": -1}.get(text[t], 0)
            t += 1
            if depth == 0:
                break
        t = _skip_ws_comments(text, t)
    m = re.match(r"[A-Za-z_][A-Za-z0-9_]*!?", text[t:])
    return (m.group(0) if m else ""), text[t:]


def is_item(text):
    word, rest = _first_word(text)
    word = word.rstrip("!")
    if word == "unsafe":
        return not re.match(r"unsafe\s*\{", rest)
    return word in ITEM_WORDS


ITEM_NAME = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:(?:async|unsafe|const|extern\s+\"[^\"]*\")\s+)*"
    r"(fn|struct|enum|union|trait|type|const|static|mod)\s+(?:mut\s+)?([A-Za-z_][A-Za-z0-9_]*)"
)


def item_name(text):
    _, rest = _first_word(text)
    m = ITEM_NAME.match(rest)
    return m.group(2) if m else None


# ---------------------------------------------------------------------------------------
# convert


def rust_str(s):
    hashes = "#"
    while '"' + hashes in s:
        hashes += "#"
    return f'r{hashes}"{s}"{hashes}'


# IPython's display cell magics as the kernel shows them (magics::DISPLAY_MAGICS): the MIME
# type, and the plain-text stand-in (None: the body itself).
DISPLAY_MAGICS = {"%%html": ("text/html", "<HTML>"), "%%markdown": ("text/markdown", None),
                  "%%md": ("text/markdown", None), "%%svg": ("image/svg+xml", "<SVG image>"),
                  "%%latex": ("text/latex", None)}


def classify(source):
    """What the kernel's magics::classify would make of the cell (kernel/src/magics/mod.rs)."""
    trimmed = source.strip()
    lines = [line.strip() for line in trimmed.splitlines() if line.strip()]
    if lines and all(line.startswith("!") for line in lines):
        return "shell", [line[1:].strip() for line in lines]
    m = re.match(r"(%%html|%%markdown|%%md|%%svg|%%latex)(?=\s|$)", trimmed)
    if m:
        line, _, body = trimmed[m.end():].partition("\n")
        if line.strip():
            raise ValueError(f"{m.group(1)} takes no options")
        mime, plain = DISPLAY_MAGICS[m.group(1)]
        return "show", (mime, plain if plain is not None else body, body)
    m = re.match(r"%%(bash|sh)(?=\s|$)", trimmed)
    if m:
        line, _, body = trimmed[m.end():].partition("\n")
        opts = line.split()
        if any(o != "--no-raise-error" for o in opts):
            raise ValueError(f"%%{m.group(1)}: unknown option in {line.strip()!r}")
        return "script", (m.group(1), body, "--no-raise-error" not in opts)
    timeit = classify_timeit(trimmed)
    if timeit is not None:
        return "timeit", timeit
    if re.match(r"%%time(\s|$)", trimmed):
        return "time", trimmed[len("%%time"):].lstrip(" \t").lstrip("\n")
    if trimmed.startswith("%time "):
        return "time", trimmed[len("%time "):].strip()
    if trimmed.startswith("%"):
        first, _, body = trimmed.partition("\n")
        words = first.split()
        if words[0] in ("%lsmagic", "%who", "%whos"):
            return "help", first
        if words[0] == "%pwd" and len(words) == 1 and not body.strip():
            return "pwd", None
        if words[0] == "%cd":
            if body.strip():
                raise ValueError("%cd takes one line")
            rest = first[len("%cd"):].strip()
            quiet = bool(re.match(r"-q(\s|$)", rest))
            if quiet:
                rest = rest[2:].strip()
            if len(rest) > 1 and rest.startswith("-"):
                raise ValueError(f"%cd: option {rest!r} is not supported")
            rest = rest.strip("\"'")
            return "cd", (rest or None, quiet)
        if words[0] == "%env":
            return "env", classify_env(first[len("%env"):], body)
        if words[0] == "%%writefile" and len(words) > 1:
            append = words[1] in ("-a", "--append")
            path = " ".join(words[2:] if append else words[1:]).strip("\"'")
            if path:
                return "writefile", (path, append, body)
        raise ValueError(f"{words[0]}: not a magic the kernel runs (kernel/src/magics/mod.rs)")
    if len(lines) == 1:
        line = lines[0]
        name = line[5:] if line.startswith(":doc ") else (
            line[1:] if line.startswith("?") else (line[:-1] if line.endswith("?") else None))
        if name is not None and re.fullmatch(r"[\w:]+", name.strip()):
            return "help", line
    return "rust", source


def classify_env(rest, body):
    """`%env`'s line after the magic, as the kernel reads it (magics::env_magic): None to list,
    (name, None) to show, (name, value) to set. Raises ValueError where the kernel answers
    with a UsageError."""
    if body.strip():
        raise ValueError("%env takes one line")
    rest = rest.strip()
    if not rest:
        return None
    if "=" in rest:
        name, value = (part.strip() for part in rest.split("=", 1))
    elif re.search(r"\s", rest):
        name, value = re.split(r"\s", rest, maxsplit=1)
        value = value.strip()
    else:
        name, value = rest, None
    if not name or re.search(r"[\s\0]", name) or (value is not None and "\0" in value):
        raise ValueError(f"%env: {name!r} is not a variable name")
    return name, value


def classify_timeit(trimmed):
    """`%timeit CODE` or `%%timeit` + code below, as the kernel reads them
    (magics::timeit_options): (loops, runs, code, cell_magic), or None for another cell.
    Raises ValueError where the kernel answers with a UsageError."""
    m = re.match(r"(%%timeit|%timeit)(?=\s|$)", trimmed)
    if not m:
        return None
    cell_magic = m.group(1) == "%%timeit"
    line, _, body = trimmed[m.end():].partition("\n")
    opts = {"-n": None, "-r": None}
    rest = line.strip()
    while (o := re.match(r"(-[nr])\s*(\d+)", rest)):
        opts[o.group(1)] = int(o.group(2))
        rest = rest[o.end():].lstrip()
    if 0 in opts.values():
        raise ValueError(f"{m.group(1)}: -n and -r must be at least 1")
    if cell_magic:
        if rest or not body.strip():
            raise ValueError("%%timeit: the code goes on the lines below it")
        return opts["-n"], opts["-r"], body, True
    if body.strip() or not rest:
        raise ValueError("%timeit: the code goes on its own line, and only there")
    return opts["-n"], opts["-r"], rest, False


def timeit_wrapper(loops, runs):
    """The kernel's wrapper around a %timeit cell's code (magics::timeit_cell_code)."""
    opt = lambda v: "None" if v is None else f"Some({v})"  # noqa: E731
    return (f"gpulab::timeit::timeit_cell({opt(loops)}, {opt(runs)}, || -> ::std::result::Result<(), "
            "::std::boxed::Box<dyn ::std::error::Error + Send + Sync>> { "
            "let __gpulab_value = ::gpulab::timeit::Value({",
            "}); { #[allow(unused_imports)] use ::gpulab::timeit::{ValueIsErr as _, ValueIsOther as _, "
            "ValueIsResult as _}; (&&&__gpulab_value).outcome()?; } "
            "::std::hint::black_box(&__gpulab_value); ::std::result::Result::Ok(()) })?;")


class Program:
    """The generated text of one bin, with each line's origin (cell index, line in cell)."""

    def __init__(self):
        self.lines = []  # (text, cell_index or None, line_in_cell or None)

    def add(self, text, cell=None, first_line=None):
        for k, line in enumerate(text.split("\n")):
            self.lines.append((line, cell, None if first_line is None else first_line + k))

    def text(self):
        return "\n".join(t for t, _, _ in self.lines) + "\n"


def convert_notebook(nb_path, nb):
    prog = Program()
    prog.add(f"// Generated by notebooks/to_program.py from {nb_path}: do not edit.\n"
             "#![allow(unused, dead_code, unreachable_code, unused_must_use, clippy::all)]\n"
             "#[path = \"../program_rt.rs\"]\n"
             "mod program_rt;\n"
             "use gpulab::*;\n\n"
             "fn main() {\n"
             "    program_rt::start();\n"
             "    program_rt::finish(cells());\n"
             "}\n\n"
             "fn cells() -> Result<(), program_rt::CellError> {")
    seen_uses, items, open_blocks = set(), set(), 0
    for index, cell in enumerate(nb["cells"]):
        if cell.get("cell_type") != "code":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        cid = cell.get("id", "")
        kind, body = classify(source)
        # Items declared twice in one block do not compile; the kernel lets a later cell
        # replace an earlier definition. A new block from that cell on does the same.
        names = set()
        if kind in ("rust", "time"):
            for s, e, _ in statements(body):
                if is_item(body[s:e]) and item_name(body[s:e]):
                    names.add(item_name(body[s:e]))
        if names & items:
            prog.add("{ // a later cell redefines an item: a new scope, as the kernel replaces it")
            open_blocks += 1
            items = set()
        items |= names
        prog.add(f"// ---- cell {index} (id {cid}): {kind}")
        prog.add(f"program_rt::cell({index});")
        if kind == "shell":
            for k, cmd in enumerate(body):
                prog.add(f"program_rt::shell({rust_str(cmd)})?;", index, None)
            continue
        if kind == "help":
            prog.add(f"// help request left out (needs rust-analyzer): {body}")
            continue
        if kind == "pwd":
            prog.add("(program_rt::pwd()).evcxr_display();", index, None)
            continue
        if kind == "cd":
            arg, quiet = body
            prog.add(f"program_rt::cd({'None' if arg is None else f'Some({rust_str(arg)})'}, "
                     f"{str(quiet).lower()})?;", index, None)
            continue
        if kind == "show":
            mime, plain, text = body
            prog.add(f"gpulab::display::display(&gpulab::display::MimeBundle::new().with({rust_str(mime)}, "
                     f"{rust_str(text)}).with(\"text/plain\", {rust_str(plain)}));", index, None)
            continue
        if kind == "script":
            shell, text, raise_error = body
            prog.add(f"program_rt::script({rust_str(shell)}, {rust_str(text)}, {str(raise_error).lower()})?;",
                     index, None)
            continue
        if kind == "env":
            name, value = body if body is not None else (None, None)
            arg = lambda v: "None" if v is None else f"Some({rust_str(v)})"
            prog.add(f"program_rt::env({arg(name)}, {arg(value)})?;", index, None)
            continue
        if kind == "writefile":
            path, append, text = body
            text = text if not text or text.endswith("\n") else text + "\n"
            prog.add(f"program_rt::write_file({rust_str(path)}, {str(append).lower()}, {rust_str(text)})?;",
                     index, None)
            continue
        if kind == "timeit":
            loops, runs, code, cell_magic = body
            first = source[:source.find(code)].count("\n") if code in source else 0
            open_, close = timeit_wrapper(loops, runs)
            code = code.rstrip()
            last = code.splitlines()[-1].lstrip() if code else ""
            if last.startswith("let ") and not last.endswith(";"):
                code += ";"  # as the kernel does: a final `let` needs its `;` inside the block
            prog.add(open_, index, None)
            prog.add(code, index, first)
            prog.add(close, index, None)
            continue
        if kind == "time":
            prog.add("let __nb_time = std::time::Instant::now();")
        # Line offset of `body` inside the cell, for the line map.
        offset = source[:source.find(body)].count("\n") if body and body in source else 0
        for s, e, terminated in statements(body):
            text = body[s:e]
            first = offset + body[:s].count("\n")
            lead = len(text) - len(text.lstrip("\n"))
            text, first = text[lead:], first + lead
            if text.strip().startswith(":") and is_evcxr_command(text):
                prog.add("// evcxr command left out: " + text.strip().replace("\n", " "))
                continue
            if is_item(text) and _first_word(text)[0] == "use":
                key = re.sub(r"\s+", "", text)
                if key in seen_uses:
                    prog.add("// (repeated `use` left out)" + "\n" * text.count("\n"), index, first)
                    continue
                seen_uses.add(key)
            if not terminated and not is_item(text):
                prog.add("(", index, None)
                prog.add(text, index, first)
                prog.add(").evcxr_display();", index, None)
            else:
                prog.add(text, index, first)
        if kind == "time":
            prog.add("program_rt::time_report(__nb_time);")
    prog.add("}" * open_blocks)
    prog.add("Ok(())\n}")
    return prog


def is_evcxr_command(text):
    return re.match(r"\s*:(dep|vars|opt|clear|timing|type|t|fmt|explain|sccache|cache|linker|"
                    r"last_compile_dir|last_error_json|efmt|toolchain|offline|quit|help|internal_debug|"
                    r"preserve_vars_on_panic|allow_static_linking)\b", text) is not None


def bin_name(nb_path):
    return "nb-" + pathlib.Path(nb_path).stem


def manifest(bins):
    prelude = (ROOT / "prelude").as_posix()
    lines = [
        "# Generated by notebooks/to_program.py: the tutorial notebooks as programs.",
        "[package]",
        'name = "gpulab-notebook-programs"',
        'version = "0.0.0"',
        'edition = "2021"',
        "publish = false",
        "autobins = false",
        "",
        "# Not part of the repository's workspace (CI's `cargo test --workspace` stays as it is).",
        "[workspace]",
        "",
        "[dependencies]",
        f'gpulab = {{ path = "{prelude}" }}',
        "",
        "# The same as the workspace's, so a shared target folder reuses its compiled prelude.",
        "[profile.release]",
        "codegen-units = 16",
        "incremental = false",
        "debug = false",
        "",
    ]
    for name, path in bins:
        lines += ["[[bin]]", f'name = "{name}"', f'path = "{path}"', ""]
    return "\n".join(lines)


def convert(notebooks, out, extra_bins=()):
    """`extra_bins`: (name, source file) pairs built in the same package (gpu-check's probe)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "src").mkdir(exist_ok=True)
    # The workspace's lock file: the versions the prelude is tested with, no resolution.
    if not (out / "Cargo.lock").exists() or (ROOT / "Cargo.lock").stat().st_mtime > (out / "Cargo.lock").stat().st_mtime:
        shutil.copyfile(ROOT / "Cargo.lock", out / "Cargo.lock")
    bins, cellmap = [], {}
    for nb_path in notebooks:
        nb_path = pathlib.Path(nb_path).resolve()
        nb = json.loads(nb_path.read_text(encoding="utf-8"))
        prog = convert_notebook(nb_path.relative_to(ROOT) if nb_path.is_relative_to(ROOT) else nb_path, nb)
        name = bin_name(nb_path)
        rel = f"src/bin/{name}.rs"
        (out / "src" / "bin").mkdir(exist_ok=True)
        write_if_changed(out / rel, prog.text())
        bins.append((name, rel))
        cellmap[name] = {
            "notebook": str(nb_path),
            "file": rel,
            "cell_ids": {str(i): c.get("id", "") for i, c in enumerate(nb["cells"])},
            # generated line (1-based) -> [cell index, line in cell (0-based) or null]
            "lines": {str(k + 1): [c, l] for k, (_, c, l) in enumerate(prog.lines) if c is not None},
        }
    for name, src in extra_bins:
        rel = f"src/bin/{name}.rs"
        write_if_changed(out / rel, pathlib.Path(src).read_text(encoding="utf-8"))
        bins.append((name, rel))
    # Every bin's `#[path]` is relative to src/bin/.
    write_if_changed(out / "src" / "bin" / ".." / "program_rt.rs", (HERE / "program_rt.rs").read_text())
    write_if_changed(out / "Cargo.toml", manifest(bins))
    write_if_changed(out / "cellmap.json", json.dumps(cellmap, indent=1))
    return bins


def write_if_changed(path, text):
    # Unchanged files keep their mtime, so cargo does not rebuild them.
    path = pathlib.Path(os.path.normpath(path))
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def build(out, target_dir=None, extra_args=()):
    """`cargo build --release` of the generated project. Returns (bins, errors): the built
    programs by bin name, and each compiler error as text that names the notebook, the cell
    (position and id) and the line in the cell, followed by rustc's own message."""
    target_dir = pathlib.Path(target_dir or ROOT / "target")
    cmd = ["cargo", "build", "--release", "--message-format=json-diagnostic-rendered-ansi",
           "--target-dir", str(target_dir), *extra_args]
    p = subprocess.run(cmd, cwd=out, capture_output=True, text=True)
    cellmap = json.loads((pathlib.Path(out) / "cellmap.json").read_text())
    by_file = {v["file"]: (k, v) for k, v in cellmap.items()}
    bins, errors = {}, []
    for line in p.stdout.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") and \
                "bin" in msg["target"]["kind"]:
            bins[msg["target"]["name"]] = msg["executable"]
        if msg.get("reason") != "compiler-message" or msg["message"]["level"] not in ("error", "error: internal compiler error"):
            continue
        m = msg["message"]
        rendered = re.sub(r"\x1b\[[0-9;]*m", "", m.get("rendered") or m["message"])
        where = "in the generated scaffolding"
        for span in m.get("spans", []):
            if not span.get("is_primary"):
                continue
            hit = by_file.get(span["file_name"])
            if not hit:
                continue
            name, info = hit
            cell, line_in_cell = info["lines"].get(str(span["line_start"]), [None, None])
            nb = pathlib.Path(info["notebook"])
            nb = nb.relative_to(ROOT) if nb.is_relative_to(ROOT) else nb
            if cell is None:
                where = f"{nb}: in the generated code of {info['file']} line {span['line_start']}"
            else:
                cid = info["cell_ids"].get(str(cell), "")
                at = "" if line_in_cell is None else f", line {line_in_cell + 1} of the cell"
                where = f"{nb}: cell {cell} (id {cid}){at}"
            break
        errors.append(f"{where}\n{rendered}")
    if p.returncode != 0 and not errors:
        errors.append(f"cargo build failed (status {p.returncode}):\n{p.stderr[-4000:]}")
    return bins, errors


# ---------------------------------------------------------------------------------------
# fill: a program's stdout/stderr back into notebook outputs


def _stream(outputs, name, text):
    if outputs and outputs[-1].get("output_type") == "stream" and outputs[-1]["name"] == name:
        outputs[-1]["text"] += text
    else:
        outputs.append({"output_type": "stream", "name": name, "text": text})


class CellOutputs:
    def __init__(self):
        self.outputs, self.result, self.error, self.clear_pending = [], None, None, False
        self.stderr = ""

    def add(self, out):
        if self.clear_pending:
            self.outputs.clear()
            self.clear_pending = False
        self.outputs.append(out)


def _lines(text):
    """Lines with their "\n". Not str.splitlines: it also splits at \x1e, which starts every
    display-channel line."""
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    return out + [parts[-1]] if parts[-1] else out


def parse_stdout(text, cells, by_id):
    current = None
    lines = _lines(text)
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line.startswith(RT_MARK):
            try:
                msg = json.loads(line[len(RT_MARK):])
            except ValueError:
                msg = None
            if isinstance(msg, dict) and "cell" in msg:
                current = cells.setdefault(int(msg["cell"]), CellOutputs())
                continue
            if isinstance(msg, dict) and "error" in msg and current is not None:
                e = msg["error"]
                current.error = {"output_type": "error", "ename": e.get("ename", "Error"),
                                 "evalue": e.get("evalue", ""),
                                 "traceback": [f"{e.get('ename', 'Error')}: {e.get('evalue', '')}"]}
                continue
        if current is None:
            continue  # nothing runs before the first cell's marker
        if line.startswith(DISPLAY_MARK):
            try:
                msg = json.loads(line[len(DISPLAY_MARK):])
            except ValueError:
                msg = None
            if isinstance(msg, dict) and apply_display(msg, current, by_id):
                continue
        if line.startswith("EVCXR_BEGIN_CONTENT "):
            mime = line[len("EVCXR_BEGIN_CONTENT "):].strip()
            body = []
            while i < len(lines) and not lines[i].startswith("EVCXR_END_CONTENT"):
                body.append(lines[i])
                i += 1
            i += 1
            current.result = current.result or {}
            current.result[mime] = "".join(body)[:-1] if body else ""
            continue
        if current.outputs and current.outputs[-1].get("output_type") == "stream" and not current.clear_pending:
            _stream(current.outputs, "stdout", line)
        else:
            current.add({"output_type": "stream", "name": "stdout", "text": line})


def apply_display(msg, current, by_id):
    op = msg.get("op")
    if op == "display":
        out = {"output_type": "display_data", "data": msg.get("data", {}), "metadata": msg.get("metadata", {})}
        current.add(out)
        if msg.get("display_id"):
            by_id.setdefault(msg["display_id"], []).append(out)
        return True
    if op == "update":
        # update_display_data: every output shown under that id takes the new content.
        for out in by_id.get(msg.get("display_id"), []):
            out["data"] = msg.get("data", {})
            out["metadata"] = msg.get("metadata", {})
        return True
    if op == "clear":
        if msg.get("wait"):
            current.clear_pending = True
        else:
            current.outputs.clear()
        return True
    if op == "panic":
        message, location = msg.get("message", ""), msg.get("location", "")
        current.error = {"output_type": "error", "ename": "panic", "evalue": message,
                         "traceback": [f"panicked at {location}:", message]}
        return True
    return False


def parse_stderr(text, cells):
    current = None
    for line in _lines(text):
        if line.startswith(RT_MARK):
            try:
                msg = json.loads(line[len(RT_MARK):])
            except ValueError:
                msg = None
            if isinstance(msg, dict):
                if "cell" in msg:
                    current = cells.setdefault(int(msg["cell"]), CellOutputs())
                continue
        if current is None or line.startswith("panicked at "):
            continue  # the panic is shown as the cell's error
        current.stderr += line


def fill(nb, stdout, stderr, status, info=None):
    """Returns a copy of notebook `nb` (a dict) with the outputs of one program run."""
    nb = json.loads(json.dumps(nb))
    cells, by_id = {}, {}
    parse_stdout(stdout, cells, by_id)
    parse_stderr(stderr, cells)
    ran = sorted(cells)
    last = ran[-1] if ran else None
    count = 0
    for index, cell in enumerate(nb["cells"]):
        if cell.get("cell_type") != "code":
            continue
        cell["outputs"] = []
        cell["execution_count"] = None
        c = cells.get(index)
        if c is None:
            continue
        count += 1
        cell["execution_count"] = count
        outs = list(c.outputs)
        if c.stderr:
            _stream(outs, "stderr", c.stderr)
        if c.result and not c.error:
            outs.append({"output_type": "execute_result", "execution_count": count, "data": c.result, "metadata": {}})
        if c.error is None and index == last and status != 0:
            # The program ended inside this cell without saying why: a signal or a timeout.
            why = info.get("ended") if info else None
            c.error = {"output_type": "error", "ename": "ProcessEnded",
                       "evalue": why or f"the program ended with status {status}",
                       "traceback": [why or f"the program ended with status {status}"]}
        if c.error:
            outs.append(c.error)
        cell["outputs"] = outs
    if info:
        nb.setdefault("metadata", {})["gpulab_program_run"] = info
    return nb


def run(bin_path, nb_path, out_path, timeout, log_dir=None, extra_info=None):
    """Runs one notebook program and writes the notebook copy; `extra_info` (e.g. the machine)
    goes into the copy's metadata beside the run's status and time."""
    nb = json.loads(pathlib.Path(nb_path).read_text(encoding="utf-8"))
    start = time.monotonic()
    ended = None
    try:
        p = subprocess.run([str(bin_path)], stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
        stdout, stderr, status = p.stdout, p.stderr, p.returncode
        if status < 0:
            ended = f"the program was ended by signal {-status}"
    except subprocess.TimeoutExpired as e:
        stdout, stderr, status = e.stdout or b"", e.stderr or b"", -9
        ended = f"the program did not finish within {timeout} s and was stopped"
    seconds = time.monotonic() - start
    stdout, stderr = stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace")
    if log_dir:
        log_dir = pathlib.Path(log_dir)
        log_dir.mkdir(parents=True, exist_ok=True)
        (log_dir / (pathlib.Path(nb_path).stem + ".stdout")).write_text(stdout)
        (log_dir / (pathlib.Path(nb_path).stem + ".stderr")).write_text(stderr)
    info = {"program": pathlib.Path(bin_path).name, "status": status, "seconds": round(seconds, 3),
            "ended": ended, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **(extra_info or {})}
    filled = fill(nb, stdout, stderr, status, info)
    pathlib.Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(out_path).write_text(json.dumps(filled, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    errors = [o for c in filled["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    return {"notebook": pathlib.Path(nb_path).name, "status": status, "seconds": round(seconds, 3),
            "ended": ended, "errors": [f"{e['ename']}: {e['evalue']}" for e in errors],
            "cells_run": sum(1 for c in filled["cells"] if c.get("execution_count")),
            "code_cells": sum(1 for c in filled["cells"] if c.get("cell_type") == "code")}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert")
    c.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    c.add_argument("--extra-bin", action="append", default=[], metavar="NAME=FILE",
                   help="another program of the same package (gpu-check's probe)")
    c.add_argument("notebooks", nargs="*")
    r = sub.add_parser("run")
    r.add_argument("--bin", required=True)
    r.add_argument("--notebook", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--timeout", type=float, default=300)
    r.add_argument("--log")
    b = sub.add_parser("build")
    b.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    b.add_argument("--target-dir", type=pathlib.Path)
    f = sub.add_parser("fill")
    f.add_argument("--notebook", required=True)
    f.add_argument("--stdout", required=True)
    f.add_argument("--stderr", required=True)
    f.add_argument("--status", type=int, required=True)
    f.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    if a.cmd == "convert":
        nbs = a.notebooks or sorted(str(p) for p in HERE.glob("*.ipynb"))
        extra = [tuple(x.split("=", 1)) for x in a.extra_bin]
        for name, rel in convert(nbs, a.out, extra):
            print(f"{a.out / rel}")
    elif a.cmd == "build":
        bins, errors = build(a.out, a.target_dir)
        for e in errors:
            print(e, file=sys.stderr)
        print(json.dumps(bins, indent=1))
        return 1 if errors else 0
    elif a.cmd == "run":
        print(json.dumps(run(a.bin, a.notebook, a.out, a.timeout, a.log)))
    else:
        nb = json.loads(pathlib.Path(a.notebook).read_text(encoding="utf-8"))
        filled = fill(nb, pathlib.Path(a.stdout).read_text(), pathlib.Path(a.stderr).read_text(), a.status)
        pathlib.Path(a.out).write_text(json.dumps(filled, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    sys.exit(main())
