"""Reference training throughput for prelude/examples/train_bench.rs: the same three models
in PyTorch, trained on random data of the same shapes with the same batch sizes, Adam and
losses, timed the same way (warm-up steps, then several repetitions; the median step).

    python bench/train_ref.py --threads 2 [--devices cpu,cuda,cuda-amp] [--quick] [--only dense,mnist]

`cuda-amp` trains on CUDA in mixed precision: forward and loss under torch.autocast (float16),
the loss scaled by torch.amp.GradScaler.

Prints `threads N` (torch.get_num_threads() after --threads is applied) and one line per
measurement, `model device seconds_per_step batch`, which the Rust benchmark reads. A device
torch cannot use is reported on stderr (`skipped: ...`) and leaves its rows out. Exits 3 with
`torch: not installed` on stderr when torch cannot be imported.
"""

import argparse
import statistics
import sys
import time

try:
    import torch
    from torch import nn
    import torch.nn.functional as F
except ImportError as e:  # the Rust side prints its own figures and this line
    print(f"torch: not installed ({e})", file=sys.stderr)
    sys.exit(3)


def dense():
    # article 01: 10,000-wide input, 1000 relu, 1000 relu, 1; mse
    model = nn.Sequential(
        nn.Linear(10_000, 1000), nn.ReLU(), nn.Linear(1000, 1000), nn.ReLU(), nn.Linear(1000, 1)
    )
    return model, (32, 10_000), "mse", 32


def mnist():
    # article 01's MNIST CNN, channels first as torch (and gpulab) lay images out
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 64, 3), nn.ReLU(),
        nn.Flatten(), nn.Linear(64 * 3 * 3, 64), nn.ReLU(), nn.Linear(64, 10),
    )
    return model, (64, 1, 28, 28), "ce", 64


def catdog():
    # article 04's cat-vs-dog CNN: conv 32 3x3 relu, pool 2, flatten, 128 relu, 1 (sigmoid in the loss)
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 31 * 31, 128), nn.ReLU(), nn.Linear(128, 1),
    )
    return model, (32, 3, 64, 64), "bce", 32


MODELS = {"dense": dense, "mnist": mnist, "catdog": catdog}


def step_time(name, dev, reps, warmup, mixed=False):
    torch.manual_seed(0)
    model, xshape, loss, batch = MODELS[name]()
    model = model.to(dev)
    x = torch.randn(xshape, device=dev)
    if loss == "mse":
        y = torch.randn((batch, 1), device=dev)
        lossf = F.mse_loss
    elif loss == "ce":
        y = torch.randint(0, 10, (batch,), device=dev)
        lossf = F.cross_entropy
    else:
        y = torch.randint(0, 2, (batch, 1), device=dev).float()
        lossf = F.binary_cross_entropy_with_logits
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    scaler = torch.amp.GradScaler(dev.type, enabled=mixed)

    def step():
        opt.zero_grad()
        with torch.autocast(dev.type, dtype=torch.float16, enabled=mixed):
            loss = lossf(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    for _ in range(warmup):
        step()
    sync()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times), batch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--devices", default="cpu")
    p.add_argument("--only", default="dense,mnist,catdog")
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--warmup", type=int, default=2)
    a = p.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    print(f"threads {torch.get_num_threads()}", flush=True)
    print(f"version {torch.__version__}", flush=True)
    for d in a.devices.split(","):
        if d.startswith("cuda") and not torch.cuda.is_available():
            print(f"torch {d}: skipped: no CUDA device", file=sys.stderr)
            continue
        dev = torch.device(d.removesuffix("-amp"))
        for name in a.only.split(","):
            s, batch = step_time(name, dev, a.reps, a.warmup, mixed=d.endswith("-amp"))
            print(f"{name} {d} {s:.6g} {batch}", flush=True)


if __name__ == "__main__":
    main()
