#!/usr/bin/env python3
"""gpu-pack/run OUTDIR: verifies gpulab on this machine from a pack built by gpu-check/build.

Needs no Rust toolchain and no Jupyter: Python 3 (3.8+, standard library only for the runner;
the benchmark references use numpy, torch, CuPy and numba-cuda where installed), Linux x86-64.

    gpu-pack/run OUTDIR [--budget SECONDS] [--only probe,tests,parity,bench,notebooks] [--save MACHINE]
                        [--archive FILE.tar.gz] [--jobs N]

Writes into OUTDIR:
    gpu-results.json      everything: machine, driver, libraries loaded, every test's outcome,
                          every benchmark figure beside PyTorch, CuPy and numba-cuda
    gpu-results.md        a short summary of the same
    notebooks/*.ipynb     the tutorial notebooks with the outputs of this run
    logs/                 raw output of every program

gpu-results.json and gpu-results.md are rewritten after every step, so a run that is stopped
part-way leaves what it had. --archive also writes all of OUTDIR (results, notebooks, logs) into
one .tar.gz after every step: the device tool brings back at most 8 files from $OUT, and the
logs alone are dozens (README, "Verifying a GPU machine", gives the device command).

It finishes within --budget seconds (default 540; a GPU machine gives a command 10 minutes):
each step gets what is left, and a step that could not run in time is recorded as such. With
--only, the steps named are run again and merged into an existing gpu-results.json.
On a machine without a CUDA device the GPU tests are reported as skipped and the GPU figures
as absent: nothing is counted as passed that did not run.
"""

import argparse
import concurrent.futures
import json
import os
import pathlib
import platform
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import time

PACK = pathlib.Path(__file__).resolve().parent
# The pack's copy of notebooks/to_program.py; in a checkout (--save-only) the original.
sys.path[:0] = [str(PACK), str(PACK.parent / "notebooks")]
import to_program  # noqa: E402

STEPS = ("probe", "tests", "parity", "bench", "notebooks")


class Clock:
    def __init__(self, budget):
        self.end = time.monotonic() + budget

    def left(self, reserve=10):
        return max(0.0, self.end - time.monotonic() - reserve)


def sh(cmd, timeout=30, **kw):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout,
                           stdin=subprocess.DEVNULL, **kw)
        return p.returncode, p.stdout, p.stderr
    except OSError as e:
        return None, "", str(e)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode("utf-8", "replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return None, out, f"timed out after {timeout:.0f} s"


# Python 3.12+ checks each entry itself (and 3.14 warns without a filter); 3.8 has no filters.
EXTRACT = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}


def unpack(out):
    """The programs, unpacked once from the pack's one archive into OUTDIR/bin (the pack itself
    stays as it is)."""
    index = json.loads((PACK / "bin" / "index.json").read_text())
    dst = out / "bin"
    if not all((dst / e["kind"] / e["name"]).exists() for e in index):
        dst.mkdir(parents=True, exist_ok=True)
        with tarfile.open(PACK / "bin" / "programs.tar.xz", "r:xz") as tar:
            for member in tar.getmembers():
                # Only plain files under kind/name, as the build wrote them.
                if not member.isfile() or member.name.startswith("/") or ".." in member.name.split("/"):
                    raise SystemExit(f"unexpected entry in programs.tar.xz: {member.name}")
                tar.extract(member, dst, **EXTRACT)
    progs = {}
    for e in index:
        path = dst / e["kind"] / e["name"]
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        progs.setdefault(e["kind"], {})[e["name"]] = path
    return progs


def checkout_layout(manifest, notes):
    """The binaries look for kernels-cu/, bench/ and prelude/tests/data next to the checkout
    they were built in (CARGO_MANIFEST_DIR is compiled in). Where that folder does not exist
    here, make it."""
    root = pathlib.Path(manifest["checkout"])
    if (root / "kernels-cu").is_dir():
        return root
    try:
        (root / "prelude" / "tests").mkdir(parents=True, exist_ok=True)
        for name in ("kernels-cu", "bench", "prelude/tests/data"):
            if not (root / name).exists() and (PACK / name).exists():
                (root / name).symlink_to(PACK / name)
        notes.append(f"made {root}/kernels-cu, bench and prelude/tests/data as links into the "
                     "pack (the binaries' build path)")
    except OSError as e:
        notes.append(f"could not recreate the build path {root} ({e}): tests reading kernels-cu/ will fail")
    return root


