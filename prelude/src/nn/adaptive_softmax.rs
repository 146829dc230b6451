//! torch's `nn.AdaptiveLogSoftmaxWithLoss` (Grave et al., "Efficient softmax approximation
//! for GPUs"): a large vocabulary split at `cutoffs` into a shortlist of frequent classes,
//! scored by one head together with one logit per tail cluster, and tail clusters scored by
//! smaller projections (`in_features / div_value^(i+1)` wide), so most rows never touch the
//! rare classes' weights.

use super::containers::ModuleList;
use super::functional::log_softmax;
use super::{Linear, Module, Parameter, Sequential};
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};
use crate::Device;

/// What [`AdaptiveLogSoftmaxWithLoss::forward_target`] gives, torch's `_ASMoutput`: the log
/// probability of each row's target `[N]`, and the loss, their negated mean.
#[derive(Debug)]
pub struct ASMOutput {
    pub output: Tensor,
    pub loss: Tensor,
}

/// torch's `nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, cutoffs)`: a `head`
/// `Linear` over the shortlist's classes and one logit per cluster, and a `tail` of
/// `Sequential(Linear(in, hsz), Linear(hsz, cluster size))` per cluster (no biases), under
/// torch's parameter names. [`forward_target`](Self::forward_target) gives each row's target
/// log probability and the loss; [`log_prob`](Self::log_prob) every class's;
/// [`predict`](Self::predict) the likeliest class.
pub struct AdaptiveLogSoftmaxWithLoss {
    in_features: usize,
    n_classes: usize,
    /// The shortlist's end, each cluster's end, and `n_classes` last.
    cutoffs: Vec<usize>,
    div_value: f64,
    head_bias: bool,
    pub head: Linear,
    pub tail: ModuleList,
}

impl AdaptiveLogSoftmaxWithLoss {
    /// `cutoffs`: increasing, unique, each between 1 and `n_classes - 1` (the shortlist is
    /// classes `0..cutoffs[0]`); `div_value` 4 and no head bias, torch's defaults.
    pub fn new(
        in_features: usize,
        n_classes: usize,
        cutoffs: &[usize],
    ) -> Result<AdaptiveLogSoftmaxWithLoss> {
        AdaptiveLogSoftmaxWithLoss::with_options(in_features, n_classes, cutoffs, 4.0, false)
    }

    /// [`new`](Self::new) with torch's `div_value` (each cluster's projection narrower by
    /// this factor than the one before) and `head_bias`.
    pub fn with_options(
        in_features: usize,
        n_classes: usize,
        cutoffs: &[usize],
        div_value: f64,
        head_bias: bool,
    ) -> Result<AdaptiveLogSoftmaxWithLoss> {
        let valid = !cutoffs.is_empty()
            && cutoffs.windows(2).all(|w| w[0] < w[1])
            && cutoffs[0] > 0
            && cutoffs[cutoffs.len() - 1] < n_classes;
        if !valid {
            return Err(Error::Invalid(format!(
                "AdaptiveLogSoftmaxWithLoss: cutoffs must be unique, increasing, each between 1 \
                 and n_classes - 1 = {}, got {cutoffs:?}",
                n_classes.saturating_sub(1)
            )));
        }
        if !(div_value.is_finite() && div_value > 0.0) {
            return Err(Error::Invalid(format!(
                "AdaptiveLogSoftmaxWithLoss: div_value must be a positive number, got {div_value}"
            )));
        }
        let mut all = cutoffs.to_vec();
        all.push(n_classes);
        let shortlist = all[0];
        let clusters = all.len() - 1;
        let head = if head_bias {
            Linear::new(in_features, shortlist + clusters)
        } else {
            Linear::no_bias(in_features, shortlist + clusters)
        };
        let mut tail = ModuleList::new();
        for i in 0..clusters {
            // torch's `int(in_features // div_value ** (i + 1))`.
            let hsz = (in_features as f64 / div_value.powi(i as i32 + 1)).floor() as usize;
            let osz = all[i + 1] - all[i];
            tail.push(
                Sequential::new()
                    .add(Linear::no_bias(in_features, hsz))
                    .add(Linear::no_bias(hsz, osz)),
            );
        }
        Ok(AdaptiveLogSoftmaxWithLoss {
            in_features,
            n_classes,
            cutoffs: all,
            div_value,
            head_bias,
            head,
            tail,
        })
    }

