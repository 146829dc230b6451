//! The rest of torch's element-wise activations: `hardsigmoid`/`hardswish` (MobileNet's),
//! `logsigmoid`, `softsign`, `tanhshrink`, `softshrink`/`hardshrink`, `glu`, `celu`, `selu`,
//! `softmin`, as `F::` functions and layers with torch's reprs. Composed from tensor ops (so
//! every device); `hardswish` and `logsigmoid` carry torch's own backward formulas, which
//! differ from their compositions at the kinks.

use super::activation::{elu, hardtanh};
use super::functional::float_input;
use super::{py_float, Module};
use crate::autograd::{no_grad, record, relabel, Saved};
use crate::error::Result;
use crate::tensor::Tensor;

/// SELU's constants (torch's, from Klambauer et al.).
const SELU_ALPHA: f64 = 1.673_263_242_354_377_3;
const SELU_SCALE: f64 = 1.050_700_987_355_480_5;

/// `relu6(x + 3) / 6` (torch's `F.hardsigmoid`): 0 below -3, 1 above 3, gradient 1/6
/// strictly between.
pub fn hardsigmoid(x: &Tensor) -> Result<Tensor> {
    float_input(x, "hardsigmoid")?;
    let y = hardtanh(&x.add(3.0)?, 0.0, 6.0)?.div(6.0)?;
    Ok(relabel("hardsigmoid", y))
}

/// `x * relu6(x + 3) / 6` (torch's `F.hardswish`), with torch's gradient: 0 up to -3,
/// `x / 3 + 0.5` below 3, 1 from 3 on.
pub fn hardswish(x: &Tensor) -> Result<Tensor> {
    float_input(x, "hardswish")?;
    let out = no_grad(|| x.mul(&hardtanh(&x.add(3.0)?, 0.0, 6.0)?)?.div(6.0))?;
    let xs = Saved::new(x);
    Ok(record(out, "hardswish", &[x], move |g| {
        let x = xs.get()?;
        let zero = x.zeros_like()?;
        let middle = g.mul(&x.div(3.0)?.add(0.5)?)?;
        let d = g.where_(&x.ge(3.0)?, &middle)?;
        Ok(vec![Some(zero.where_(&x.le(-3.0)?, &d)?)])
    }))
}

/// `log(sigmoid(x))` without overflow, `min(x, 0) - log1p(exp(-|x|))` (torch's
/// `F.logsigmoid`), with torch's gradient `sigmoid(-x)` written as its kernel writes it.
pub fn logsigmoid(x: &Tensor) -> Result<Tensor> {
    float_input(x, "logsigmoid")?;
    let out = no_grad(|| x.clamp_max(0.0)?.sub(&x.abs()?.neg()?.exp()?.log1p()?))?;
    let xs = Saved::new(x);
    Ok(record(out, "log_sigmoid", &[x], move |g| {
        // max_deriv - sign * z / (1 + z) with z = exp(-|x|): 1 - z/(1+z) below 0, z/(1+z)
        // from 0 on.
        let x = xs.get()?;
        let z = x.abs()?.neg()?.exp()?;
        let frac = z.div(&z.add(1.0)?)?;
        let d = frac.neg()?.add(1.0)?.where_(&x.lt(0.0)?, &frac)?;
        Ok(vec![Some(g.mul(&d)?)])
    }))
}

/// `x / (1 + |x|)` (torch's `F.softsign`; integers give float32, as its division).
pub fn softsign(x: &Tensor) -> Result<Tensor> {
    x.div(&x.abs()?.add(1.0)?)
}

/// `x - tanh(x)` (torch's `F.tanhshrink`; integers give float32).
pub fn tanhshrink(x: &Tensor) -> Result<Tensor> {
    x.sub(&x.tanh()?)
}

/// `x - lambd` above `lambd`, `x + lambd` below `-lambd`, 0 between (torch's
/// `F.softshrink`, lambd 0.5 by default).
pub fn softshrink(x: &Tensor, lambd: f64) -> Result<Tensor> {
    float_input(x, "softshrink")?;
    let zero = x.zeros_like()?;
    let low = x.add(lambd)?.where_(&x.lt(-lambd)?, &zero)?;
    let y = x.sub(lambd)?.where_(&x.gt(lambd)?, &low)?;
    Ok(relabel("softshrink", y))
}

/// `x` where `|x| > lambd`, else 0 (torch's `F.hardshrink`, lambd 0.5 by default).
pub fn hardshrink(x: &Tensor, lambd: f64) -> Result<Tensor> {
    float_input(x, "hardshrink")?;
    let keep = x.gt(lambd)?.logical_or(&x.lt(-lambd)?)?;
    let y = x.where_(&keep, &x.zeros_like()?)?;
    Ok(relabel("hardshrink", y))
}

/// The gated linear unit (torch's `F.glu`): `dim` split in halves `a, b`, then
/// `a * sigmoid(b)`.
pub fn glu(x: &Tensor, dim: isize) -> Result<Tensor> {
    float_input(x, "glu")?;
    let d = if dim < 0 {
        dim + x.rank() as isize
    } else {
        dim
    };
    let n = usize::try_from(d)
        .ok()
        .and_then(|d| x.shape().get(d).copied())
        .ok_or_else(|| {
            crate::error::Error::BadShape(format!(
                "glu: dimension {dim} is out of range for shape {:?}",
                x.shape()
            ))
        })?;
    if n % 2 != 0 {
        return Err(crate::error::Error::BadShape(format!(
            "glu: dimension {dim} must have an even size to halve, got {n} (shape {:?})",
            x.shape()
        )));
    }
    let halves = x.chunk(2, dim)?;
    halves[0].mul(&halves[1].sigmoid()?)
}

