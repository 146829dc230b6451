"""gpu-check's runner (gpu-check/run.py, the pack's `run`): how it reads libtest's output and the
benchmarks' figures. Nothing that did not run may count as passed, and no ratio may be made up
from a missing figure. The whole build + run is exercised by running gpu-check/build and
gpu-pack/run (README, "Verifying a GPU machine"); these are the parts that decide the verdicts.

    .venv/bin/python -m pytest tests/test_gpu_check.py
"""

import importlib.util
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "notebooks"))  # run.py imports to_program from beside it in the pack
spec = importlib.util.spec_from_file_location("gpu_check_run", ROOT / "gpu-check" / "run.py")
run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run)

LIBTEST = """
running 7 tests
test a_plain_pass ... ok
test b_self_skip ... ok
test c_gpu ... ignored, needs a CUDA device
test d_broken ... FAILED
test e_other ... ok
test f_expected_panic - should panic ... ok
test g_no_panic - should panic ... FAILED

successes:

---- b_self_skip stdout ----
skipped: no CUDA device

---- e_other stdout ----
some output

---- f_expected_panic stdout ----

thread 'f_expected_panic' panicked at prelude/src/plot.rs:550:5:
bar_chart "t": 2 labels but 1 values (one value per label)

successes:
    a_plain_pass
    b_self_skip
    e_other
    f_expected_panic

failures:

---- d_broken stdout ----
thread 'd_broken' panicked at prelude/tests/x.rs:3:5:
assertion failed: 1 == 2

---- g_no_panic stdout ----
note: test did not panic as expected at prelude/tests/x.rs:9:4

failures:
    d_broken
    g_no_panic

test result: FAILED. 4 passed; 2 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s
"""


def test_libtest_outcomes_never_count_a_skip_as_a_pass():
    t = run.parse_libtest(LIBTEST)
    assert {k: v["outcome"] for k, v in t.items()} == {
        "a_plain_pass": "passed", "b_self_skip": "skipped", "c_gpu": "skipped",
        "d_broken": "failed", "e_other": "passed",
        # A #[should_panic] test's line names it "NAME - should panic"; its panic is its pass.
        "f_expected_panic": "passed", "g_no_panic": "failed"}
    assert t["c_gpu"]["reason"] == "needs a CUDA device"
    assert t["b_self_skip"]["reason"] == "skipped: no CUDA device"
    assert "assertion failed: 1 == 2" in t["d_broken"]["output"]
    counts = run.test_counts({"x": {"tests": t}, "y": {"status": "not run: out of time"}})
    assert counts == {"passed": 3, "failed": 2, "skipped": 2, "binaries_failed": 0, "binaries_not_run": 1}


def test_bench_summary_ratios_and_absent_gpu_figures():
    n = 1 << 20
    rows = [
        {"op": "add", "n": n, "impl": "gpulab-cuda", "seconds": 12 * n / 2000e9},   # 2000 GB/s
        {"op": "copy", "n": n, "impl": "torch", "seconds": 8 * n / 4000e9},         # 4000 GB/s
        {"op": "copy", "n": n, "impl": "cupy", "seconds": 8 * n / 3000e9},
        {"op": "add", "n": n, "impl": "torch", "seconds": 12 * n / 1000e9},
        {"op": "matmul", "n": n, "impl": "gpulab-cuda", "seconds": 2.0},
        {"op": "matmul", "n": n, "impl": "torch", "seconds": 1.0},
    ]
    mandel = {"case": "1536x1024x20", "rows": [
        {"impl": "gpulab GPU kernel", "seconds": 0.001, "checksum_matches": True},
        {"impl": "numba cuda.jit", "seconds": 0.002, "checksum_matches": True}]}
    s = run.bench_summary({"tensor": {"results": [{"rows": rows}]}, "mandelbrot": {"results": [mandel]}})
    assert s["gpu_figures"]
    e = s["elementwise"][0]
    assert (e["gpulab_GBps"], e["copy_GBps"], e["fraction_of_copy"]) == (2000.0, 4000.0, 0.5)
    assert e["torch_over_gpulab"] == 2.0 and e["cupy_over_gpulab"] is None
    assert s["matmul"][0]["side"] == 1024 and s["matmul"][0]["torch_over_gpulab"] == 0.5
    assert s["mandelbrot"][0]["numba_over_gpulab"] == 2.0 and s["mandelbrot"][0]["checksums_match"]

    cpu_only = run.bench_summary({"tensor": {"results": [{"rows": [
        {"op": "add", "n": n, "impl": "gpulab-cpu", "seconds": 1e-3}]}]}, "mandelbrot": {"results": []}})
    assert cpu_only == {"elementwise": [], "matmul": [], "mandelbrot": [], "gpu_figures": False,
                        "dtype_matmul": [], "dtype_elementwise": []}
    failed = run.bench_summary({"tensor": {"status": 101, "results": []}, "mandelbrot": {"status": "not run: out of time"}})
    assert not failed["gpu_figures"]


