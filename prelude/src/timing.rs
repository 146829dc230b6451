//! Timing CPU and GPU work honestly.
//!
//! GPU launches return before the GPU has finished, so a host clock read right after a
//! launch measures the launch, not the work (article 03). [`Bench`] therefore waits for the
//! device before it reads the clock, and, when it knows the device, also brackets each run
//! with device events so CPU (host) time and GPU time appear side by side, in the style of
//! `cupyx.profiler.benchmark`. [`Bench::no_sync`] deliberately skips the wait so a notebook
//! can show the misleading number next to the right one.
//!
//! The clock and the device are traits ([`Clock`], [`DeviceTiming`]) so the statistics can
//! be tested against a fake clock.

use crate::cuda::Event;
use crate::device::Device;
use crate::display::{html_escape, MimeBundle, Rich};
use crate::error::Error;
use crate::plot::bar_chart;
use std::borrow::Borrow;
use std::fmt;
use std::time::{Duration, Instant};

/// A monotonic clock: time elapsed since some fixed origin.
pub trait Clock {
    fn now(&self) -> Duration;
}

/// The real monotonic clock ([`Instant`]).
#[derive(Clone, Copy, Debug)]
pub struct InstantClock {
    origin: Instant,
}

impl Default for InstantClock {
    fn default() -> Self {
        InstantClock {
            origin: Instant::now(),
        }
    }
}

impl Clock for InstantClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }
}

/// What [`Bench`] needs from a GPU: a way to wait for queued work and device-side timers.
pub trait DeviceTiming {
    /// Short name used in reports, e.g. `GPU-0`.
    fn label(&self) -> String;
    /// Blocks until all work queued on the device has finished. An error here (typically one
    /// raised by an earlier asynchronous launch) fails the run: its time would be a lie.
    fn synchronize(&self) -> Result<(), String>;
    /// A device-side timer (a pair of CUDA events), or `None` when the device cannot time
    /// itself. Created once per benchmark, outside the timed region, and re-recorded each run.
    fn timer(&self) -> Option<Box<dyn DeviceSpan>>;
}

/// A reusable device-side timer opened by [`DeviceTiming::timer`].
pub trait DeviceSpan {
    /// Records the start marker on the device's queue (returns at once).
    fn start(&mut self);
    /// Records the end marker on the device's queue (returns at once).
    fn stop(&mut self);
    /// Waits for the end marker and returns the device time between the markers.
    fn elapsed(&mut self) -> Option<Duration>;
}

/// What a timed closure returns, and whether the work succeeded.
///
/// Plain values (`()`, numbers, `Vec`s, tensors, ...) always succeed; a `Result` succeeds only
/// when it is `Ok`, so a failed call is never timed as if it had done its work.
#[diagnostic::on_unimplemented(
    message = "gpulab's timing cannot tell whether a `{Self}` means success or failure",
    label = "the closure returns `{Self}`",
    note = "return a `Result` (e.g. `Ok::<_, Error>(value)`), or end the closure with `;` to return `()`"
)]
pub trait Outcome {
    /// What the closure produced when it succeeded.
    type Value;
    fn into_result(self) -> Result<Self::Value, Error>;
}

/// Error types a timed closure may return in its `Result`; gpulab's own [`Error`] passes
/// through unchanged, so `time(|| x.div(&y))?` keeps its variant.
pub trait TimedError {
    fn into_error(self) -> Error;
}

impl TimedError for Error {
    fn into_error(self) -> Error {
        self
    }
}
impl TimedError for String {
    fn into_error(self) -> Error {
        Error::Invalid(self)
    }
}
impl TimedError for &str {
    fn into_error(self) -> Error {
        Error::Invalid(self.to_string())
    }
}
impl TimedError for Box<dyn std::error::Error> {
    fn into_error(self) -> Error {
        Error::Invalid(self.to_string())
    }
}
impl TimedError for Box<dyn std::error::Error + Send + Sync> {
    fn into_error(self) -> Error {
        // The prelude's own error, boxed by `?`, comes back as itself (an interrupt stays an
        // interrupt).
        match self.downcast::<Error>() {
            Ok(ours) => *ours,
            Err(other) => Error::Invalid(other.to_string()),
        }
    }
}
impl TimedError for std::io::Error {
    fn into_error(self) -> Error {
        Error::Invalid(self.to_string())
    }
}
impl TimedError for fmt::Error {
    fn into_error(self) -> Error {
        Error::Invalid(self.to_string())
    }
}