def cuda_wheels():
    """Folders of NVIDIA's pip wheels in this Python's site-packages holding NVRTC and cuBLAS."""
    import site
    dirs = []
    for sp in [*site.getsitepackages(), site.getusersitepackages()]:
        base = pathlib.Path(sp) / "nvidia"
        if base.is_dir():
            dirs += [p for p in base.glob("*/lib") if p.is_dir()]
    found = {}
    # CUDA 13 first (what the prelude is built for), then whatever else a wheel holds.
    for pattern in ("{}.so.13*", "{}.so*"):
        for d in dirs:
            for lib, key in (("libnvrtc", "nvrtc"), ("libcublas", "cublas")):
                if key not in found and any(d.glob(pattern.format(lib))):
                    found[key] = d
    return found, [str(d) for d in dirs]


def environment(notes):
    env = dict(os.environ)
    wheels, dirs = cuda_wheels()
    # The prelude's loader takes a file or a folder in these variables (prelude/src/cuda/loader.rs).
    if "nvrtc" in wheels and "GPULAB_NVRTC_PATH" not in env:
        env["GPULAB_NVRTC_PATH"] = str(wheels["nvrtc"])
    if "cublas" in wheels and "GPULAB_CUBLAS_PATH" not in env:
        env["GPULAB_CUBLAS_PATH"] = str(wheels["cublas"])
    if dirs:
        # Their dependencies (nvrtc-builtins, cublasLt) are opened by soname.
        env["LD_LIBRARY_PATH"] = os.pathsep.join([*dict.fromkeys(str(wheels[k]) for k in wheels),
                                                  env.get("LD_LIBRARY_PATH", "")]).strip(os.pathsep)
    env.setdefault("GPULAB_PYTHON", sys.executable)
    env.setdefault("GPULAB_TORCH_PYTHON", sys.executable)  # train_bench's PyTorch reference
    env["GPULAB_BENCH_DIR"] = str(PACK / "bench")
    env["RUST_BACKTRACE"] = "1"
    if (PACK / "data" / "mnist").is_dir():  # packed by gpu-check/build when the checkout had them
        env.setdefault("GPULAB_MNIST_DIR", str(PACK / "data" / "mnist"))
    if not wheels:
        notes.append("no NVIDIA NVRTC/cuBLAS pip wheels found in this Python's site-packages")
    return env, {k: env.get(k) for k in ("GPULAB_NVRTC_PATH", "GPULAB_CUBLAS_PATH", "LD_LIBRARY_PATH",
                                         "GPULAB_PYTHON", "GPULAB_DISABLE_CUDA", "GPULAB_MNIST_DIR")}


def machine():
    info = {"hostname": platform.node(), "platform": platform.platform(), "python": sys.version.split()[0]}
    rc, out, err = sh(["nvidia-smi"])
    info["nvidia_smi"] = out if rc == 0 else f"not available: {err.strip() or rc}"
    rc, out, _ = sh(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,compute_cap,pci.bus_id",
                     "--format=csv,noheader"])
    info["gpus"] = [dict(zip(["name", "driver_version", "memory_total", "compute_cap", "bus_id"],
                             [x.strip() for x in line.split(",")])) for line in out.splitlines()] if rc == 0 else []
    try:
        info["driver_version"] = pathlib.Path("/proc/driver/nvidia/version").read_text().splitlines()[0]
    except OSError:
        info["driver_version"] = info["gpus"][0]["driver_version"] if info["gpus"] else None
    try:
        cpu = pathlib.Path("/proc/cpuinfo").read_text()
        m = re.search(r"model name\s*:\s*(.*)", cpu)
        info["cpu"] = f"{m.group(1) if m else '?'} ({os.cpu_count()} logical CPUs)"
    except OSError:
        info["cpu"] = None
    from importlib import metadata
    pkgs = {}
    for d in metadata.distributions():
        name = (d.metadata["Name"] or "").lower()
        if name in ("torch", "numpy", "numba", "numba-cuda", "cupy") or name.startswith(("cupy-", "nvidia-")):
            pkgs[name] = d.version
    info["python_packages"] = dict(sorted(pkgs.items()))
    return info


def run_probe(progs, env, clock):
    exe = progs.get("programs", {}).get("gpu-probe")
    if exe is None:
        return {"error": "the pack has no probe"}
    rc, out, err = sh([str(exe)], timeout=min(60, clock.left()), env=env)
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": f"probe failed (status {rc}): {err.strip()[-2000:]}"}