def test_bench_summary_dtype_rows():
    n, m = 1 << 28, 4096
    rows = [
        # bf16 add moves 3 * 2n bytes at 2400 GB/s; torch copies bf16 at 4000 GB/s (2 * 2n bytes).
        {"op": "add-bfloat16", "n": n, "impl": "gpulab-cuda", "seconds": 3 * 2 * n / 2400e9},
        {"op": "copy-bfloat16", "n": n, "impl": "torch", "seconds": 2 * 2 * n / 4000e9},
        {"op": "add-bfloat16", "n": n, "impl": "torch", "seconds": 3 * 2 * n / 3000e9},
        {"op": "div-float64", "n": n, "impl": "gpulab-cuda", "seconds": 1.0},
        {"op": "matmul-tf32", "n": m * m, "impl": "gpulab-cuda", "seconds": 2 * m ** 3 / 400e12},
        {"op": "matmul-tf32", "n": m * m, "impl": "torch", "seconds": 2 * m ** 3 / 500e12},
    ]
    s = run.bench_summary({"tensor": {"results": [{"rows": rows}]}, "mandelbrot": {"results": []}})
    assert s["gpu_figures"]
    bf = next(e for e in s["dtype_elementwise"] if e["dtype"] == "bfloat16")
    assert (bf["op"], bf["gpulab_GBps"], bf["copy_GBps"], bf["fraction_of_copy"]) == ("add", 2400.0, 4000.0, 0.6)
    assert bf["torch_over_gpulab"] == 0.8
    f64 = next(e for e in s["dtype_elementwise"] if e["dtype"] == "float64")
    assert f64["copy_GBps"] is None and f64["fraction_of_copy"] is None, "no torch copy: absent, not invented"
    (mm,) = s["dtype_matmul"]
    assert (mm["dtype"], mm["side"], mm["gpulab_TFLOPs"], mm["torch_over_gpulab"]) == ("tf32", 4096, 400.0, 0.8)
    # The older rows are untouched by the dtype rows.
    assert s["elementwise"] == [] and s["matmul"] == []


def test_parity_results_show_in_the_summary_and_a_difference_fails_the_run(tmp_path):
    assert run.run_parity({}, {}, tmp_path, True, run.Clock(60), tmp_path) == {
        "status": "not run: not in the pack"}
    res = {"machine": {}, "probe": {}, "pack": {"commit": "abc"}, "parity": {
        "cpu": {"status": 0, "device": "cpu", "torch": "2.9.1", "cases": 3648, "differ": 0, "known": 4,
                "first": []},
        "cuda": {"status": 1, "device": "cuda", "torch": "2.11.0", "cases": 3648, "differ": 2, "known": 4,
                 "first": ["sun relu f32: values differ", "bin add f16 f16: values differ"]}}}
    md = run.summary_md(res)
    assert "- cpu: 3648 cases against torch 2.9.1: 0 differ, 4 known differences" in md
    assert "- cuda: 3648 cases against torch 2.11.0: 2 differ" in md and "sun relu f32" in md
    res["parity"]["cuda"] = {"status": "skipped: no CUDA device"}
    assert "- cuda: skipped: no CUDA device" in run.summary_md(res)


