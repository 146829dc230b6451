//! A live progress bar for loops in a notebook.
//!
//! `for x in (0..n).progress() { ... }` shows one output when the loop starts and then
//! redraws that same output in place (the display channel's `update` op), at most every
//! 100 ms plus once at the end, so a fast loop does not flood the notebook with messages.
//! It also watches the kernel's interrupt flag: when the user interrupts, the loop ends
//! early at the next item and the bar says "interrupted".
//!
//! [`ProgressState`] is the pure part (what to show, and when); [`Progress`] drives it from
//! an iterator and prints the resulting lines.

use crate::display::{display_line, fresh_display_id, html_escape, update_line, MimeBundle};
use crate::timing::{Clock, InstantClock};
use std::time::Duration;

/// Default minimum time between two redraws.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// How a progress bar ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finish {
    /// The iterator ran out.
    Done,
    /// The kernel's interrupt flag was raised.
    Interrupted,
    /// The loop left early (`break`, `?`, panic): the bar was dropped before the end.
    Stopped,
}

/// What a progress bar shows and when it redraws, independent of clocks and stdout.
#[derive(Clone, Debug)]
pub struct ProgressState {
    pub display_id: String,
    pub desc: String,
    pub total: Option<usize>,
    pub count: usize,
    pub min_interval: Duration,
    start: Option<Duration>,
    last_emit: Option<Duration>,
    pub finish: Option<Finish>,
}

impl ProgressState {
    pub fn new(total: Option<usize>, display_id: String) -> Self {
        ProgressState {
            display_id,
            desc: String::new(),
            total,
            count: 0,
            min_interval: MIN_INTERVAL,
            start: None,
            last_emit: None,
            finish: None,
        }
    }

    /// The first message: announces the bar (op `display`). Call once, before any item.
    pub fn begin(&mut self, now: Duration) -> String {
        self.start = Some(now);
        self.last_emit = Some(now);
        display_line(&self.bundle(now), Some(&self.display_id))
    }

    /// Records one finished item; returns an `update` line when a redraw is due.
    pub fn advance(&mut self, now: Duration) -> Option<String> {
        self.count += 1;
        let due = match self.last_emit {
            Some(t) => now.saturating_sub(t) >= self.min_interval,
            None => true,
        };
        if due && self.finish.is_none() {
            self.last_emit = Some(now);
            Some(update_line(&self.bundle(now), &self.display_id))
        } else {
            None
        }
    }

    /// The final redraw (always sent, regardless of throttling); `None` if already ended.
    pub fn end(&mut self, now: Duration, how: Finish) -> Option<String> {
        if self.finish.is_some() {
            return None;
        }
        self.finish = Some(how);
        self.last_emit = Some(now);
        Some(update_line(&self.bundle(now), &self.display_id))
    }

    fn elapsed(&self, now: Duration) -> Duration {
        now.saturating_sub(self.start.unwrap_or(now))
    }

    /// Items per second so far.
    pub fn rate(&self, now: Duration) -> Option<f64> {
        let secs = self.elapsed(now).as_secs_f64();
        (secs > 0.0 && self.count > 0).then(|| self.count as f64 / secs)
    }

    /// Estimated time left at the current rate.
    pub fn remaining(&self, now: Duration) -> Option<Duration> {
        let total = self.total?;
        let rate = self.rate(now)?;
        Some(Duration::from_secs_f64(
            total.saturating_sub(self.count) as f64 / rate,
        ))
    }

    fn fraction(&self) -> Option<f64> {
        self.total.map(|t| {
            if t == 0 {
                1.0
            } else {
                (self.count as f64 / t as f64).min(1.0)
            }
        })
    }

    fn status_text(&self, now: Duration) -> String {
        let count = match self.total {
            Some(t) => format!("{}/{}", self.count, t),
            None => format!("{}", self.count),
        };
        let rate = match self.rate(now) {
            Some(r) if r >= 1.0 => format!("{r:.2} it/s"),
            Some(r) => format!("{:.2} s/it", 1.0 / r),
            None => "? it/s".to_string(),
        };
        let left = match (self.finish, self.remaining(now)) {
            (None, Some(d)) => format!("<{}", clock_text(d)),
            (None, None) if self.total.is_some() => "<?".to_string(),
            _ => String::new(),
        };
        let mut s = format!("{count} [{}{left}, {rate}]", clock_text(self.elapsed(now)));
        match self.finish {
            Some(Finish::Interrupted) => s.push_str(" interrupted"),
            Some(Finish::Stopped) => s.push_str(" stopped"),
            _ => {}
        }
        s
    }

    /// The text/plain rendering, in the style of tqdm.
    pub fn plain(&self, now: Duration) -> String {
        let status = self.status_text(now);
        let prefix = if self.desc.is_empty() {
            String::new()
        } else {
            format!("{}: ", self.desc)
        };
        match self.fraction() {
            Some(f) => {
                const WIDTH: usize = 25;
                let filled = (f * WIDTH as f64).floor() as usize;
                let bar: String = "█".repeat(filled) + &" ".repeat(WIDTH - filled);
                format!("{prefix}{:>3.0}%|{bar}| {status}", f * 100.0)
            }
            None => format!("{prefix}{status}"),
        }
    }

