//! CPU vs GPU (and ours vs numpy / torch): element-wise div and add, sum, matmul, host-device
//! copies and kernel launch latency over sizes 2^10 .. 2^28.
//!
//!     cargo run --release -p gpulab --example tensor_bench [-- --quick] [-- --no-ref]
//!
//! The Python reference (bench/tensor_ref.py) runs in the same invocation with the
//! interpreter in $GPULAB_PYTHON, else the project's .venv, else `python3` (the script is looked
//! for in $GPULAB_BENCH_DIR, else the checkout's bench/); the "vs" columns are reference time /
//! our time, so above 1 means we are faster. On a GPU the references are torch and CuPy, and
//! `copy` (a device-to-device copy, measured by both) is the device's copy bandwidth.
//!
//! On a GPU a second table holds the dtype rows: matmul at 4096^2 and 8192^2 in f32, TF32
//! (`set_float32_matmul_precision("high")`), f16 and bf16 (tensor cores, f32 accumulation)
//! beside torch with the same settings, and add / div at 2^28 elements per float dtype as a
//! fraction of the device's copy bandwidth for that dtype (torch's device-to-device copy).
//! Without a GPU that table says it was skipped; it never shows a figure for work that failed.
//!
//! On the CPU, float64 matmul at 1024^2 and 2048^2 is timed beside numpy's float64 (rows
//! `matmul-f64`).
//!
//! Besides the tables it prints one machine-readable line, `BENCH_JSON {...}`, holding every
//! figure (seconds, best of the runs), read by gpu-check's runner; the dtype rows are ops
//! `matmul-f32|tf32|f16|bf16` (n = side^2) and `add-<dtype>`, `div-<dtype>`, `copy-<dtype>`.

use gpulab::{cuda, DType, Device, Tensor};
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// Matmul side caps: the CPU would take minutes beyond 2048^2.
const MATMUL_CAP_CPU: usize = 2048;
const MATMUL_CAP_GPU: usize = 16384;

/// Best of several runs, each finished (synchronised) before the clock stops.
fn time(dev: Device, mut f: impl FnMut()) -> f64 {
    let sync = || cuda::synchronize(dev).expect("synchronize");
    f();
    sync();
    let mut best = f64::INFINITY;
    let start = Instant::now();
    let mut runs = 0;
    while runs < 3 || (start.elapsed().as_secs_f64() < 0.2 && runs < 50) {
        let t = Instant::now();
        f();
        sync();
        best = best.min(t.elapsed().as_secs_f64());
        runs += 1;
    }
    best
}

type Key = (String, usize, String);

fn ours(sizes: &[usize], dev: Device, out: &mut HashMap<Key, f64>) -> gpulab::error::Result<()> {
    let d = if dev.is_cuda() { "cuda" } else { "cpu" };
    let mut put = |op: &str, n: usize, s: f64| {
        out.insert((op.to_string(), n, d.to_string()), s);
    };
    for &n in sizes {
        let a = Tensor::randn(n, dev)?;
        let b = Tensor::randn(n, dev)?.add(4.0)?;
        put("div", n, time(dev, || drop(a.div(&b).unwrap())));
        put("add", n, time(dev, || drop(a.add(&b).unwrap())));
        put("sum", n, time(dev, || drop(a.sum().unwrap())));
        if dev.is_cuda() {
            let host = Tensor::randn(n, Device::Cpu)?;
            put("h2d", n, time(dev, || drop(host.to(dev).unwrap())));
            put("d2h", n, time(dev, || drop(a.to(Device::Cpu).unwrap())));
        }
        let m = (n as f64).sqrt() as usize;
        if m <= if dev.is_cuda() {
            MATMUL_CAP_GPU
        } else {
            MATMUL_CAP_CPU
        } {
            let x = Tensor::randn((m, m), dev)?;
            put("matmul", m * m, time(dev, || drop(x.matmul(&x).unwrap())));
        }
        eprint!(".");
    }
    if !dev.is_cuda() {
        for m in CPU_F64_MATMUL_SIDES {
            let x = Tensor::randn((m, m), dev)?.to_dtype(DType::F64)?;
            put(
                "matmul-f64",
                m * m,
                time(dev, || drop(x.matmul(&x).unwrap())),
            );
        }
    }
    if dev.is_cuda() {
        let one = Tensor::ones(1, dev)?;
        let per = time(dev, || {
            for _ in 0..1000 {
                drop(one.add(0.0).unwrap());
            }
        }) / 1000.0;
        put("launch", 1, per);
    }
    Ok(())
}

