//! Mandelbrot benchmark: gpulab's CPU serial, CPU parallel and GPU renders against numba.
//!
//!     cargo run --release -p gpulab --example mandelbrot_bench [-- --quick]
//!
//! Runs `bench/mandelbrot_ref.py` (numba njit(parallel=True), and numba cuda.jit when a GPU
//! is present) in the same invocation with the interpreter named by `$GPULAB_PYTHON`
//! (default `python3`; the script is looked for in $GPULAB_BENCH_DIR, else the checkout's
//! bench/), checks that every engine produced the same iteration counts (sum of counts as a
//! checksum) and prints the ratios, then one machine-readable line per case,
//! `BENCH_JSON {"bench": "mandelbrot", ...}`, read by gpu-check's runner. For scale: article 04 reports 4.07 s
//! for the 1536x1024x20 image in plain Python and 0.0046 s with its numba CUDA kernel.

use gpulab::timing::format_duration;
use gpulab::*;
use std::time::Duration;

struct Row {
    name: String,
    median: Option<Duration>,
    checksum: Option<u64>,
    note: String,
}

fn run_reference(m: &Mandelbrot, repeats: usize) -> Vec<Row> {
    let python = std::env::var("GPULAB_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = std::env::var("GPULAB_BENCH_DIR")
        .map(|d| format!("{d}/mandelbrot_ref.py"))
        .unwrap_or_else(|_| {
            concat!(env!("CARGO_MANIFEST_DIR"), "/../bench/mandelbrot_ref.py").into()
        });
    let out = std::process::Command::new(&python)
        .arg(script)
        .args([
            m.width.to_string(),
            m.height.to_string(),
            m.max_iter.to_string(),
            repeats.to_string(),
        ])
        .output();
    let out = match out {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            let last = err.lines().last().unwrap_or("").to_string();
            return vec![Row {
                name: "numba".into(),
                median: None,
                checksum: None,
                note: format!("reference failed: {last}"),
            }];
        }
        Err(e) => {
            return vec![Row {
                name: "numba".into(),
                median: None,
                checksum: None,
                note: format!("cannot run {python}: {e}"),
            }];
        }
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| {
            let threads = v["threads"]
                .as_u64()
                .map(|t| format!("{t} threads"))
                .unwrap_or_default();
            Row {
                name: v["impl"].as_str().unwrap_or("?").to_string(),
                median: v["median_s"].as_f64().map(Duration::from_secs_f64),
                checksum: v["checksum"].as_u64(),
                note: v["skipped"]
                    .as_str()
                    .map(|s| format!("skipped: {s}"))
                    .unwrap_or(threads),
            }
        })
        .collect()
}

fn rust_row(
    name: &str,
    m: &Mandelbrot,
    repeats: usize,
    f: impl Fn(&Mandelbrot) -> MandelbrotImage,
) -> Row {
    let mut checksum = 0;
    let r = Bench::new(name)
        .warmup(1)
        .repeats(repeats)
        .max_time(Duration::from_secs(20))
        .run(|| {
            let img = f(m);
            checksum = img.total_iterations();
        });
    Row {
        name: name.into(),
        median: r.median().ok(),
        checksum: Some(checksum),
        note: format!("{} runs", r.cpu.len()),
    }
}