    fn shortlist(&self) -> usize {
        self.cutoffs[0]
    }

    fn cluster(&self, i: usize) -> &dyn Module {
        self.tail.get(i).expect("one tail module per cluster")
    }

    fn check_rows(&self, op: &str, x: &Tensor) -> Result<()> {
        if x.rank() != 2 || x.shape()[1] != self.in_features {
            return Err(Error::BadShape(format!(
                "AdaptiveLogSoftmaxWithLoss.{op}: expected input [N, {}], got {:?}",
                self.in_features,
                x.shape()
            )));
        }
        Ok(())
    }

    /// torch's `asm(input, target)`: `input` `[N, in_features]` and `target` `[N]` class
    /// indices (int64), or `[in_features]` and a 0-d target; each row's log probability of
    /// its target and the loss (their negated mean).
    pub fn forward_target(&self, input: &Tensor, target: &Tensor) -> Result<ASMOutput> {
        const OP: &str = "AdaptiveLogSoftmaxWithLoss";
        let batched = match (target.rank(), input.rank()) {
            (1, 2) if input.shape()[0] == target.shape()[0] => true,
            (1, 2) => {
                return Err(Error::BadShape(format!(
                    "{OP}: input and target must have the same size in the batch dimension, got \
                     {:?} and {:?}",
                    input.shape(),
                    target.shape()
                )))
            }
            (0, 1) => false,
            (0 | 1, _) => {
                return Err(Error::BadShape(format!(
                    "{OP}: a 1-D target takes a 2-D input and a 0-D target a 1-D input, got \
                     input {:?} and target {:?}",
                    input.shape(),
                    target.shape()
                )))
            }
            _ => {
                return Err(Error::BadShape(format!(
                    "{OP}: expected a 0-D or 1-D target, got {:?} (multi-target is not supported)",
                    target.shape()
                )))
            }
        };
        if target.dtype().is_float() || target.dtype() == DType::Bool {
            return Err(Error::Invalid(format!(
                "{OP}: the target must hold class indices (int64), got {}",
                target.dtype()
            )));
        }
        let (x, t) = if batched {
            (input.clone(), target.clone())
        } else {
            (input.unsqueeze(0)?, target.unsqueeze(0)?)
        };
        self.check_rows("forward", &x)?;
        let classes: Vec<i64> = t.to_dtype(DType::I64)?.to_vec::<i64>()?;
        if let Some(bad) = classes
            .iter()
            .find(|&&c| c < 0 || c as usize >= self.n_classes)
        {
            let (lo, hi) = (classes.iter().min(), classes.iter().max());
            return Err(Error::Invalid(format!(
                "{OP}: target values must be in [0, {}], got {bad} (range [{}, {}])",
                self.n_classes - 1,
                lo.copied().unwrap_or(0),
                hi.copied().unwrap_or(0)
            )));
        }
        let n = classes.len();
        let device = x.device();
        let index = |v: Vec<i64>| {
            let len = v.len();
            Tensor::from_vec(v, vec![len], Device::Cpu)?.to(device)
        };
        let shortlist = self.shortlist();
        // Which head column each row reads: its class, or its cluster's logit.
        let mut gather: Vec<i64> = classes.clone();
        let mut output = Tensor::zeros_dtype([n], x.dtype(), device)?;
        for i in 1..self.cutoffs.len() {
            let (lo, hi) = (self.cutoffs[i - 1] as i64, self.cutoffs[i] as i64);
            let rows: Vec<i64> = (0..n as i64)
                .filter(|&r| (lo..hi).contains(&classes[r as usize]))
                .collect();
            if rows.is_empty() {
                continue;
            }
            let relative: Vec<i64> = rows.iter().map(|&r| classes[r as usize] - lo).collect();
            for &r in &rows {
                gather[r as usize] = (shortlist + i - 1) as i64;
            }
            let rows = index(rows)?;
            let logits = self.cluster(i - 1).forward(&x.index_select(0, &rows)?)?;
            let k = relative.len();
            let relative = index(relative)?.reshape([k, 1])?;
            let local = log_softmax(&logits, 1)?
                .gather(1, &relative)?
                .reshape([k])?;
            output = output.index_add(0, &rows, &local, 1.0)?;
        }
        let head = log_softmax(&self.head.forward(&x)?, 1)?;
        let gather = index(gather)?.reshape([n, 1])?;
        let output = output.add(&head.gather(1, &gather)?.reshape([n])?)?;
        let loss = output.neg()?.mean()?;
        let output = if batched { output } else { output.squeeze(0)? };
        Ok(ASMOutput { output, loss })
    }