/// The CPU's float64 matmul rows, beside numpy's float64.
const CPU_F64_MATMUL_SIDES: [usize; 2] = [1024, 2048];

/// Matmul sides and the element count of the dtype rows.
const DTYPE_MATMUL_SIDES: [usize; 2] = [4096, 8192];
const DTYPE_ELEMENTWISE_N: usize = 1 << 28;
/// The matmul variants: row label, dtype, TF32 allowed.
const MATMUL_KINDS: [(&str, DType, bool); 4] = [
    ("f32", DType::F32, false),
    ("tf32", DType::F32, true),
    ("f16", DType::F16, false),
    ("bf16", DType::BF16, false),
];
const FLOAT_DTYPES: [DType; 4] = [DType::F32, DType::F64, DType::F16, DType::BF16];

/// [`time`] for an op that may fail: one checked run first, so a failure is reported and
/// leaves its row out instead of panicking or timing nothing.
fn try_time(dev: Device, what: &str, f: impl Fn() -> gpulab::error::Result<Tensor>) -> Option<f64> {
    match f().and_then(|t| cuda::synchronize(dev).map(|_| t)) {
        Ok(_) => Some(time(dev, || drop(f().unwrap()))),
        Err(e) => {
            println!("{what}: failed, no figure: {e}");
            None
        }
    }
}

/// The dtype rows on cuda:0 (see the module comment).
fn gpu_dtype_rows(out: &mut HashMap<Key, f64>) -> gpulab::error::Result<()> {
    let dev = Device::Cuda(0);
    let mut put = |op: String, n: usize, s: Option<f64>| {
        if let Some(s) = s {
            out.insert((op, n, "cuda".to_string()), s);
        }
    };
    for m in DTYPE_MATMUL_SIDES {
        for (label, dtype, tf32) in MATMUL_KINDS {
            let x = Tensor::randn((m, m), dev)?.to_dtype(dtype)?;
            gpulab::backends::cuda::matmul::set_allow_tf32(tf32);
            let s = try_time(dev, &format!("matmul {label} {m}^2"), || x.matmul(&x));
            gpulab::set_float32_matmul_precision("highest")?;
            put(format!("matmul-{label}"), m * m, s);
            eprint!(".");
        }
    }
    let n = DTYPE_ELEMENTWISE_N;
    for dtype in FLOAT_DTYPES {
        let a = Tensor::randn(n, dev)?.to_dtype(dtype)?;
        let b = Tensor::randn(n, dev)?.add(4.0)?.to_dtype(dtype)?;
        let d = dtype.name();
        put(
            format!("add-{d}"),
            n,
            try_time(dev, &format!("add {d}"), || a.add(&b)),
        );
        put(
            format!("div-{d}"),
            n,
            try_time(dev, &format!("div {d}"), || a.div(&b)),
        );
        eprint!(".");
    }
    Ok(())
}

/// The dtype table: ours beside torch, matmul in TFLOP/s and element-wise as a fraction of
/// the copy bandwidth of the same dtype.
fn print_dtype_table(t: &HashMap<Key, f64>) {
    let get = |op: &str, n: usize, d: &str| t.get(&(op.to_string(), n, d.to_string())).copied();
    println!(
        "\n{:<12} {:>8} | {:>10} {:>14} | {:>10} {:>14} {:>8}",
        "dtype row", "size", "gpu", "", "torch", "", "vs torch"
    );
    let tflops = |m: usize, s: Option<f64>| {
        s.map(|s| format!("{:.1} TFLOP/s", 2.0 * (m as f64).powi(3) / s / 1e12))
            .unwrap_or_else(|| "-".into())
    };
    for m in DTYPE_MATMUL_SIDES {
        for (label, _, _) in MATMUL_KINDS {
            let op = format!("matmul-{label}");
            let (g, r) = (get(&op, m * m, "cuda"), get(&op, m * m, "ref-cuda"));
            println!(
                "{:<12} {:>8} | {:>10} {:>14} | {:>10} {:>14} {:>8}",
                op,
                format!("{m}^2"),
                fmt_time(g.as_ref()),
                tflops(m, g),
                fmt_time(r.as_ref()),
                tflops(m, r),
                ratio(r.as_ref(), g.as_ref())
            );
        }
    }
    let n = DTYPE_ELEMENTWISE_N;
    println!(
        "\n{:<12} {:>8} | {:>10} {:>10} | {:>10} {:>10} | {:>12} {:>8}",
        "element-wise", "size", "gpu", "GB/s", "copy", "GB/s", "of copy", "vs torch"
    );
    for dtype in FLOAT_DTYPES {
        let d = dtype.name();
        let bytes = dtype.size_in_bytes() as f64 * n as f64;
        let copy = get(&format!("copy-{d}"), n, "ref-cuda");
        let copy_gbs = copy.map(|s| 2.0 * bytes / s / 1e9);
        for op in ["add", "div"] {
            let key = format!("{op}-{d}");
            let (g, r) = (get(&key, n, "cuda"), get(&key, n, "ref-cuda"));
            let gbs = g.map(|s| 3.0 * bytes / s / 1e9);
            let gb = |x: Option<f64>| x.map(|v| format!("{v:.0}")).unwrap_or_else(|| "-".into());
            let frac = match (gbs, copy_gbs) {
                (Some(a), Some(c)) => format!("{:.0} %", 100.0 * a / c),
                _ => "-".into(),
            };
            println!(
                "{:<12} {:>8} | {:>10} {:>10} | {:>10} {:>10} | {:>12} {:>8}",
                key,
                "2^28",
                fmt_time(g.as_ref()),
                gb(gbs),
                fmt_time(copy.as_ref()),
                gb(copy_gbs),
                frac,
                ratio(r.as_ref(), g.as_ref())
            );
        }
    }
}