fn gpu_rows(m: &Mandelbrot, repeats: usize) -> Vec<Row> {
    if !gpulab::cuda::is_available() {
        return vec![Row {
            name: "gpulab GPU".into(),
            median: None,
            checksum: None,
            note: "skipped: no CUDA device".into(),
        }];
    }
    let dev = Device::Cuda(0);
    let skip = |why: String| {
        vec![Row {
            name: "gpulab GPU".into(),
            median: None,
            checksum: None,
            note: format!("skipped: {why}"),
        }]
    };
    let mut out = match Tensor::zeros((m.height, m.width), dev) {
        Ok(t) => t,
        Err(e) => return skip(e.to_string()),
    };
    // Kernel alone (as the article times it, but waiting for the GPU), then with the copy back.
    let kernel = Bench::new("kernel")
        .warmup(2)
        .repeats(repeats.max(5))
        .on(&dev)
        .run(|| m.gpu_launch(&mut out));
    let mut checksum = None;
    let full = Bench::new("full")
        .warmup(1)
        .repeats(repeats.max(5))
        .on(&dev)
        .run(|| -> Result<(), gpulab::Error> {
            checksum = Some(m.gpu(dev)?.total_iterations());
            Ok(())
        });
    let gpu_note = kernel
        .gpu_stats()
        .map(|g| format!("CUDA events: {}", format_duration(g.median)))
        .unwrap_or_default();
    vec![
        Row {
            name: "gpulab GPU kernel".into(),
            median: kernel.median().ok(),
            checksum,
            note: kernel.error.clone().unwrap_or(gpu_note),
        },
        Row {
            name: "gpulab GPU incl. alloc+copy".into(),
            median: full.median().ok(),
            checksum,
            note: full.error.clone().unwrap_or_default(),
        },
    ]
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let cases = [
        (Mandelbrot::default(), 10, 5),
        (
            Mandelbrot::default().size(4096, 4096).iterations(1000),
            3,
            3,
        ),
    ];
    println!("threads: {} (rayon)", rayon::current_num_threads());
    for (m, rust_reps, py_reps) in cases {
        if quick && m.max_iter > 20 {
            continue;
        }
        println!(
            "\n== Mandelbrot {}x{}, {} iterations ==",
            m.width, m.height, m.max_iter
        );
        let mut rows = vec![
            rust_row("gpulab CPU serial", &m, rust_reps, |m| {
                m.cpu_serial().unwrap()
            }),
            rust_row("gpulab CPU parallel", &m, rust_reps, |m| {
                m.cpu_parallel().unwrap()
            }),
        ];
        rows.extend(gpu_rows(&m, rust_reps));
        rows.extend(run_reference(&m, py_reps));
        let base = rows[0].median;
        let expected = rows[0].checksum;
        println!(
            "{:<28} {:>12} {:>10} {:>14}  note",
            "engine", "median", "vs serial", "checksum"
        );
        for r in &rows {
            let t = r.median.map(format_duration).unwrap_or_else(|| "-".into());
            let up = match (base, r.median) {
                (Some(b), Some(t)) => format!("{:.2}x", b.as_secs_f64() / t.as_secs_f64()),
                _ => "-".into(),
            };
            let sum = match r.checksum {
                Some(c) if Some(c) == expected => format!("{c} ="),
                Some(c) => format!("{c} DIFFERS"),
                None => "-".into(),
            };
            println!(
                "{:<28} {:>12} {:>10} {:>14}  {}",
                r.name, t, up, sum, r.note
            );
        }
        let find = |n: &str| rows.iter().find(|r| r.name == n).and_then(|r| r.median);
        if let (Some(ours), Some(numba)) = (
            find("gpulab CPU parallel"),
            find("numba njit(parallel=True)"),
        ) {
            println!(
                "CPU parallel vs numba parallel: {:.2}x ({})",
                numba.as_secs_f64() / ours.as_secs_f64(),
                if ours <= numba {
                    "gpulab as fast or faster"
                } else {
                    "numba faster"
                }
            );
        }
        if let (Some(ours), Some(numba)) = (find("gpulab GPU kernel"), find("numba cuda.jit")) {
            println!(
                "GPU vs numba cuda.jit: {:.2}x",
                numba.as_secs_f64() / ours.as_secs_f64()
            );
        }
        let json_rows: Vec<String> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "impl": r.name,
                    "seconds": r.median.map(|d| d.as_secs_f64()),
                    "checksum": r.checksum,
                    "checksum_matches": r.checksum.map(|c| Some(c) == expected),
                    "note": r.note,
                })
                .to_string()
            })
            .collect();
        println!(
            r#"BENCH_JSON {{"bench":"mandelbrot","case":"{}x{}x{}","gpu":{},"rows":[{}]}}"#,
            m.width,
            m.height,
            m.max_iter,
            gpulab::cuda::is_available(),
            json_rows.join(",")
        );
    }
}
