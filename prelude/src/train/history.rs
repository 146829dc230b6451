//! What `fit` returns: one [`EpochLog`] per epoch (Keras' `history.history`), shown as a
//! table, with a loss/accuracy chart.

use super::Loss;
use crate::display::{html_escape, MimeBundle, Rich, Svg};
use crate::plot::Figure;
use std::fmt;

/// One epoch's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct EpochLog {
    /// 1-based, as Keras prints it.
    pub epoch: usize,
    /// Mean training loss over the epoch's samples (while the weights changed, as Keras).
    pub loss: f64,
    /// Share of right predictions in training (classification losses only).
    pub accuracy: Option<f64>,
    pub val_loss: Option<f64>,
    pub val_accuracy: Option<f64>,
    /// Batches trained in this epoch (fewer than the loader's when interrupted).
    pub batches: usize,
    pub seconds: f64,
    /// False for the epoch an interrupt cut short (its figures cover `batches` batches).
    pub complete: bool,
    /// The learning rate this epoch trained with, when `fit` has a schedule (Keras logs
    /// `learning_rate` then).
    pub lr: Option<f64>,
}

impl EpochLog {
    /// Keras' verbose=2 line: `Epoch 2/5 - 3.1s - loss: 0.2012 - accuracy: 0.9412 - ...`.
    pub fn line(&self, epochs: usize) -> String {
        let mut s = format!(
            "Epoch {}/{epochs} - {:.1}s - loss: {:.4}",
            self.epoch, self.seconds, self.loss
        );
        for (name, v) in [
            ("accuracy", self.accuracy),
            ("val_loss", self.val_loss),
            ("val_accuracy", self.val_accuracy),
        ] {
            if let Some(v) = v {
                s += &format!(" - {name}: {v:.4}");
            }
        }
        if let Some(lr) = self.lr {
            s += &format!(" - lr: {lr:.4e}");
        }
        if !self.complete {
            s += &format!(" (interrupted after {} batches)", self.batches);
        }
        s
    }
}

/// Per-epoch figures of a `fit` run. `interrupted` says the run stopped early at the user's
/// interrupt; the model then holds the weights of its last step.
#[derive(Clone, Debug)]
pub struct History {
    pub epochs: Vec<EpochLog>,
    /// The epochs asked for.
    pub planned_epochs: usize,
    pub batches_per_epoch: usize,
    pub loss_fn: Loss,
    /// `Some((epoch, batch))` (1-based epoch, batches done in it) when an interrupt stopped
    /// training; None when every epoch ran.
    pub interrupted: Option<(usize, usize)>,
}

impl History {
    pub(crate) fn new(loss_fn: Loss, planned_epochs: usize, batches_per_epoch: usize) -> Self {
        History {
            epochs: Vec::new(),
            planned_epochs,
            batches_per_epoch,
            loss_fn,
            interrupted: None,
        }
    }

    pub fn len(&self) -> usize {
        self.epochs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.epochs.is_empty()
    }

    /// True when an interrupt stopped training early.
    pub fn was_interrupted(&self) -> bool {
        self.interrupted.is_some()
    }

    /// Training loss per epoch (Keras' `history.history["loss"]`).
    pub fn loss(&self) -> Vec<f64> {
        self.epochs.iter().map(|e| e.loss).collect()
    }

    /// Training accuracy per epoch (empty for a regression loss).
    pub fn accuracy(&self) -> Vec<f64> {
        self.epochs.iter().filter_map(|e| e.accuracy).collect()
    }

    /// Validation loss per epoch (empty without validation data).
    pub fn val_loss(&self) -> Vec<f64> {
        self.epochs.iter().filter_map(|e| e.val_loss).collect()
    }

    /// Validation accuracy per epoch.
    pub fn val_accuracy(&self) -> Vec<f64> {
        self.epochs.iter().filter_map(|e| e.val_accuracy).collect()
    }

    /// The line that says training stopped early (None when it did not).
    pub fn interrupted_note(&self) -> Option<String> {
        self.interrupted.map(|(e, b)| {
            format!(
                "training interrupted in epoch {e}/{} after batch {b}/{}; the model keeps the \
                 weights of its last step and can be used, evaluated or trained further",
                self.planned_epochs, self.batches_per_epoch
            )
        })
    }

    /// Loss (left) and accuracy (right, classification only) per epoch, training and
    /// validation, as one SVG.
    pub fn chart(&self) -> Svg {
        let x: Vec<f64> = self.epochs.iter().map(|e| e.epoch as f64).collect();
        let pick = |f: fn(&EpochLog) -> Option<f64>| -> (Vec<f64>, Vec<f64>) {
            self.epochs
                .iter()
                .filter_map(|e| f(e).map(|v| (e.epoch as f64, v)))
                .unzip()
        };
        let train_loss = (x.clone(), self.loss());
        let series = |train: (Vec<f64>, Vec<f64>), val: (Vec<f64>, Vec<f64>)| {
            vec![("training", train), ("validation", val)]
        };
        let loss = series(train_loss, pick(|e| e.val_loss));
        let acc = self
            .loss_fn
            .is_classification()
            .then(|| series(pick(|e| e.accuracy), pick(|e| e.val_accuracy)));
        Svg(panels(&loss, acc.as_ref(), "epoch", true))
    }
}

