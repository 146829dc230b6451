//! torch's in-place activations, `F.relu_`, `F.elu_`, `F.leaky_relu_`, `F.hardtanh_`,
//! `F.threshold_`, `F.selu_`, `F.celu_`, `F.rrelu_`: the activation written back into the
//! tensor under the tensor's in-place rules (its dtype kept; refused on a tensor autograd
//! tracks, whose backward would need the old values: gpulab records no in-place write, so use
//! the out-of-place form in a model), and the tensor returned, as torch returns it.

use super::activation::{elu, hardtanh};
use super::functional::leaky_relu;
use super::pointwise::{celu, selu, threshold};
use super::stochastic::rrelu;
use crate::error::Result;
use crate::tensor::Tensor;

/// One in-place form: `$name(x, args..)` writes `$f(x, args..)` into `x`.
macro_rules! inplace_activation {
    ($($(#[$doc:meta])* $name:ident => $f:expr, ($($arg:ident: $ty:ty),*);)*) => {$(
        $(#[$doc])*
        pub fn $name(x: &Tensor $(, $arg: $ty)*) -> Result<Tensor> {
            x.inplace(stringify!($name), $f(x $(, $arg)*))?;
            Ok(x.clone())
        }
    )*};
}

inplace_activation! {
    /// `relu` in place (torch's `F.relu_`).
    relu_ => |x: &Tensor| x.relu(), ();
    /// `elu` in place (torch's `F.elu_`).
    elu_ => elu, (alpha: f64);
    /// `leaky_relu` in place (torch's `F.leaky_relu_`).
    leaky_relu_ => leaky_relu, (negative_slope: f64);
    /// `hardtanh` in place (torch's `F.hardtanh_`).
    hardtanh_ => hardtanh, (min_val: f64, max_val: f64);
    /// `threshold` in place (torch's `F.threshold_`; `threshold_value` is its `threshold`).
    threshold_ => threshold, (threshold_value: f64, value: f64);
    /// `selu` in place (torch's `F.selu_`).
    selu_ => selu, ();
    /// `celu` in place (torch's `F.celu_`).
    celu_ => celu, (alpha: f64);
    /// `rrelu` in place (torch's `F.rrelu_`): random slopes in training, their mean in eval.
    rrelu_ => rrelu, (lower: f64, upper: f64, training: bool);
}
