//! Benchmark statistics against a fake clock and a fake device.
mod common;
use common::clock::FakeClock;
use gpulab::timing::{Clock, DeviceSpan, DeviceTiming, Stats};
use gpulab::*;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

#[test]
fn stats_of_known_samples() {
    let s = Stats::of(&[ms(4), ms(1), ms(3), ms(2)]).unwrap();
    assert_eq!(s.n, 4);
    assert_eq!(s.min, ms(1));
    assert_eq!(s.max, ms(4));
    assert_eq!(s.median, Duration::from_micros(2500));
    assert_eq!(s.mean, Duration::from_micros(2500));
    // Population std of 1,2,3,4 ms = sqrt(1.25) ms.
    assert!((s.std.as_secs_f64() - 1.25f64.sqrt() * 1e-3).abs() < 2e-9);
    assert_eq!(Stats::of(&[ms(7)]).unwrap().median, ms(7));
    assert!(Stats::of(&[]).is_none());
}

#[test]
fn warmup_is_not_timed_and_repeats_are() {
    let clock = FakeClock::default();
    let calls = Cell::new(0u64);
    // Run k takes k ms: warm-up runs are 1 and 2, the timed ones 3..=7.
    let r = Bench::new("fake")
        .warmup(2)
        .repeats(5)
        .clock(clock.clone())
        .interrupt_probe(|| false)
        .run(|| {
            calls.set(calls.get() + 1);
            clock.advance(ms(calls.get()));
        });
    assert_eq!(calls.get(), 7);
    assert_eq!(r.cpu, vec![ms(3), ms(4), ms(5), ms(6), ms(7)]);
    let s = r.cpu_stats().unwrap();
    assert_eq!(
        (s.min, s.median, s.max, s.mean),
        (ms(3), ms(5), ms(7), ms(5))
    );
    assert!(r.synced && !r.interrupted && r.gpu.is_none());
    assert!(r.summary().contains("CPU:"));
    assert!(r.summary().contains("5.000 ms"), "{}", r.summary());
}

#[test]
fn max_time_caps_the_repeats() {
    let clock = FakeClock::default();
    let r = Bench::new("slow")
        .warmup(0)
        .repeats(100)
        .max_time(Duration::from_secs(10))
        .clock(clock.clone())
        .interrupt_probe(|| false)
        .run(|| clock.advance(Duration::from_secs(4)));
    assert_eq!(r.cpu.len(), 3, "4 s runs: stop once 12 s >= 10 s");
}

#[test]
fn interrupt_between_repeats_keeps_completed_runs() {
    let clock = FakeClock::default();
    let n = Cell::new(0);
    let r = Bench::new("int")
        .warmup(1)
        .repeats(10)
        .clock(clock.clone())
        .interrupt_probe(|| n.get() >= 4) // raised during the 4th call (3rd timed run)
        .run(|| {
            n.set(n.get() + 1);
            clock.advance(ms(1));
        });
    assert!(r.interrupted);
    assert_eq!(
        r.cpu.len(),
        2,
        "the run during which the flag rose is discarded"
    );
    assert!(r.summary().contains("interrupted"));
}

/// A device whose queued work finishes `lag` after it was queued: host time without a
/// wait sees only the launch; with a wait it sees the work.
struct FakeGpu {
    clock: FakeClock,
    queued_until: Cell<Duration>,
    syncs: Cell<usize>,
    log: Rc<RefCell<Vec<&'static str>>>,
    /// Timers handed out (the bench must create one, outside the timed runs).
    timers: Cell<usize>,
    /// The sync with this (1-based) number fails, as a sticky kernel error would.
    fail_sync: Option<usize>,
}
impl FakeGpu {
    fn launch(&self, work: Duration) {
        self.clock.advance(Duration::from_micros(10)); // launch overhead on the host
        let start = self.queued_until.get().max(self.clock.now());
        self.queued_until.set(start + work);
    }
}
struct FakeSpan {
    gpu: *const FakeGpu,
    start: Duration,
    end: Option<Duration>,
}
impl DeviceSpan for FakeSpan {
    fn start(&mut self) {
        let gpu = unsafe { &*self.gpu };
        self.start = gpu.queued_until.get().max(gpu.clock.now());
        self.end = None;
    }
    fn stop(&mut self) {
        self.end = Some(unsafe { &*self.gpu }.queued_until.get());
    }
    fn elapsed(&mut self) -> Option<Duration> {
        let gpu = unsafe { &*self.gpu };
        gpu.log.borrow_mut().push("elapsed");
        gpu.synchronize().ok()?;
        Some(self.end? - self.start)
    }
}
impl DeviceTiming for FakeGpu {
    fn label(&self) -> String {
        "GPU-0".into()
    }
    fn synchronize(&self) -> Result<(), String> {
        self.syncs.set(self.syncs.get() + 1);
        self.log.borrow_mut().push("sync");
        let t = self.queued_until.get();
        if t > self.clock.now() {
            self.clock.set(t);
        }
        if self.fail_sync.is_some_and(|k| self.syncs.get() >= k) {
            return Err("cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS".into());
        }
        Ok(())
    }
    fn timer(&self) -> Option<Box<dyn DeviceSpan>> {
        self.timers.set(self.timers.get() + 1);
        Some(Box::new(FakeSpan {
            gpu: self,
            start: Duration::ZERO,
            end: None,
        }))
    }
}