/// Reads one figure of an epoch.
type Field = fn(&EpochLog) -> Option<f64>;

type Series<'a> = Vec<(&'a str, (Vec<f64>, Vec<f64>))>;

/// One chart per panel (loss; accuracy when given) side by side in one SVG document.
pub(crate) fn panels(
    loss: &Series,
    accuracy: Option<&Series>,
    xlabel: &str,
    points: bool,
) -> String {
    let fig = |title: &str, ylabel: &str, series: &Series| {
        let mut f = Figure::new(title)
            .xlabel(xlabel)
            .ylabel(ylabel)
            .size(PANEL_W, PANEL_H);
        for (name, (xs, ys)) in series {
            if xs.is_empty() {
                continue;
            }
            f = if points || xs.len() == 1 {
                f.line_points(name, xs, ys)
            } else {
                f.line(name, xs, ys)
            };
        }
        f.to_svg()
    };
    let left = fig("Loss", "loss", loss);
    match accuracy {
        None => left,
        Some(acc) => side_by_side(&left, &fig("Accuracy", "accuracy", acc)),
    }
}

const PANEL_W: u32 = 460;
const PANEL_H: u32 = 300;

/// Two SVG documents of `PANEL_W` x `PANEL_H` as one (nested `<svg>` elements).
fn side_by_side(a: &str, b: &str) -> String {
    let body = |s: &str| s[s.find("<svg").unwrap_or(0)..].to_string();
    let b = body(b).replacen("<svg", &format!("<svg x=\"{PANEL_W}\""), 1);
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{PANEL_H}\" \
         viewBox=\"0 0 {w} {PANEL_H}\">{}{b}</svg>",
        body(a),
        w = 2 * PANEL_W
    )
}

impl fmt::Display for History {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cols = self.columns();
        write!(f, "{:>5}", "epoch")?;
        for (name, _) in &cols {
            write!(f, "  {name:>12}")?;
        }
        writeln!(f, "  {:>8}", "time")?;
        for (i, e) in self.epochs.iter().enumerate() {
            write!(f, "{:>5}", format!("{}{}", e.epoch, mark(e)))?;
            for (_, vals) in &cols {
                write!(f, "  {:>12}", num(vals[i]))?;
            }
            writeln!(f, "  {:>7.1}s", e.seconds)?;
        }
        if let Some(note) = self.interrupted_note() {
            writeln!(f, "* {note}")?;
        }
        Ok(())
    }
}

fn mark(e: &EpochLog) -> &'static str {
    if e.complete {
        ""
    } else {
        "*"
    }
}

fn num(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.4}"))
}

impl History {
    /// The columns that have values: (name, value per epoch).
    fn columns(&self) -> Vec<(&'static str, Vec<Option<f64>>)> {
        let all: [(&'static str, Field); 4] = [
            ("loss", |e| Some(e.loss)),
            ("accuracy", |e| e.accuracy),
            ("val_loss", |e| e.val_loss),
            ("val_accuracy", |e| e.val_accuracy),
        ];
        all.iter()
            .map(|(n, f)| (*n, self.epochs.iter().map(f).collect::<Vec<_>>()))
            .filter(|(_, v)| v.iter().any(Option::is_some))
            .collect()
    }

    fn html(&self) -> String {
        let cols = self.columns();
        let mut s = String::from(
            "<table style=\"font-family:monospace;border-collapse:collapse\"><tr><th>epoch</th>",
        );
        for (name, _) in &cols {
            s += &format!("<th style=\"padding:0 8px\">{name}</th>");
        }
        s += "<th>time</th></tr>";
        for (i, e) in self.epochs.iter().enumerate() {
            s += &format!("<tr><td>{}{}</td>", e.epoch, mark(e));
            for (_, vals) in &cols {
                s += &format!(
                    "<td style=\"padding:0 8px;text-align:right\">{}</td>",
                    num(vals[i])
                );
            }
            s += &format!("<td style=\"text-align:right\">{:.1}s</td></tr>", e.seconds);
        }
        s += "</table>";
        if let Some(note) = self.interrupted_note() {
            s += &format!(
                "<div style=\"color:#d9534f\">* {}</div>",
                html_escape(&note)
            );
        }
        s
    }
}

impl Rich for History {
    fn mime_bundle(&self) -> MimeBundle {
        MimeBundle::new()
            .with("text/plain", self.to_string())
            .with("text/html", self.html())
    }
}

crate::rich_evcxr_display!(History);
