//! What `fit` shows while it trains. In a notebook: a progress bar with the running loss and
//! accuracy (one display id, redrawn at most every 100 ms, as `progress.rs` does) and a
//! loss/accuracy chart (a second display id, redrawn at most every `chart_interval` and at
//! each epoch's end, since rendering an SVG costs milliseconds a fast loop should not pay
//! per batch). Elsewhere: one plain line per epoch, Keras' `verbose=2`.

use super::history::{panels, EpochLog, History};
use super::Loss;
use crate::display::Rich;
use crate::display::{display_line, fresh_display_id, html_escape, update_line, MimeBundle, Svg};
use crate::progress::clock_text;
use crate::timing::Clock;
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Silent,
    Plain,
    Notebook,
}

/// The most running-loss points the live chart keeps.
const MAX_POINTS: usize = 400;

pub(crate) struct Live<'a> {
    pub mode: Mode,
    sink: Box<dyn FnMut(&str) + 'a>,
    clock: Box<dyn Clock + 'a>,
    bar_id: String,
    chart_id: String,
    bar_interval: Duration,
    chart_interval: Duration,
    last_bar: Duration,
    last_chart: Duration,
    start: Duration,
    epoch_start: Duration,
    epochs: usize,
    batches: usize,
    loss_fn: Loss,
    // Where training is and its running figures for the current epoch.
    epoch: usize,
    batch: usize,
    run_loss: f64,
    run_acc: Option<f64>,
    /// (epochs done as a fraction, running loss, running accuracy) at each bar redraw.
    points: Vec<(f64, f64, Option<f64>)>,
    finished: Option<String>,
}