/// `x` above 0, else `alpha * (exp(x / alpha) - 1)` (torch's `F.celu`, alpha 1.0 by default).
pub fn celu(x: &Tensor, alpha: f64) -> Result<Tensor> {
    float_input(x, "celu")?;
    // elu of x / alpha, times alpha, is alpha (exp(x / alpha) - 1) below 0 and x above.
    let y = elu(&x.div(alpha)?, 1.0)?.mul(alpha)?;
    Ok(relabel("celu", y))
}

/// `scale * elu(x, alpha)` with torch's fixed constants (torch's `F.selu`, self-normalising).
pub fn selu(x: &Tensor) -> Result<Tensor> {
    float_input(x, "selu")?;
    elu(x, SELU_ALPHA)?.mul(SELU_SCALE)
}

/// `softmax(-x)` along `dim` (torch's `F.softmin`).
pub fn softmin(x: &Tensor, dim: isize) -> Result<Tensor> {
    x.neg()?.softmax(dim)
}

/// `x` where it is above `threshold`, `value` elsewhere (torch's `F.threshold`; every dtype
/// but bool, `value` converted to it as torch's fill). The gradient passes where `x` is
/// above the threshold, and is 0 elsewhere.
pub fn threshold(x: &Tensor, threshold: f64, value: f64) -> Result<Tensor> {
    x.refuse_bool("threshold")?;
    let fill = x.full_like(value)?;
    Ok(relabel("threshold", x.where_(&x.gt(threshold)?, &fill)?))
}

/// Softmax over the channels of each position (torch's `F.softmax(x, dim=-3)`, what
/// `nn.Softmax2d` does) of `[N, C, H, W]` or `[C, H, W]`.
pub fn softmax2d(x: &Tensor) -> Result<Tensor> {
    if !(3..=4).contains(&x.rank()) {
        return Err(crate::error::Error::BadShape(format!(
            "Softmax2d: expected input [N, C, H, W] or [C, H, W], got {:?}",
            x.shape()
        )));
    }
    x.softmax(-3)
}

/// A layer with no settings over one of the functions above.
macro_rules! plain_layer {
    ($(#[$doc:meta])* $name:ident, $f:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Default)]
        pub struct $name;
        impl Module for $name {
            fn forward(&self, x: &Tensor) -> Result<Tensor> {
                $f(x)
            }
            fn describe(&self) -> String {
                concat!(stringify!($name), "()").to_string()
            }
        }
    };
}

plain_layer!(
    /// torch's `nn.Hardsigmoid`.
    Hardsigmoid,
    hardsigmoid
);
plain_layer!(
    /// torch's `nn.Hardswish` (MobileNetV3's activation).
    Hardswish,
    hardswish
);
plain_layer!(
    /// torch's `nn.LogSigmoid`.
    LogSigmoid,
    logsigmoid
);
plain_layer!(
    /// torch's `nn.Softsign`.
    Softsign,
    softsign
);
plain_layer!(
    /// torch's `nn.Tanhshrink`.
    Tanhshrink,
    tanhshrink
);
plain_layer!(
    /// torch's `nn.SELU`.
    SELU,
    selu
);

/// torch's `nn.Softshrink(lambd=0.5)`.
#[derive(Clone, Copy)]
pub struct Softshrink(pub f64);

impl Default for Softshrink {
    fn default() -> Softshrink {
        Softshrink(0.5)
    }
}

impl Module for Softshrink {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        softshrink(x, self.0)
    }
    fn describe(&self) -> String {
        format!("Softshrink({})", py_float(self.0))
    }
}

/// torch's `nn.Hardshrink(lambd=0.5)`.
#[derive(Clone, Copy)]
pub struct Hardshrink(pub f64);

impl Default for Hardshrink {
    fn default() -> Hardshrink {
        Hardshrink(0.5)
    }
}

impl Module for Hardshrink {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        hardshrink(x, self.0)
    }
    fn describe(&self) -> String {
        format!("Hardshrink({})", py_float(self.0))
    }
}

/// torch's `nn.GLU(dim=-1)`.
#[derive(Clone, Copy)]
pub struct GLU(pub isize);

impl Default for GLU {
    fn default() -> GLU {
        GLU(-1)
    }
}

impl Module for GLU {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        glu(x, self.0)
    }
    fn describe(&self) -> String {
        format!("GLU(dim={})", self.0)
    }
}

/// torch's `nn.CELU(alpha=1.0)`.
#[derive(Clone, Copy)]
pub struct CELU(pub f64);

impl Default for CELU {
    fn default() -> CELU {
        CELU(1.0)
    }
}

impl Module for CELU {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        celu(x, self.0)
    }
    fn describe(&self) -> String {
        format!("CELU(alpha={})", py_float(self.0))
    }
}

/// torch's `nn.Softmin(dim)`.
#[derive(Clone, Copy)]
pub struct Softmin(pub isize);

impl Module for Softmin {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        softmin(x, self.0)
    }
    fn describe(&self) -> String {
        format!("Softmin(dim={})", self.0)
    }
}

plain_layer!(
    /// torch's `nn.Softmax2d`: softmax over the channels at each position.
    Softmax2d,
    softmax2d
);

/// torch's `nn.Threshold(threshold, value)`: `x` above `threshold`, else `value`.
#[derive(Clone, Copy)]
pub struct Threshold {
    pub threshold: f64,
    pub value: f64,
}

impl Threshold {
    pub fn new(threshold: f64, value: f64) -> Threshold {
        Threshold { threshold, value }
    }
}

impl Module for Threshold {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        threshold(x, self.threshold, self.value)
    }
    fn describe(&self) -> String {
        format!(
            "Threshold(threshold={}, value={})",
            py_float(self.threshold),
            py_float(self.value)
        )
    }
}
