//! The modules of the margin, embedding and likelihood losses (`margin_loss.rs`,
//! `likelihood_loss.rs`): torch's `nn.MarginRankingLoss`, `nn.TripletMarginLoss`,
//! `nn.GaussianNLLLoss`, ... Each takes torch's `reduction` (`Mean` by default) and its
//! options as builder methods, and calls the function of the same name in `F`.

use super::likelihood_loss::{gaussian_nll_loss_reduced, poisson_nll_loss_reduced, PoissonNll};
use super::loss::Reduction;
use super::loss_modules::{loss_module, reduction_builder};
use super::margin_loss::{
    cosine_embedding_loss_reduced, hinge_embedding_loss_reduced, margin_ranking_loss_reduced,
    multi_margin_loss_reduced, multilabel_margin_loss_reduced, multilabel_soft_margin_loss_reduced,
    soft_margin_loss_reduced, triplet_margin_loss_reduced,
    triplet_margin_with_distance_loss_reduced, TripletMargin,
};
use crate::error::Result;
use crate::tensor::Tensor;
use std::sync::Arc;

loss_module!(
    /// torch's `nn.SoftMarginLoss`: scores against targets of 1 or -1
    /// (`F::soft_margin_loss`).
    SoftMarginLoss => soft_margin_loss_reduced
);
loss_module!(
    /// torch's `nn.HingeEmbeddingLoss` (`F::hinge_embedding_loss`): `margin` 1.0 unless set.
    HingeEmbeddingLoss => hinge_embedding_loss_reduced,
    margin = 1.0, "How far a pair labelled -1 must be to cost nothing."
);
loss_module!(
    /// torch's `nn.MultiLabelMarginLoss`: `[N, C]` scores against each row's labels, ended by
    /// -1 (`F::multilabel_margin_loss`).
    MultiLabelMarginLoss => multilabel_margin_loss_reduced
);

/// A loss of two inputs and a target of 1 or -1, with a margin (0 unless set).
macro_rules! pair_loss_module {
    ($(#[$doc:meta])* $name:ident => $f:path) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        pub struct $name {
            reduction: Reduction,
            margin: f64,
        }

        reduction_builder!($name);

        impl $name {
            /// torch's `margin=` (0 unless set).
            pub fn margin(mut self, margin: f64) -> Self {
                self.margin = margin;
                self
            }

            pub fn forward(&self, x1: &Tensor, x2: &Tensor, target: &Tensor) -> Result<Tensor> {
                $f(x1, x2, target, self.margin, self.reduction)
            }
        }
    };
}

pair_loss_module!(
    /// torch's `nn.MarginRankingLoss`: which of two scores should rank higher
    /// (`F::margin_ranking_loss`).
    MarginRankingLoss => margin_ranking_loss_reduced
);
pair_loss_module!(
    /// torch's `nn.CosineEmbeddingLoss`: whether two rows point the same way
    /// (`F::cosine_embedding_loss`).
    CosineEmbeddingLoss => cosine_embedding_loss_reduced
);

/// torch's `nn.TripletMarginLoss` (`F::triplet_margin_loss`): margin 1, p 2, eps 1e-6 and
/// no swap unless set.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TripletMarginLoss {
    reduction: Reduction,
    how: TripletMargin,
}

reduction_builder!(TripletMarginLoss);

impl TripletMarginLoss {
    /// torch's `margin=` (1 unless set; more than 0).
    pub fn margin(mut self, margin: f64) -> Self {
        self.how.margin = margin;
        self
    }

    /// torch's `p=`, the norm of the distances (2 unless set).
    pub fn p(mut self, p: f64) -> Self {
        self.how.p = p;
        self
    }

    /// torch's `eps=` (1e-6 unless set).
    pub fn eps(mut self, eps: f64) -> Self {
        self.how.eps = eps;
        self
    }

    /// torch's `swap=`: use the nearer of anchor-negative and positive-negative.
    pub fn swap(mut self, swap: bool) -> Self {
        self.how.swap = swap;
        self
    }

    pub fn forward(&self, anchor: &Tensor, positive: &Tensor, negative: &Tensor) -> Result<Tensor> {
        triplet_margin_loss_reduced(anchor, positive, negative, self.how, self.reduction)
    }
}

/// torch's `nn.TripletMarginWithDistanceLoss` (`F::triplet_margin_with_distance_loss`):
/// `pairwise_distance` unless `.distance_function(..)` is set, margin 1 and no swap.
#[derive(Clone)]
pub struct TripletMarginWithDistanceLoss {
    reduction: Reduction,
    distance: Option<Arc<DistanceFn>>,
    margin: f64,
    swap: bool,
}

/// A distance a loss module can keep.
type DistanceFn = dyn Fn(&Tensor, &Tensor) -> Result<Tensor> + Send + Sync;

impl Default for TripletMarginWithDistanceLoss {
    fn default() -> Self {
        TripletMarginWithDistanceLoss {
            reduction: Reduction::Mean,
            distance: None,
            margin: 1.0,
            swap: false,
        }
    }
}

reduction_builder!(TripletMarginWithDistanceLoss);

