//! Training throughput of the articles' networks, gpulab beside PyTorch in the same invocation:
//!
//!     cargo run --release -p gpulab --example train_bench [-- --only dense,mnist,catdog]
//!         [-- --reps 7] [-- --no-ref] [-- --parts]
//!
//! - `dense`: article 01's dense network, 10,000-wide input, 1000 relu, 1000 relu, 1; batch 32,
//!   Adam, mse.
//! - `mnist`: article 01's MNIST CNN (conv 32 3x3 relu, pool 2, conv 64 3x3 relu, pool 2, conv
//!   64 3x3 relu, flatten, 64 relu, 10) on 28x28x1; batch 64, Adam, cross-entropy.
//! - `catdog`: article 04's cat-vs-dog CNN (conv 32 3x3 relu, pool 2, flatten, 128 relu, 1) on
//!   64x64x3; batch 32, Adam, binary cross-entropy on the logit.
//!
//! Each is timed as whole training steps (zero_grad, forward, loss, backward, optimizer step)
//! on random data of the model's shapes: warm-up steps first, then `--reps` steps each timed
//! alone (synchronised on a GPU); the figure is the median, as samples/s. The same models run
//! in PyTorch (bench/train_ref.py) with the interpreter in $GPULAB_TORCH_PYTHON, else
//! `python3`, and torch's thread count set to rayon's. The ratio is gpulab / torch, so above 1
//! means gpulab is faster. `--parts` also prints gpulab's median forward+loss, backward and
//! optimizer times per model (on stderr). Rows for CUDA say "skipped: no CUDA device" without one.
//! On a GPU the `cuda-amp` rows train the same models in mixed precision on both sides: the
//! forward pass and the loss in an autocast region (float16), the loss scaled by a GradScaler
//! (`amp::autocast` / `amp::GradScaler` here, `torch.autocast` / `torch.amp.GradScaler` there).

use gpulab::amp::{self, GradScaler};
use gpulab::nn::{self, Module};
use gpulab::optim::Adam;
use gpulab::{cuda, manual_seed, Device, Tensor, F};
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const MODELS: [&str; 3] = ["dense", "mnist", "catdog"];

/// The model, its input shape, its batch size, and the loss kind.
fn build(name: &str) -> (nn::Sequential, Vec<usize>, usize, &'static str) {
    match name {
        "dense" => (
            nn::Sequential::new()
                .add(nn::Linear::new(10_000, 1000))
                .add(nn::ReLU)
                .add(nn::Linear::new(1000, 1000))
                .add(nn::ReLU)
                .add(nn::Linear::new(1000, 1)),
            vec![32, 10_000],
            32,
            "mse",
        ),
        "mnist" => (
            nn::Sequential::new()
                .add(nn::Conv2d::new(1, 32, 3))
                .add(nn::ReLU)
                .add(nn::MaxPool2d::new(2))
                .add(nn::Conv2d::new(32, 64, 3))
                .add(nn::ReLU)
                .add(nn::MaxPool2d::new(2))
                .add(nn::Conv2d::new(64, 64, 3))
                .add(nn::ReLU)
                .add(nn::Flatten)
                .add(nn::Linear::new(64 * 3 * 3, 64))
                .add(nn::ReLU)
                .add(nn::Linear::new(64, 10)),
            vec![64, 1, 28, 28],
            64,
            "ce",
        ),
        "catdog" => (
            nn::Sequential::new()
                .add(nn::Conv2d::new(3, 32, 3))
                .add(nn::ReLU)
                .add(nn::MaxPool2d::new(2))
                .add(nn::Flatten)
                .add(nn::Linear::new(32 * 31 * 31, 128))
                .add(nn::ReLU)
                .add(nn::Linear::new(128, 1)),
            vec![32, 3, 64, 64],
            32,
            "bce",
        ),
        other => panic!("unknown model {other}: use dense, mnist or catdog"),
    }
}