    /// The text/html rendering: a coloured bar (blue running, green done, red interrupted).
    pub fn html(&self, now: Duration) -> String {
        let color = match self.finish {
            None => "#4c8bf5",
            Some(Finish::Done) => "#3aa757",
            Some(Finish::Interrupted) | Some(Finish::Stopped) => "#d9534f",
        };
        let pct = self.fraction().map(|f| f * 100.0);
        let bar = match pct {
            Some(p) => format!(
                "<div style=\"width:260px;height:14px;background:#e8e8e8;border-radius:3px;overflow:hidden\">\
                 <div style=\"width:{p:.1}%;height:100%;background:{color}\"></div></div>\
                 <span>{p:>3.0}%</span>"
            ),
            None => String::new(),
        };
        let desc = if self.desc.is_empty() {
            String::new()
        } else {
            format!("<span>{}</span>", html_escape(&self.desc))
        };
        format!(
            "<div style=\"display:flex;align-items:center;gap:8px;font-family:monospace\">{desc}{bar}<span>{}</span></div>",
            html_escape(&self.status_text(now))
        )
    }

    pub fn bundle(&self, now: Duration) -> MimeBundle {
        MimeBundle::new()
            .with("text/plain", self.plain(now))
            .with("text/html", self.html(now))
    }
}

/// `mm:ss`, or `h:mm:ss` past an hour (also the training bar's clock, `train/live.rs`).
pub(crate) fn clock_text(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
    } else {
        format!("{:02}:{:02}", s / 60, s % 60)
    }
}

/// An iterator wrapper that shows a live progress bar. Made by [`progress`] or
/// [`ProgressExt::progress`].
pub struct Progress<'a, I> {
    inner: I,
    state: ProgressState,
    clock: Box<dyn Clock + 'a>,
    interrupted: Box<dyn Fn() -> bool + 'a>,
    sink: Box<dyn FnMut(&str) + 'a>,
    started: bool,
    item_out: bool,
}

/// Wraps `iter` in a live progress bar.
pub fn progress<'a, I: IntoIterator>(iter: I) -> Progress<'a, I::IntoIter> {
    Progress::new(iter.into_iter())
}

impl<'a, I: Iterator> Progress<'a, I> {
    fn new(inner: I) -> Self {
        let (lo, hi) = inner.size_hint();
        let total = if hi == Some(lo) { Some(lo) } else { None };
        Progress {
            inner,
            state: ProgressState::new(total, fresh_display_id()),
            clock: Box::new(InstantClock::default()),
            interrupted: Box::new(crate::interrupt::requested),
            sink: Box::new(crate::display::emit),
            started: false,
            item_out: false,
        }
    }

    /// A label shown before the bar.
    pub fn desc(mut self, desc: impl Into<String>) -> Self {
        self.state.desc = desc.into();
        self
    }

    /// Sets the number of items when the iterator cannot tell (e.g. after `filter`).
    pub fn total(mut self, n: usize) -> Self {
        self.state.total = Some(n);
        self
    }

    /// Minimum time between redraws (default 100 ms).
    pub fn min_interval(mut self, d: Duration) -> Self {
        self.state.min_interval = d;
        self
    }

    /// Use another clock (tests).
    pub fn clock(mut self, clock: impl Clock + 'a) -> Self {
        self.clock = Box::new(clock);
        self
    }

    /// Replace the interrupt probe (tests); the default reads the kernel's flag.
    pub fn interrupt_probe(mut self, probe: impl Fn() -> bool + 'a) -> Self {
        self.interrupted = Box::new(probe);
        self
    }

    /// Send the protocol lines somewhere other than stdout (tests).
    pub fn sink(mut self, sink: impl FnMut(&str) + 'a) -> Self {
        self.sink = Box::new(sink);
        self
    }

    pub fn state(&self) -> &ProgressState {
        &self.state
    }

    fn finish(&mut self, how: Finish) {
        let now = self.clock.now();
        if let Some(line) = self.state.end(now, how) {
            (self.sink)(&line);
        }
    }
}

impl<'a, I: Iterator> Iterator for Progress<'a, I> {
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        if self.state.finish.is_some() {
            return None;
        }
        if !self.started {
            self.started = true;
            let line = self.state.begin(self.clock.now());
            (self.sink)(&line);
        }
        // Asking for the next item means the previous one is done.
        if std::mem::take(&mut self.item_out) {
            if let Some(line) = self.state.advance(self.clock.now()) {
                (self.sink)(&line);
            }
        }
        if (self.interrupted)() {
            self.finish(Finish::Interrupted);
            return None;
        }
        match self.inner.next() {
            Some(item) => {
                self.item_out = true;
                Some(item)
            }
            None => {
                self.finish(Finish::Done);
                None
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.state.finish.is_some() {
            (0, Some(0))
        } else {
            // May end early on an interrupt, so promise no lower bound.
            (0, self.inner.size_hint().1)
        }
    }
}

impl<'a, I> Drop for Progress<'a, I> {
    fn drop(&mut self) {
        if self.started && self.state.finish.is_none() {
            let now = self.clock.now();
            if let Some(line) = self.state.end(now, Finish::Stopped) {
                (self.sink)(&line);
            }
        }
    }
}

/// Adds `.progress()` to every iterator.
pub trait ProgressExt: Iterator + Sized {
    fn progress<'a>(self) -> Progress<'a, Self> {
        Progress::new(self)
    }
}

impl<I: Iterator> ProgressExt for I {}
