"""gpulab's tensor ops give torch's answers: every binary op, comparison, in-place op, unary op,
reduction, cast, broadcast, view, index op and join for every pair of the eight dtypes, with
special values; their gradients; the layers' functions; three steps of SGD and Adam
(bench/torch_parity.py). torch 2.9.1's results are recorded in
bench/torch_parity-cpu.txt.gz, so no torch is needed here; re-record them with
`python3 bench/torch_parity.py --record bench/torch_parity-cpu.txt.gz` where torch is installed.
The GPU check (gpu-pack/run) runs the same cases on cuda:0 against live torch on that GPU.
"""

import gzip
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "torch_parity.py"
RECORDED = ROOT / "bench" / "torch_parity-cpu.txt.gz"

spec = importlib.util.spec_from_file_location("torch_parity", SCRIPT)
parity = importlib.util.module_from_spec(spec)
spec.loader.exec_module(parity)


def test_the_recording_covers_every_case():
    with gzip.open(RECORDED, "rt") as f:
        header = json.loads(f.readline())
        recorded = {line.split(" => ", 1)[0] for line in f}
    missing = [c for c in parity.cases() if c not in recorded]
    assert not missing, f"{len(missing)} cases are not recorded (first {missing[0]!r}): re-record"
    assert header["device"] == "cpu" and header["torch"].startswith("2.")


def test_every_op_and_dtype_gives_torchs_result_on_the_cpu():
    p = subprocess.run([sys.executable, str(SCRIPT), "--expected", str(RECORDED), "--json"],
                       capture_output=True, text=True, timeout=900, cwd=ROOT)
    summary = json.loads(p.stdout.strip().splitlines()[-1])
    print(p.stdout[-4000:])
    assert summary["cases"] == len(parity.cases())
    assert p.returncode == 0 and summary["differ"] == 0, p.stdout[-4000:] + p.stderr[-2000:]


def test_the_comparison_catches_what_differs():
    same = "F32 [2] [1.0, nan]"
    assert parity.differs(same, same, "cpu") is None
    assert parity.differs("F32 [2] [1.0, 2.0]", "F32 [2] [1.0, nan]", "cpu") == "values differ"
    assert parity.differs("F32 [2] [1.0, 2.0]", "F32 [2] [1.0, 2.0000001]", "cpu") is None
    assert parity.differs("F16 [2] [1.0, 2.0]", "F32 [2] [1.0, 2.0]", "cpu").startswith("dtype/shape")
    assert parity.differs("F32 [1, 2] [1.0, 2.0]", "F32 [2] [1.0, 2.0]", "cpu").startswith("dtype/shape")
    assert parity.differs("ERR sub: ...", "F32 [1] [1.0]", "cpu") == "one side is an error"
    assert parity.differs("ERR ours", "ERR theirs", "cpu") is None
    assert parity.differs("PANIC", "ERR theirs", "cpu") == "gpulab panicked"
    assert parity.differs("I64 [1] [3.0]", "I64 [1] [4.0]", "cpu") == "values differ"
