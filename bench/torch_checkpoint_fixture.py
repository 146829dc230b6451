"""Writes prelude/tests/data/torch-checkpoint/: checkpoints that PyTorch saved, which
prelude/tests/torch_checkpoint.rs resumes in gpulab (so CI needs no torch).

    python bench/torch_checkpoint_fixture.py [--out DIR] [--check]

A small CNN (Conv2d, ReLU, BatchNorm2d, MaxPool2d, Flatten, Linear) trains three steps in torch
with each of SGD (momentum, weight decay), Adam (weight decay), AdamW and RMSprop (momentum) on
one fixed batch. For each it writes:

- `<opt>-model.safetensors`: the model's `state_dict()` after three steps
  (`safetensors.torch.save_file`, as any PyTorch user would);
- `<opt>-optim.safetensors`: the optimiser's `state_dict()` then, through
  notebooks/torch_checkpoint.py's `save_optimizer` (the form gpulab's `optim::load_safetensors`
  reads);
- `<opt>-model-step4.safetensors`, `<opt>-optim-step4.safetensors`: both after a fourth step.

and `batch.safetensors` (the input `x`, class labels `y`). gpulab loads the step-3 files, takes
the fourth step and must land on torch's step-4 files: weights, moments and step count.

`--check` also reads back through notebooks/torch_checkpoint.py what it wrote: the optimiser's
state converts to gpulab's form and back to the dict torch saved, and loads into a fresh
torch optimiser that then takes the same fourth step. Needs torch and safetensors.
"""

import argparse
import copy
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "notebooks"))

import safetensors.torch  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

import torch_checkpoint  # noqa: E402

OPTIMISERS = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-3),
    "adam": lambda p: torch.optim.Adam(p, lr=0.01, weight_decay=1e-3),
    "adamw": lambda p: torch.optim.AdamW(p, lr=0.01),
    "rmsprop": lambda p: torch.optim.RMSprop(p, lr=0.01, momentum=0.5),
}


def model():
    # The same layers as prelude/tests/torch_checkpoint.rs builds, in the same order. The
    # BatchNorm comes after the ReLU: straight after the convolution it would cancel the
    # convolution's bias, whose gradient would then be rounding noise that Adam and RMSprop
    # scale up to whole steps, different on every machine.
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.BatchNorm2d(4), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(4 * 4 * 4, 8), nn.ReLU(), nn.Linear(8, 3))


def step(net, opt, x, y):
    opt.zero_grad()
    F.cross_entropy(net(x), y).backward()
    opt.step()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=pathlib.Path,
                    default=ROOT / "prelude" / "tests" / "data" / "torch-checkpoint")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    g = torch.Generator().manual_seed(7)
    x = torch.randn(6, 1, 8, 8, generator=g)
    y = torch.randint(0, 3, (6,), generator=g)
    safetensors.torch.save_file({"x": x, "y": y}, a.out / "batch.safetensors")
    for name, make in OPTIMISERS.items():
        torch.manual_seed(0)
        net = model()
        opt = make(net.parameters())
        for _ in range(3):
            step(net, opt, x, y)
        safetensors.torch.save_file(net.state_dict(), a.out / f"{name}-model.safetensors")
        torch_checkpoint.save_optimizer(opt, a.out / f"{name}-optim.safetensors")
        saved = copy.deepcopy(opt.state_dict())
        if a.check:
            check(name, make, net, saved, a.out, x, y)
        step(net, opt, x, y)
        safetensors.torch.save_file(net.state_dict(), a.out / f"{name}-model-step4.safetensors")
        torch_checkpoint.save_optimizer(opt, a.out / f"{name}-optim-step4.safetensors")
        print(f"{name}: wrote the step-3 and step-4 checkpoints")


def check(name, make, net, saved, out, x, y):
    """The helper's two directions undo each other, and a torch optimiser loaded from the
    gpulab-form file resumes exactly as the one that saved it."""
    flat = safetensors.torch.load_file(out / f"{name}-optim.safetensors")
    back = torch_checkpoint.unflatten(flat, saved)
    assert back["state"].keys() == saved["state"].keys(), name
    for i, per in saved["state"].items():
        assert per.keys() == back["state"][i].keys(), (name, i)
        for k, v in per.items():
            assert torch.equal(torch.as_tensor(v), back["state"][i][k]), (name, i, k)
    for k, v in saved["param_groups"][0].items():
        assert back["param_groups"][0][k] == v, (name, k, v, back["param_groups"][0][k])
    # A second model and optimiser, loaded from the files, take the fourth step beside the
    # first: the weights must agree bit for bit.
    twin = model()
    twin.load_state_dict(safetensors.torch.load_file(out / f"{name}-model.safetensors"))
    twin_opt = make(twin.parameters())
    torch_checkpoint.load_optimizer(twin_opt, out / f"{name}-optim.safetensors")
    first = {k: v.clone() for k, v in net.state_dict().items()}
    ref = model()
    ref.load_state_dict(first)
    ref_opt = make(ref.parameters())
    # A copy: torch's load_state_dict keeps the tensors it is given, so stepping `ref_opt`
    # would otherwise step the state of the run that writes the step-4 files.
    ref_opt.load_state_dict(copy.deepcopy(saved))
    step(twin, twin_opt, x, y)
    step(ref, ref_opt, x, y)
    for (k, a), b in zip(twin.state_dict().items(), ref.state_dict().values()):
        assert torch.equal(a, b), (name, k)
    print(f"{name}: torch_checkpoint round trip and resume check passed")


if __name__ == "__main__":
    main()
