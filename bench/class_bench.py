#!/usr/bin/env python3
"""A class at once: N gpulab kernels started at the same moment, as N students pressing
Shift+Enter on the first cell of a lesson. Prints figures, asserts nothing.

For each N (1, 2, 4, 8 by default):
  first result     seconds from "start the kernel" to the reply of its first cell (`1`), per
                   student (min / median / max): evcxr starting, the prelude building or loading
  cell latency     a trivial cell run --cells times by every student right after their first
                   result, while the others may still be compiling: median and 95th percentile
  memory           peak resident memory per kernel's process tree, and its parts: the kernel
                   process, rust-analyzer, evcxr's cell child, builds (cargo, rustc and the
                   kernel binary re-run as rustc's wrapper); sampled every --sample seconds
  disk             per student: their build slot (GPULAB_CACHE_DIR/slots/slot-K) and the
                   shared part (evcxr's compiled-dependency cache in XDG_CACHE_HOME/evcxr, the
                   extracted prelude), all kept in the run's own cache folder
and the growth per added student (least-squares slope over N).

Each N runs on a FRESH cache (a cold class: every slot compiles the prelude, as on the first
lesson) unless --cache DIR names one to reuse (a warm class: slots left by an earlier run).
Uses jupyter_client directly (no hub: the hub adds only the spawn of each student's server,
measured by tests/test_jupyterhub.py). Runs the same class with evcxr_jupyter when its
kernelspec "rust" is installed.

    .venv/bin/python bench/class_bench.py                      # N = 1 2 4 8, cold
    .venv/bin/python bench/class_bench.py --students 16 30     # a bigger class
    .venv/bin/python bench/class_bench.py --warm               # a later lesson: slots already built
"""

import argparse
import os
import pathlib
import resource
import statistics
import sys
import tempfile
import threading
import time

import psutil
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from jupyter_client.manager import KernelManager

TRIVIAL = "let x = 1 + 1; x"
PARTS = ("kernel", "rust-analyzer", "cell child", "builds")


def classify(proc, kernel_pid):
    """Which part of a kernel's tree a process is."""
    try:
        name = proc.name()
        if proc.pid == kernel_pid:
            return "kernel"
        if "rust-analyzer" in name:
            return "rust-analyzer"
        if name in ("cargo", "rustc", "cc", "ld", "collect2", "rustup") or name.startswith("rustc"):
            return "builds"
        parent = proc.parent()
        pname = parent.name() if parent else ""
        if parent and parent.pid == kernel_pid and "gpulab" in name:
            return "cell child"  # evcxr's child process: the same binary, re-run
        if pname in ("cargo", "rustc") or "rustc" in " ".join(proc.cmdline()[:3]):
            return "builds"  # the kernel binary re-run as evcxr's rustc wrapper, linkers, ...
        return "builds" if parent and parent.pid != kernel_pid else "cell child"
    except psutil.Error:
        return None


class Sampler(threading.Thread):
    """Samples every kernel's process tree; keeps the peak per part and of the whole tree, and
    the last sample."""

    def __init__(self, pids, every):
        super().__init__(daemon=True)
        self.pids, self.every = pids, every
        self.peak = {pid: dict.fromkeys(PARTS + ("total",), 0) for pid in pids}
        self.last = {pid: dict.fromkeys(PARTS + ("total",), 0) for pid in pids}
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            for pid in self.pids:
                try:
                    root = psutil.Process(pid)
                    procs = [root] + root.children(recursive=True)
                except psutil.Error:
                    continue
                sums = dict.fromkeys(PARTS, 0)
                for p in procs:
                    part = classify(p, pid)
                    try:
                        if part:
                            sums[part] += p.memory_info().rss
                    except psutil.Error:
                        pass
                peak = self.peak[pid]
                for part, v in sums.items():
                    peak[part] = max(peak[part], v)
                peak["total"] = max(peak["total"], sum(sums.values()))
                self.last[pid] = {**sums, "total": sum(sums.values())}
            self.stop.wait(self.every)


def du(path):
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def student(km, cells, out, start_gate):
    r = {"errors": []}
    try:
        start_gate.wait()
        t0 = time.perf_counter()
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=300)
        reply = kc.execute_interactive("1", timeout=1800, output_hook=lambda m: None)
        r["first"] = time.perf_counter() - t0
        if reply["content"]["status"] != "ok":
            r["errors"].append(f"first cell: {reply['content'].get('evalue')}")
        r["lat"] = []
        for _ in range(cells):
            c0 = time.perf_counter()
            reply = kc.execute_interactive(TRIVIAL, timeout=600, output_hook=lambda m: None)
            if reply["content"]["status"] != "ok":
                r["errors"].append(f"trivial cell: {reply['content'].get('evalue')}")
                break
            r["lat"].append(time.perf_counter() - c0)
        kc.stop_channels()
    except Exception as e:  # noqa: BLE001 - reported with the figures
        r["errors"].append(f"{type(e).__name__}: {e}")
    out.append(r)


