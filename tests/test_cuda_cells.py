"""`%%cuda` cells end to end: CUDA C++ compiled by NVRTC in the session, kernels used by name
from later Rust cells (prelude/src/cuda/cells.rs)."""

import os

import pytest

from conftest import has_cuda_device, ready_session
from test_kernels_cu import NVRTC_PATH

GOOD = """%%cuda
// vector addition, one thread per element
extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""

# The mistake is on the cell's line 4.
BAD = """%%cuda
extern "C" __global__ void broken(float* x, int n) {
    int i = threadIdx.x;
    x[i] = undefined_name * 2.0f;
}
"""


@pytest.fixture(scope="module")
def cuda_kernel():
    if NVRTC_PATH is None:
        pytest.fail("NVRTC is missing: install tests/requirements-cuda.txt (./install --test does)")
    # Given to this kernel only, so later tests' kernels find NVRTC on their own as before.
    env = {} if "GPULAB_NVRTC_PATH" in os.environ else {"GPULAB_NVRTC_PATH": str(NVRTC_PATH)}
    s = ready_session(env)
    yield s
    s.close()


def text_of(outputs):
    parts = []
    for m in outputs:
        if m["msg_type"] == "stream":
            parts.append(m["content"]["text"])
        elif m["msg_type"] in ("execute_result", "display_data"):
            parts.append(m["content"]["data"].get("text/plain", ""))
    return "".join(parts)


def test_a_good_cell_compiles_and_lists_its_kernels(cuda_kernel):
    reply, outputs = cuda_kernel.execute(GOOD)
    assert reply["status"] == "ok", reply
    text = text_of(outputs)
    assert "vadd" in text, text
    assert "compiled for sm_" in text or "compiled for compute_" in text, text
    if "compiled for sm_" in text:
        # A CUBIN: ptxas's report gives the register use.
        assert "registers per thread" in text, text


def test_a_bad_cell_is_an_error_naming_the_cells_line(cuda_kernel):
    reply, outputs = cuda_kernel.execute(BAD)
    assert reply["status"] == "error", reply
    assert reply["ename"] == "CUDACompileError", reply
    assert "cell line 4" in reply["evalue"], reply["evalue"]
    assert "undefined_name" in reply["evalue"], reply["evalue"]
    assert [m["msg_type"] for m in outputs if m["msg_type"] == "error"] == ["error"]


def test_a_later_rust_cell_gets_the_kernel_by_name(cuda_kernel):
    reply, _ = cuda_kernel.execute(GOOD)
    assert reply["status"] == "ok", reply
    reply, outputs = cuda_kernel.execute('cuda::cell_kernels()')
    assert reply["status"] == "ok", reply
    assert "vadd" in cuda_kernel.result_text(outputs)
    reply, outputs = cuda_kernel.execute('let f = cuda::cell_kernel("nope");\nf.is_err()')
    assert reply["status"] == "ok", reply
    assert cuda_kernel.result_text(outputs) == "true"
    code = """
let f = cuda::cell_kernel("vadd")?;
let n = 1000usize;
let a = Tensor::ones(n, Device::Cuda(0))?;
let b = Tensor::ones(n, Device::Cuda(0))?;
let mut c = Tensor::zeros(n, Device::Cuda(0))?;
f.launch(cuda::LaunchConfig::for_elements(n, 256), &mut [(&a).into(), (&b).into(), (&mut c).into(), (n as i32).into()])?;
c.to_vec::<f32>()?.iter().sum::<f32>()
"""
    reply, outputs = cuda_kernel.execute(code)
    if has_cuda_device():
        assert reply["status"] == "ok", reply
        assert cuda_kernel.result_text(outputs) == "2000.0"
    else:
        # Without a GPU, getting the kernel is the usual clear no-device error.
        assert reply["status"] == "error", reply
        assert "cuda" in reply["evalue"].lower() or "driver" in reply["evalue"].lower(), reply["evalue"]
