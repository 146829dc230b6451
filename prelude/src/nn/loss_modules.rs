//! torch's loss modules: `let criterion = nn::CrossEntropyLoss::new();` then
//! `criterion.forward(&output, &target)?` where torch writes `criterion(output, target)`. Each
//! takes torch's `reduction` (`.reduction(Reduction::Sum)`; `Mean` by default) and calls the
//! function of the same name in `F`, so the numbers and gradients are those of `F`'s losses.
//! They take two inputs, so they are not `Module`s (which take one), as in torch only by
//! convention.

use super::class_loss::ClassLossOptions;
use super::functional::{bce_with_logits_reduced, cross_entropy_with, mse_loss_reduced};
use super::loss::{
    binary_cross_entropy_reduced, huber_loss_reduced, kl_div, l1_loss_reduced, nll_loss_with,
    smooth_l1_loss_reduced, KlReduction, Reduction,
};
use crate::error::Result;
use crate::tensor::Tensor;

/// `new()` and torch's `reduction=` builder for a loss module that derives `Default`; the
/// reduction lives at `self.reduction`, or at `self.<field>.reduction` when a field is named.
macro_rules! reduction_builder {
    ($name:ident $(. $field:ident)?) => {
        impl $name {
            pub fn new() -> Self {
                Self::default()
            }

            /// torch's `reduction=`: `Reduction::None`, `Mean` (the default) or `Sum`.
            pub fn reduction(mut self, reduction: Reduction) -> Self {
                self$(.$field)?.reduction = reduction;
                self
            }
        }
    };
}
pub(super) use reduction_builder;

/// One loss module: a reduction to set and, for some, one threshold (`beta`, `delta`) with
/// torch's default, passed to the function before the reduction.
macro_rules! loss_module {
    ($(#[$doc:meta])* $name:ident => $f:path $(, $param:ident = $default:expr, $pdoc:literal)?) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $name {
            reduction: Reduction,
            $($param: f64,)?
        }

        impl Default for $name {
            fn default() -> Self {
                $name {
                    reduction: Reduction::Mean,
                    $($param: $default,)?
                }
            }
        }

        reduction_builder!($name);

        impl $name {
            $(
                #[doc = $pdoc]
                pub fn $param(mut self, $param: f64) -> Self {
                    self.$param = $param;
                    self
                }
            )?

            pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
                $f(input, target, $(self.$param,)? self.reduction)
            }
        }
    };
}
pub(super) use loss_module;

loss_module!(
    /// torch's `nn.MSELoss`: squared differences (`F::mse_loss`).
    MSELoss => mse_loss_reduced
);
loss_module!(
    /// torch's `nn.L1Loss`: absolute differences (`F::l1_loss`).
    L1Loss => l1_loss_reduced
);
/// The class losses' modules: torch's options as builder methods.
macro_rules! class_loss_module {
    ($(#[$doc:meta])* $name:ident => $f:path) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Default)]
        pub struct $name {
            opts: ClassLossOptions,
        }

        reduction_builder!($name.opts);

        impl $name {
            /// torch's `weight=`: one weight per class (`[C]`, on the input's device).
            pub fn weight(mut self, weight: Tensor) -> Self {
                self.opts.weight = Some(weight);
                self
            }

            /// torch's `ignore_index=` (-100 unless set): targets equal to it count for
            /// nothing.
            pub fn ignore_index(mut self, ignore_index: i64) -> Self {
                self.opts.ignore_index = ignore_index;
                self
            }

            pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
                $f(input, target, &self.opts)
            }
        }
    };
}

class_loss_module!(
    /// torch's `nn.CrossEntropyLoss`: `[N, C]` logits against `[N]` class indices or `[N, C]`
    /// class probabilities (`F::cross_entropy_with`); `None` gives one loss per sample.
    CrossEntropyLoss => cross_entropy_with
);
class_loss_module!(
    /// torch's `nn.NLLLoss`: `[N, C]` log-probabilities against `[N]` class indices
    /// (`F::nll_loss_with`); `None` gives one loss per sample.
    NLLLoss => nll_loss_with
);

impl CrossEntropyLoss {
    /// torch's `label_smoothing=` (0 unless set): the target becomes `1 - ε` on the class
    /// and `ε / C` spread over all classes.
    pub fn label_smoothing(mut self, epsilon: f64) -> Self {
        self.opts.label_smoothing = epsilon;
        self
    }
}
loss_module!(
    /// torch's `nn.BCELoss`: probabilities in [0, 1] against targets of the same shape
    /// (`F::binary_cross_entropy`).
    BCELoss => binary_cross_entropy_reduced
);
loss_module!(
    /// torch's `nn.BCEWithLogitsLoss`: logits against targets in [0, 1] of the same shape
    /// (`F::binary_cross_entropy_with_logits`, the stable form).
    BCEWithLogitsLoss => bce_with_logits_reduced
);

loss_module!(
    /// torch's `nn.SmoothL1Loss` (`F::smooth_l1_loss`): `beta` 1.0 unless set.
    SmoothL1Loss => smooth_l1_loss_reduced,
    beta = 1.0, "Where the loss turns from quadratic to linear (0 or more; 0 is `L1Loss`)."
);
loss_module!(
    /// torch's `nn.HuberLoss` (`F::huber_loss`): `delta` 1.0 unless set.
    HuberLoss => huber_loss_reduced,
    delta = 1.0, "Where the loss turns from quadratic to linear (positive)."
);

/// torch's `nn.KLDivLoss`: log-probabilities against a target distribution (`F::kl_div`);
/// `.reduction("batchmean")` for the divergence per sample (torch's default is `"mean"`, an
/// average over every element), `.log_target(true)` for a target in log-probabilities.
#[derive(Clone, Debug, PartialEq)]
pub struct KLDivLoss {
    reduction: KlReduction,
    log_target: bool,
}

impl Default for KLDivLoss {
    fn default() -> Self {
        KLDivLoss {
            reduction: KlReduction::Mean,
            log_target: false,
        }
    }
}

impl KLDivLoss {
    pub fn new() -> Self {
        Self::default()
    }

    /// torch's `reduction=`: `"batchmean"`, `"mean"` (the default), `"sum"`, `"none"`, or a
    /// [`Reduction`].
    pub fn reduction(mut self, reduction: impl Into<KlReduction>) -> Self {
        self.reduction = reduction.into();
        self
    }

    /// torch's `log_target=`: the target given as log-probabilities.
    pub fn log_target(mut self, log_target: bool) -> Self {
        self.log_target = log_target;
        self
    }

    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        kl_div(input, target, self.reduction.clone(), self.log_target)
    }
}