def run_class(kernel, n, cells, cache, sample):
    # XDG_CACHE_HOME too: evcxr keeps its compiled-dependency cache (`:cache`) there, shared by
    # every kernel of the user; left at ~/.cache it would make a "cold" class half warm.
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = dict(os.environ, GPULAB_CACHE_DIR=str(cache / "cache"), XDG_DATA_HOME=str(cache / "data"),
               XDG_CACHE_HOME=str(cache / "xdg-cache"))
    kms = [KernelManager(kernel_name=kernel) for _ in range(n)]
    for km in kms:
        km.start_kernel(env=env)
    pids = [km.provisioner.process.pid for km in kms]
    sampler = Sampler(pids, sample)
    sampler.start()
    gate, results = threading.Event(), []
    threads = [threading.Thread(target=student, args=(km, cells, results, gate)) for km in kms]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join()
    sampler.stop.set()
    sampler.join()
    for km in kms:
        km.shutdown_kernel(now=True)
    # CPU seconds of every kernel tree (kernel, evcxr's child, cargo, rustc: each waited for by
    # its parent, so they all add up in this process's children once the kernels are reaped).
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
    slots = sorted((cache / "cache" / "slots").glob("slot-*[0-9]"))
    slot_sizes = [du(s) for s in slots if s.is_dir()]
    shared = du(cache) - sum(slot_sizes)
    return results, sampler.peak, slot_sizes, shared, cpu


MB = 1e6


def report(kernel, n, results, peak, slot_sizes, shared, cpu):
    errors = [e for r in results for e in r["errors"]]
    firsts = [r["first"] for r in results if "first" in r and not r["errors"]]
    lats = [x for r in results if not r["errors"] for x in r.get("lat", [])]
    row = {"n": n, "errors": errors}
    print(f"\n{kernel}, {n} student(s) at once" + (f": {len(errors)} FAILED: {errors[:3]}" if errors else ""))
    if firsts:
        row["first_med"] = statistics.median(firsts)
        print(f"  first result   min {min(firsts):6.1f} s   median {row['first_med']:6.1f} s   max {max(firsts):6.1f} s")
    if lats:
        row["lat_med"], row["lat_p95"] = statistics.median(lats), percentile(lats, 0.95)
        print(f"  trivial cell   median {row['lat_med']:.2f} s   p95 {row['lat_p95']:.2f} s   ({len(lats)} cells)")
    totals = [p["total"] for p in peak.values()]
    row["mem_max"] = max(totals) / MB
    print(f"  peak memory per kernel tree  median {statistics.median(totals) / MB:5.0f} MB   max {row['mem_max']:5.0f} MB")
    for part in PARTS:
        vals = [p[part] for p in peak.values()]
        note = ""
        if part == "rust-analyzer" and not any(vals):
            note = "   (no separate process: evcxr links rust-analyzer in, so it counts under kernel)"
        print(f"    {part:14s} median {statistics.median(vals) / MB:5.0f} MB   max {max(vals) / MB:5.0f} MB{note}")
    row["slot"] = statistics.mean(slot_sizes) / MB if slot_sizes else 0
    row["disk"] = (sum(slot_sizes) + shared) / MB
    print(f"  disk: {len(slot_sizes)} slot(s) of {row['slot']:.0f} MB on average, shared {shared / MB:.0f} MB, total {row['disk']:.0f} MB")
    print(f"  CPU time of the class: {cpu:.0f} s ({cpu / n:.0f} s per student: first cell and {len(lats) // max(1, n)} trivial ones)")
    return row


def slope(rows, key):
    pts = [(r["n"], r[key]) for r in rows if key in r]
    if len(pts) < 2:
        return None
    mx = statistics.mean(x for x, _ in pts)
    my = statistics.mean(y for _, y in pts)
    den = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / den if den else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--students", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--cells", type=int, default=10, help="trivial cells per student (default 10)")
    ap.add_argument("--cache", type=pathlib.Path, help="reuse this cache folder (warm); default: a fresh one per N")
    ap.add_argument("--warm", action="store_true",
                    help="first run a class of max(N) students once, unreported, on one cache folder, then "
                         "measure every N on its warm slots (a later lesson of the same class)")
    ap.add_argument("--sample", type=float, default=0.25, help="seconds between memory samples")
    ap.add_argument("--kernel", default=os.environ.get("GPULAB_KERNEL_NAME", "gpulab"))
    args = ap.parse_args()

    kernels = [args.kernel]
    try:
        KernelSpecManager().get_kernel_spec("rust")
        kernels.append("rust")
    except NoSuchKernel:
        print("evcxr_jupyter (kernelspec 'rust') is not installed: gpulab only")
    print(f"machine: {psutil.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB; "
          f"load average now {os.getloadavg()[0]:.1f} (other work on the machine skews every figure)")
    warm_dir = None
    if args.warm and not args.cache:
        warm_dir = tempfile.TemporaryDirectory(prefix="class-bench-warm-")
        args.cache = pathlib.Path(warm_dir.name)
    for kernel in kernels:
        rows = []
        if args.warm:
            n = max(args.students)
            print(f"\nwarming {n} build slots with one unreported class of {n} ...", flush=True)
            cpu = run_class(kernel, n, 1, args.cache, args.sample)[-1]
            print(f"  CPU time of the warming class: {cpu:.0f} s ({cpu / n:.0f} s per student, cold)", flush=True)
        for n in args.students:
            if args.cache:
                args.cache.mkdir(parents=True, exist_ok=True)
                rows.append(report(kernel, n, *run_class(kernel, n, args.cells, args.cache, args.sample)))
            else:
                with tempfile.TemporaryDirectory(prefix=f"class-bench-{n}-") as d:
                    rows.append(report(kernel, n, *run_class(kernel, n, args.cells, pathlib.Path(d), args.sample)))
        print(f"\n{kernel}: growth per added student (least-squares slope over N = {args.students})")
        for key, unit, what in (("first_med", "s", "median first result"), ("lat_p95", "s", "trivial cell p95"),
                                ("mem_max", "MB", "peak memory of the largest kernel tree"),
                                ("disk", "MB", "disk in all")):
            s = slope(rows, key)
            print(f"  {what:40s} " + (f"{s:+.2f} {unit} per student" if s is not None else "n/a"))
    if warm_dir:
        warm_dir.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