impl<T, E: TimedError> Outcome for Result<T, E> {
    type Value = T;
    fn into_result(self) -> Result<T, Error> {
        self.map_err(TimedError::into_error)
    }
}

macro_rules! plain_outcome {
    ($($t:ty),*) => {$(
        impl Outcome for $t {
            type Value = $t;
            fn into_result(self) -> Result<$t, Error> { Ok(self) }
        }
    )*};
}
plain_outcome!(
    (),
    bool,
    char,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    f32,
    f64,
    String,
    crate::Tensor,
    crate::RgbImage,
    crate::MandelbrotImage,
    Duration
);

impl<T> Outcome for Vec<T> {
    type Value = Vec<T>;
    fn into_result(self) -> Result<Vec<T>, Error> {
        Ok(self)
    }
}
impl<T> Outcome for Option<T> {
    type Value = Option<T>;
    fn into_result(self) -> Result<Option<T>, Error> {
        Ok(self)
    }
}
impl<T: ?Sized> Outcome for Box<T> {
    type Value = Box<T>;
    fn into_result(self) -> Result<Box<T>, Error> {
        Ok(self)
    }
}
impl<T: ?Sized> Outcome for &T {
    type Value = Self;
    fn into_result(self) -> Result<Self, Error> {
        Ok(self)
    }
}
impl<A, B> Outcome for (A, B) {
    type Value = (A, B);
    fn into_result(self) -> Result<(A, B), Error> {
        Ok(self)
    }
}
impl<A, B, C> Outcome for (A, B, C) {
    type Value = (A, B, C);
    fn into_result(self) -> Result<(A, B, C), Error> {
        Ok(self)
    }
}

/// Runs `f` once and returns its value with the host time it took; an `Err` from `f` is
/// returned instead (no time for work that failed).
///
/// No device synchronisation: for GPU work use `Bench::new(..).on(&device)` (or
/// synchronise inside `f`), otherwise only the launch is timed.
pub fn time<R: Outcome>(f: impl FnOnce() -> R) -> Result<(R::Value, Duration), Error> {
    let start = Instant::now();
    let value = f();
    let elapsed = start.elapsed();
    Ok((value.into_result()?, elapsed))
}

/// Benchmarks `f` with the default settings (1 warm-up run, up to 10 timed runs, at most
/// ~10 s of timed runs) and returns the statistics.
pub fn bench<R: Outcome>(name: &str, f: impl FnMut() -> R) -> BenchResult {
    Bench::new(name).run(f)
}

/// Benchmark settings; finish with [`Bench::run`].
pub struct Bench<'a> {
    name: String,
    warmup: usize,
    repeats: usize,
    max_time: Duration,
    device: Option<&'a dyn DeviceTiming>,
    sync: bool,
    clock: Box<dyn Clock + 'a>,
    interrupted: Box<dyn Fn() -> bool + 'a>,
}

impl<'a> Bench<'a> {
    pub fn new(name: &str) -> Self {
        Bench {
            name: name.to_string(),
            warmup: 1,
            repeats: 10,
            max_time: Duration::from_secs(10),
            device: None,
            sync: true,
            clock: Box::new(InstantClock::default()),
            interrupted: Box::new(crate::interrupt::requested),
        }
    }

    /// Untimed runs first (caches, lazy initialisation, JIT/module loading).
    pub fn warmup(mut self, n: usize) -> Self {
        self.warmup = n;
        self
    }

    /// Upper bound on the number of timed runs (at least 1).
    pub fn repeats(mut self, n: usize) -> Self {
        self.repeats = n.max(1);
        self
    }

    /// Stop repeating once the timed runs add up to this much (after at least one run).
    pub fn max_time(mut self, d: Duration) -> Self {
        self.max_time = d;
        self
    }

    /// Time GPU work on `device`: wait for it before reading the clock, and report its own
    /// event-timed GPU time next to the host time.
    pub fn on(mut self, device: &'a dyn DeviceTiming) -> Self {
        self.device = Some(device);
        self
    }

    /// The wrong way, on purpose: read the clock without waiting for the device, so GPU
    /// work shows up as the time it takes to queue it. The result is labelled as such.
    pub fn no_sync(mut self) -> Self {
        self.sync = false;
        self
    }

    /// Use another clock (tests use a fake one).
    pub fn clock(mut self, clock: impl Clock + 'a) -> Self {
        self.clock = Box::new(clock);
        self
    }