fn fake_gpu(clock: &FakeClock) -> FakeGpu {
    FakeGpu {
        clock: clock.clone(),
        queued_until: Cell::new(Duration::ZERO),
        syncs: Cell::new(0),
        log: Default::default(),
        timers: Cell::new(0),
        fail_sync: None,
    }
}

#[test]
fn synchronised_host_time_includes_gpu_work() {
    let clock = FakeClock::default();
    let gpu = fake_gpu(&clock);
    let r = Bench::new("kernel")
        .warmup(1)
        .repeats(4)
        .on(&gpu)
        .clock(clock.clone())
        .interrupt_probe(|| false)
        .run(|| gpu.launch(ms(5)));
    let c = r.cpu_stats().unwrap();
    let g = r.gpu_stats().unwrap();
    // The start event is queued before the launch, so on an idle device the span also
    // holds the launch latency, as real CUDA events do.
    assert_eq!(
        g.median,
        ms(5) + Duration::from_micros(10),
        "device events see the work"
    );
    assert_eq!(
        c.median,
        ms(5) + Duration::from_micros(10),
        "host time = launch + wait for the work"
    );
    assert_eq!(r.gpu.as_ref().unwrap().0, "GPU-0");
    assert!(r.summary().contains("GPU-0:"));
    assert_eq!(
        gpu.timers.get(),
        1,
        "one timer per benchmark, made outside the timed runs"
    );
}

#[test]
fn unsynchronised_host_time_is_the_launch_only() {
    let clock = FakeClock::default();
    let gpu = fake_gpu(&clock);
    let r = Bench::new("kernel, wrong")
        .warmup(0)
        .repeats(3)
        .on(&gpu)
        .no_sync()
        .clock(clock.clone())
        .interrupt_probe(|| false)
        .run(|| gpu.launch(ms(5)));
    assert_eq!(
        r.median().unwrap(),
        Duration::from_micros(10),
        "the misleading number"
    );
    assert_eq!(
        r.gpu_stats().unwrap().median,
        ms(5) + Duration::from_micros(10),
        "events still tell the truth"
    );
    assert!(!r.synced);
    assert!(r.summary().contains("NOT synchronised"));
    // Queued runs do not pile up: each run's work is waited for before the next starts.
    // (Piled-up work would end at 15.01 ms; waited-for runs end at 3 x 5.01 ms.)
    assert_eq!(gpu.queued_until.get(), ms(15) + Duration::from_micros(30));
}

#[test]
fn compare_reports_speedups_against_the_first() {
    let mk = |name: &str, ms_: &[u64]| BenchResult {
        name: name.into(),
        cpu: ms_.iter().map(|&m| ms(m)).collect(),
        gpu: None,
        ran_on: None,
        synced: true,
        interrupted: false,
        error: None,
    };
    let serial = mk("serial", &[400, 410, 390]);
    let parallel = mk("parallel", &[200, 210, 190]);
    let gpu = mk("gpu", &[1, 1, 1]);
    let c = compare(&[&serial, &parallel, &gpu]);
    let ups = c.speedups();
    assert_eq!(ups[0], 1.0);
    assert!((ups[1] - 2.0).abs() < 1e-12);
    assert!((ups[2] - 400.0).abs() < 1e-9);
    let table = c.table();
    assert!(table.contains("400.00x"), "{table}");
    // Three rows and, since all three ran on the CPU, one note that says so.
    assert!(table.lines().count() == 5, "{table}");
    assert!(table.contains("Every row ran on the CPU"), "{table}");
    let b = c.mime_bundle();
    let html = b.get("text/html").unwrap();
    assert!(html.contains("<table>") && html.contains("<svg"));
    // The bar chart switches to a log axis for a 400x spread.
    let svg = c.chart().to_svg();
    roxmltree::Document::parse(&svg).unwrap();
    assert!(svg.contains("400x"));
    // Owned results work too.
    assert_eq!(
        compare(&[serial.clone(), parallel.clone()])
            .speedups()
            .len(),
        2
    );
}