impl TripletMarginWithDistanceLoss {
    /// torch's `distance_function=`: one distance per pair of rows.
    pub fn distance_function(
        mut self,
        f: impl Fn(&Tensor, &Tensor) -> Result<Tensor> + Send + Sync + 'static,
    ) -> Self {
        self.distance = Some(Arc::new(f));
        self
    }

    /// torch's `margin=` (1 unless set; more than 0).
    pub fn margin(mut self, margin: f64) -> Self {
        self.margin = margin;
        self
    }

    /// torch's `swap=`: use the nearer of anchor-negative and positive-negative.
    pub fn swap(mut self, swap: bool) -> Self {
        self.swap = swap;
        self
    }

    pub fn forward(&self, anchor: &Tensor, positive: &Tensor, negative: &Tensor) -> Result<Tensor> {
        let distance = self
            .distance
            .as_deref()
            .map(|f| f as &dyn Fn(&Tensor, &Tensor) -> Result<Tensor>);
        triplet_margin_with_distance_loss_reduced(
            anchor,
            positive,
            negative,
            distance,
            self.margin,
            self.swap,
            self.reduction,
        )
    }
}

/// torch's `nn.PoissonNLLLoss` (`F::poisson_nll_loss`): a log-rate input, no Stirling term
/// and eps 1e-8 unless set.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PoissonNLLLoss {
    reduction: Reduction,
    how: PoissonNll,
}

reduction_builder!(PoissonNLLLoss);

impl PoissonNLLLoss {
    /// torch's `log_input=` (true unless set): the input is the rate's log.
    pub fn log_input(mut self, log_input: bool) -> Self {
        self.how.log_input = log_input;
        self
    }

    /// torch's `full=`: add Stirling's term for targets above 1.
    pub fn full(mut self, full: bool) -> Self {
        self.how.full = full;
        self
    }

    /// torch's `eps=` (1e-8 unless set).
    pub fn eps(mut self, eps: f64) -> Self {
        self.how.eps = eps;
        self
    }

    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        poisson_nll_loss_reduced(input, target, self.how, self.reduction)
    }
}

/// torch's `nn.GaussianNLLLoss` (`F::gaussian_nll_loss`): no constant term and eps 1e-6
/// unless set; `forward(input, target, var)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GaussianNLLLoss {
    reduction: Reduction,
    full: bool,
    eps: f64,
}

impl Default for GaussianNLLLoss {
    fn default() -> Self {
        GaussianNLLLoss {
            reduction: Reduction::Mean,
            full: false,
            eps: 1e-6,
        }
    }
}

reduction_builder!(GaussianNLLLoss);

impl GaussianNLLLoss {
    /// torch's `full=`: add the constant `log(2 pi) / 2`.
    pub fn full(mut self, full: bool) -> Self {
        self.full = full;
        self
    }

    /// torch's `eps=`, the least variance (1e-6 unless set).
    pub fn eps(mut self, eps: f64) -> Self {
        self.eps = eps;
        self
    }

    pub fn forward(&self, input: &Tensor, target: &Tensor, var: &Tensor) -> Result<Tensor> {
        gaussian_nll_loss_reduced(input, target, var, self.full, self.eps, self.reduction)
    }
}

/// torch's `nn.MultiMarginLoss` (`F::multi_margin_loss`): p 1, margin 1 and no class
/// weights unless set.
#[derive(Clone, Debug)]
pub struct MultiMarginLoss {
    reduction: Reduction,
    p: u32,
    margin: f64,
    weight: Option<Tensor>,
}

impl Default for MultiMarginLoss {
    fn default() -> Self {
        MultiMarginLoss {
            reduction: Reduction::Mean,
            p: 1,
            margin: 1.0,
            weight: None,
        }
    }
}

reduction_builder!(MultiMarginLoss);

impl MultiMarginLoss {
    /// torch's `p=`: 1 (the default) or 2, the hinge squared.
    pub fn p(mut self, p: u32) -> Self {
        self.p = p;
        self
    }

    /// torch's `margin=` (1 unless set).
    pub fn margin(mut self, margin: f64) -> Self {
        self.margin = margin;
        self
    }

    /// torch's `weight=`: one weight per class (`[C]`), scaling each row's loss by its
    /// target's.
    pub fn weight(mut self, weight: Tensor) -> Self {
        self.weight = Some(weight);
        self
    }

    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        let w = self.weight.as_ref();
        multi_margin_loss_reduced(input, target, self.p, self.margin, w, self.reduction)
    }
}

/// torch's `nn.MultiLabelSoftMarginLoss` (`F::multilabel_soft_margin_loss`): no class
/// weights unless set.
#[derive(Clone, Debug, Default)]
pub struct MultiLabelSoftMarginLoss {
    reduction: Reduction,
    weight: Option<Tensor>,
}

reduction_builder!(MultiLabelSoftMarginLoss);

impl MultiLabelSoftMarginLoss {
    /// torch's `weight=`: one weight per class, multiplying each class's term.
    pub fn weight(mut self, weight: Tensor) -> Self {
        self.weight = Some(weight);
        self
    }

    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        let w = self.weight.as_ref();
        multilabel_soft_margin_loss_reduced(input, target, w, self.reduction)
    }
}