# ---------------------------------------------------------------------------------------
# tests

# A #[should_panic] test's line reads "test NAME - should panic ... ok".
RESULT = re.compile(r"^test (\S+)(?: - should panic)? \.\.\. (ok|FAILED|ignored)(?:, (.*))?$")
SECTION = re.compile(r"^---- (\S+) stdout ----$")


def parse_libtest(stdout):
    """libtest's plain output -> {name: {"outcome", ...}}. Outcomes: passed, failed, skipped
    (ignored, or passed while printing `skipped: ...`, the project's self-skip convention)."""
    tests, sections, current = {}, {}, None
    for line in stdout.splitlines():
        m = RESULT.match(line)
        if m:
            name, res, reason = m.groups()
            tests[name] = {"outcome": {"ok": "passed", "FAILED": "failed", "ignored": "skipped"}[res]}
            if reason:
                tests[name]["reason"] = reason
            current = None
            continue
        m = SECTION.match(line)
        if m:
            current = m.group(1)
            sections[current] = []
            continue
        if current is not None:
            if line in ("successes:", "failures:") or line.startswith("test result:"):
                current = None
            else:
                sections[current].append(line)
    for name, lines in sections.items():
        text = "\n".join(lines).strip()
        t = tests.setdefault(name, {"outcome": "failed"})
        if t["outcome"] == "failed":
            t["output"] = text[-6000:]
        else:
            skip = next((l.strip() for l in lines if l.strip().lower().startswith("skipped")), None)
            if skip and t["outcome"] == "passed":
                t["outcome"], t["reason"] = "skipped", skip
    return tests


def run_tests(progs, env, cwd, gpu, clock, logs, jobs=1):
    """Every test binary, `jobs` at a time (each runs its tests one by one: they share the
    device and its memory pool). Results are keyed by name, in name order."""
    def one(item):
        name, exe = item
        left = clock.left()
        if left < 5:
            return name, {"status": "not run: out of time"}
        # With a device the #[ignore]d GPU tests run; without one they stay skipped.
        args = [str(exe), "--test-threads=1", "--show-output"] + (["--include-ignored"] if gpu else [])
        start = time.monotonic()
        rc, out, err = sh(args, timeout=min(240, left), env=env, cwd=cwd)
        (logs / f"test-{name}.stdout").write_text(out)
        (logs / f"test-{name}.stderr").write_text(err)
        tests = parse_libtest(out)
        r = {"status": rc, "seconds": round(time.monotonic() - start, 2), "tests": tests}
        if rc is None:
            r["error"] = err
        elif rc != 0 and not any(t["outcome"] == "failed" for t in tests.values()):
            r["error"] = f"exited with status {rc}: {err.strip()[-3000:]}"
        print(f"  {name}: {'ok' if rc == 0 else 'FAILED' if rc is not None else 'timed out'} "
              f"in {r['seconds']:.0f} s", flush=True)
        return name, r

    # The longest first (training to 97 % on real MNIST), so it is not the last one running.
    todo = sorted(progs.get("tests", {}).items(), key=lambda kv: (kv[0] != "train_mnist_real", kv[0]))
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        done = dict(pool.map(one, todo))
    return {name: done[name] for name in sorted(done)}


def test_counts(results):
    counts = {"passed": 0, "failed": 0, "skipped": 0, "binaries_failed": 0, "binaries_not_run": 0}
    for r in results.values():
        if "tests" not in r:
            counts["binaries_not_run"] += 1
            continue
        for t in r["tests"].values():
            counts[t["outcome"]] += 1
        if r.get("error"):
            counts["binaries_failed"] += 1
    return counts


# ---------------------------------------------------------------------------------------
# benchmarks


