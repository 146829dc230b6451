//! torch's loss modules: `let criterion = nn::CrossEntropyLoss::new();` then
//! `criterion.forward(&output, &target)?` where torch writes `criterion(output, target)`. Each
//! takes torch's `reduction` (`.reduction(Reduction::Sum)`; `Mean` by default) and calls the
//! function of the same name in `F`, so the numbers and gradients are those of `F`'s losses.
//! They take two inputs, so they are not `Module`s (which take one), as in torch only by
//! convention.

use super::functional::{bce_with_logits_reduced, cross_entropy_reduced, mse_loss_reduced};
use super::loss::{
    binary_cross_entropy_reduced, huber_loss_reduced, l1_loss_reduced, nll_loss_reduced,
    smooth_l1_loss_reduced, Reduction,
};
use crate::error::Result;
use crate::tensor::Tensor;

/// One loss module with only a reduction to set.
macro_rules! loss_module {
    ($(#[$doc:meta])* $name:ident => $f:path) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        pub struct $name {
            reduction: Reduction,
        }

        impl $name {
            pub fn new() -> Self {
                Self::default()
            }

            /// torch's `reduction=`: `Reduction::None`, `Mean` (the default) or `Sum`.
            pub fn reduction(mut self, reduction: Reduction) -> Self {
                self.reduction = reduction;
                self
            }

            pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
                $f(input, target, self.reduction)
            }
        }
    };
}

loss_module!(
    /// torch's `nn.MSELoss`: squared differences (`F::mse_loss`).
    MSELoss => mse_loss_reduced
);
loss_module!(
    /// torch's `nn.L1Loss`: absolute differences (`F::l1_loss`).
    L1Loss => l1_loss_reduced
);
loss_module!(
    /// torch's `nn.CrossEntropyLoss`: `[N, C]` logits against `[N]` class indices
    /// (`F::cross_entropy`); `None` gives one loss per sample, `[N]`.
    CrossEntropyLoss => cross_entropy_reduced
);
loss_module!(
    /// torch's `nn.NLLLoss`: `[N, C]` log-probabilities against `[N]` class indices
    /// (`F::nll_loss`); `None` gives one loss per sample, `[N]`.
    NLLLoss => nll_loss_reduced
);
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

/// torch's `nn.SmoothL1Loss` (`F::smooth_l1_loss`): `beta` 1.0 unless set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SmoothL1Loss {
    reduction: Reduction,
    beta: f64,
}

impl Default for SmoothL1Loss {
    fn default() -> Self {
        SmoothL1Loss {
            reduction: Reduction::Mean,
            beta: 1.0,
        }
    }
}

impl SmoothL1Loss {
    pub fn new() -> Self {
        Self::default()
    }

    /// torch's `reduction=`: `Reduction::None`, `Mean` (the default) or `Sum`.
    pub fn reduction(mut self, reduction: Reduction) -> Self {
        self.reduction = reduction;
        self
    }

    /// Where the loss turns from quadratic to linear (0 or more; 0 is `L1Loss`).
    pub fn beta(mut self, beta: f64) -> Self {
        self.beta = beta;
        self
    }

    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        smooth_l1_loss_reduced(input, target, self.beta, self.reduction)
    }
}

/// torch's `nn.HuberLoss` (`F::huber_loss`): `delta` 1.0 unless set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HuberLoss {
    reduction: Reduction,
    delta: f64,
}

impl Default for HuberLoss {
    fn default() -> Self {
        HuberLoss {
            reduction: Reduction::Mean,
            delta: 1.0,
        }
    }
}

impl HuberLoss {
    pub fn new() -> Self {
        Self::default()
    }

    /// torch's `reduction=`: `Reduction::None`, `Mean` (the default) or `Sum`.
    pub fn reduction(mut self, reduction: Reduction) -> Self {
        self.reduction = reduction;
        self
    }

    /// Where the loss turns from quadratic to linear (positive).
    pub fn delta(mut self, delta: f64) -> Self {
        self.delta = delta;
        self
    }

    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        huber_loss_reduced(input, target, self.delta, self.reduction)
    }
}