impl<'a> Live<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        mode: Mode,
        sink: Box<dyn FnMut(&str) + 'a>,
        clock: Box<dyn Clock + 'a>,
        chart_interval: Duration,
        epochs: usize,
        batches: usize,
        loss_fn: Loss,
    ) -> Live<'a> {
        let now = clock.now();
        Live {
            mode,
            sink,
            clock,
            bar_id: fresh_display_id(),
            chart_id: fresh_display_id(),
            bar_interval: crate::progress::MIN_INTERVAL,
            chart_interval,
            last_bar: now,
            last_chart: now,
            start: now,
            epoch_start: now,
            epochs,
            batches,
            loss_fn,
            epoch: 0,
            batch: 0,
            run_loss: f64::NAN,
            run_acc: None,
            points: Vec::new(),
            finished: None,
        }
    }

    /// Shows the bar and the (empty) chart.
    pub fn begin(&mut self, history: &History) {
        if self.mode != Mode::Notebook {
            return;
        }
        let bar = display_line(&self.bar_bundle(history), Some(&self.bar_id));
        let chart = display_line(&self.chart(history).mime_bundle(), Some(&self.chart_id));
        (self.sink)(&bar);
        (self.sink)(&chart);
    }

    pub fn start_epoch(&mut self, epoch: usize) {
        self.epoch = epoch;
        self.batch = 0;
        self.run_loss = f64::NAN;
        self.run_acc = None;
        self.epoch_start = self.clock.now();
    }

    /// Records batch `batch` (1-based) of the current epoch with the epoch's running figures.
    pub fn batch(&mut self, batch: usize, loss: f64, acc: Option<f64>, history: &History) {
        self.batch = batch;
        self.run_loss = loss;
        self.run_acc = acc;
        if self.mode != Mode::Notebook {
            return;
        }
        let now = self.clock.now();
        if now.saturating_sub(self.last_bar) >= self.bar_interval {
            self.last_bar = now;
            self.record_point();
            let line = update_line(&self.bar_bundle(history), &self.bar_id);
            (self.sink)(&line);
        }
        if now.saturating_sub(self.last_chart) >= self.chart_interval {
            self.redraw_chart(history);
        }
    }

    /// After an epoch (its log already in `history`): bar and chart redrawn, or a plain line.
    pub fn end_epoch(&mut self, history: &History) {
        match self.mode {
            Mode::Silent => {}
            Mode::Plain => {
                if let Some(e) = history.epochs.last() {
                    let line = e.line(self.epochs) + "\n";
                    (self.sink)(&line);
                }
            }
            Mode::Notebook => {
                self.record_point();
                self.last_bar = self.clock.now();
                let line = update_line(&self.bar_bundle(history), &self.bar_id);
                (self.sink)(&line);
                self.redraw_chart(history);
            }
        }
    }

    /// The last redraw: `how` is `None` when every epoch ran, else what stopped training.
    pub fn finish(&mut self, history: &History, how: Option<String>) {
        self.finished = Some(how.clone().unwrap_or_default());
        match self.mode {
            Mode::Silent => {}
            Mode::Plain => {
                if let Some(note) = how {
                    (self.sink)(&format!("{note}\n"));
                }
            }
            Mode::Notebook => {
                let line = update_line(&self.bar_bundle(history), &self.bar_id);
                (self.sink)(&line);
                self.redraw_chart(history);
            }
        }
    }

    fn record_point(&mut self) {
        if self.batch > 0 && self.run_loss.is_finite() {
            let x = self.epoch as f64 + self.batch as f64 / self.batches.max(1) as f64;
            self.points.push((x, self.run_loss, self.run_acc));
            // A long run redraws 10 times a second for hours: halve the points whenever they
            // reach the cap, so the chart's SVG stays a few tens of kB and still spans the run.
            if self.points.len() >= MAX_POINTS {
                let last = *self.points.last().unwrap();
                let mut i = 0;
                self.points.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                if self.points.last() != Some(&last) {
                    self.points.push(last);
                }
            }
        }
    }

    fn redraw_chart(&mut self, history: &History) {
        self.last_chart = self.clock.now();
        let line = update_line(&self.chart(history).mime_bundle(), &self.chart_id);
        (self.sink)(&line);
    }

    /// Running training figures (x in epochs) and validation figures at each epoch's end.
    fn chart(&self, history: &History) -> Svg {
        let train_loss: (Vec<f64>, Vec<f64>) = self.points.iter().map(|p| (p.0, p.1)).unzip();
        let val = |f: fn(&EpochLog) -> Option<f64>| -> (Vec<f64>, Vec<f64>) {
            history
                .epochs
                .iter()
                .filter_map(|e| f(e).map(|v| (e.epoch as f64, v)))
                .unzip()
        };
        let loss = vec![
            ("training", train_loss),
            ("validation", val(|e| e.val_loss)),
        ];
        let acc = self.loss_fn.is_classification().then(|| {
            let train: (Vec<f64>, Vec<f64>) = self
                .points
                .iter()
                .filter_map(|p| p.2.map(|a| (p.0, a)))
                .unzip();
            vec![("training", train), ("validation", val(|e| e.val_accuracy))]
        });
        Svg(panels(&loss, acc.as_ref(), "epoch", false))
    }

    /// `Epoch 2/5  37% [...] 120/938 [00:12<00:21, 9.80 batch/s] loss: 0.2345 - accuracy: 0.9123`
    fn status(&self, now: Duration) -> (String, f64) {
        let elapsed = now.saturating_sub(self.epoch_start);
        let frac = if self.batches == 0 {
            1.0
        } else {
            (self.batch as f64 / self.batches as f64).min(1.0)
        };
        let secs = elapsed.as_secs_f64();
        let rate = (secs > 0.0 && self.batch > 0).then(|| self.batch as f64 / secs);
        let left = match rate {
            Some(r) if self.finished.is_none() => format!(
                "<{}",
                clock_text(Duration::from_secs_f64(
                    self.batches.saturating_sub(self.batch) as f64 / r
                ))
            ),
            _ => String::new(),
        };
        let rate = rate.map_or("? batch/s".into(), |r| format!("{r:.2} batch/s"));
        let mut s = format!(
            "Epoch {}/{} {}/{} [{}{left}, {rate}]",
            self.epoch + 1,
            self.epochs,
            self.batch,
            self.batches,
            clock_text(elapsed)
        );
        if self.batch > 0 {
            s += &format!(" loss: {:.4}", self.run_loss);
            if let Some(a) = self.run_acc {
                s += &format!(" - accuracy: {a:.4}");
            }
        }
        (s, frac)
    }

    fn bar_bundle(&self, history: &History) -> MimeBundle {
        let now = self.clock.now();
        let (status, frac) = self.status(now);
        let done: Vec<String> = history.epochs.iter().map(|e| e.line(self.epochs)).collect();
        let note = match &self.finished {
            Some(n) if !n.is_empty() => Some(n.clone()),
            Some(_) => Some(format!(
                "done: {} epochs in {}",
                history.epochs.len(),
                clock_text(now.saturating_sub(self.start))
            )),
            None => None,
        };
        let mut plain = done.join("\n");
        if !plain.is_empty() {
            plain.push('\n');
        }
        plain += &status;
        if let Some(n) = &note {
            plain += &format!("\n{n}");
        }
        let color = match &self.finished {
            None => "#4c8bf5",
            Some(n) if n.is_empty() => "#3aa757",
            Some(_) => "#d9534f",
        };
        let mut html = String::from("<div style=\"font-family:monospace\">");
        for l in &done {
            html += &format!("<div>{}</div>", html_escape(l));
        }
        html += &format!(
            "<div style=\"display:flex;align-items:center;gap:8px\">\
             <div style=\"width:260px;height:14px;background:#e8e8e8;border-radius:3px;overflow:hidden\">\
             <div style=\"width:{:.1}%;height:100%;background:{color}\"></div></div>\
             <span>{}</span></div>",
            frac * 100.0,
            html_escape(&status)
        );
        if let Some(n) = &note {
            html += &format!("<div style=\"color:{color}\">{}</div>", html_escape(n));
        }
        html += "</div>";
        MimeBundle::new()
            .with("text/plain", plain)
            .with("text/html", html)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    /// Moves 150 ms at every read, so every batch redraws the bar and records a point.
    #[derive(Clone, Default)]
    struct Ticking(Rc<Cell<Duration>>);
    impl Clock for Ticking {
        fn now(&self) -> Duration {
            self.0.set(self.0.get() + Duration::from_millis(150));
            self.0.get()
        }
    }

    #[test]
    fn a_long_run_keeps_the_chart_small_and_spanning_the_run() {
        let history = History::new(Loss::Mse, 1, 5000);
        let mut lines = 0usize;
        let mut live = Live::new(
            Mode::Notebook,
            Box::new(|_: &str| lines += 1),
            Box::new(Ticking::default()),
            Duration::from_secs(3600),
            1,
            5000,
            Loss::Mse,
        );
        live.start_epoch(0);
        for b in 1..=5000 {
            live.batch(b, 1.0 / b as f64, None, &history);
        }
        assert!(live.points.len() <= MAX_POINTS, "{}", live.points.len());
        assert!(live.points.len() >= MAX_POINTS / 2, "{}", live.points.len());
        assert_eq!(live.points[0].0, 1.0 / 5000.0);
        assert_eq!(live.points.last().unwrap().0, 1.0);
        drop(live);
        assert_eq!(
            lines, 5000,
            "one bar update per batch at this pace, no chart update"
        );
    }
}