#[test]
fn time_returns_value_and_duration() {
    let (v, d) = time(|| {
        std::thread::sleep(ms(20));
        42
    })
    .unwrap();
    assert_eq!(v, 42);
    assert!(d >= ms(20));
}

#[test]
fn bench_with_the_real_clock() {
    let r = Bench::new("sleep")
        .warmup(0)
        .repeats(3)
        .run(|| std::thread::sleep(ms(5)));
    assert_eq!(r.cpu.len(), 3);
    assert!(r.cpu.iter().all(|&d| d >= ms(5)));
}

/// The row of `name` in a text table.
fn row<'t>(table: &'t str, name: &str) -> &'t str {
    table
        .lines()
        .find(|l| l.starts_with(name))
        .unwrap_or_else(|| panic!("no row {name} in\n{table}"))
}

/// No duration text (`1.234 ms`, `5.0 us`, ...) and no speed-up (`12.00x`) in `s`.
fn assert_no_time(s: &str) {
    for unit in [" s", " ms", " us", " ns"] {
        let has = s
            .match_indices(unit)
            .any(|(i, _)| s[..i].ends_with(|c: char| c.is_ascii_digit()));
        assert!(!has, "a time ({unit}) in: {s}");
    }
    let speedup = s
        .match_indices('x')
        .any(|(i, _)| s[..i].ends_with(|c: char| c.is_ascii_digit()));
    assert!(!speedup, "a speed-up in: {s}");
}

#[test]
fn a_failing_closure_is_never_timed() {
    let clock = FakeClock::default();
    let calls = Cell::new(0);
    let r = Bench::new("fails in run 2")
        .warmup(1)
        .repeats(5)
        .clock(clock.clone())
        .interrupt_probe(|| false)
        .run(|| -> Result<(), Error> {
            calls.set(calls.get() + 1);
            clock.advance(ms(1));
            if calls.get() == 3 {
                Err(Error::Invalid("the op exploded".into()))
            } else {
                Ok(())
            }
        });
    assert_eq!(calls.get(), 3, "the benchmark stops at the failure");
    assert!(!r.is_ok());
    assert!(
        r.cpu.is_empty() && r.gpu.is_none(),
        "no samples survive a failure"
    );
    let e = r.error.clone().unwrap();
    assert_eq!(e, "run 2 failed: the op exploded");
    assert!(
        r.summary()
            .contains("FAILED: run 2 failed: the op exploded"),
        "{}",
        r.summary()
    );
    assert_no_time(&r.summary());
    let m = r.median().unwrap_err().to_string();
    assert!(
        m.contains("fails in run 2") && m.contains("the op exploded"),
        "{m}"
    );
}

#[test]
fn a_failing_device_call_shows_no_speedup() {
    // A device that does not exist: on a machine without a driver this is "CUDA is not
    // available", on a GPU machine "invalid device cuda:99"; either way the call fails fast,
    // which used to show up as a huge speed-up.
    let dev = Device::Cuda(99);
    let cpu = bench("cpu", || Tensor::ones(1000, Device::Cpu)?.sum());
    let gpu = Bench::new("gpu")
        .on(&dev)
        .run(|| Tensor::ones(1000, dev)?.sum());
    assert!(cpu.is_ok(), "{cpu}");
    let e = gpu.error.clone().expect("the GPU bench failed");
    assert!(e.starts_with("warm-up run 1 failed: "), "{e}");
    let cause = Tensor::ones(1, dev).unwrap_err().to_string();
    assert!(e.ends_with(&cause), "{e} / {cause}");
    let c = compare(&[&cpu, &gpu]);
    assert!(c.speedups()[1].is_nan());
    let table = c.table();
    let line = row(&table, "gpu");
    assert!(line.contains("FAILED") && line.contains(&cause), "{table}");
    assert_no_time(line);
    assert!(row(&table, "cpu").contains("1.00x"), "{table}");
    // HTML: the row says FAILED and has no time cell or speed-up; the chart draws no bar.
    let html = c.mime_bundle().get("text/html").unwrap().to_string();
    let gpu_row = html.split("<tr>").find(|r| r.contains(">gpu<")).unwrap();
    assert!(gpu_row.contains("FAILED"), "{gpu_row}");
    assert_no_time(gpu_row.split("</tr>").next().unwrap());
    assert!(c.chart().to_svg().contains("failed"));
    // Without warm-up the first timed run fails the same way (the closure, or already the
    // wait for the device before it, which names itself).
    let g0 = Bench::new("gpu").warmup(0).run(|| Tensor::ones(1000, dev));
    assert!(
        g0.error.as_deref().unwrap().starts_with("run 1 failed: "),
        "{g0}"
    );
    let g1 = Bench::new("gpu")
        .warmup(0)
        .on(&dev)
        .run(|| Tensor::ones(1000, dev));
    assert!(
        g1.error
            .as_deref()
            .unwrap()
            .starts_with("waiting for GPU-99 before run 1 failed: "),
        "{g1}"
    );
    assert_no_time(&g1.summary());
    assert!(g0.median().is_err());
}