def test_checkpoint_writes_results_and_one_archive_the_device_can_bring_back(tmp_path):
    # The device tool brings back at most 8 files from $OUT: --archive puts all of OUTDIR in one.
    import json
    import tarfile

    out = tmp_path / "res"
    for rel in ("logs/test-a.stdout", "logs/test-b.stdout", "notebooks/01.ipynb", "bin/tests/a"):
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(rel)
    res = {"machine": {"hostname": "h"}, "probe": {}, "pack": {"commit": "abc"}, "finished": None}
    archive = tmp_path / "back" / "gpu-results.tar.gz"
    run.checkpoint(out, res, archive)
    assert json.loads((out / "gpu-results.json").read_text())["finished"] is None
    assert "unfinished" in (out / "gpu-results.md").read_text()
    with tarfile.open(archive) as tar:
        names = sorted(tar.getnames())
    assert names == ["res/gpu-results.json", "res/gpu-results.md", "res/logs/test-a.stdout",
                     "res/logs/test-b.stdout", "res/notebooks/01.ipynb"]  # the unpacked programs stay out
    assert not list(archive.parent.glob("*.partial"))
    # A later step's checkpoint replaces the archive with the fuller results.
    res["finished"] = "2026-11-27T00:00:00Z"
    (out / "logs" / "bench-train.stdout").write_text("x")
    run.checkpoint(out, res, archive)
    with tarfile.open(archive) as tar:
        assert "res/logs/bench-train.stdout" in tar.getnames()
        md = tar.extractfile("res/gpu-results.md").read().decode()
    assert "2026-11-27T00:00:00Z" in md and "unfinished" not in md


def test_save_only_refuses_without_results_or_machine(tmp_path, monkeypatch, capsys):
    import pytest

    monkeypatch.setattr(sys, "argv", ["run", str(tmp_path), "--save-only"])
    with pytest.raises(SystemExit) as e:
        run.main()
    assert e.value.code == 2 and "--save-only needs --save MACHINE" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["run", str(tmp_path), "--save-only", "--save", "m1"])
    with pytest.raises(SystemExit) as e:
        run.main()
    assert e.value.code == 2 and "has no gpu-results.json" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["run", str(tmp_path), "--save-only", "--save", "bad/name"])
    (tmp_path / "gpu-results.json").write_text("{}")
    assert run.main() == 2


def test_the_summary_shows_the_training_table():
    table = ("torch 2.11.0 with 16 threads\n\nmodel    dev       batch |    gpulab ms  samples/s |     torch ms"
             "  samples/s | gpulab/torch\nmnist    cuda-amp     64 |          2.0    32000.0 |          1.0"
             "    64000.0 |        0.50x\n")
    res = {"machine": {}, "probe": {}, "pack": {"commit": "abc"},
           "bench": {"summary": run.bench_summary({}), "train": {"status": 0, "seconds": 12.5, "results": [],
                                                             "table": table}}}
    md = run.summary_md(res)
    assert "- train benchmark (samples/s beside torch): status 0, 12.5 s" in md
    assert "mnist    cuda-amp     64 |" in md and md.count("```") == 2
    res["bench"]["train"] = {"status": "not run: out of time"}
    assert "- train benchmark (samples/s beside torch): not run: out of time" in run.summary_md(res)


