"""Move a training checkpoint between gpulab and PyTorch.

A model's weights need nothing from here: gpulab's `nn::save_safetensors` writes torch's
`state_dict` names, so `model.load_state_dict(safetensors.torch.load_file(path))` reads them,
and `safetensors.torch.save_file(model.state_dict(), path)` writes a file gpulab's
`nn::load_safetensors` reads.

An optimiser's state is where the two differ in form. gpulab's `optim::save_safetensors` holds
torch's `optimizer.state_dict()` with its nesting flattened into dotted names, because a
safetensors file holds only named tensors:

    state.0.step            float32, 0-d    state[0]["step"]
    state.0.exp_avg         the moments     state[0]["exp_avg"]
    param_groups.0.lr       float64, 0-d    param_groups[0]["lr"]
    param_groups.0.betas    float64, (2,)   param_groups[0]["betas"]

This module converts between the two forms:

    import torch, safetensors.torch
    from torch_checkpoint import load_optimizer, save_optimizer

    model.load_state_dict(safetensors.torch.load_file("model.safetensors"))
    opt = torch.optim.Adam(model.parameters())
    load_optimizer(opt, "adam.safetensors")        # written by gpulab's optim::save_safetensors
    ...                                            # train on in PyTorch
    save_optimizer(opt, "adam.safetensors")        # for gpulab's optim::load_safetensors

or from a shell, with a checkpoint torch saved with `torch.save(opt.state_dict(), "opt.pt")`:

    python notebooks/torch_checkpoint.py from-torch opt.pt adam.safetensors
    python notebooks/torch_checkpoint.py to-torch adam.safetensors opt.pt

gpulab's optimisers (SGD, Adam, AdamW, RMSprop) have one parameter group and a subset of
torch's options. A torch state that uses one gpulab lacks (amsgrad, nesterov, dampening,
maximize, a centred RMSprop, several parameter groups) is refused with its name, never
dropped: a resumed run would otherwise follow a different algorithm. Flags at their default
values are left out, and torch's optimiser fills them in again on load. A learning-rate
schedule's `initial_lr` (which torch's schedules add to a group) is left out too: a gpulab
schedule keeps it in its own state (`base_lrs`).

Needs torch and the safetensors package (`pip install torch safetensors`).
"""

import argparse
import sys

# torch's option flags that gpulab's optimisers do not have, with the value that means "off".
# At that value a flag changes nothing and is left out; at any other it is refused.
# (`foreach`, `fused`, `capturable` and `differentiable` choose how torch computes a step,
# not what it computes, so any value is fine and none is kept.)
_OFF = {"amsgrad": False, "nesterov": False, "dampening": 0, "maximize": False, "centered": False}
_HOW = ("foreach", "fused", "capturable", "differentiable")
# Torch's own bookkeeping in a group: which parameters it holds, and what a schedule added.
# `decoupled_weight_decay` is whether the class is AdamW, which gpulab's choice of class says.
_BOOKKEEPING = ("params", "param_names", "initial_lr", "decoupled_weight_decay")


def flatten(state_dict):
    """torch's nested `optimizer.state_dict()` as gpulab's flat `{name: tensor}`."""
    import torch

    groups = state_dict["param_groups"]
    if len(groups) != 1:
        raise ValueError(f"the optimiser has {len(groups)} parameter groups; gpulab's have one")
    group = groups[0]
    n = len(group["params"])
    if sorted(group["params"]) != list(range(n)):
        raise ValueError(f"param_groups[0]['params'] is {group['params']}, expected 0..{n - 1}")
    flat = {}
    for i, per_param in sorted(state_dict["state"].items()):
        for key, value in per_param.items():
            if value is None:
                continue
            if key == "step":
                value = torch.as_tensor(value, dtype=torch.float32).reshape(())
            elif not isinstance(value, torch.Tensor):
                raise ValueError(f"state[{i}][{key!r}] is {type(value).__name__}, not a tensor")
            flat[f"state.{i}.{key}"] = value.detach().cpu().contiguous()
    for key, value in group.items():
        if key in _BOOKKEEPING or key in _HOW:
            continue
        if key in _OFF:
            if value != _OFF[key]:
                raise ValueError(f"param_groups[0][{key!r}] is {value!r}: gpulab's optimisers "
                                 f"do not have this option (only {_OFF[key]!r})")
            continue
        if isinstance(value, torch.Tensor):
            value = value.tolist()
        if isinstance(value, bool) or not isinstance(value, (int, float, tuple, list)):
            raise ValueError(f"param_groups[0][{key!r}] is {value!r}, which gpulab does not know")
        flat[f"param_groups.0.{key}"] = torch.tensor(value, dtype=torch.float64)
    return flat


