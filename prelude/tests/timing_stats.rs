//! Benchmark statistics against a fake clock and a fake device.
use gpulab::timing::{Clock, DeviceSpan, DeviceTiming, Stats};
use gpulab::*;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

#[derive(Clone, Default)]
struct FakeClock(Rc<Cell<Duration>>);
impl FakeClock {
    fn advance(&self, d: Duration) {
        self.0.set(self.0.get() + d);
    }
}
impl Clock for FakeClock {
    fn now(&self) -> Duration {
        self.0.get()
    }
}

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
    assert_eq!((s.min, s.median, s.max, s.mean), (ms(3), ms(5), ms(7), ms(5)));
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
    assert_eq!(r.cpu.len(), 2, "the run during which the flag rose is discarded");
    assert!(r.summary().contains("interrupted"));
}

/// A device whose queued work finishes `lag` after it was queued: host time without a
/// wait sees only the launch; with a wait it sees the work.
struct FakeGpu {
    clock: FakeClock,
    queued_until: Cell<Duration>,
    syncs: Cell<usize>,
    log: Rc<RefCell<Vec<&'static str>>>,
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
    fn stop(&mut self) {
        self.end = Some(unsafe { &*self.gpu }.queued_until.get());
    }
    fn elapsed(&mut self) -> Option<Duration> {
        let gpu = unsafe { &*self.gpu };
        gpu.log.borrow_mut().push("elapsed");
        gpu.synchronize();
        Some(self.end? - self.start)
    }
}
impl DeviceTiming for FakeGpu {
    fn label(&self) -> String {
        "GPU-0".into()
    }
    fn synchronize(&self) {
        self.syncs.set(self.syncs.get() + 1);
        self.log.borrow_mut().push("sync");
        let t = self.queued_until.get();
        if t > self.clock.now() {
            self.clock.0.set(t);
        }
    }
    fn start_span(&self) -> Option<Box<dyn DeviceSpan>> {
        let start = self.queued_until.get().max(self.clock.now());
        Some(Box::new(FakeSpan { gpu: self, start, end: None }))
    }
}

fn fake_gpu(clock: &FakeClock) -> FakeGpu {
    FakeGpu { clock: clock.clone(), queued_until: Cell::new(Duration::ZERO), syncs: Cell::new(0), log: Default::default() }
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
    assert_eq!(g.median, ms(5) + Duration::from_micros(10), "device events see the work");
    assert_eq!(c.median, ms(5) + Duration::from_micros(10), "host time = launch + wait for the work");
    assert_eq!(r.gpu.as_ref().unwrap().0, "GPU-0");
    assert!(r.summary().contains("GPU-0:"));
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
    assert_eq!(r.median(), Duration::from_micros(10), "the misleading number");
    assert_eq!(r.gpu_stats().unwrap().median, ms(5) + Duration::from_micros(10), "events still tell the truth");
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
        synced: true,
        interrupted: false,
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
    assert!(table.lines().count() == 4);
    let b = c.mime_bundle();
    let html = b.get("text/html").unwrap();
    assert!(html.contains("<table>") && html.contains("<svg"));
    // The bar chart switches to a log axis for a 400x spread.
    let svg = c.chart().to_svg();
    roxmltree::Document::parse(&svg).unwrap();
    assert!(svg.contains("400x"));
    // Owned results work too.
    assert_eq!(compare(&[serial.clone(), parallel.clone()]).speedups().len(), 2);
}

#[test]
fn time_returns_value_and_duration() {
    let (v, d) = time(|| {
        std::thread::sleep(ms(20));
        42
    });
    assert_eq!(v, 42);
    assert!(d >= ms(20));
}

#[test]
fn bench_with_the_real_clock() {
    let r = Bench::new("sleep").warmup(0).repeats(3).run(|| std::thread::sleep(ms(5)));
    assert_eq!(r.cpu.len(), 3);
    assert!(r.cpu.iter().all(|&d| d >= ms(5)));
}
