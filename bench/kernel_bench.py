#!/usr/bin/env python3
"""Kernel latency benchmark through jupyter_client: prints figures, asserts nothing.

  start -> kernel_info reply     (goal <= 0.5 s on 2 cores)
  trivial cell, median of 20     (goal <= 0.15 s; evcxr_jupyter measured 0.23 s)
  trivial cell after a cell that defines 200 functions (median)
  first notebook cell            (goal <= 2 s from kernel_info in a fresh session after ./install):
      every tutorial starts with `machine()`, a cell that declares no variable (evcxr_jupyter:
      `1`), sent the moment kernel_info answers
  first prelude cell with a `let`, two ways: start -> reply when the cell is sent the moment
      kernel_info answers (it waits for evcxr and the prelude to load), and the cell's own time
      once the session is ready (the variable's type comes from the cell's own rustc build,
      evcxr patch 4, so no rust-analyzer is loaded)

  start -> first prelude cell on a fresh build slot (a new student's first session: the slot
      starts from the prebuilt prelude that `gpulab-kernel warm` made, or compiles it without one)

Runs the same figures for evcxr_jupyter beside gpulab when its kernelspec ("rust") is installed.
With --runs N every figure is the median of N kernels (the machine is shared and noisy).
Usage: bench/kernel_bench.py [--cells N] [--runs N]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from jupyter_client.manager import KernelManager


def run_cell(kc, code, timeout=300):
    t0 = time.perf_counter()
    msg_id = kc.execute(code)
    while True:
        msg = kc.get_shell_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") == msg_id:
            break
    elapsed = time.perf_counter() - t0
    if msg["content"]["status"] != "ok":
        raise RuntimeError(f"{code!r} failed: {msg['content'].get('evalue')}")
    return elapsed


def fresh_slot_first_cell(kernel_name, prelude_cell):
    """Start -> reply of the first prelude cell, in a build-slot folder no kernel has used."""
    with tempfile.TemporaryDirectory(prefix="gpulab-bench-slots-") as d:
        km = KernelManager(kernel_name=kernel_name)
        t0 = time.perf_counter()
        km.start_kernel(env=dict(os.environ, GPULAB_CACHE_DIR=d))
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=60)
            run_cell(kc, prelude_cell, timeout=900)
            return time.perf_counter() - t0
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)


def first_cell(kernel_name, code):
    """kernel_info reply -> reply of `code`, sent as a fresh kernel's first cell."""
    km = KernelManager(kernel_name=kernel_name)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    try:
        kc.kernel_info()
        while kc.get_shell_msg(timeout=60)["msg_type"] != "kernel_info_reply":
            pass
        return run_cell(kc, code)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def measure(kernel_name, prelude_cell, cells):
    km = KernelManager(kernel_name=kernel_name)
    t0 = time.perf_counter()
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.kernel_info()
    while True:
        msg = kc.get_shell_msg(timeout=60)
        if msg["msg_type"] == "kernel_info_reply":
            break
    info = time.perf_counter() - t0
    try:
        first_prelude = run_cell(kc, prelude_cell[0]) if prelude_cell else None
        since_start = time.perf_counter() - t0
        run_cell(kc, "1")
        time.sleep(8)  # a user reading the notebook before the next cell
        ready_prelude = run_cell(kc, prelude_cell[1]) if prelude_cell else None
        trivial = [run_cell(kc, "1") for _ in range(cells)]
        # A long session: evcxr keeps every function defined so far in each cell's crate.
        run_cell(kc, "\n".join(f"fn bench_f{i}(x: i64) -> i64 {{ x + {i} }}" for i in range(200)))
        after_fns = [run_cell(kc, "1") for _ in range(max(5, cells // 4))]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return {
        "kernel_info": info,
        "first_prelude_cell": first_prelude,
        "prelude_cell_ready": ready_prelude,
        "start_to_first_prelude_reply": since_start if prelude_cell else None,
        "trivial_median": statistics.median(trivial),
        "trivial_min": min(trivial),
        "after_200_fns": statistics.median(after_fns),
    }


def fmt(x):
    return "n/a" if x is None else f"{x:.3f} s"


def median_of(runs):
    """Each figure's median over several runs (None stays None)."""
    keys = runs[0].keys()
    return {k: (None if runs[0][k] is None else statistics.median(r[k] for r in runs)) for k in keys}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", type=int, default=20)
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    specs = KernelSpecManager().find_kernel_specs()
    prelude_cells = ("let t = Tensor::ones([2, 2], Device::Cpu).unwrap();",
                     "let u = Tensor::randn([64, 64], Device::Cpu).unwrap(); u.matmul(&u).unwrap().sum().unwrap().item::<f32>().unwrap()")
    runs = []
    for _ in range(args.runs):
        r = measure("gpulab", prelude_cells, args.cells)
        r["first_notebook_cell"] = first_cell("gpulab", "machine()")
        r["fresh_slot_first_prelude"] = fresh_slot_first_cell("gpulab", prelude_cells[0])
        runs.append(r)
    rows = [("gpulab", median_of(runs))]
    if "rust" in specs:
        runs = []
        for _ in range(args.runs):
            r = measure("rust", None, args.cells)
            r["fresh_slot_first_prelude"] = None
            r["first_notebook_cell"] = first_cell("rust", "1")
            runs.append(r)
        rows.append(("evcxr_jupyter", median_of(runs)))
    else:
        print("evcxr_jupyter: not installed (no 'rust' kernelspec), so no side-by-side figures", file=sys.stderr)
    if args.runs > 1:
        print(f"medians of {args.runs} runs")
    print(f"{'kernel':<15}{'kernel_info':>14}{'info->1st cell':>16}{'start->1st let':>16}{'fresh slot':>13}{'prelude, ready':>16}{'trivial median':>17}{'trivial min':>14}{'after 200 fns':>16}")
    for name, r in rows:
        print(f"{name:<15}{fmt(r['kernel_info']):>14}{fmt(r['first_notebook_cell']):>16}{fmt(r['start_to_first_prelude_reply']):>16}{fmt(r['fresh_slot_first_prelude']):>13}"
              f"{fmt(r['prelude_cell_ready']):>16}{fmt(r['trivial_median']):>17}{fmt(r['trivial_min']):>14}{fmt(r['after_200_fns']):>16}")
    if len(rows) == 2:
        ratio = rows[1][1]["trivial_median"] / rows[0][1]["trivial_median"]
        print(f"trivial cell: gpulab is {ratio:.2f}x evcxr_jupyter's speed")


if __name__ == "__main__":
    main()