def _pack_with(tmp_path, members):
    """A pack folder as gpu-check/build writes it: bin/index.json and bin/programs.tar.xz."""
    import io
    import json
    import lzma
    import tarfile

    pack = tmp_path / "pack"
    (pack / "bin").mkdir(parents=True)
    with lzma.open(pack / "bin" / "programs.tar.xz", "wb", format=lzma.FORMAT_XZ) as xz:
        with tarfile.open(fileobj=xz, mode="w") as tar:
            for name, data in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    index = [{"kind": n.split("/")[0], "name": n.split("/")[1], "bytes": len(d)} for n, d in members.items()]
    (pack / "bin" / "index.json").write_text(json.dumps(index))
    return pack


def test_unpack_takes_every_program_from_the_one_archive(tmp_path, monkeypatch):
    import os

    body = b"\x7fELF" + bytes(range(256)) * 64
    pack = _pack_with(tmp_path, {"tests/tensor_cpu": body, "tests/amp": body[::-1], "examples/tensor_bench": b"x"})
    monkeypatch.setattr(run, "PACK", pack)
    out = tmp_path / "res"
    progs = run.unpack(out)
    assert sorted(progs) == ["examples", "tests"]
    assert progs["tests"]["tensor_cpu"].read_bytes() == body
    assert progs["tests"]["amp"].read_bytes() == body[::-1]
    assert all(os.access(p, os.X_OK) for kind in progs.values() for p in kind.values())
    # A second call (a rerun with --only) finds them there and unpacks nothing.
    (pack / "bin" / "programs.tar.xz").unlink()
    assert run.unpack(out)["examples"]["tensor_bench"].read_bytes() == b"x"


def test_the_build_path_is_recreated_with_links_into_the_pack(tmp_path, monkeypatch):
    # The binaries read kernels-cu/, bench/ and prelude/tests/data from the checkout they were
    # built in: on a machine without it, those become links into the pack.
    pack = tmp_path / "pack"
    for d in ("kernels-cu", "bench", "prelude/tests/data"):
        (pack / d).mkdir(parents=True)
        (pack / d / "marker").write_text(d)
    monkeypatch.setattr(run, "PACK", pack)
    notes = []
    root = run.checkout_layout({"checkout": str(tmp_path / "built" / "here")}, notes)
    for d in ("kernels-cu", "bench", "prelude/tests/data"):
        assert (root / d / "marker").read_text() == d
    assert "prelude/tests/data" in notes[0]


def test_unpack_refuses_an_entry_outside_its_folder(tmp_path, monkeypatch):
    import pytest

    pack = _pack_with(tmp_path, {"tests/../../evil": b"x"})
    monkeypatch.setattr(run, "PACK", pack)
    with pytest.raises(SystemExit, match="unexpected entry"):
        run.unpack(tmp_path / "res")
    assert not (tmp_path / "evil").exists()


def test_test_binaries_run_side_by_side_and_report_in_name_order(tmp_path):
    # Each fake binary leaves a mark and waits for all three marks: it passes only when the
    # three run at the same time (--jobs 3), and fails (exit 1) after 20 s otherwise.
    marks = tmp_path / "marks"
    marks.mkdir()
    progs = {}
    for name in ("c_last", "a_first", "train_mnist_real"):
        exe = tmp_path / name
        exe.write_text(f"""#!/bin/sh
touch {marks}/{name}
for i in $(seq 200); do [ $(ls {marks} | wc -l) -ge 3 ] && break; sleep 0.1; done
[ $(ls {marks} | wc -l) -ge 3 ] || exit 1
echo 'running 1 test'
echo 'test it_works ... ok'
echo 'test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s'
""")
        exe.chmod(0o755)
        progs.setdefault("tests", {})[name] = exe
    logs = tmp_path / "logs"
    logs.mkdir()
    results = run.run_tests(progs, {}, str(tmp_path), False, run.Clock(60), logs, jobs=3)
    assert list(results) == ["a_first", "c_last", "train_mnist_real"]
    for r in results.values():
        assert r["status"] == 0, r
        assert r["tests"]["it_works"]["outcome"] == "passed"
    assert run.test_counts(results)["passed"] == 3
    assert (logs / "test-c_last.stdout").read_text().startswith("running 1 test")
