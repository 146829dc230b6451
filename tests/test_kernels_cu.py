"""Compile check for kernels-cu/*.cu without a GPU.

Each source goes through NVRTC (the same library the prelude uses at run time) to PTX for
compute_90, and the PTX through ptxas for sm_90, so both the C++ front end and the PTX
assembler have seen every kernel. Needs the wheels in tests/requirements-cuda.txt.
"""

import ctypes
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KERNELS = sorted((ROOT / "kernels-cu").glob("*.cu"))
ARCH = "90"


def _nvidia_dirs():
    try:
        import nvidia  # namespace package installed by the nvidia-* wheels
    except ImportError:
        return []
    return [Path(p) for p in nvidia.__path__]


def _find(rel_paths):
    for base in _nvidia_dirs():
        for rel in rel_paths:
            p = base / rel
            if p.exists():
                return p
    return None


NVRTC_PATH = os.environ.get("GPULAB_NVRTC_PATH") or _find(["cu13/lib/libnvrtc.so.13", "cuda_nvrtc/lib/libnvrtc.so.13"])
PTXAS = _find(["cu13/bin/ptxas", "cuda_nvcc/bin/ptxas"])


class Nvrtc:
    """The five NVRTC calls the check needs, through ctypes."""

    def __init__(self, path):
        path = Path(path)
        # libnvrtc opens its builtins library by soname at compile time; load it first, globally.
        for builtins in sorted(path.parent.glob("libnvrtc-builtins.so.*")):
            if ".alt." not in builtins.name:
                ctypes.CDLL(str(builtins), mode=ctypes.RTLD_GLOBAL)
                break
        self.lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
        self.lib.nvrtcGetErrorString.restype = ctypes.c_char_p

    def _check(self, rc, what):
        if rc != 0:
            raise RuntimeError(f"{what}: {self.lib.nvrtcGetErrorString(rc).decode()}")

    def version(self):
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._check(self.lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
        return major.value, minor.value

    def compile(self, src, name, arch):
        """Returns (ok, ptx_or_None, log)."""
        prog = ctypes.c_void_p()
        self._check(
            self.lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), name.encode(), 0, None, None),
            "nvrtcCreateProgram",
        )
        try:
            # kernels-cu/ for gpulab_dtypes.cuh, which the prelude hands NVRTC as a named header.
            opts = [f"--gpu-architecture=compute_{arch}".encode(), b"--std=c++17",
                    f"--include-path={ROOT / 'kernels-cu'}".encode()]
            arr = (ctypes.c_char_p * len(opts))(*opts)
            rc = self.lib.nvrtcCompileProgram(prog, len(opts), arr)
            size = ctypes.c_size_t()
            self._check(self.lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size)), "nvrtcGetProgramLogSize")
            buf = ctypes.create_string_buffer(size.value)
            self._check(self.lib.nvrtcGetProgramLog(prog, buf), "nvrtcGetProgramLog")
            log = buf.value.decode(errors="replace")
            if rc != 0:
                return False, None, log
            self._check(self.lib.nvrtcGetPTXSize(prog, ctypes.byref(size)), "nvrtcGetPTXSize")
            buf = ctypes.create_string_buffer(size.value)
            self._check(self.lib.nvrtcGetPTX(prog, buf), "nvrtcGetPTX")
            return True, buf.value.decode(), log
        finally:
            self.lib.nvrtcDestroyProgram(ctypes.byref(prog))


needs_nvrtc = pytest.mark.skipif(NVRTC_PATH is None, reason="no NVRTC: pip install -r tests/requirements-cuda.txt")


@pytest.fixture(scope="module")
def nvrtc():
    return Nvrtc(NVRTC_PATH)


def test_there_are_kernels():
    names = {k.name for k in KERNELS}
    assert {"vector_add.cu", "elementwise.cu", "reduce.cu"} <= names


@needs_nvrtc
def test_nvrtc_is_13(nvrtc):
    assert nvrtc.version()[0] == 13


def _entries(ptx):
    return set(re.findall(r"\.entry\s+(\w+)", ptx))


@needs_nvrtc
@pytest.mark.parametrize("path", KERNELS, ids=[k.name for k in KERNELS])
def test_kernel_compiles_and_assembles(nvrtc, path, tmp_path):
    ok, ptx, log = nvrtc.compile(path.read_text(), path.name, ARCH)
    assert ok, f"NVRTC rejected {path.name}:\n{log}"
    entries = _entries(ptx)
    # extern "C" keeps names unmangled, which is how the prelude looks them up.
    src = path.read_text()
    declared = set(re.findall(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(', src))
    # Templated files declare `<kernel>_##S` inside a macro, once per dtype (or element size).
    stems = set(re.findall(r'extern\s+"C"\s+__global__\s+void\s+(\w+?)_##', src))
    literal = {d for d in declared if not d.endswith("_")}
    assert literal <= entries, f"{path.name}: declared {literal}, PTX has {entries}"
    for stem in stems:
        assert any(e.startswith(stem + "_") for e in entries), f"{path.name}: no instance of {stem}"
    assert entries <= literal | {e for e in entries if any(e.startswith(s + "_") for s in stems)}
    assert declared or stems, f"{path.name}: no kernels"
    if stems:
        # Every dtype for the per-dtype kernels (8 suffixes); conv.cu's gather is one per
        # element size and its scatter-add is f32 and f64 (halves are added in f32).
        every_dtype = {"f32", "f64", "f16", "bf16", "i32", "i64", "u8", "bool"}
        special = {("conv.cu", "gather"): {"b1", "b2", "b4", "b8"}, ("conv.cu", "scatter_add"): {"f32", "f64"}}
        for stem in stems - {"fill", "where", "cast"}:
            got = {e[len(stem) + 1:] for e in entries if e.startswith(stem + "_")}
            want = special.get((path.name, stem), every_dtype)
            assert want <= got, f"{path.name}: {stem} lacks {want - got}"
    if PTXAS is None:
        pytest.skip("no ptxas: pip install nvidia-cuda-nvcc")
    ptx_file = tmp_path / (path.stem + ".ptx")
    ptx_file.write_text(ptx)
    out = subprocess.run(
        [str(PTXAS), f"-arch=sm_{ARCH}", str(ptx_file), "-o", str(tmp_path / (path.stem + ".cubin"))],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, f"ptxas rejected {path.name}:\n{out.stderr}"
    assert (tmp_path / (path.stem + ".cubin")).stat().st_size > 0


@needs_nvrtc
def test_bad_source_fails_with_log(nvrtc):
    src = 'extern "C" __global__ void broken(float* x) { x[0] = not_declared_anywhere; }'
    ok, ptx, log = nvrtc.compile(src, "broken.cu", ARCH)
    assert not ok and ptx is None
    assert "not_declared_anywhere" in log and "broken.cu" in log, log


@pytest.mark.skipif(PTXAS is None, reason="no ptxas: pip install nvidia-cuda-nvcc")
def test_ptxas_rejects_bad_ptx(tmp_path):
    bad = tmp_path / "bad.ptx"
    bad.write_text(".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k() { bogus_instruction; }\n")
    out = subprocess.run([str(PTXAS), f"-arch=sm_{ARCH}", str(bad), "-o", str(tmp_path / "bad.cubin")],
                         capture_output=True, text=True)
    assert out.returncode != 0 and "bogus_instruction" in out.stderr, out.stderr