    /// Replace the interrupt probe (tests); the default reads the kernel's flag.
    pub fn interrupt_probe(mut self, probe: impl Fn() -> bool + 'a) -> Self {
        self.interrupted = Box::new(probe);
        self
    }

    /// Waits for the device; `after` says what was just done, for the error message.
    fn wait(&self, after: &str) -> Result<(), String> {
        match self.device {
            Some(d) => d
                .synchronize()
                .map_err(|e| format!("waiting for {} {after} failed: {e}", d.label())),
            None => Ok(()),
        }
    }

    /// Runs the benchmark. An interrupt stops it between runs; the result then holds the
    /// runs completed so far and says it was interrupted. An `Err` from `f`, or from waiting
    /// for the device after it, stops it too: the result then holds no times at all, only
    /// the error (see [`BenchResult::error`]).
    pub fn run<R: Outcome>(self, mut f: impl FnMut() -> R) -> BenchResult {
        let mut cpu = Vec::new();
        let mut gpu = Vec::new();
        let mut interrupted = false;
        let failed = |self_: Bench, error: String| BenchResult {
            name: self_.name,
            cpu: Vec::new(),
            gpu: None,
            ran_on: self_.device.map(|d| d.label()),
            synced: self_.sync,
            interrupted: false,
            error: Some(error),
        };
        for i in 1..=self.warmup {
            if (self.interrupted)() {
                interrupted = true;
                break;
            }
            if let Err(e) = std::hint::black_box(f()).into_result() {
                return failed(self, format!("warm-up run {i} failed: {e}"));
            }
            if let Err(e) = self.wait(&format!("after warm-up run {i}")) {
                return failed(self, e);
            }
        }
        // Created once, outside the timed region: event creation is host work that would
        // otherwise be billed to every run.
        let mut span = match self.device {
            Some(d) if !interrupted => d.timer(),
            _ => None,
        };
        let mut total = Duration::ZERO;
        while !interrupted && cpu.len() < self.repeats {
            let run = cpu.len() + 1;
            // Earlier queued work must not be billed to this run, in either mode.
            if let Err(e) = self.wait(&format!("before run {run}")) {
                return failed(self, e);
            }
            let t0 = self.clock.now();
            if let Some(s) = span.as_mut() {
                s.start();
            }
            let outcome = std::hint::black_box(f()).into_result().map(|_| ());
            if let Some(s) = span.as_mut() {
                s.stop();
            }
            let synced = if self.sync {
                self.wait(&format!("after run {run}"))
            } else {
                Ok(())
            };
            let t1 = self.clock.now();
            if let Err(e) = outcome {
                return failed(self, format!("run {run} failed: {e}"));
            }
            if let Err(e) = synced {
                return failed(self, e);
            }
            // Reading the device timer waits for the work, so the unsynchronised mode does
            // not pile up queued runs either; it just happens after the clock was read.
            let g = span.as_mut().and_then(|s| s.elapsed());
            if !self.sync {
                // Without the wait above, an asynchronous failure of this run shows up only
                // now; the run's (launch-only) time must not stand either.
                if let Err(e) = self.wait(&format!("after run {run}")) {
                    return failed(self, e);
                }
            }
            if (self.interrupted)() {
                // The run may have been cut short; its time would be meaningless.
                interrupted = true;
                break;
            }
            let dt = t1.saturating_sub(t0);
            cpu.push(dt);
            if let Some(g) = g {
                gpu.push(g);
            }
            total += dt;
            if total >= self.max_time {
                break;
            }
        }
        let gpu = match self.device {
            Some(d) if !gpu.is_empty() && gpu.len() == cpu.len() => Some((d.label(), gpu)),
            _ => None,
        };
        BenchResult {
            name: self.name,
            cpu,
            gpu,
            ran_on: self.device.map(|d| d.label()),
            synced: self.sync,
            interrupted,
            error: None,
        }
    }
}

/// A gpulab device: `cuda::synchronize` to wait, CUDA events for the GPU column. The CPU
/// needs neither (its work is done when the call returns), so it reports host time only.
impl DeviceTiming for Device {
    fn label(&self) -> String {
        match self {
            Device::Cpu => "CPU".to_string(),
            Device::Cuda(i) => format!("GPU-{i}"),
        }
    }

    fn synchronize(&self) -> Result<(), String> {
        crate::cuda::synchronize(*self).map_err(|e| e.to_string())
    }

    fn timer(&self) -> Option<Box<dyn DeviceSpan>> {
        if self.is_cpu() {
            return None;
        }
        let start = Event::new(*self).ok()?;
        let end = Event::new(*self).ok()?;
        Some(Box::new(EventSpan {
            start,
            end,
            recorded: false,
        }))
    }
}