fn python() -> String {
    if let Ok(p) = std::env::var("GPULAB_PYTHON") {
        return p;
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    if venv.exists() {
        return venv.display().to_string();
    }
    "python3".into()
}

/// bench/ of the checkout, or $GPULAB_BENCH_DIR where the binary runs without one.
fn bench_dir() -> std::path::PathBuf {
    std::env::var_os("GPULAB_BENCH_DIR")
        .map(Into::into)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench"))
}

fn reference(sizes: &[usize], gpu: bool, out: &mut HashMap<Key, f64>) -> Result<(), String> {
    let script = bench_dir().join("tensor_ref.py");
    let list: Vec<String> = sizes.iter().map(|n| n.to_string()).collect();
    let py = python();
    let mut cmd = Command::new(&py);
    cmd.arg(&script).arg("--sizes").arg(list.join(","));
    if gpu {
        // torch's figures for the dtype rows, with the same sides, sizes and TF32 settings.
        cmd.arg("--gpu-dtypes");
    }
    let o = cmd
        .output()
        .map_err(|e| format!("could not run {py}: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "{py} {}: {}",
            script.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if let [op, n, dev, secs] = f[..] {
            if let (Ok(n), Ok(s)) = (n.parse(), secs.parse()) {
                out.insert((op.to_string(), n, format!("ref-{dev}")), s);
            }
        }
    }
    Ok(())
}

fn fmt_time(s: Option<&f64>) -> String {
    match s {
        None => "-".into(),
        Some(&s) if s < 1e-3 => format!("{:.1} us", s * 1e6),
        Some(&s) if s < 1.0 => format!("{:.2} ms", s * 1e3),
        Some(&s) => format!("{s:.2} s"),
    }
}

fn ratio(r: Option<&f64>, o: Option<&f64>) -> String {
    match (r, o) {
        (Some(r), Some(o)) if *o > 0.0 => format!("{:.2}x", r / o),
        _ => "-".into(),
    }
}

/// What the time means as a rate: GFLOP/s for matmul, GB/s of memory traffic otherwise.
fn rate(op: &str, n: usize, s: Option<&f64>) -> String {
    let Some(&s) = s else { return "-".into() };
    match op {
        "matmul" => {
            let m = (n as f64).sqrt();
            format!("{:.1} GFLOP/s", 2.0 * m * m * m / s / 1e9)
        }
        "div" | "add" => format!("{:.1} GB/s", 12.0 * n as f64 / s / 1e9),
        "sum" | "h2d" | "d2h" => format!("{:.1} GB/s", 4.0 * n as f64 / s / 1e9),
        "copy" => format!("{:.1} GB/s", 8.0 * n as f64 / s / 1e9),
        _ => "-".into(),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let exps: Vec<u32> = if quick {
        vec![10, 16, 20, 22]
    } else {
        (10..=28).step_by(2).collect()
    };
    let sizes: Vec<usize> = exps.iter().map(|e| 1usize << e).collect();
    let info = gpulab::cpu_info();
    println!(
        "CPU: {} ({} cores, {} threads)",
        info.model, info.physical_cores, info.logical_cores
    );
    let gpu = cuda::is_available();
    match cuda::get_device_name(0) {
        Ok(name) => println!("GPU: {name}"),
        Err(e) => println!("GPU: none ({e})"),
    }
    let mut t: HashMap<Key, f64> = HashMap::new();
    eprint!("ours on cpu");
    ours(&sizes, Device::Cpu, &mut t).expect("cpu benchmark");
    if gpu {
        eprint!(" / cuda");
        ours(&sizes, Device::Cuda(0), &mut t).expect("gpu benchmark");
        eprint!(" / cuda dtypes");
        if let Err(e) = gpu_dtype_rows(&mut t) {
            println!("GPU dtype rows stopped: {e}");
        }
    }
    eprintln!();
    if !args.iter().any(|a| a == "--no-ref") {
        if let Err(e) = reference(&sizes, gpu, &mut t) {
            println!("reference skipped: {e}");
        }
    }
    let get = |op: &str, n: usize, d: &str| t.get(&(op.to_string(), n, d.to_string()));
    println!(
        "\n{:<7} {:>10} | {:>10} {:>16} {:>10} {:>8} | {:>10} {:>16} {:>10} {:>8} {:>10} {:>8} | {:>8}",
        "op",
        "elements",
        "cpu",
        "",
        "numpy",
        "vs ref",
        "gpu",
        "",
        "torch",
        "vs ref",
        "cupy",
        "vs cupy",
        "gpu/cpu"
    );
    let mut keys: Vec<(String, usize)> = t
        .keys()
        .filter(|(op, _, _)| !op.contains('-'))
        .map(|(op, n, _)| (op.clone(), *n))
        .collect();
    let order = [
        "copy", "div", "add", "sum", "matmul", "h2d", "d2h", "launch",
    ];
    keys.sort_by_key(|(op, n)| (order.iter().position(|o| o == op), *n));
    keys.dedup();
    for (op, n) in keys {
        let (c, rc, g, rg, rp) = (
            get(&op, n, "cpu"),
            get(&op, n, "ref-cpu"),
            get(&op, n, "cuda"),
            get(&op, n, "ref-cuda"),
            get(&op, n, "ref-cupy"),
        );
        println!(
            "{:<7} {:>10} | {:>10} {:>16} {:>10} {:>8} | {:>10} {:>16} {:>10} {:>8} {:>10} {:>8} | {:>8}",
            op,
            if n.is_power_of_two() {
                format!("2^{}", n.trailing_zeros())
            } else {
                n.to_string()
            },
            fmt_time(c),
            rate(&op, n, c),
            fmt_time(rc),
            ratio(rc, c),
            fmt_time(g),
            rate(&op, n, g),
            fmt_time(rg),
            ratio(rg, g),
            fmt_time(rp),
            ratio(rp, g),
            ratio(c, g),
        );
    }
    println!("\nCPU float64 matmul (the vs column is numpy float64's time / ours):");
    for m in CPU_F64_MATMUL_SIDES {
        let (c, rc) = (
            get("matmul-f64", m * m, "cpu"),
            get("matmul-f64", m * m, "ref-cpu"),
        );
        println!(
            "matmul f64 {m:>5}^2 | {:>10} {:>16} | numpy {:>10} {:>16} | {:>8}",
            fmt_time(c),
            rate("matmul", m * m, c),
            fmt_time(rc),
            rate("matmul", m * m, rc),
            ratio(rc, c)
        );
    }
    if gpu {
        print_dtype_table(&t);
    } else {
        println!(
            "\nGPU dtype rows (f32 / TF32 / f16 / bf16 matmul at 4096^2 and 8192^2, element-wise \
             at 2^28 per float dtype against the copy bandwidth): skipped: no CUDA device"
        );
    }
    println!("{}", json_line(&t));
}

/// Every figure as one JSON line: `BENCH_JSON {"bench": "tensor", "rows": [...]}`, each row
/// `{"op", "n", "impl", "seconds"}` with impl gpulab-cpu, gpulab-cuda, numpy, torch or cupy.
fn json_line(t: &HashMap<Key, f64>) -> String {
    let mut rows: Vec<(&Key, &f64)> = t.iter().collect();
    rows.sort_by(|a, b| a.0.cmp(b.0));
    let rows: Vec<String> = rows
        .into_iter()
        .map(|((op, n, dev), s)| {
            let imp = match dev.as_str() {
                "cpu" => "gpulab-cpu",
                "cuda" => "gpulab-cuda",
                "ref-cpu" => "numpy",
                "ref-cuda" => "torch",
                "ref-cupy" => "cupy",
                other => other,
            };
            format!(r#"{{"op":"{op}","n":{n},"impl":"{imp}","seconds":{s:e}}}"#)
        })
        .collect();
    format!(
        r#"BENCH_JSON {{"bench":"tensor","gpu":{},"rows":[{}]}}"#,
        cuda::is_available(),
        rows.join(",")
    )
}