#[test]
fn a_failed_baseline_gives_no_speedups() {
    let bad = bench("bad", || Err::<(), _>("nope"));
    let good = bench("good", || 1 + 1);
    let c = compare(&[&bad, &good]);
    assert!(c.speedups().iter().all(|u| u.is_nan()));
    let good_row = row(&c.table(), "good").to_string();
    assert!(
        !good_row.contains('x'),
        "no speed-up against a failed baseline: {good_row}"
    );
    assert!(row(&c.table(), "bad").contains("FAILED: warm-up run 1 failed: nope"));
}

#[test]
fn a_failing_sync_after_the_closure_fails_the_run() {
    let clock = FakeClock::default();
    let mut gpu = fake_gpu(&clock);
    // Sync 1 is after the warm-up run, 2 before run 1, 3 after it.
    gpu.fail_sync = Some(3);
    let r = Bench::new("kernel")
        .warmup(1)
        .repeats(4)
        .on(&gpu)
        .clock(clock.clone())
        .interrupt_probe(|| false)
        .run(|| gpu.launch(ms(5)));
    let e = r.error.clone().unwrap();
    assert_eq!(e, "waiting for GPU-0 after run 1 failed: cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS");
    assert!(r.cpu.is_empty());
    assert_no_time(&r.summary());
    // Unsynchronised runs are checked too, once their work is waited for.
    let mut gpu = fake_gpu(&clock);
    gpu.fail_sync = Some(2);
    let r = Bench::new("kernel")
        .warmup(0)
        .repeats(4)
        .on(&gpu)
        .no_sync()
        .clock(clock.clone())
        .interrupt_probe(|| false)
        .run(|| gpu.launch(ms(5)));
    assert!(r.error.is_some() && r.cpu.is_empty(), "{r}");
}

#[test]
fn time_returns_the_error_instead_of_a_time() {
    let e = time(|| Tensor::ones(3, Device::Cuda(99))).unwrap_err();
    assert!(
        matches!(e, Error::CudaUnavailable(_) | Error::BadDeviceIndex { .. }),
        "{e:?}"
    );
    let e = time(|| Err::<u8, String>("custom".into())).unwrap_err();
    assert_eq!(e.to_string(), "custom");
    let ((), d) = time(|| std::thread::sleep(ms(1))).unwrap();
    assert!(d >= ms(1));
    let (t, _) = time(|| Tensor::ones(3, Device::Cpu)).unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![1.0; 3]);
}

#[test]
fn compare_labels_where_each_row_ran() {
    let mk = |name: &str, on: Option<&str>| BenchResult {
        name: name.into(),
        cpu: vec![ms(10), ms(11), ms(9)],
        gpu: None,
        ran_on: on.map(str::to_string),
        synced: true,
        interrupted: false,
        error: None,
    };
    let host = mk("cpu", None);
    let dev = mk("device", Some("GPU-0"));
    let c = compare(&[&host, &dev]);
    let table = c.table();
    assert!(table.contains("ran on"), "{table}");
    assert!(table.lines().nth(1).unwrap().contains("CPU"), "{table}");
    assert!(table.lines().nth(2).unwrap().contains("GPU-0"), "{table}");
    // A GPU row: no "all on the CPU" note.
    assert!(c.all_on_cpu_note().is_none());
    let html = c.mime_bundle().get("text/html").unwrap().to_string();
    assert!(html.contains("<td>GPU-0</td>") && !html.contains("Every row ran on the CPU"));
    // `.on(Device::Cpu)` rows count as CPU rows: the note appears once.
    let on_cpu = mk("device", Some("CPU"));
    let c = compare(&[&host, &on_cpu]);
    let html = c.mime_bundle().get("text/html").unwrap().to_string();
    assert_eq!(
        html.matches("Every row ran on the CPU").count(),
        1,
        "{html}"
    );
    // A single row compares nothing, so it gets no note.
    assert!(compare(&[&host]).all_on_cpu_note().is_none());
}
