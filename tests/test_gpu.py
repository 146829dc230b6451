"""The prelude's GPU tests (Rust, marked #[ignore] so that cargo counts them as skipped on a
machine without a GPU). On a machine with a CUDA device this runs them for real."""

import subprocess

import pytest

from conftest import has_cuda_device

GPU_TESTS = ["tensor_gpu", "mandelbrot_gpu"]


@pytest.mark.parametrize("name", GPU_TESTS)
def test_prelude_gpu_suite(name):
    if not has_cuda_device():
        pytest.skip("skipped: no CUDA device")
    run = subprocess.run(
        ["cargo", "test", "--release", "--locked", "-p", "gpulab", "--test", name, "--", "--ignored", "--nocapture"],
        capture_output=True, text=True)
    print(run.stdout[-20000:])
    print(run.stderr[-5000:])
    assert run.returncode == 0
    assert "skipped: no CUDA device" not in run.stdout
