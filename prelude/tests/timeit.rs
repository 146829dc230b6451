//! `timeit`, the `%timeit` of the kernel's cells, against a fake clock: IPython's choice of
//! loops and its report, the devices waited for around every run, no time for work that
//! failed, and an interrupt between loops.
mod common;
use common::clock::FakeClock;
use gpulab::timeit::{format_time, timeit_with, Settings};
use gpulab::Error;
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

fn us(x: u64) -> Duration {
    Duration::from_micros(x)
}

/// Settings on a fake clock, no device, never interrupted.
fn settings<'a>(clock: &FakeClock, loops: Option<usize>, runs: usize) -> Settings<'a> {
    Settings {
        loops,
        runs,
        clock: Box::new(clock.clone()),
        sync: Box::new(|| Ok(false)),
        interrupted: Box::new(|| false),
    }
}

#[test]
fn loops_grow_1_2_5_until_a_run_takes_0_2_s_then_7_runs() {
    let clock = FakeClock::default();
    let calls = Cell::new(0usize);
    let t = timeit_with(settings(&clock, None, 7), || {
        calls.set(calls.get() + 1);
        clock.advance(us(1000)); // 1 ms a loop
    })
    .unwrap();
    // 1, 2, 5, 10, 20, 50, 100 loops take under 0.2 s; 200 loops take 0.2 s.
    assert_eq!(t.loops, 200);
    assert_eq!(t.runs, vec![Duration::from_millis(200); 7]);
    assert_eq!(
        calls.get(),
        (1 + 2 + 5 + 10 + 20 + 50 + 100 + 200) + 7 * 200
    );
    assert_eq!(t.mean(), us(1000));
    assert_eq!(t.std(), Duration::ZERO);
    assert_eq!(
        t.to_string(),
        "1 ms ± 0 ns per loop (mean ± std. dev. of 7 runs, 200 loops each)"
    );
}

#[test]
fn loops_and_runs_given_are_used_and_the_spread_is_reported() {
    let clock = FakeClock::default();
    let k = Cell::new(0u64);
    // Runs of 3 loops: the first run's loops take 10 µs, the second's 20 µs.
    let t = timeit_with(settings(&clock, Some(3), 2), || {
        clock.advance(us(if k.get() < 3 { 10 } else { 20 }));
        k.set(k.get() + 1);
    })
    .unwrap();
    assert_eq!((t.loops, t.runs.len()), (3, 2));
    assert_eq!(t.per_loop(), vec![us(10), us(20)]);
    assert_eq!(
        (t.mean(), t.std(), t.best(), t.worst()),
        (us(15), us(5), us(10), us(20))
    );
    assert_eq!(
        t.to_string(),
        "15 µs ± 5 µs per loop (mean ± std. dev. of 2 runs, 3 loops each)"
    );
}

#[test]
fn a_run_much_slower_than_the_best_brings_ipythons_warning() {
    let clock = FakeClock::default();
    let k = Cell::new(0u64);
    let t = timeit_with(settings(&clock, Some(1), 3), || {
        clock.advance(us(if k.get() == 0 { 500 } else { 100 }));
        k.set(k.get() + 1);
    })
    .unwrap();
    assert!(
        t.to_string()
            .ends_with("\nThe slowest run took 5.00 times longer than the fastest. This could mean that an intermediate result is being cached."),
        "{t}"
    );
}

#[test]
fn the_devices_are_waited_for_around_every_run_and_the_report_says_so() {
    let clock = FakeClock::default();
    let syncs = Rc::new(Cell::new(0usize));
    let s = syncs.clone();
    let c = clock.clone();
    let settings = Settings {
        // The device's queued work finishes during the wait: billed to the run that queued it.
        sync: Box::new(move || {
            s.set(s.get() + 1);
            c.advance(us(7));
            Ok(true)
        }),
        ..settings(&clock, Some(4), 3)
    };
    let t = timeit_with(settings, || clock.advance(us(1))).unwrap();
    assert_eq!(syncs.get(), 2 * 3, "before and after each run");
    // A run: 4 loops of 1 µs, then the wait after it (7 µs); the wait before is not billed.
    assert_eq!(t.runs, vec![us(11); 3]);
    assert!(t.cuda_synchronized);
    assert!(t.to_string().contains("CUDA synchronised"), "{t}");
}

#[test]
fn work_that_fails_gives_an_error_not_a_time() {
    let clock = FakeClock::default();
    let k = Cell::new(0);
    let r = timeit_with(settings(&clock, Some(5), 7), || {
        k.set(k.get() + 1);
        if k.get() == 12 {
            Err(Error::Invalid("shape (2, 3) cannot multiply (4, 5)".into()))
        } else {
            Ok(())
        }
    });
    assert_eq!(
        r.unwrap_err(),
        Error::Invalid("shape (2, 3) cannot multiply (4, 5)".into())
    );
    // A failing wait for the device fails the run too.
    let s = Settings {
        sync: Box::new(|| Err(Error::Invalid("an earlier kernel faulted".into()))),
        ..settings(&clock, Some(1), 1)
    };
    assert!(timeit_with(s, || ()).is_err());
    for (loops, runs) in [(Some(0), 7), (None, 0)] {
        let err = timeit_with(settings(&clock, loops, runs), || ()).unwrap_err();
        assert!(err.to_string().contains("at least 1"), "{err}");
    }
}