def run_parity(progs, env, cwd, gpu, clock, logs):
    """gpulab's ops against torch's, case by case (bench/torch_parity.py): on the CPU against
    torch's recorded results, and on cuda:0 against live torch on the same GPU."""
    exe = progs.get("examples", {}).get("torch_parity")
    script = PACK / "bench" / "torch_parity.py"
    if exe is None or not script.exists():
        return {"status": "not run: not in the pack"}
    runs = [("cpu", ["--device", "cpu", "--expected", str(PACK / "bench" / "torch_parity-cpu.txt.gz")])]
    runs.append(("cuda", ["--device", "cuda"]) if gpu else ("cuda", None))
    out = {}
    for key, args in runs:
        left = clock.left()
        if args is None or left < 20:
            out[key] = {"status": "skipped: no CUDA device" if args is None else "not run: out of time"}
            continue
        rc, stdout, stderr = sh([sys.executable, str(script), "--exe", str(exe), "--json", *args],
                                timeout=min(300, left), env=env, cwd=cwd)
        (logs / f"parity-{key}.stdout").write_text(stdout)
        (logs / f"parity-{key}.stderr").write_text(stderr)
        try:
            summary = json.loads(stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            summary = {"error": (stderr.strip() or stdout.strip())[-3000:] or f"status {rc}"}
        out[key] = {"status": rc, **summary}
    return out


def bench_json(stdout):
    return [json.loads(l[len("BENCH_JSON "):]) for l in stdout.splitlines() if l.startswith("BENCH_JSON ")]


def run_bench(progs, env, cwd, clock, logs):
    out = {}
    # train_bench prints a table (training samples/s beside torch), no BENCH_JSON lines.
    plan = [("mandelbrot", "mandelbrot_bench", 240), ("tensor", "tensor_bench", 300),
            ("train", "train_bench", 300)]
    for key, name, cap in plan:
        exe = progs.get("examples", {}).get(name)
        left = clock.left()
        if exe is None or left < 20:
            out[key] = {"status": "not run: " + ("not in the pack" if exe is None else "out of time")}
            continue
        start = time.monotonic()
        rc, stdout, stderr = sh([str(exe)], timeout=min(cap, left), env=env, cwd=cwd)
        (logs / f"bench-{key}.stdout").write_text(stdout)
        (logs / f"bench-{key}.stderr").write_text(stderr)
        if rc is None:
            # Out of time with the full sizes: the quick set still gives figures.
            rc, stdout, stderr = sh([str(exe), "--quick"], timeout=min(120, clock.left()), env=env, cwd=cwd)
            (logs / f"bench-{key}-quick.stdout").write_text(stdout)
            key_note = "full run timed out; figures from --quick"
        else:
            key_note = None
        out[key] = {"status": rc, "seconds": round(time.monotonic() - start, 2),
                    "results": bench_json(stdout), "table": stdout[-12000:]}
        if key_note:
            out[key]["note"] = key_note
        if rc not in (0, None) or (key != "train" and not out[key]["results"]):
            out[key]["error"] = stderr.strip()[-3000:] or f"status {rc}, no BENCH_JSON line"
    out["summary"] = bench_summary(out)
    return out


def bench_summary(b):
    """The ratios the issue asks for: element-wise ops against the measured copy bandwidth,
    matmul against torch, Mandelbrot against numba-cuda; the dtype rows (matmul in f32, TF32,
    f16, bf16 against torch with the same settings; element-wise at 2^28 per float dtype against
    torch's copy of that dtype). Absent figures stay absent."""
    s = {"elementwise": [], "matmul": [], "mandelbrot": [], "gpu_figures": False,
         "dtype_matmul": [], "dtype_elementwise": []}
    rows = {}
    for result in (b.get("tensor") or {}).get("results") or []:
        for r in result.get("rows", []):
            rows[(r["op"], r["n"], r["impl"])] = r["seconds"]
    ns = sorted({n for (_, n, _) in rows})
    for n in ns:
        copy = [rows[("copy", n, i)] for i in ("torch", "cupy") if ("copy", n, i) in rows]
        copy_gbs = 8 * n / min(copy) / 1e9 if copy else None
        for op in ("div", "add"):
            ours = rows.get((op, n, "gpulab-cuda"))
            if ours is None:
                continue
            s["gpu_figures"] = True
            gbs = 12 * n / ours / 1e9
            s["elementwise"].append({
                "op": op, "n": n, "gpulab_GBps": round(gbs, 1),
                "copy_GBps": None if copy_gbs is None else round(copy_gbs, 1),
                "fraction_of_copy": None if copy_gbs is None else round(gbs / copy_gbs, 3),
                "torch_over_gpulab": _ratio(rows.get((op, n, "torch")), ours),
                "cupy_over_gpulab": _ratio(rows.get((op, n, "cupy")), ours)})
        ours = rows.get(("matmul", n, "gpulab-cuda"))
        if ours is not None:
            m = n ** 0.5
            s["matmul"].append({"side": int(round(m)), "gpulab_GFLOPs": round(2 * m ** 3 / ours / 1e9, 1),
                                "torch_over_gpulab": _ratio(rows.get(("matmul", n, "torch")), ours),
                                "cupy_over_gpulab": _ratio(rows.get(("matmul", n, "cupy")), ours)})
    dtype_bytes = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2}
    for (op, n, imp), secs in sorted(rows.items()):
        if imp != "gpulab-cuda" or "-" not in op:
            continue
        s["gpu_figures"] = True
        kind, dtype = op.split("-", 1)
        torch_over = _ratio(rows.get((op, n, "torch")), secs)
        if kind == "matmul":
            m = n ** 0.5
            s["dtype_matmul"].append({"dtype": dtype, "side": int(round(m)),
                                      "gpulab_TFLOPs": round(2 * m ** 3 / secs / 1e12, 2),
                                      "torch_over_gpulab": torch_over})
        elif dtype in dtype_bytes:
            size = dtype_bytes[dtype] * n
            copy = rows.get((f"copy-{dtype}", n, "torch"))
            gbs, copy_gbs = 3 * size / secs / 1e9, (2 * size / copy / 1e9 if copy else None)
            s["dtype_elementwise"].append({
                "op": kind, "dtype": dtype, "n": n, "gpulab_GBps": round(gbs, 1),
                "copy_GBps": None if copy_gbs is None else round(copy_gbs, 1),
                "fraction_of_copy": None if copy_gbs is None else round(gbs / copy_gbs, 3),
                "torch_over_gpulab": torch_over})
    for case in (b.get("mandelbrot") or {}).get("results") or []:
        by = {r["impl"]: r for r in case["rows"]}
        ours, numba = by.get("gpulab GPU kernel", {}), by.get("numba cuda.jit", {})
        s["mandelbrot"].append({
            "case": case["case"],
            "gpulab_gpu_s": ours.get("seconds"), "numba_cuda_s": numba.get("seconds"),
            "numba_over_gpulab": _ratio(numba.get("seconds"), ours.get("seconds")),
            "checksums_match": all(r.get("checksum_matches") in (True, None) for r in case["rows"]),
            "gpulab_cpu_parallel_s": by.get("gpulab CPU parallel", {}).get("seconds"),
            "numba_cpu_parallel_s": by.get("numba njit(parallel=True)", {}).get("seconds")})
        if ours.get("seconds") is not None:
            s["gpu_figures"] = True
    return s


