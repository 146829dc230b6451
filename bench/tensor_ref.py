"""Reference timings for prelude/examples/tensor_bench.rs: the same operations with numpy on
the CPU and, when torch sees a GPU, with torch on CUDA.

Prints one line per measurement: `op size device seconds` (device is cpu or cuda), which the
Rust benchmark reads. Sizes are element counts; matmul uses square matrices of about that
many elements, with the same caps as the Rust side.
"""

import argparse
import math
import sys
import time

import numpy as np

MATMUL_CAP = {"cpu": 2048, "cuda": 16384}


def timeit(fn, sync=lambda: None, budget=0.2):
    fn()
    sync()
    times = []
    start = time.perf_counter()
    while len(times) < 3 or (time.perf_counter() - start < budget and len(times) < 50):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return min(times)


def side(n):
    return int(math.isqrt(n))


def numpy_rows(sizes):
    rng = np.random.default_rng(0)
    for n in sizes:
        a = rng.standard_normal(n, dtype=np.float32)
        b = rng.standard_normal(n, dtype=np.float32) + 4
        yield "div", n, timeit(lambda: a / b)
        yield "add", n, timeit(lambda: a + b)
        yield "sum", n, timeit(lambda: a.sum())
        m = side(n)
        if m <= MATMUL_CAP["cpu"]:
            x = rng.standard_normal((m, m), dtype=np.float32)
            yield "matmul", m * m, timeit(lambda: x @ x)


def torch_rows(sizes):
    try:
        import torch
    except ImportError:
        return
    if not torch.cuda.is_available():
        return
    dev = torch.device("cuda:0")
    sync = torch.cuda.synchronize
    for n in sizes:
        a = torch.randn(n, device=dev)
        b = torch.randn(n, device=dev) + 4
        host = torch.randn(n)
        yield "div", n, timeit(lambda: a / b, sync)
        yield "add", n, timeit(lambda: a + b, sync)
        yield "sum", n, timeit(lambda: a.sum(), sync)
        yield "h2d", n, timeit(lambda: host.to(dev), sync)
        yield "d2h", n, timeit(lambda: a.cpu(), sync)
        m = side(n)
        if m <= MATMUL_CAP["cuda"]:
            x = torch.randn(m, m, device=dev)
            yield "matmul", m * m, timeit(lambda: x @ x, sync)
    one = torch.ones(1, device=dev)

    def launches():
        for _ in range(1000):
            one.add_(0.0)

    yield "launch", 1, timeit(launches, sync) / 1000


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", required=True, help="comma-separated element counts")
    sizes = [int(s) for s in p.parse_args().sizes.split(",")]
    for op, n, secs in numpy_rows(sizes):
        print(f"{op} {n} cpu {secs:.9f}", flush=True)
    for op, n, secs in torch_rows(sizes):
        print(f"{op} {n} cuda {secs:.9f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