    /// Every class's log probability for each row of `input` `[N, in_features]` (torch's
    /// `log_prob`): `[N, n_classes]`.
    pub fn log_prob(&self, input: &Tensor) -> Result<Tensor> {
        self.check_rows("log_prob", input)?;
        let head = log_softmax(&self.head.forward(input)?, 1)?;
        let shortlist = self.shortlist();
        let mut parts = vec![head.narrow(1, 0, shortlist)?];
        for i in 0..self.cutoffs.len() - 1 {
            let cluster = log_softmax(&self.cluster(i).forward(input)?, 1)?;
            let logit = head.narrow(1, shortlist + i, 1)?;
            parts.push(cluster.add(&logit)?);
        }
        Tensor::cat(&parts, 1)
    }

    /// The likeliest class of each row (torch's `predict`, int64 `[N]`): the head's choice
    /// when it is a shortlist class, else the best of every class.
    pub fn predict(&self, input: &Tensor) -> Result<Tensor> {
        self.check_rows("predict", input)?;
        let head = self.head.forward(input)?.argmax_dim(1)?;
        let in_shortlist = head.lt(self.shortlist() as i64)?;
        let full = self.log_prob(input)?.argmax_dim(1)?;
        head.where_(&in_shortlist, &full)
    }
}

impl Module for AdaptiveLogSoftmaxWithLoss {
    /// Refused: the layer needs the targets (torch's `asm(input, target)`).
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Err(Error::Invalid(format!(
            "AdaptiveLogSoftmaxWithLoss: forward needs the targets too; call \
             forward_target(&input, &target) (torch's asm(input, target)), or log_prob / \
             predict (input shape {:?})",
            x.shape()
        )))
    }
    fn parameters(&self) -> Vec<Parameter> {
        let mut p = self.head.parameters();
        p.extend(self.tail.parameters());
        p
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        let head = self.head.named_parameters().into_iter();
        let head = head.map(|(n, p)| (format!("head.{n}"), p));
        let tail = self.tail.named_parameters().into_iter();
        head.chain(tail.map(|(n, p)| (format!("tail.{n}"), p)))
            .collect()
    }
    fn describe(&self) -> String {
        format!(
            "AdaptiveLogSoftmaxWithLoss(\n  (head): {}\n  (tail): {}\n)",
            self.head.describe(),
            self.tail.describe().replace('\n', "\n  ")
        )
    }
}

impl std::fmt::Debug for AdaptiveLogSoftmaxWithLoss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (in_features={}, n_classes={}, cutoffs={:?}, div_value={}, head_bias={})",
            self.describe(),
            self.in_features,
            self.n_classes,
            &self.cutoffs[..self.cutoffs.len() - 1],
            self.div_value,
            self.head_bias
        )
    }
}