def _ratio(ref, ours):
    return round(ref / ours, 3) if ref and ours else None


# ---------------------------------------------------------------------------------------
# notebooks


def run_notebooks(progs, env, cwd, clock, out, machine_info):
    results = []
    for name, exe in sorted(progs.get("programs", {}).items()):
        if not name.startswith("nb-"):
            continue
        nb = PACK / "notebooks" / (name[3:] + ".ipynb")
        left = clock.left()
        if left < 15:
            results.append({"notebook": nb.name, "status": "not run: out of time"})
            continue
        # Notebook 01 reads MNIST from data/mnist beside it: the packed files, when there are some.
        mnist = env.get("GPULAB_MNIST_DIR")
        link = pathlib.Path(cwd) / "data" / "mnist"
        if mnist and not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(mnist, target_is_directory=True)
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(env)
        try:
            old = os.getcwd()
            os.chdir(cwd)
            r = to_program.run(exe, nb, out / "notebooks" / nb.name, timeout=min(300, left),
                               log_dir=out / "logs", extra_info=machine_info)
        finally:
            os.chdir(old)
            os.environ.clear()
            os.environ.update(saved)
        r["out"] = f"notebooks/{nb.name}"
        results.append(r)
    return results


# ---------------------------------------------------------------------------------------
# report


