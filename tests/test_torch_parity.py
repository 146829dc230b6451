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


def test_an_autocast_result_is_held_to_torchs_distance_from_float64():
    # amp cases compute in bfloat16/float16 on both sides, rounding at different steps: each
    # is judged by how far it is from the float64 result, against how far torch's is.
    assert parity.amp_reference("amp linear bf16 x") == "amp64 linear f64 x"
    assert parity.amp_reference("amp64 linear f64 x") is None
    exact = "F64 [3] [1.0, 2.0, 100.0]"
    torch = "F32 [3] [1.0, 2.0078125, 100.5]"  # 0.5 from float64 at most
    close = "F32 [3] [1.0078125, 2.0, 100.5]"
    far = "F32 [3] [1.0, 3.5, 100.0]"  # 1.5 away: beyond 2 x 0.5 + 100 / 256
    assert parity.differs(close, torch, "cpu", exact, "bf16") is None
    assert parity.differs(far, torch, "cpu", exact, "bf16").startswith("further from float64 than torch")
    assert parity.differs("BF16 [3] [1.0, 2.0, 100.0]", torch, "cpu", exact, "bf16").startswith("dtype/shape")
    assert parity.differs("F32 [3] [nan, 2.0, 100.0]", torch, "cpu", exact, "bf16") == "values differ"
    # Every amp case has its float64 reference among the cases.
    cases = set(parity.cases())
    amp = [c for c in cases if c.startswith("amp ")]
    assert amp and all(parity.amp_reference(c) in cases for c in amp)
