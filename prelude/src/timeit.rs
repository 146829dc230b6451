//! IPython's `%timeit`, for Rust cells, and honest about the GPU.
//!
//! The kernel turns `%timeit EXPR` and a `%%timeit` cell into a call of [`timeit_cell`]; code
//! can call [`timeit`] itself. As IPython does, it finds a number of loops that takes at least
//! 0.2 s (1, 2, 5, 10, 20, ...), then times 7 runs of that many loops and reports the mean and
//! standard deviation per loop. Unlike a plain clock around GPU code, it waits for every CUDA
//! device this session has used before it reads the clock, at the end of each run (and
//! before the first, so earlier queued work is not billed to it): a launch returns before the
//! GPU has done the work (article 03), and timing launches is the classic mistake.
//!
//! Work that fails gives no time: the error is returned instead. An interrupt (the stop
//! button) ends it between loops, with the runs finished so far.

use crate::error::Error;
use crate::timing::{Clock, InstantClock, Outcome, TimedError};
use std::cell::Cell;
use std::fmt;
use std::time::Duration;

/// What [`timeit`] measured: `runs` of `loops` loops each.
#[derive(Clone, Debug, PartialEq)]
pub struct TimeIt {
    /// Loops per run (what IPython calls `number`).
    pub loops: usize,
    /// Each run's total time for its `loops` loops.
    pub runs: Vec<Duration>,
    /// Whether a CUDA device was in use, and so waited for before each reading of the clock.
    pub cuda_synchronized: bool,
    /// Whether an interrupt ended it before all runs were done.
    pub interrupted: bool,
}

impl TimeIt {
    /// Time per loop of each run.
    pub fn per_loop(&self) -> Vec<Duration> {
        self.runs.iter().map(|r| *r / self.loops as u32).collect()
    }

    /// Mean time per loop over the runs (IPython's `average`).
    pub fn mean(&self) -> Duration {
        let p = self.per_loop();
        p.iter().sum::<Duration>() / p.len().max(1) as u32
    }

    /// Standard deviation of the per-loop times over the runs (population, as IPython's).
    pub fn std(&self) -> Duration {
        let p: Vec<f64> = self.per_loop().iter().map(Duration::as_secs_f64).collect();
        let mean = p.iter().sum::<f64>() / p.len().max(1) as f64;
        let var = p.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / p.len().max(1) as f64;
        Duration::from_secs_f64(var.sqrt())
    }

    /// The fastest run's time per loop.
    pub fn best(&self) -> Duration {
        self.per_loop().into_iter().min().unwrap_or_default()
    }

    /// The slowest run's time per loop.
    pub fn worst(&self) -> Duration {
        self.per_loop().into_iter().max().unwrap_or_default()
    }
}

/// A time as IPython prints it: three significant digits, trailing zeros dropped, in s, ms,
/// µs or ns (`1.23 ms`, `456 µs`, `2 s`, `0 ns`).
pub fn format_time(d: Duration) -> String {
    let s = d.as_secs_f64();
    let (scale, unit) = if s >= 1.0 {
        (1.0, "s")
    } else if s >= 1e-3 {
        (1e3, "ms")
    } else if s >= 1e-6 {
        (1e6, "µs")
    } else {
        (1e9, "ns")
    };
    let v = s * scale;
    let decimals = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    let text = format!("{v:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("{text} {unit}")
}

impl fmt::Display for TimeIt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        let (runs, loops) = (self.runs.len(), self.loops);
        write!(
            f,
            "{} ± {} per loop (mean ± std. dev. of {runs} run{}, {loops} loop{} each)",
            format_time(self.mean()),
            format_time(self.std()),
            plural(runs),
            plural(loops),
        )?;
        if self.cuda_synchronized {
            f.write_str("; CUDA synchronised before each reading of the clock")?;
        }
        if self.interrupted {
            f.write_str("; interrupted, so fewer runs than asked")?;
        }
        // IPython's warning, at its threshold.
        let (best, worst) = (self.best(), self.worst());
        if !best.is_zero() && worst > best * 4 && worst > Duration::from_micros(1) {
            write!(
                f,
                "\nThe slowest run took {:.2} times longer than the fastest. This could mean that \
                 an intermediate result is being cached.",
                worst.as_secs_f64() / best.as_secs_f64()
            )?;
        }
        Ok(())
    }
}

/// How [`timeit_with`] runs: loops per run (`None`: the smallest of 1, 2, 5, 10, 20, ... whose
/// run takes at least 0.2 s) and runs (IPython's `-n` and `-r`; 7 runs by default).
pub struct Settings<'a> {
    pub loops: Option<usize>,
    pub runs: usize,
    pub clock: Box<dyn Clock + 'a>,
    /// Waits for the devices; Ok(true) when there were any to wait for.
    pub sync: Box<dyn Fn() -> Result<bool, Error> + 'a>,
    pub interrupted: Box<dyn Fn() -> bool + 'a>,
}

impl Default for Settings<'_> {
    fn default() -> Self {
        Settings {
            loops: None,
            runs: 7,
            clock: Box::new(InstantClock::default()),
            sync: Box::new(crate::cuda::synchronize_all),
            interrupted: Box::new(crate::interrupt::requested),
        }
    }
}

