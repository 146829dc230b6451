"""The prelude's GPU tests (Rust, marked #[ignore] so that cargo counts them as skipped on a
machine without a GPU). On a machine with a CUDA device this runs them for real, one test per
behaviour, together with the tests that hide the driver (GPULAB_DISABLE_CUDA, in a child
process) and compare NVML with CUDA."""

import re
import subprocess

import pytest

from conftest import has_cuda_device

GPU_TESTS = ["tensor_gpu", "tensor_gpu_dtype", "tensor_dtype", "tensor_views", "mandelbrot_gpu", "cuda_errors",
             "cuda_reports", "timing_stats", "memcap_gpu", "timeit", "cuda_alloc_plain"]


@pytest.mark.parametrize("name", GPU_TESTS)
def test_prelude_gpu_suite(name):
    if not has_cuda_device():
        pytest.skip("skipped: no CUDA device")
    run = subprocess.run(
        ["cargo", "test", "--release", "--locked", "-p", "gpulab", "--test", name, "--",
         "--include-ignored", "--nocapture", "--test-threads=1"],
        capture_output=True, text=True)
    print(run.stdout[-20000:])
    print(run.stderr[-5000:])
    failed = re.findall(r"^test (\S+) \.\.\. FAILED", run.stdout, re.M)
    assert run.returncode == 0, f"failed: {failed}"
    assert "skipped: no CUDA device" not in run.stdout
    assert re.search(r"^test result: ok\. [1-9]\d* passed", run.stdout, re.M)