def summary_md(res):
    m, p = res.get("machine", {}), res.get("probe", {})
    lines = [f"# gpulab GPU check: {m.get('hostname', '?')}", "",
             f"- run: {res.get('started')} .. {res.get('finished') or 'unfinished (stopped, or still going)'}; pack built {res['pack'].get('built')} "
             f"from {res['pack'].get('commit', '?')[:12]}{' (dirty)' if res['pack'].get('dirty') else ''}",
             f"- GPU: {', '.join(g['name'] for g in m.get('gpus', [])) or 'none'}; driver: {m.get('driver_version') or 'none'}",
             f"- CPU: {m.get('cpu')}",
             f"- CUDA through the prelude: {'available' if p.get('available') else 'not available'}"
             + ("" if p.get("available") else f" ({p.get('unavailable_reason') or p.get('error')})"),
             f"- driver API {_ok(p.get('driver_version'))}, NVRTC {_ok(p.get('nvrtc_version'))}; "
             f"NVRTC check: {_ok(p.get('nvrtc_check'))}; cuBLAS check: {_ok(p.get('cublas_check'))}; "
             f"allocator: {_ok(p.get('allocator'))}",
             "- CUDA libraries loaded: " + (", ".join(p.get("loaded_libraries", [])) or "none"),
             "- Python packages: " + (", ".join(f"{k} {v}" for k, v in m.get("python_packages", {}).items()) or "none"),
             ""]
    for n in res.get("notes", []):
        lines.append(f"- note: {n}")
    t = res.get("tests")
    if t:
        c = t["counts"]
        lines += ["", "## Tests", "",
                  f"{c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped"
                  f" ({c['binaries_failed']} binaries with errors, {c['binaries_not_run']} not run)", ""]
        for b, r in t["binaries"].items():
            if "tests" not in r:
                lines.append(f"- {b}: {r.get('status')}")
                continue
            failed = [n for n, x in r["tests"].items() if x["outcome"] == "failed"]
            skipped = [n for n, x in r["tests"].items() if x["outcome"] == "skipped"]
            passed = sum(1 for x in r["tests"].values() if x["outcome"] == "passed")
            extra = (f"; FAILED: {', '.join(failed)}" if failed else "") + (f"; skipped: {len(skipped)}" if skipped else "")
            err = f"; error: {r['error'][:200]}" if r.get("error") else ""
            lines.append(f"- {b}: {passed} passed{extra}{err}")
    par = res.get("parity")
    if par:
        lines += ["", "## Tensor ops against torch (bench/torch_parity.py)", ""]
        if "status" in par:
            lines.append(f"- {par['status']}")
        for dev, r in (x for x in par.items() if isinstance(x[1], dict)):
            if "cases" in r:
                first = "; first: " + "; ".join(r["first"][:5]) if r.get("first") else ""
                lines.append(f"- {dev}: {r['cases']} cases against torch {r['torch']}: {r['differ']} differ, "
                             f"{r['known']} known differences{first}")
            else:
                err = f"; error: {r['error'][:300]}" if r.get("error") else ""
                lines.append(f"- {dev}: {r.get('status')}{err}")
    b = res.get("bench")
    if b:
        s = b["summary"]
        lines += ["", "## Benchmarks", ""]
        if not s["gpu_figures"]:
            lines.append("GPU figures: absent (no CUDA device, or the GPU benchmark did not run).")
        largest = max((e["n"] for e in s["elementwise"]), default=None)
        for e in (e for e in s["elementwise"] if e["n"] == largest):  # every size is in the JSON
            lines.append(f"- {e['op']} n={e['n']}: {e['gpulab_GBps']} GB/s = {e['fraction_of_copy']} of the copy "
                         f"bandwidth ({e['copy_GBps']} GB/s); torch/gpulab time {e['torch_over_gpulab']}, "
                         f"cupy/gpulab {e['cupy_over_gpulab']}")
        for e in s["matmul"]:
            lines.append(f"- matmul {e['side']}^2: {e['gpulab_GFLOPs']} GFLOP/s; torch/gpulab time "
                         f"{e['torch_over_gpulab']}, cupy/gpulab {e['cupy_over_gpulab']}")
        for e in s.get("dtype_matmul", []):
            lines.append(f"- matmul {e['dtype']} {e['side']}^2: {e['gpulab_TFLOPs']} TFLOP/s; torch/gpulab time "
                         f"{e['torch_over_gpulab']}")
        for e in s.get("dtype_elementwise", []):
            lines.append(f"- {e['op']} {e['dtype']} n={e['n']}: {e['gpulab_GBps']} GB/s = {e['fraction_of_copy']} of "
                         f"the {e['dtype']} copy bandwidth ({e['copy_GBps']} GB/s); torch/gpulab time "
                         f"{e['torch_over_gpulab']}")
        for e in s["mandelbrot"]:
            lines.append(f"- Mandelbrot {e['case']}: gpulab GPU kernel {_s(e['gpulab_gpu_s'])}, numba cuda.jit "
                         f"{_s(e['numba_cuda_s'])} (numba/gpulab {e['numba_over_gpulab'] or 'absent'}); CPU parallel: "
                         f"gpulab {_s(e['gpulab_cpu_parallel_s'])}, numba {_s(e['numba_cpu_parallel_s'])}; "
                         f"checksums match: {e['checksums_match']}")
        for k in ("tensor", "mandelbrot"):
            r = b.get(k) or {}
            figures = sum(len(x.get("rows", [])) for x in r.get("results") or [])
            done = f"status {r.get('status')}, {r.get('seconds')} s" if "seconds" in r else r.get("status")
            err = f"; error: {r['error'][:300]}" if r.get("error") else ""
            note = f"; {r['note']}" if r.get("note") else ""
            lines.append(f"- {k} benchmark: {done}, {figures} figures (logs/bench-{k}.stdout){note}{err}")
        t = b.get("train")
        if t:
            done = f"status {t.get('status')}, {t.get('seconds')} s" if "seconds" in t else t.get("status")
            err = f"; error: {t['error'][:300]}" if t.get("error") else ""
            lines.append(f"- train benchmark (samples/s beside torch): {done} (logs/bench-train.stdout){err}")
            table = t.get("table", "")
            if "model " in table:
                lines += ["", "```", *table[table.index("model "):].rstrip().splitlines(), "```"]
    nbs = res.get("notebooks")
    if nbs:
        lines += ["", "## Notebooks", ""]
        for r in nbs:
            if isinstance(r.get("status"), str):
                lines.append(f"- {r['notebook']}: {r['status']}")
                continue
            errs = "; ".join(r.get("errors", []))[:300]
            lines.append(f"- {r['notebook']}: {r['cells_run']}/{r['code_cells']} cells ran in {r['seconds']} s"
                         + (f"; errors: {errs}" if errs else "; no errors"))
    return "\n".join(lines) + "\n"


