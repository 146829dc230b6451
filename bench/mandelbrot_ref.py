"""Reference timings for prelude/examples/mandelbrot_bench.rs: the same Mandelbrot
computation with numba, on all CPU cores (njit(parallel=True)) and, when a CUDA device is
present, as a cuda.jit kernel with 16x16 blocks and grid-stride loops.

The arithmetic is spelled out in real numbers in the same order as gpulab's escape_count,
so the iteration counts (and their sum, printed as a checksum) must match the Rust ones.

Usage: mandelbrot_ref.py WIDTH HEIGHT MAX_ITER REPEATS  -> one JSON object per line.
"""
import json
import math
import sys
import time

import numpy as np
from numba import cuda, njit, prange

X_MIN, X_MAX, Y_MIN, Y_MAX = -2.0, 1.0, -1.0, 1.0


@njit(inline="always")
def escape(cr, ci, max_iter):
    zr = 0.0
    zi = 0.0
    for i in range(max_iter):
        re = (zr * zr - zi * zi) + cr
        im = (zr * zi + zi * zr) + ci
        zr = re
        zi = im
        if zr * zr + zi * zi >= 4.0:
            return i
    return max_iter


@njit(parallel=True)
def render_cpu(x_min, x_max, y_min, y_max, out, max_iter):
    height, width = out.shape
    px = (x_max - x_min) / width
    py = (y_max - y_min) / height
    for y in prange(height):
        ci = y_min + y * py
        for x in range(width):
            out[y, x] = escape(x_min + x * px, ci, max_iter)


def median_time(fn, repeats, sync=lambda: None):
    fn()  # JIT compilation and first-touch happen here, untimed
    sync()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        samples.append(time.perf_counter() - t0)
    samples.sort()
    n = len(samples)
    return samples[n // 2] if n % 2 else 0.5 * (samples[n // 2 - 1] + samples[n // 2])


def gpu_kernel():
    escape_gpu = cuda.jit(device=True)(escape.py_func)

    @cuda.jit
    def kernel(x_min, x_max, y_min, y_max, out, max_iter):
        height, width = out.shape
        px = (x_max - x_min) / width
        py = (y_max - y_min) / height
        sx, sy = cuda.grid(2)
        step_x = cuda.gridDim.x * cuda.blockDim.x
        step_y = cuda.gridDim.y * cuda.blockDim.y
        for y in range(sy, height, step_y):
            ci = y_min + y * py
            for x in range(sx, width, step_x):
                out[y, x] = escape_gpu(x_min + x * px, ci, max_iter)

    return kernel


def main():
    width, height, max_iter, repeats = map(int, sys.argv[1:5])
    case = f"{width}x{height}x{max_iter}"
    import numba

    out = np.zeros((height, width), dtype=np.uint32)
    t = median_time(lambda: render_cpu(X_MIN, X_MAX, Y_MIN, Y_MAX, out, max_iter), repeats)
    print(json.dumps({"case": case, "impl": "numba njit(parallel=True)", "median_s": t,
                      "checksum": int(out.astype(np.uint64).sum()),
                      "threads": numba.get_num_threads()}), flush=True)

    if cuda.is_available():
        kernel = gpu_kernel()
        d_out = cuda.device_array((height, width), dtype=np.uint32)
        blocks = (math.ceil(width / 16), math.ceil(height / 16))
        t = median_time(lambda: kernel[blocks, (16, 16)](X_MIN, X_MAX, Y_MIN, Y_MAX, d_out, max_iter),
                        repeats, sync=cuda.synchronize)
        print(json.dumps({"case": case, "impl": "numba cuda.jit", "median_s": t,
                          "checksum": int(d_out.copy_to_host().astype(np.uint64).sum())}), flush=True)
    else:
        print(json.dumps({"case": case, "impl": "numba cuda.jit", "skipped": "no CUDA device"}), flush=True)


if __name__ == "__main__":
    main()