struct EventSpan {
    start: Event,
    end: Event,
    recorded: bool,
}

impl DeviceSpan for EventSpan {
    fn start(&mut self) {
        self.recorded = self.start.record().is_ok();
    }

    fn stop(&mut self) {
        self.recorded = self.recorded && self.end.record().is_ok();
    }

    fn elapsed(&mut self) -> Option<Duration> {
        if !self.recorded {
            return None;
        }
        self.end.synchronize().ok()?;
        let ms = self.start.elapsed_ms(&self.end).ok()?;
        Some(Duration::from_secs_f64(ms.max(0.0) as f64 / 1e3))
    }
}

/// Summary statistics of a set of durations.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    pub n: usize,
    pub mean: Duration,
    pub std: Duration,
    pub min: Duration,
    pub max: Duration,
    pub median: Duration,
}

impl Stats {
    /// `None` for an empty sample.
    pub fn of(samples: &[Duration]) -> Option<Stats> {
        if samples.is_empty() {
            return None;
        }
        let n = samples.len();
        let secs: Vec<f64> = samples.iter().map(Duration::as_secs_f64).collect();
        let mean = secs.iter().sum::<f64>() / n as f64;
        // Population standard deviation, as numpy's default (and cupyx's report) uses.
        let var = secs.iter().map(|s| (s - mean) * (s - mean)).sum::<f64>() / n as f64;
        let mut sorted = samples.to_vec();
        sorted.sort();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2
        };
        Some(Stats {
            n,
            mean: Duration::from_secs_f64(mean),
            std: Duration::from_secs_f64(var.sqrt()),
            min: sorted[0],
            max: sorted[n - 1],
            median,
        })
    }
}

/// The samples of one benchmark and their statistics.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchResult {
    pub name: String,
    /// Host (wall-clock) time of each timed run.
    pub cpu: Vec<Duration>,
    /// Device label and event-timed GPU time of each run, when run `.on(device)`.
    pub gpu: Option<(String, Vec<Duration>)>,
    /// The label of the device given to [`Bench::on`] ("CPU", "GPU-0"); `None` for plain
    /// host code, which ran on the CPU. Tables show it, so a row never hides where it ran.
    pub ran_on: Option<String>,
    /// False for [`Bench::no_sync`] runs, whose host times leave out queued GPU work.
    pub synced: bool,
    pub interrupted: bool,
    /// Why the benchmark failed (the closure returned `Err`, or waiting for the device after
    /// it did). A failed result holds no times: work that failed has no honest duration.
    pub error: Option<String>,
}

impl BenchResult {
    /// Where the timed work ran: the device label given to `.on`, else "CPU".
    pub fn ran_on(&self) -> &str {
        self.ran_on.as_deref().unwrap_or("CPU")
    }

    pub fn cpu_stats(&self) -> Option<Stats> {
        Stats::of(&self.cpu)
    }

    pub fn gpu_stats(&self) -> Option<Stats> {
        self.gpu.as_ref().and_then(|(_, s)| Stats::of(s))
    }

    /// Whether every run succeeded (interrupted results are ok, with fewer runs).
    pub fn is_ok(&self) -> bool {
        self.error.is_none()
    }

    /// Median host time: the figure comparisons use (robust to the odd slow run). An error
    /// when the benchmark failed or completed no run, so a failure never becomes a time.
    pub fn median(&self) -> Result<Duration, Error> {
        if let Some(e) = &self.error {
            return Err(Error::Invalid(format!(
                "benchmark {:?} failed: {e}",
                self.name
            )));
        }
        self.cpu_stats()
            .map(|s| s.median)
            .ok_or_else(|| Error::Invalid(format!("benchmark {:?} completed no run", self.name)))
    }

    /// One line in the layout of `cupyx.profiler.benchmark`.
    pub fn summary(&self) -> String {
        let mut s = format!("{:<20}:", self.name);
        if let Some(e) = &self.error {
            s.push_str(&format!("    FAILED: {e}"));
            return s;
        }
        match self.cpu_stats() {
            Some(c) => s.push_str(&format!("    CPU: {}", stat_text(&c))),
            None => s.push_str("    no completed runs"),
        }
        if let (Some((label, _)), Some(g)) = (&self.gpu, self.gpu_stats()) {
            s.push_str(&format!("    {label}: {}", stat_text(&g)));
        }
        if let Some(c) = self.cpu_stats() {
            s.push_str(&format!("    ({} runs)", c.n));
        }
        if !self.synced {
            s.push_str("    [NOT synchronised: host time of the launch only]");
        }
        if self.interrupted {
            s.push_str("    [interrupted]");
        }
        s
    }
}