/// The shortest run [`Settings::loops`] `None` settles for (IPython's 0.2 s).
const MIN_RUN: Duration = Duration::from_millis(200);

/// Times `f` as IPython's `%timeit` does (see the module doc): `timeit(|| a.matmul(&b))`.
pub fn timeit<R: Outcome>(f: impl FnMut() -> R) -> Result<TimeIt, Error> {
    timeit_with(Settings::default(), f)
}

/// What the kernel's `%timeit`/`%%timeit` cells call: the cell's code as a closure (so `?`
/// works inside it) that checks the code's value with [`Value`], `loops`/`runs` from `-n`/`-r`.
/// Prints the report, as IPython does; an error in the timed code is returned instead.
pub fn timeit_cell<E: TimedError>(
    loops: Option<usize>,
    runs: Option<usize>,
    mut f: impl FnMut() -> Result<(), E>,
) -> Result<(), Error> {
    let settings = Settings {
        loops,
        runs: runs.unwrap_or(7),
        ..Settings::default()
    };
    let t = timeit_with(settings, || f().map_err(TimedError::into_error))?;
    println!("{t}");
    Ok(())
}

/// The value of a `%timeit` cell's code, checked by `(&&&Value(v)).outcome()`: an `Err` fails
/// the run (with its message when its error type can be shown), any other value passes,
/// whatever its type. Method lookup tries [`ValueIsResult`] (on `&&Value<Result<T, E>>`, `E`
/// shown), then [`ValueIsErr`] (on `&Value<Result<..>>`, any `E`), then [`ValueIsOther`] (on
/// every `Value`): "autoref specialisation", which picks by the value's type at the call site.
#[doc(hidden)]
pub struct Value<T>(pub T);

#[doc(hidden)]
pub trait ValueIsResult {
    fn outcome(&self) -> Result<(), Error>;
}

impl<T, E: fmt::Display + 'static> ValueIsResult for &&Value<Result<T, E>> {
    fn outcome(&self) -> Result<(), Error> {
        match &self.0 {
            Ok(_) => Ok(()),
            Err(e) => Err(match (e as &dyn std::any::Any).downcast_ref::<Error>() {
                Some(ours) => ours.clone(),
                None => Error::Invalid(e.to_string()),
            }),
        }
    }
}

#[doc(hidden)]
pub trait ValueIsErr {
    fn outcome(&self) -> Result<(), Error>;
}

impl<T, E> ValueIsErr for &Value<Result<T, E>> {
    fn outcome(&self) -> Result<(), Error> {
        match &self.0 {
            Ok(_) => Ok(()),
            Err(_) => Err(Error::Invalid(format!(
                "the timed code returned an Err ({})",
                std::any::type_name::<E>()
            ))),
        }
    }
}

#[doc(hidden)]
pub trait ValueIsOther {
    fn outcome(&self) -> Result<(), Error> {
        Ok(())
    }
}

impl<T> ValueIsOther for Value<T> {}

/// [`timeit`] with its settings given (tests use a fake clock).
pub fn timeit_with<R: Outcome>(s: Settings<'_>, mut f: impl FnMut() -> R) -> Result<TimeIt, Error> {
    if s.loops == Some(0) || s.runs == 0 {
        return Err(Error::Invalid(format!(
            "timeit: {} must be at least 1",
            if s.runs == 0 {
                "the number of runs (-r)"
            } else {
                "the number of loops (-n)"
            }
        )));
    }
    let synced = Cell::new(false);
    let sync = || -> Result<(), Error> {
        synced.set((s.sync)()? | synced.get());
        Ok(())
    };
    // One run of `loops` loops: its time, or None when interrupted part-way.
    let mut run = |loops: usize| -> Result<Option<Duration>, Error> {
        sync()?; // earlier queued work is not this run's
        let t0 = s.clock.now();
        for _ in 0..loops {
            if (s.interrupted)() {
                return Ok(None);
            }
            std::hint::black_box(f()).into_result()?;
        }
        sync()?;
        Ok(Some(s.clock.now().saturating_sub(t0)))
    };
    let loops = match s.loops {
        Some(n) => n,
        None => {
            // 1, 2, 5, 10, 20, 50, ...: the first that takes MIN_RUN. These runs also warm up
            // (caches, a kernel compiled on first use); they are not reported.
            let mut n = 1usize;
            let mut step = 0;
            loop {
                match run(n)? {
                    None => return Err(Error::Interrupted),
                    Some(t) if t >= MIN_RUN => break n,
                    Some(_) => {}
                }
                n = [1, 2, 5][(step + 1) % 3] * 10usize.pow((step + 1) as u32 / 3);
                step += 1;
            }
        }
    };
    let mut runs = Vec::with_capacity(s.runs);
    let mut interrupted = false;
    for _ in 0..s.runs {
        match run(loops)? {
            Some(t) => runs.push(t),
            None if runs.is_empty() => return Err(Error::Interrupted),
            None => {
                interrupted = true;
                break;
            }
        }
    }
    Ok(TimeIt {
        loops,
        runs,
        cuda_synchronized: synced.get(),
        interrupted,
    })
}
