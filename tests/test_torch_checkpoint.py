"""notebooks/torch_checkpoint.py, the optimiser checkpoint's way between gpulab and PyTorch,
against real torch: its two conversions undo each other, a torch optimiser loaded from the
gpulab form resumes bit for bit, options gpulab lacks are refused by name, and the command line
converts both ways. The other half, gpulab resuming torch's checkpoints and saving torch's
names, is prelude/tests/torch_checkpoint.rs (with files torch wrote, so CI needs no torch).

Needs torch and safetensors (`pip install torch==2.9.1 safetensors==0.8.0`); without them
every test here is skipped and says why.
"""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
torch = pytest.importorskip("torch", reason="skipped: torch not installed (pip install torch==2.9.1)")
safetensors_torch = pytest.importorskip(
    "safetensors.torch", reason="skipped: safetensors not installed (pip install safetensors==0.8.0)")


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


tc = _load("torch_checkpoint", ROOT / "notebooks" / "torch_checkpoint.py")
HELPER = ROOT / "notebooks" / "torch_checkpoint.py"


def test_the_fixture_round_trips_and_resumes(tmp_path):
    # The script that wrote prelude/tests/data/torch-checkpoint, into a fresh folder, with its
    # own checks: flatten then unflatten gives torch's dict back, and a torch optimiser loaded
    # from the flat file takes the same fourth step as one loaded from torch's own dict.
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "torch_checkpoint_fixture.py"),
                        "--out", str(tmp_path), "--check"], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count("round trip and resume check passed") == 4, p.stdout
    committed = ROOT / "prelude" / "tests" / "data" / "torch-checkpoint"
    assert sorted(f.name for f in tmp_path.iterdir()) == sorted(f.name for f in committed.iterdir())


def test_gpulabs_checkpoints_resume_in_torch(tmp_path):
    # prelude/tests/torch_checkpoint.rs resumes torch's step-3 files in gpulab and, with
    # GPULAB_CHECKPOINT_OUT, saves its step-4 model and optimiser with gpulab's own writer.
    # Torch loads them (the model strictly, the optimiser through the helper) and takes a fifth
    # step beside a torch run resumed from torch's own step-4 files: the two must agree.
    import os
    fixture = _load("torch_checkpoint_fixture", ROOT / "bench" / "torch_checkpoint_fixture.py")
    p = subprocess.run(["cargo", "test", "--release", "--locked", "-p", "gpulab", "--test",
                        "torch_checkpoint", "--", "resumes_from_torchs_checkpoint"],
                       cwd=ROOT, capture_output=True, text=True, timeout=1800,
                       env={**os.environ, "GPULAB_CHECKPOINT_OUT": str(tmp_path)})
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    data = ROOT / "prelude" / "tests" / "data" / "torch-checkpoint"
    batch = safetensors_torch.load_file(data / "batch.safetensors")
    for kind, make in fixture.OPTIMISERS.items():
        ours, theirs = fixture.model(), fixture.model()
        ours.load_state_dict(safetensors_torch.load_file(tmp_path / f"{kind}-model-gpulab.safetensors"))
        theirs.load_state_dict(safetensors_torch.load_file(data / f"{kind}-model-step4.safetensors"))
        ours_opt, theirs_opt = make(ours.parameters()), make(theirs.parameters())
        tc.load_optimizer(ours_opt, tmp_path / f"{kind}-optim-gpulab.safetensors")
        tc.load_optimizer(theirs_opt, data / f"{kind}-optim-step4.safetensors")
        assert ours_opt.state_dict()["param_groups"] == theirs_opt.state_dict()["param_groups"], kind
        fixture.step(ours, ours_opt, batch["x"], batch["y"])
        fixture.step(theirs, theirs_opt, batch["x"], batch["y"])
        for (name, a), b in zip(ours.state_dict().items(), theirs.state_dict().values()):
            scale = max(b.abs().max().item(), 1e-3)
            assert (a.double() - b.double()).abs().max().item() <= 1e-5 * scale, (kind, name)