fn unit_for(d: Duration) -> (&'static str, f64) {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        ("s", 1.0)
    } else if s >= 1e-3 {
        ("ms", 1e3)
    } else if s >= 1e-6 {
        ("us", 1e6)
    } else {
        ("ns", 1e9)
    }
}

fn stat_text(st: &Stats) -> String {
    let (unit, k) = unit_for(st.mean);
    let v = |d: Duration| d.as_secs_f64() * k;
    format!(
        "{:>9.3} {unit} +/- {:>7.3} (min: {:>9.3} / max: {:>9.3}) {unit}",
        v(st.mean),
        v(st.std),
        v(st.min),
        v(st.max)
    )
}

/// A duration with a unit that keeps 3–4 significant digits (`12.35 ms`, `4.07 s`).
pub fn format_duration(d: Duration) -> String {
    let (unit, k) = unit_for(d);
    let v = d.as_secs_f64() * k;
    let digits = if v >= 100.0 {
        1
    } else if v >= 10.0 {
        2
    } else {
        3
    };
    format!("{v:.digits$} {unit}")
}

impl fmt::Display for BenchResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary())
    }
}

impl Rich for BenchResult {
    fn mime_bundle(&self) -> MimeBundle {
        let style = if self.synced && self.is_ok() {
            ""
        } else {
            " style=\"color:#b00\""
        };
        MimeBundle::new().with("text/plain", self.summary()).with(
            "text/html",
            format!("<pre{style}>{}</pre>", html_escape(&self.summary())),
        )
    }
}

/// Several results side by side, with speed-ups relative to the first.
#[derive(Clone, Debug)]
pub struct Comparison {
    pub results: Vec<BenchResult>,
}

/// Tabulates `results` (the first is the baseline) with speed-ups, plus a bar chart.
///
/// Accepts owned results or references: `compare(&[serial, parallel])` or
/// `compare(&[&serial, &parallel])`.
pub fn compare<R: Borrow<BenchResult>>(results: &[R]) -> Comparison {
    Comparison {
        results: results.iter().map(|r| r.borrow().clone()).collect(),
    }
}

impl Comparison {
    /// Baseline median ÷ each result's median (2.0 = twice as fast as the baseline); NaN
    /// for a failed result, and for every result when the baseline failed.
    pub fn speedups(&self) -> Vec<f64> {
        let secs = |r: &BenchResult| r.median().map(|d| d.as_secs_f64()).unwrap_or(f64::NAN);
        let base = self.results.first().map(secs).unwrap_or(f64::NAN);
        self.results
            .iter()
            .map(|r| {
                let m = secs(r);
                if m > 0.0 {
                    base / m
                } else {
                    f64::NAN
                }
            })
            .collect()
    }

    pub fn table(&self) -> String {
        let w = self
            .results
            .iter()
            .map(|r| r.name.chars().count())
            .max()
            .unwrap_or(4)
            .max(4);
        let mut s = format!(
            "{:<w$}  {:>7}  {:>12}  {:>12}  {:>10}\n",
            "name", "ran on", "median", "GPU median", "speed-up"
        );
        for (r, up) in self.results.iter().zip(self.speedups()) {
            if let Some(e) = &r.error {
                s.push_str(&format!("{:<w$}  FAILED: {e}\n", r.name));
                continue;
            }
            let gpu = gpu_median_text(r);
            let note: String = caveats(r).map(|c| format!("  ({c})")).collect();
            let median = r
                .median()
                .map(format_duration)
                .unwrap_or_else(|_| "-".into());
            s.push_str(&format!(
                "{:<w$}  {:>7}  {median:>12}  {gpu:>12}  {}{note}\n",
                r.name,
                r.ran_on(),
                speedup_text(up, 9)
            ));
        }
        if let Some(n) = self.all_on_cpu_note() {
            s.push_str(&n);
            s.push('\n');
        }
        s
    }

    /// Said once under a table whose rows all ran on the CPU, so a "CPU vs device" table on
    /// a machine without a GPU cannot be read as a race between two kinds of hardware.
    pub fn all_on_cpu_note(&self) -> Option<String> {
        let on_cpu = self.results.iter().all(|r| r.ran_on() == "CPU");
        (self.results.len() > 1 && on_cpu).then(|| {
            "Every row ran on the CPU: the speed-ups compare ways of using the CPU, not a CPU \
             with a GPU."
                .to_string()
        })
    }