def _s(seconds):
    return "absent" if seconds is None else f"{seconds:.4g} s"


def _ok(v):
    if not isinstance(v, dict):
        return "n/a"
    return v.get("ok") or f"error: {v.get('error')}"


def checkpoint(out, res, archive=None):
    """Writes the results so far (and the archive, when asked): after every step, so a run
    stopped part-way still leaves everything the finished steps found."""
    (out / "gpu-results.json").write_text(json.dumps(res, indent=1) + "\n")
    (out / "gpu-results.md").write_text(summary_md(res))
    if archive is not None:
        write_archive(out, archive)


def write_archive(out, archive):
    """OUTDIR as one .tar.gz (its unpacked programs left out), written under a temporary name
    and renamed, so the file at `archive` is always a whole archive."""
    import tarfile
    archive = pathlib.Path(archive).resolve()
    archive.parent.mkdir(parents=True, exist_ok=True)
    tmp = archive.with_name(archive.name + ".partial")
    with tarfile.open(tmp, "w:gz") as tar:
        for path in sorted(out.rglob("*")):
            rel = path.relative_to(out)
            if rel.parts[0] == "bin" or not path.is_file() or path.resolve() in (archive, tmp):
                continue
            tar.add(path, arcname=str(pathlib.Path(out.name) / rel), recursive=False)
    os.replace(tmp, archive)