def unflatten(flat, template):
    """gpulab's flat `{name: tensor}` as torch's nested state dict, laid over `template` (the
    torch optimiser's own `state_dict()`, which supplies its parameter list and the flags gpulab
    leaves out)."""
    groups = template["param_groups"]
    if len(groups) != 1:
        raise ValueError(f"the torch optimiser has {len(groups)} parameter groups; gpulab's "
                         "have one")
    group = dict(groups[0])
    n = len(group["params"])
    state = {}
    for name, value in flat.items():
        parts = name.split(".")
        if len(parts) == 3 and parts[0] == "state" and parts[1].isdigit():
            i = int(parts[1])
            if i >= n:
                raise ValueError(f"{name}: the torch optimiser has {n} parameters")
            state.setdefault(i, {})[parts[2]] = value.clone()
        elif len(parts) == 3 and parts[:2] == ["param_groups", "0"]:
            v = value.tolist()
            group[parts[2]] = tuple(v) if isinstance(v, list) else v
        else:
            raise ValueError(f"{name!r} is not an optimiser state name (state.<i>.<key> or "
                             "param_groups.0.<hyperparameter>)")
    return {"state": state, "param_groups": [group]}


def load_optimizer(optimizer, path):
    """Loads a state gpulab's `optim::save_safetensors` wrote into a torch optimiser made for
    the same model (parameters in the same order)."""
    import safetensors.torch

    optimizer.load_state_dict(unflatten(safetensors.torch.load_file(path), optimizer.state_dict()))


def save_optimizer(optimizer, path):
    """Saves a torch optimiser's state for gpulab's `optim::load_safetensors`."""
    import safetensors.torch

    safetensors.torch.save_file(flatten(optimizer.state_dict()), path)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Convert an optimiser checkpoint between torch's "
                                 "torch.save(opt.state_dict()) file and gpulab's safetensors file.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("from-torch", help="a torch.save'd optimizer.state_dict() -> safetensors")
    a.add_argument("pt")
    a.add_argument("safetensors")
    b = sub.add_parser("to-torch", help="gpulab's safetensors -> a file for torch.load; with no "
                       "torch optimiser to lay it over, its flags take torch's defaults on load")
    b.add_argument("safetensors")
    b.add_argument("pt")
    b.add_argument("--params", type=int, help="how many parameters the optimiser holds (default: "
                   "one more than the highest index with state)")
    args = ap.parse_args(argv)
    import safetensors.torch
    import torch

    try:
        if args.cmd == "from-torch":
            sd = torch.load(args.pt, map_location="cpu", weights_only=True)
            safetensors.torch.save_file(flatten(sd), args.safetensors)
        else:
            flat = safetensors.torch.load_file(args.safetensors)
            n = args.params
            if n is None:
                n = 1 + max((int(k.split(".")[1]) for k in flat if k.startswith("state.")),
                            default=-1)
            template = {"state": {}, "param_groups": [{"params": list(range(n))}]}
            torch.save(unflatten(flat, template), args.pt)
    except ValueError as e:
        print(f"torch_checkpoint: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