    /// Speed-up bars (log-scaled when they span more than a factor of 20).
    pub fn chart(&self) -> crate::plot::BarChart {
        // A failed row keeps its place on the axis, named as failed, with no bar.
        let names: Vec<String> = self
            .results
            .iter()
            .map(|r| {
                if r.is_ok() {
                    r.name.clone()
                } else {
                    format!("{} (failed)", r.name)
                }
            })
            .collect();
        // A failed row's speed-up is NaN, which the chart draws as no bar at all.
        let ups = self.speedups();
        let labels: Vec<String> = self
            .results
            .iter()
            .zip(&ups)
            .map(|(r, u)| {
                if r.is_ok() && u.is_finite() {
                    format!("{}x", crate::plot::short_number(*u))
                } else {
                    "failed".into()
                }
            })
            .collect();
        let finite: Vec<f64> = ups
            .iter()
            .copied()
            .filter(|u| u.is_finite() && *u > 0.0)
            .collect();
        let spread = finite.iter().cloned().fold(f64::NAN, f64::max)
            / finite.iter().cloned().fold(f64::NAN, f64::min);
        let title = match self.results.first() {
            Some(b) => format!("Speed-up over {}", b.name),
            None => "Speed-up".to_string(),
        };
        let chart = bar_chart(&title, &names, &ups)
            .ylabel("times faster")
            .value_labels(&labels);
        if spread > 20.0 {
            chart.log_y()
        } else {
            chart
        }
    }
}

/// What makes a row's times not what they seem; the text and HTML tables both flag these.
fn caveats(r: &BenchResult) -> impl Iterator<Item = &'static str> {
    [
        (!r.synced, "not synchronised!"),
        (r.interrupted, "interrupted"),
    ]
    .into_iter()
    .filter_map(|(on, text)| on.then_some(text))
}

/// `12.34x`, or `-` when there is no honest speed-up (the row or the baseline failed).
fn speedup_text(up: f64, width: usize) -> String {
    if up.is_finite() {
        format!("{up:>width$.2}x")
    } else {
        format!("{:>w$}", "-", w = width + 1)
    }
}

fn gpu_median_text(r: &BenchResult) -> String {
    r.gpu_stats()
        .map(|g| format_duration(g.median))
        .unwrap_or_else(|| "-".into())
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.table())
    }
}

impl Rich for Comparison {
    fn mime_bundle(&self) -> MimeBundle {
        let mut html = String::from(
            "<table><thead><tr><th style=\"text-align:left\">name</th><th>ran on</th><th>median</th><th>min</th><th>max</th><th>GPU median</th><th>runs</th><th>speed-up</th></tr></thead><tbody>",
        );
        for (r, up) in self.results.iter().zip(self.speedups()) {
            if let Some(e) = &r.error {
                html.push_str(&format!(
                    "<tr><td style=\"text-align:left\">{}</td><td colspan=\"7\" style=\"text-align:left;color:#b00\">FAILED: {}</td></tr>",
                    html_escape(&r.name),
                    html_escape(e)
                ));
                continue;
            }
            let c = r.cpu_stats();
            let cell = |f: fn(&Stats) -> Duration| {
                c.as_ref()
                    .map(|s| format_duration(f(s)))
                    .unwrap_or_else(|| "-".into())
            };
            let gpu = gpu_median_text(r);
            let mut name = html_escape(&r.name);
            for c in caveats(r) {
                name.push_str(&format!(" <span style=\"color:#b00\">({c})</span>"));
            }
            html.push_str(&format!(
                "<tr><td style=\"text-align:left\">{name}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{gpu}</td><td>{}</td><td><b>{}</b></td></tr>",
                html_escape(r.ran_on()),
                cell(|s| s.median),
                cell(|s| s.min),
                cell(|s| s.max),
                c.map(|s| s.n).unwrap_or(0),
                speedup_text(up, 0),
            ));
        }
        html.push_str("</tbody></table>");
        if let Some(n) = self.all_on_cpu_note() {
            html.push_str(&format!("<p><i>{}</i></p>", html_escape(&n)));
        }
        html.push_str(&self.chart().to_svg());
        MimeBundle::new()
            .with("text/plain", self.table())
            .with("text/html", html)
    }
}

crate::rich_evcxr_display!(BenchResult, Comparison);