def save(out, machine):
    """The repository's convention for committed results (README, "Verifying a GPU machine")."""
    repo = PACK.parent
    if not re.fullmatch(r"[A-Za-z0-9._-]+", machine):
        print(f"--save {machine!r}: use letters, digits, '.', '_' and '-' only", file=sys.stderr)
        return False
    if not ((repo / "gpu-check").is_dir() and (repo / "notebooks").is_dir()):
        print(f"--save: {repo} is not a gpulab checkout; results stay in {out}", file=sys.stderr)
        return False
    res_dir, nb_dir = repo / "gpu-check" / "results" / machine, repo / "notebooks" / "results" / machine
    res_dir.mkdir(parents=True, exist_ok=True)
    nb_dir.mkdir(parents=True, exist_ok=True)
    for f in ("gpu-results.json", "gpu-results.md"):
        shutil.copyfile(out / f, res_dir / f)
    for f in sorted((out / "notebooks").glob("*.ipynb")):
        shutil.copyfile(f, nb_dir / f.name)
    print(f"saved to {res_dir} and {nb_dir}")
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir", type=pathlib.Path)
    ap.add_argument("--budget", type=float, default=540)
    ap.add_argument("--only", default=",".join(STEPS))
    # A 16-core GPU machine runs 4 test binaries at once (the tests take no timings); the
    # benchmarks and the notebooks, which do, always run one at a time.
    ap.add_argument("--jobs", type=int, default=max(1, min(8, (os.cpu_count() or 1) // 4)),
                    help="test binaries run at once (default: a quarter of the CPUs, 1 to 8)")
    ap.add_argument("--save", metavar="MACHINE",
                    help="also copy the results into the repository holding this pack: "
                         "gpu-check/results/MACHINE/ and notebooks/results/MACHINE/")
    ap.add_argument("--save-only", action="store_true",
                    help="run nothing: copy the results already in OUTDIR (say, unpacked from an "
                         "--archive brought back from the GPU machine) into this checkout, with --save")
    ap.add_argument("--archive", metavar="FILE.tar.gz", type=pathlib.Path,
                    help="also write OUTDIR (results, notebooks, logs) as one .tar.gz after every step")
    a = ap.parse_args()
    only = [s for s in a.only.split(",") if s]
    bad = [s for s in only if s not in STEPS]
    if bad:
        ap.error(f"unknown step {bad[0]!r}: choose from {', '.join(STEPS)}")
    clock = Clock(a.budget)
    out = a.outdir.resolve()
    if a.save_only:
        if not a.save:
            ap.error("--save-only needs --save MACHINE")
        if not (out / "gpu-results.json").is_file():
            ap.error(f"--save-only: {out} has no gpu-results.json")
        return 0 if save(out, a.save) else 2
    (out / "logs").mkdir(parents=True, exist_ok=True)
    results_file = out / "gpu-results.json"
    res = json.loads(results_file.read_text()) if results_file.exists() and a.only != ",".join(STEPS) else {}
    notes = []
    res["started"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    res["pack"] = json.loads((PACK / "manifest.json").read_text())
    progs = unpack(out)
    root = checkout_layout(res["pack"], notes)
    cwd = root / "prelude" if (root / "prelude").is_dir() else PACK
    env, res["environment"] = environment(notes)
    res["machine"] = machine()
    res["probe"] = run_probe(progs, env, clock)
    res["finished"] = None  # set at the end; None in a checkpoint means the run was still going
    res["notes"] = notes
    checkpoint(out, res, a.archive)
    gpu = bool(res["probe"].get("available"))
    print(f"CUDA through the prelude: {'available' if gpu else 'not available'}", flush=True)
    if "tests" in only:
        print("running the test binaries ...", flush=True)
        binaries = run_tests(progs, env, cwd, gpu, clock, out / "logs", a.jobs)
        res["tests"] = {"gpu_tests_included": gpu, "binaries": binaries, "counts": test_counts(binaries)}
        checkpoint(out, res, a.archive)
    if "parity" in only:
        print("comparing the tensor ops with torch's ...", flush=True)
        res["parity"] = run_parity(progs, env, cwd, gpu, clock, out / "logs")
        checkpoint(out, res, a.archive)
    if "notebooks" in only:
        print("running the notebook programs ...", flush=True)
        m = res["machine"]
        where = {"machine": m.get("hostname"), "gpu": ", ".join(g["name"] for g in m.get("gpus", [])) or None,
                 "driver": m.get("driver_version"), "pack_commit": res["pack"].get("commit")}
        res["notebooks"] = run_notebooks(progs, env, cwd, clock, out, where)
        checkpoint(out, res, a.archive)
    if "bench" in only:
        print("running the benchmarks ...", flush=True)
        res["bench"] = run_bench(progs, env, cwd, clock, out / "logs")
    res["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    shutil.rmtree(out / "bin", ignore_errors=True)  # unpacked programs: not results
    checkpoint(out, res, a.archive)
    print(summary_md(res))
    if a.save:
        save(out, a.save)
    failed = res.get("tests", {}).get("counts", {}).get("failed", 0)
    nb_errors = sum(len(r.get("errors", [])) for r in res.get("notebooks", []))
    parity = res.get("parity", {})
    differ = sum(r.get("differ", 0) for r in parity.values() if isinstance(r, dict))
    return 1 if failed or nb_errors or differ else 0


if __name__ == "__main__":
    sys.exit(main())
