"""The kernelspec: install/uninstall flags like ipykernel's, and independence from the checkout."""

import json
import os
import pathlib
import subprocess

from jupyter_client.kernelspec import KernelSpecManager

from conftest import KERNEL_NAME

REPO = pathlib.Path(__file__).resolve().parent.parent


def installed_binary():
    spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    return pathlib.Path(spec.argv[0]), spec


def test_installed_spec_points_outside_the_checkout():
    binary, spec = installed_binary()
    assert spec.display_name == "Rust + GPU (gpulab)"
    assert spec.language == "rust"
    assert spec.interrupt_mode == "message"
    assert spec.argv[1:] == ["--connection-file", "{connection_file}"]
    # The binary is a copy in the kernelspec folder: moving or deleting the checkout keeps it.
    assert binary.parent == pathlib.Path(spec.resource_dir)
    assert REPO not in binary.resolve().parents
    for logo in ("logo-32x32.png", "logo-64x64.png", "logo-svg.svg"):
        assert (pathlib.Path(spec.resource_dir) / logo).is_file()
    # The toolchain's folder is recorded for a Jupyter started without ~/.cargo/bin on PATH.
    assert pathlib.Path(spec.env["GPULAB_TOOLCHAIN_BIN"], "cargo").is_file()
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, cwd="/", check=True)
    assert out.stdout.startswith("gpulab-kernel ")


def test_install_and_uninstall_with_prefix(tmp_path):
    binary, _ = installed_binary()
    subprocess.run([str(binary), "install", "--prefix", str(tmp_path)], check=True, capture_output=True)
    kdir = tmp_path / "share/jupyter/kernels/gpulab"
    spec = json.loads((kdir / "kernel.json").read_text())
    assert spec["argv"][0] == str(kdir / "gpulab-kernel")
    assert os.access(kdir / "gpulab-kernel", os.X_OK)
    assert spec["display_name"] == "Rust + GPU (gpulab)"
    subprocess.run([str(binary), "uninstall", "--prefix", str(tmp_path)], check=True, capture_output=True)
    assert not kdir.exists()


def test_bad_install_flags_are_errors(tmp_path):
    binary, _ = installed_binary()
    run = subprocess.run([str(binary), "install", "--user", "--prefix", str(tmp_path)], capture_output=True, text=True)
    assert run.returncode != 0 and "one of" in run.stderr
    run = subprocess.run([str(binary), "install", "--bogus"], capture_output=True, text=True)
    assert run.returncode != 0 and "--bogus" in run.stderr


def test_spec_records_the_python_environment_with_the_cuda_wheels(tmp_path):
    """A Jupyter started without the virtualenv activated must still lead the prelude's loader
    to the NVRTC/cuBLAS wheels; the spec carries GPULAB_VENV when install was given it."""
    binary, _ = installed_binary()
    env = dict(os.environ, GPULAB_VENV=str(tmp_path / "venv"))
    subprocess.run([str(binary), "install", "--prefix", str(tmp_path)], check=True, capture_output=True, env=env)
    spec = json.loads((tmp_path / "share/jupyter/kernels/gpulab/kernel.json").read_text())
    assert spec["env"]["GPULAB_VENV"] == str(tmp_path / "venv")
    env.pop("GPULAB_VENV")
    subprocess.run([str(binary), "install", "--prefix", str(tmp_path)], check=True, capture_output=True, env=env)
    spec = json.loads((tmp_path / "share/jupyter/kernels/gpulab/kernel.json").read_text())
    assert "GPULAB_VENV" not in spec["env"]


def test_a_teacher_sets_a_gpu_memory_cap_in_the_kernelspec(tmp_path):
    """`--gpu-memory-fraction` / `--gpu-memory-limit` land in kernel.json's env, where every
    student's kernel reads them (prelude/src/cuda/memcap.rs); a bad fraction is refused."""
    binary, _ = installed_binary()
    subprocess.run([str(binary), "install", "--prefix", str(tmp_path), "--gpu-memory-fraction", "0.1",
                    "--gpu-memory-limit", "4GiB"], check=True, capture_output=True)
    spec = json.loads((tmp_path / "share/jupyter/kernels/gpulab/kernel.json").read_text())
    assert spec["env"]["GPULAB_GPU_MEMORY_FRACTION"] == "0.1"
    assert spec["env"]["GPULAB_GPU_MEMORY_LIMIT"] == "4GiB"
    for bad in (["--gpu-memory-fraction", "1.5"], ["--gpu-memory-fraction"], ["--gpu-memory-limit", "lots"]):
        run = subprocess.run([str(binary), "install", "--prefix", str(tmp_path), *bad], capture_output=True, text=True)
        assert run.returncode != 0 and bad[0] in run.stderr, run.stderr


def test_clean_removes_what_an_older_version_left(tmp_path):
    """After an update, `gpulab-kernel clean` removes the older version's sources and prebuilt
    prelude and keeps what this version uses; an idle slot that built the old version stays
    while no prebuilt prelude of this version is there to re-seed it."""
    binary, _ = installed_binary()
    old = "0123456789abcdef"
    root, cache = tmp_path / "prelude", tmp_path / "cache"
    (root / f"src-{old}/prelude").mkdir(parents=True)
    (root / f"src-{old}/prelude/Cargo.toml").write_text("[package]\n")
    (root / f"prebuilt-{old}/target").mkdir(parents=True)
    (root / f"prebuilt-{old}/target/libgpulab.so").write_bytes(b"\0" * 4096)
    (root / f"prebuilt-{old}.lock").touch()
    (root / "kernel.json").write_text("{}")
    slot = cache / "slots/slot-0"
    slot.mkdir(parents=True)
    (slot / f".seeded-r2-{old}").touch()
    (slot / "Cargo.toml").write_text(f'gpulab = {{ path = "{root}/src-{old}/prelude" }}\n')
    env = dict(os.environ, GPULAB_PRELUDE_DIR=str(root), GPULAB_CACHE_DIR=str(cache),
               XDG_DATA_HOME=str(tmp_path / "data"))

    def clean(*flags):
        out = subprocess.run([str(binary), "clean", *flags], env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return out.stdout

    dry = clean("--dry-run")
    assert f"would remove {root}/prebuilt-{old}" in dry and f"would remove {root}/src-{old}" in dry
    assert (root / f"prebuilt-{old}").exists(), "a dry run removes nothing"
    report = clean()
    assert not (root / f"prebuilt-{old}").exists() and not (root / f"src-{old}").exists()
    assert not (root / f"prebuilt-{old}.lock").exists()
    assert (root / "kernel.json").exists() and slot.exists()
    assert f"kept {slot}: holds compiled dependencies" in report and "warm" in report
    assert report.strip().splitlines()[-1].startswith("freed ")
    bad = subprocess.run([str(binary), "clean", "--everything"], env=env, capture_output=True, text=True)
    assert bad.returncode != 0 and "clean [--dry-run]" in bad.stderr
