#!/usr/bin/env python3
"""How much memory one student's kernel takes through a lesson: each notebook named runs top to
bottom on a fresh gpulab kernel (nbclient, as `jupyter nbconvert --execute` would), while its
process tree is sampled as bench/class_bench.py samples it (the kernel process, rust-analyzer,
evcxr's cell child, builds). Prints the peak of each part and of the whole tree per notebook,
and the tree at rest after the last cell (what an idle student's kernel holds); asserts
nothing. A training lesson's figure is the one to budget per student: the cell child holds the
data, the model, its optimiser state and, while training runs, the memory the CPU training
paths keep for reuse (up to 256 MiB, handed back when `fit` ends; ARCHITECTURE.md,
`cpu::keep_freed_memory`).

    .venv/bin/python bench/lesson_memory.py notebooks/01-cpu-vs-gpu-speed-tests.ipynb ...
"""

import argparse
import os
import pathlib
import sys
import time

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from class_bench import PARTS, Sampler  # noqa: E402


def lesson(path, kernel, every):
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, kernel_name=kernel, timeout=1800)
    start = time.monotonic()
    with client.setup_kernel():
        pid = client.km.provisioner.process.pid
        sampler = Sampler([pid], every)
        sampler.start()
        errors = 0
        for i, cell in enumerate(nb.cells):
            client.execute_cell(cell, i)
            errors += sum(o.get("output_type") == "error" for o in cell.get("outputs", []))
        took = time.monotonic() - start
        # At rest: the kernel idle after the last cell, holding what the lesson's cells keep.
        time.sleep(max(3 * every, 1.0))
        sampler.stop.set()
        sampler.join()
    peak, rest = sampler.peak[pid], sampler.last[pid]
    mb = lambda v: f"{v / 2**20:.0f} MB"  # noqa: E731
    parts = ", ".join(f"{p} {mb(peak[p])}" for p in PARTS)
    print(f"{pathlib.Path(path).name}: {took:.0f} s, {errors} cell errors; "
          f"peak of the kernel tree {mb(peak['total'])} ({parts}); at rest after the last cell "
          f"{mb(rest['total'])} (cell child {mb(rest['cell child'])})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="+", type=pathlib.Path)
    ap.add_argument("--kernel", default=os.environ.get("GPULAB_KERNEL_NAME", "gpulab"))
    ap.add_argument("--sample", type=float, default=0.2, help="seconds between memory samples")
    args = ap.parse_args()
    for nb in args.notebooks:
        lesson(str(nb), args.kernel, args.sample)


if __name__ == "__main__":
    main()