def _adam(**kw):
    net = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(net.parameters(), lr=0.01, **kw)
    net(torch.ones(4, 3)).sum().backward()
    opt.step()
    return opt


def test_the_flat_names_are_gpulabs():
    flat = tc.flatten(_adam().state_dict())
    assert sorted(flat) == [
        "param_groups.0.betas", "param_groups.0.eps", "param_groups.0.lr",
        "param_groups.0.weight_decay",
        "state.0.exp_avg", "state.0.exp_avg_sq", "state.0.step",
        "state.1.exp_avg", "state.1.exp_avg_sq", "state.1.step",
    ]
    assert flat["state.0.step"].dtype == torch.float32 and flat["state.0.step"].shape == ()
    assert flat["param_groups.0.betas"].tolist() == [0.9, 0.999]
    assert flat["param_groups.0.lr"].dtype == torch.float64


@pytest.mark.parametrize("make, option", [
    (lambda p: torch.optim.Adam(p, amsgrad=True), "amsgrad"),
    (lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True), "nesterov"),
    (lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.5), "dampening"),
    (lambda p: torch.optim.RMSprop(p, centered=True), "centered"),
    (lambda p: torch.optim.Adam(p, maximize=True), "maximize"),
])
def test_an_option_gpulab_lacks_is_refused_by_name(make, option):
    opt = make(torch.nn.Linear(2, 2).parameters())
    with pytest.raises(ValueError, match=option):
        tc.flatten(opt.state_dict())


def test_several_parameter_groups_are_refused():
    a, b = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    opt = torch.optim.SGD([{"params": a.parameters()}, {"params": b.parameters(), "lr": 0.5}],
                          lr=0.1)
    with pytest.raises(ValueError, match="2 parameter groups"):
        tc.flatten(opt.state_dict())


def test_a_name_that_is_not_optimiser_state_is_refused():
    opt = _adam()
    flat = tc.flatten(opt.state_dict())
    flat["0.weight"] = torch.zeros(2, 3)  # a model's name, in the optimiser's file
    with pytest.raises(ValueError, match="0.weight"):
        tc.unflatten(flat, opt.state_dict())
    flat.pop("0.weight")
    flat["state.7.exp_avg"] = torch.zeros(2)
    with pytest.raises(ValueError, match="state.7.exp_avg: the torch optimiser has 2 parameters"):
        tc.unflatten(flat, opt.state_dict())


def test_the_command_line_converts_both_ways(tmp_path):
    opt = _adam(weight_decay=0.1)
    torch.save(opt.state_dict(), tmp_path / "opt.pt")
    run = lambda *a: subprocess.run([sys.executable, str(HELPER), *map(str, a)],  # noqa: E731
                                    capture_output=True, text=True, timeout=120)
    p = run("from-torch", tmp_path / "opt.pt", tmp_path / "opt.safetensors")
    assert p.returncode == 0, p.stderr
    flat = safetensors_torch.load_file(tmp_path / "opt.safetensors")
    assert float(flat["param_groups.0.weight_decay"]) == 0.1
    p = run("to-torch", tmp_path / "opt.safetensors", tmp_path / "back.pt")
    assert p.returncode == 0, p.stderr
    back = torch.load(tmp_path / "back.pt", weights_only=True)
    fresh = torch.optim.Adam(torch.nn.Linear(3, 2).parameters())
    fresh.load_state_dict(back)
    assert fresh.param_groups[0]["weight_decay"] == 0.1
    assert fresh.param_groups[0]["amsgrad"] is False  # torch's default, filled in on load
    want = opt.state_dict()["state"][1]["exp_avg_sq"]
    assert torch.equal(fresh.state_dict()["state"][1]["exp_avg_sq"], want)
    # A refusal is a message and status 2, not a traceback.
    torch.save(torch.optim.Adam(torch.nn.Linear(2, 2).parameters(), amsgrad=True).state_dict(),
               tmp_path / "ams.pt")
    p = run("from-torch", tmp_path / "ams.pt", tmp_path / "ams.safetensors")
    assert p.returncode == 2 and "amsgrad" in p.stderr and "Traceback" not in p.stderr, p.stderr
