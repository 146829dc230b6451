"""Reference timings for prelude/examples/tensor_bench.rs: the same operations with numpy on
the CPU and, when they see a GPU, with torch (device `cuda`) and CuPy (device `cupy`).

Prints one line per measurement: `op size device seconds` (device is cpu, cuda or cupy),
which the Rust benchmark reads. Sizes are element counts; matmul uses square matrices of
about that many elements, with the same caps as the Rust side. On the GPU, `copy` is a
device-to-device copy of n floats (read 4n bytes, write 4n bytes): the device's measured copy
bandwidth, against which the element-wise ops are judged (they cannot beat it by much).
A library that is missing or sees no GPU is reported on stderr and leaves its rows out.

With --gpu-dtypes, torch also times the benchmark's dtype rows (device `cuda`): matmul at
4096^2 and 8192^2 in float32 (TF32 off), TF32 (`allow_tf32`), float16 and bfloat16, and
`add` / `div` / `copy` at 2^28 elements per float dtype, named `matmul-f32|tf32|f16|bf16` and
`add-float16` etc., as the Rust side names them. numpy also times float64 matmul at 1024^2 and
2048^2 (`matmul-f64`), beside the Rust side's CPU float64 rows.
"""

import argparse
import math
import sys
import time

import numpy as np

MATMUL_CAP = {"cpu": 2048, "cuda": 16384}
# The Rust side's CPU float64 matmul rows (`matmul-f64`, n = side^2).
CPU_F64_MATMUL_SIDES = (1024, 2048)


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
    for m in CPU_F64_MATMUL_SIDES:
        x = rng.standard_normal((m, m))
        yield "matmul-f64", m * m, timeit(lambda: x @ x)


def torch_rows(sizes):
    try:
        import torch
    except ImportError as e:
        print(f"torch: not installed ({e})", file=sys.stderr)
        return
    if not torch.cuda.is_available():
        print("torch: no CUDA device", file=sys.stderr)
        return
    dev = torch.device("cuda:0")
    sync = torch.cuda.synchronize
    for n in sizes:
        a = torch.randn(n, device=dev)
        b = torch.randn(n, device=dev) + 4
        host = torch.randn(n)
        dst = torch.empty_like(a)
        yield "copy", n, timeit(lambda: dst.copy_(a), sync)
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


DTYPE_MATMUL_SIDES = (4096, 8192)
DTYPE_ELEMENTWISE_N = 1 << 28


def torch_dtype_rows():
    try:
        import torch
    except ImportError as e:
        print(f"torch: not installed ({e})", file=sys.stderr)
        return
    if not torch.cuda.is_available():
        print("torch: no CUDA device", file=sys.stderr)
        return
    dev = torch.device("cuda:0")
    sync = torch.cuda.synchronize
    kinds = (("f32", torch.float32, False), ("tf32", torch.float32, True),
             ("f16", torch.float16, False), ("bf16", torch.bfloat16, False))
    before = torch.backends.cuda.matmul.allow_tf32
    try:
        for m in DTYPE_MATMUL_SIDES:
            for label, dtype, tf32 in kinds:
                torch.backends.cuda.matmul.allow_tf32 = tf32
                x = torch.randn(m, m, device=dev).to(dtype)
                yield f"matmul-{label}", m * m, timeit(lambda: x @ x, sync)
                del x
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
    n = DTYPE_ELEMENTWISE_N
    names = ((torch.float32, "float32"), (torch.float64, "float64"),
             (torch.float16, "float16"), (torch.bfloat16, "bfloat16"))
    for dtype, name in names:
        a = torch.randn(n, device=dev).to(dtype)
        b = (torch.randn(n, device=dev) + 4).to(dtype)
        dst = torch.empty_like(a)
        yield f"copy-{name}", n, timeit(lambda: dst.copy_(a), sync)
        yield f"add-{name}", n, timeit(lambda: a + b, sync)
        yield f"div-{name}", n, timeit(lambda: a / b, sync)
        del a, b, dst
        torch.cuda.empty_cache()


def cupy_rows(sizes):
    try:
        import cupy as cp
    except ImportError as e:
        print(f"cupy: not installed ({e})", file=sys.stderr)
        return
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no CUDA device")
    except Exception as e:  # CUDARuntimeError when there is no driver
        print(f"cupy: no CUDA device ({e})", file=sys.stderr)
        return
    sync = cp.cuda.Device(0).synchronize
    rng = cp.random.default_rng(0)
    for n in sizes:
        a = rng.standard_normal(n, dtype=cp.float32)
        b = rng.standard_normal(n, dtype=cp.float32) + 4
        dst = cp.empty_like(a)
        yield "copy", n, timeit(lambda: cp.copyto(dst, a), sync)
        yield "div", n, timeit(lambda: a / b, sync)
        yield "add", n, timeit(lambda: a + b, sync)
        yield "sum", n, timeit(lambda: a.sum(), sync)
        m = side(n)
        if m <= MATMUL_CAP["cuda"]:
            x = rng.standard_normal((m, m), dtype=cp.float32)
            yield "matmul", m * m, timeit(lambda: x @ x, sync)
        del a, b, dst
        cp.get_default_memory_pool().free_all_blocks()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", required=True, help="comma-separated element counts")
    p.add_argument("--gpu-dtypes", action="store_true", help="also torch's dtype rows on the GPU")
    args = p.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    for op, n, secs in numpy_rows(sizes):
        print(f"{op} {n} cpu {secs:.9f}", flush=True)
    for op, n, secs in torch_rows(sizes):
        print(f"{op} {n} cuda {secs:.9f}", flush=True)
    if args.gpu_dtypes:
        for op, n, secs in torch_dtype_rows():
            print(f"{op} {n} cuda {secs:.9f}", flush=True)
    try:
        import torch  # CuPy's matmul must not run while torch holds its memory pool
        torch.cuda.empty_cache()
    except Exception:
        pass
    for op, n, secs in cupy_rows(sizes):
        print(f"{op} {n} cupy {secs:.9f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