/// Median seconds per training step of `name` on `dev`, and the batch size.
fn ours(
    name: &str,
    dev: Device,
    mixed: bool,
    reps: usize,
    warmup: usize,
    parts: bool,
) -> gpulab::error::Result<(f64, usize)> {
    manual_seed(0);
    let (model, xshape, batch, loss) = build(name);
    model.to(dev)?;
    let x = Tensor::randn(xshape, dev)?;
    let y = match loss {
        "mse" => Tensor::randn((batch, 1), dev)?,
        "ce" => {
            let l: Vec<i64> = (0..batch as i64).map(|i| (i * 7) % 10).collect();
            Tensor::from_vec(l, batch, dev)?
        }
        _ => {
            let l: Vec<f32> = (0..batch).map(|i| (i % 2) as f32).collect();
            Tensor::from_vec(l, (batch, 1), dev)?
        }
    };
    let mut opt = Adam::new(model.parameters(), 1e-3);
    let mut scaler = GradScaler::new().enabled(mixed);
    // With --parts, the median time of each phase as well (synchronised between phases).
    let mut phases: [Vec<f64>; 3] = Default::default();
    let mut step = |record: bool| -> gpulab::error::Result<()> {
        let t0 = Instant::now();
        opt.zero_grad();
        let l = amp::Autocast::new(dev).enabled(mixed).run(|| {
            let out = model.forward(&x)?;
            match loss {
                "mse" => F::mse_loss(&out, &y),
                "ce" => F::cross_entropy(&out, &y),
                _ => F::binary_cross_entropy_with_logits(&out, &y),
            }
        })?;
        if parts {
            cuda::synchronize(dev)?;
        }
        let t1 = Instant::now();
        scaler.scale(&l)?.backward()?;
        if parts {
            cuda::synchronize(dev)?;
        }
        let t2 = Instant::now();
        scaler.step(&mut opt)?;
        scaler.update()?;
        if parts && record {
            cuda::synchronize(dev)?;
            let t3 = Instant::now();
            phases[0].push((t1 - t0).as_secs_f64());
            phases[1].push((t2 - t1).as_secs_f64());
            phases[2].push((t3 - t2).as_secs_f64());
        }
        Ok(())
    };
    for _ in 0..warmup {
        step(false)?;
    }
    cuda::synchronize(dev)?;
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        step(true)?;
        cuda::synchronize(dev)?;
        times.push(t.elapsed().as_secs_f64());
    }
    if parts {
        let [f, b, o] = phases.map(|mut v| median(&mut v) * 1e3);
        eprint!("forward+loss {f:.1} ms, backward {b:.1} ms, optimizer {o:.1} ms; ");
    }
    Ok((median(&mut times), batch))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn python() -> String {
    std::env::var("GPULAB_TORCH_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// bench/ of the checkout, or $GPULAB_BENCH_DIR where the binary runs without one.
fn bench_dir() -> std::path::PathBuf {
    std::env::var_os("GPULAB_BENCH_DIR")
        .map(Into::into)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench"))
}

struct Reference {
    threads: Option<String>,
    version: Option<String>,
    /// (model, device) -> (seconds per step, batch)
    rows: HashMap<(String, String), (f64, usize)>,
}

fn reference(
    only: &[&str],
    devices: &[&str],
    threads: usize,
    reps: usize,
    warmup: usize,
) -> Result<Reference, String> {
    let script = bench_dir().join("train_ref.py");
    let py = python();
    let o = Command::new(&py)
        .arg(&script)
        .args(["--threads", &threads.to_string()])
        .args(["--devices", &devices.join(",")])
        .args(["--only", &only.join(",")])
        .args(["--reps", &reps.to_string()])
        .args(["--warmup", &warmup.to_string()])
        .output()
        .map_err(|e| {
            format!("torch: not run: could not start {py} ({e}); set GPULAB_TORCH_PYTHON")
        })?;
    let stderr = String::from_utf8_lossy(&o.stderr);
    if o.status.code() == Some(3) || stderr.contains("torch: not installed") {
        return Err(format!(
            "torch: not installed (pip install torch; or set GPULAB_TORCH_PYTHON to a python \
             that has it; {py} says: {})",
            stderr.trim()
        ));
    }
    if !o.status.success() {
        return Err(format!(
            "torch: failed, no figures: {py} {}: {}",
            script.display(),
            stderr.trim()
        ));
    }
    for line in stderr.lines() {
        println!("torch: {line}");
    }
    let mut r = Reference {
        threads: None,
        version: None,
        rows: HashMap::new(),
    };
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f[..] {
            ["threads", n] => r.threads = Some(n.to_string()),
            ["version", v] => r.version = Some(v.to_string()),
            [m, d, s, b] => {
                if let (Ok(s), Ok(b)) = (s.parse(), b.parse()) {
                    r.rows.insert((m.to_string(), d.to_string()), (s, b));
                }
            }
            _ => {}
        }
    }
    Ok(r)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let only_arg = value("--only").unwrap_or_else(|| MODELS.join(","));
    let only: Vec<&str> = only_arg.split(',').collect();
    for m in &only {
        if !MODELS.contains(m) {
            eprintln!(
                "--only: unknown model {m}; the models are {}",
                MODELS.join(", ")
            );
            std::process::exit(2);
        }
    }
    let reps: usize = value("--reps").and_then(|v| v.parse().ok()).unwrap_or(7);
    let warmup = 2;
    let parts = args.iter().any(|a| a == "--parts");
    let threads = rayon::current_num_threads();
    let info = gpulab::cpu_info();
    println!(
        "CPU: {} ({} cores, {} threads); rayon threads: {threads}",
        info.model, info.physical_cores, info.logical_cores
    );
    let gpu = cuda::is_available();
    match cuda::get_device_name(0) {
        Ok(name) => println!("GPU: {name}"),
        Err(e) => println!("GPU: none ({e})"),
    }
    let mut devices = vec![("cpu", Device::Cpu)];
    if gpu {
        devices.push(("cuda", Device::Cuda(0)));
        devices.push(("cuda-amp", Device::Cuda(0)));
    }
    let mut mine: HashMap<(String, String), Result<(f64, usize), String>> = HashMap::new();
    for (dname, dev) in &devices {
        for m in &only {
            eprint!("gpulab {m} on {dname} ... ");
            let mixed = dname.ends_with("-amp");
            let r = ours(m, *dev, mixed, reps, warmup, parts).map_err(|e| e.to_string());
            match &r {
                Ok((s, _)) => eprintln!("{:.1} ms/step", s * 1e3),
                Err(e) => eprintln!("failed: {e}"),
            }
            mine.insert((m.to_string(), dname.to_string()), r);
        }
    }
    let dev_names: Vec<&str> = devices.iter().map(|(d, _)| *d).collect();
    let reference = if args.iter().any(|a| a == "--no-ref") {
        Err("torch: not run (--no-ref)".to_string())
    } else {
        eprintln!("torch ...");
        reference(&only, &dev_names, threads, reps, warmup)
    };
    match &reference {
        Ok(r) => println!(
            "torch {} with {} threads (torch.get_num_threads()), gpulab with {threads} rayon \
             threads",
            r.version.as_deref().unwrap_or("?"),
            r.threads.as_deref().unwrap_or("?")
        ),
        Err(e) => println!("{e}"),
    }
    println!(
        "\n{:<8} {:<8} {:>6} | {:>12} {:>10} | {:>12} {:>10} | {:>12}",
        "model", "dev", "batch", "gpulab ms", "samples/s", "torch ms", "samples/s", "gpulab/torch"
    );
    for dname in ["cpu", "cuda", "cuda-amp"] {
        for m in &only {
            if dname != "cpu" && !gpu {
                println!("{m:<8} {dname:<8} skipped: no CUDA device");
                continue;
            }
            let key = (m.to_string(), dname.to_string());
            let ours = mine.get(&key).cloned().unwrap_or(Err("not run".into()));
            let theirs = reference
                .as_ref()
                .ok()
                .and_then(|r| r.rows.get(&key))
                .copied();
            let (ours_ms, ours_sps, batch) = match &ours {
                Ok((s, b)) => (
                    format!("{:.1}", s * 1e3),
                    format!("{:.1}", *b as f64 / s),
                    b.to_string(),
                ),
                Err(e) => (format!("failed: {e}"), "-".into(), "-".into()),
            };
            let (t_ms, t_sps) = match theirs {
                Some((s, b)) => (format!("{:.1}", s * 1e3), format!("{:.1}", b as f64 / s)),
                None => ("-".into(), "-".into()),
            };
            let ratio = match (&ours, theirs) {
                (Ok((s, _)), Some((t, _))) => format!("{:.2}x", t / s),
                _ => "-".into(),
            };
            println!(
                "{m:<8} {dname:<8} {batch:>6} | {ours_ms:>12} {ours_sps:>10} | {t_ms:>12} \
                 {t_sps:>10} | {ratio:>12}"
            );
        }
    }
}