#[test]
fn an_interrupt_keeps_the_runs_done_or_says_nothing_was_timed() {
    let clock = FakeClock::default();
    let calls = Rc::new(Cell::new(0usize));
    let c = calls.clone();
    let s = Settings {
        interrupted: Box::new(move || c.get() >= 25),
        ..settings(&clock, Some(10), 7)
    };
    let t = timeit_with(s, || {
        calls.set(calls.get() + 1);
        clock.advance(us(2));
    })
    .unwrap();
    assert_eq!(
        t.runs.len(),
        2,
        "two whole runs of 10 loops; the third was cut short"
    );
    assert!(t.interrupted && t.to_string().contains("interrupted"));
    let s = Settings {
        interrupted: Box::new(|| true),
        ..settings(&clock, None, 7)
    };
    assert_eq!(timeit_with(s, || ()).unwrap_err(), Error::Interrupted);
}

#[test]
fn times_are_printed_as_ipython_prints_them() {
    let cases = [
        (Duration::from_secs(2), "2 s"),
        (Duration::from_millis(1234), "1.23 s"),
        (Duration::from_micros(12_340), "12.3 ms"),
        (us(456), "456 µs"),
        (Duration::from_nanos(1500), "1.5 µs"),
        (Duration::from_nanos(12), "12 ns"),
        (Duration::ZERO, "0 ns"),
    ];
    for (d, want) in cases {
        assert_eq!(format_time(d), want, "{d:?}");
    }
}

/// The real clock and the real (CPU-only here) device wait: a short closure gets a sensible
/// report. No timing is asserted (these machines are shared), only that it ran and said so.
#[test]
fn the_default_settings_time_real_work() {
    let x = gpulab::Tensor::ones(1000, gpulab::Device::Cpu).unwrap();
    let t = gpulab::timeit(|| x.sum()).unwrap();
    assert!(
        t.loops >= 1 && t.runs.len() == 7 && t.mean() > Duration::ZERO,
        "{t}"
    );
    // The loops were chosen so a run takes about 0.2 s: 7 of them take most of a second.
    assert!(
        t.runs.iter().sum::<Duration>() >= Duration::from_millis(500),
        "{t}"
    );
}

/// On a GPU: work queued on the device is waited for, and the report says so.
#[test]
#[ignore = "needs a CUDA device; tests/test_gpu.py runs it when one is present"]
fn gpu_work_is_waited_for() {
    if !gpulab::cuda::is_available() {
        println!("skipped: no CUDA device");
        return;
    }
    let a = gpulab::Tensor::ones((1024, 1024), gpulab::Device::Cuda(0)).unwrap();
    let t = gpulab::timeit(|| a.matmul(&a)).unwrap();
    assert!(t.cuda_synchronized, "{t}");
    assert!(t.to_string().contains("CUDA synchronised"), "{t}");
    // 2 x 1024^3 multiply-adds cannot take under a microsecond: a time that small would be
    // the launch alone.
    assert!(t.mean() > Duration::from_micros(1), "{t}");
}

/// What a `%timeit` cell's value says about the run (the kernel's wrapper calls
/// `(&&&Value(v)).outcome()`): an `Err` of a showable error fails it, keeping the prelude's own
/// error as it is; any other value, of any type, passes.
#[test]
// The borrows are the mechanism: the kernel's wrapper writes `(&&&Value(v)).outcome()`.
#[allow(clippy::needless_borrow)]
fn a_cells_value_fails_the_run_only_when_it_is_an_err() {
    use gpulab::timeit::{Value, ValueIsErr as _, ValueIsOther as _, ValueIsResult as _};
    let ok: Result<i32, Error> = Ok(1);
    assert_eq!((&&&Value(ok)).outcome(), Ok(()));
    let ours: Result<i32, Error> = Err(Error::Interrupted);
    assert_eq!((&&&Value(ours)).outcome(), Err(Error::Interrupted));
    let io: Result<(), std::io::Error> = Err(std::io::Error::other("disk full"));
    assert_eq!(
        (&&&Value(io)).outcome(),
        Err(Error::Invalid("disk full".into()))
    );
    assert_eq!((&&&Value([1u8; 3])).outcome(), Ok(()));
    assert_eq!((&&&Value(())).outcome(), Ok(()));
    struct Opaque;
    let unshowable: Result<(), Opaque> = Err(Opaque);
    let err = (&&&Value(unshowable)).outcome().unwrap_err().to_string();
    assert!(
        err.contains("returned an Err") && err.contains("Opaque"),
        "{err}"
    );
}
