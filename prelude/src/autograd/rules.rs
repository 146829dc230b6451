//! The backward rule of every differentiable op. Each function takes the op's (already
//! promoted) inputs and its freshly computed output, and returns the output with a node
//! attached when one is needed (see `record`). The tensor methods call them as their last
//! step, so an op's forward code and its rule stay independent.
//!
//! Rules are written with tensor ops only, so one rule serves every device and dtype. Where
//! torch's rule picks elements (ReLU, abs, max, maximum), the mask is a comparison turned into
//! the gradient's dtype (`mask`), exact on both devices.

use super::{record, Saved};
use crate::error::Result;
use crate::tensor::{DType, Tensor};

pub(crate) use crate::tensor::op::{BinaryOp, ReduceOp, UnaryOp};

/// A bool tensor as 1 / 0 in `dtype`, to multiply a gradient with.
fn mask(b: Tensor, dtype: DType) -> Result<Tensor> {
    b.to_dtype(dtype)
}

/// 1 where `x > 0`, else 0, in `x`'s dtype (abs's gradient).
pub(crate) fn pos_mask(x: &Tensor) -> Result<Tensor> {
    mask(x.gt(0.0)?, x.dtype())
}

/// `t` with zeros where `cond` holds (broadcasting), as torch's `masked_fill(cond, 0)`: unlike
/// multiplying by a 0/1 mask it also clears the NaNs and infinities `t` has there.
fn zero_where(t: Tensor, cond: &Tensor) -> Result<Tensor> {
    Tensor::zeros_dtype((), t.dtype(), t.device())?.where_(cond, &t)
}

/// The gradient of a piecewise-constant function: zeros shaped as `g` (torch's `zeros_like`;
/// `g * 0` would be NaN where `g` is infinite).
fn zeros_like(g: &Tensor) -> Result<Tensor> {
    Tensor::zeros_dtype(g.shape().to_vec(), g.dtype(), g.device())
}

pub(crate) fn reshape(x: &Tensor, out: Tensor) -> Tensor {
    let dims = x.shape().to_vec();
    record(out, "reshape", &[x], move |g| {
        Ok(vec![Some(g.reshape(&dims)?)])
    })
}

/// to_dtype / to_device: the engine converts the gradient back to the input's dtype/device.
pub(crate) fn cast(x: &Tensor, out: Tensor) -> Tensor {
    record(out, "to", &[x], |g| Ok(vec![Some(g.clone())]))
}

pub(crate) fn transpose(x: &Tensor, d0: isize, d1: isize, out: Tensor) -> Tensor {
    record(out, "transpose", &[x], move |g| {
        Ok(vec![Some(g.transpose(d0, d1)?)])
    })
}

pub(crate) fn binary(op: BinaryOp, a: &Tensor, b: &Tensor, out: Tensor) -> Tensor {
    // floor_divide is piecewise constant, and torch gives it no derivative at all.
    if !super::needs_grad(&[a, b]) || op == BinaryOp::FloorDivide {
        return out;
    }
    let (xs, ys, outs) = (Saved::new(a), Saved::new(b), Saved::new(&out));
    let x_needs_grad = a.requires_grad();
    record(out, op.name(), &[a, b], move |g| {
        // Only the arms that need a kept tensor check it, as torch saves only those.
        let (x, y, y_out) = (|| xs.get(), || ys.get(), || outs.get());
        Ok(match op {
            BinaryOp::Add => vec![Some(g.clone()), Some(g.clone())],
            BinaryOp::Sub => vec![Some(g.clone()), Some(g.neg()?)],
            BinaryOp::Mul => vec![Some(g.mul(y()?)?), Some(g.mul(x()?)?)],
            BinaryOp::Div => {
                let gx = g.div(y()?)?;
                let gy = gx.mul(y_out()?)?.neg()?;
                vec![Some(gx), Some(gy)]
            }
            BinaryOp::Maximum | BinaryOp::Minimum => {
                // torch's rule: the larger (smaller) operand takes the gradient, a tie splits
                // it in half, and a NaN on either side gives both operands all of it.
                let (x, y) = (x()?, y()?);
                let dt = g.dtype();
                let tie = mask(x.eq(y)?, dt)?.mul(0.5)?;
                let (x_loses, y_loses) = if op == BinaryOp::Maximum {
                    (x.lt(y)?, x.gt(y)?)
                } else {
                    (x.gt(y)?, x.lt(y)?)
                };
                let share = |loses: Tensor| mask(loses, dt)?.add(&tie)?.neg()?.add(1.0);
                vec![
                    Some(g.mul(&share(x_loses)?)?),
                    Some(g.mul(&share(y_loses)?)?),
                ]
            }
            BinaryOp::Pow => {
                // d/dx x^y = y x^(y-1), 0 where y = 0 (also at x = 0, where the formula
                // gives 0 * inf); d/dy x^y = x^y ln x, 0 where x = 0 and y >= 0 (torch's).
                let (x, y) = (x()?, y()?);
                let gx = zero_where(g.mul(y)?.mul(&x.pow(&y.sub(1.0)?)?)?, &y.eq(0)?)?;
                let gy = g.mul(y_out()?)?.mul(&x.log()?)?;
                let gy = zero_where(gy, &x.eq(0)?.logical_and(&y.ge(0)?)?)?;
                vec![Some(gx), Some(gy)]
            }
            // d/dx atan2(x, y) = y / (x^2 + y^2), d/dy = -x / (x^2 + y^2), in torch's order.
            BinaryOp::Atan2 => {
                let (x, y) = (x()?, y()?);
                let recip = x.mul(x)?.add(&y.mul(y)?)?.reciprocal()?;
                vec![
                    Some(g.mul(y)?.mul(&recip)?),
                    Some(g.mul(&x.neg()?)?.mul(&recip)?),
                ]
            }
            // x - q y with q piecewise constant: the truncated quotient for fmod, the floored
            // one for remainder (torch's `div(rounding_mode=..)`; its floored division is
            // NaN for an infinite x, and so is this gradient).
            BinaryOp::Fmod | BinaryOp::Remainder => {
                let (x, y) = (x()?, y()?);
                let q = if op == BinaryOp::Fmod {
                    x.div(y)?.trunc()?
                } else {
                    x.floor_divide(y)?
                };
                vec![Some(g.clone()), Some(g.mul(&q)?.neg()?)]
            }
            // torch's: d/dq zeta(x, q) = -x zeta(x + 1, q); it has no derivative in x.
            BinaryOp::Zeta => {
                if x_needs_grad {
                    return Err(zeta_x_grad());
                }
                let (x, q) = (x()?, y()?);
                vec![None, Some(g.mul(&x.neg()?)?.mul(&x.add(1.0)?.zeta(q)?)?)]
            }
            BinaryOp::FloorDivide => unreachable!("floor_divide records no node"),
        })
    })
}

/// torch's refusal of zeta's derivative in its first argument.
fn zeta_x_grad() -> crate::error::Error {
    crate::error::Error::Invalid(
        "zeta: the derivative with respect to x (the first argument) is not implemented, as in \
         torch; only q (the second) has a gradient"
            .into(),
    )
}

/// `x op s` (or `s op x` when `scalar_first`).
pub(crate) fn scalar(op: BinaryOp, s: f64, scalar_first: bool, x: &Tensor, out: Tensor) -> Tensor {
    if !super::needs_grad(&[x]) || op == BinaryOp::FloorDivide {
        return out;
    }
    let (xs, ys) = (Saved::new(x), Saved::new(&out));
    let name = match (op, scalar_first) {
        (BinaryOp::Fmod, false) => "fmod_scalar",
        (BinaryOp::Remainder, false) => "remainder_scalar",
        (BinaryOp::Pow, false) => "pow_scalar",
        (BinaryOp::Pow, true) => "scalar_pow",
        (BinaryOp::Sub, true) => "rsub",
        (BinaryOp::Div, true) => "rdiv",
        (BinaryOp::Zeta, true) => "zeta_self_scalar",
        (BinaryOp::Zeta, false) => "zeta_other_scalar",
        _ => op.name(),
    };
    record(out, name, &[x], move |g| {
        let (xd, y) = (|| xs.get(), || ys.get());
        let gx = match (op, scalar_first) {
            (BinaryOp::Add, _) | (BinaryOp::Sub, false) => g.clone(),
            (BinaryOp::Sub, true) => g.neg()?,
            (BinaryOp::Mul, _) => g.mul(s)?,
            (BinaryOp::Div, false) => g.mul(1.0 / s)?,
            // d/dx s/x = -s/x^2 = -y/x
            (BinaryOp::Div, true) => g.mul(y()?)?.div(xd()?)?.neg()?,
            // torch's clamp_min / clamp_max: the gradient passes where x reaches the bound.
            (BinaryOp::Maximum, _) => g.mul(&mask(xd()?.ge(s)?, g.dtype())?)?,
            (BinaryOp::Minimum, _) => g.mul(&mask(xd()?.le(s)?, g.dtype())?)?,
            // torch's: a zero exponent gives a zero gradient (not 0 * x^-1, NaN at x = 0), and
            // 0^x's gradient is 0 where x >= 0 (not 0 * ln 0).
            (BinaryOp::Pow, false) if s == 0.0 => zeros_like(g)?,
            (BinaryOp::Pow, false) => g.mul(&xd()?.pow(s - 1.0)?)?.mul(s)?,
            (BinaryOp::Pow, true) if s == 0.0 => {
                zero_where(g.mul(y()?)?.mul(s.ln())?, &xd()?.ge(0)?)?
            }
            (BinaryOp::Pow, true) => g.mul(y()?)?.mul(s.ln())?,
            (BinaryOp::Fmod | BinaryOp::Remainder, false) => g.clone(),
            (BinaryOp::Atan2, false) => {
                let xd = xd()?;
                g.mul(s)?.mul(&xd.mul(xd)?.add(s * s)?.reciprocal()?)?
            }
            // Not offered by the tensor API (torch has no scalar-first form of these).
            (BinaryOp::Atan2 | BinaryOp::Fmod | BinaryOp::Remainder, true) => {
                return Err(crate::error::Error::Invalid(format!(
                    "{}: no gradient with the scalar first",
                    op.name()
                )))
            }
            (BinaryOp::Zeta, true) => g.mul(-s)?.mul(&xd()?.zeta_scalar_first(s + 1.0)?)?,
            (BinaryOp::Zeta, false) => return Err(zeta_x_grad()),
            (BinaryOp::FloorDivide, _) => unreachable!("floor_divide records no node"),
        };
        Ok(vec![Some(gx)])
    })
}

pub(crate) fn unary(op: UnaryOp, x: &Tensor, out: Tensor) -> Tensor {
    if !super::needs_grad(&[x]) {
        return out;
    }
    let (xs, ys) = (Saved::new(x), Saved::new(&out));
    record(out, op.name(), &[x], move |g| {
        let (xd, y) = (|| xs.get(), || ys.get());
        let gx = match op {
            UnaryOp::Neg => g.neg()?,
            UnaryOp::Abs => {
                let xd = xd()?;
                g.mul(&pos_mask(xd)?.sub(&pos_mask(&xd.neg()?)?)?)?
            }
            UnaryOp::Exp => g.mul(y()?)?,
            UnaryOp::Sqrt => g.div(&y()?.mul(2.0)?)?,
            // torch's threshold_backward: the gradient is cleared where x <= 0, so a NaN input
            // passes it (`x > 0` would clear it).
            UnaryOp::Relu => match Tensor::relu_backward_cpu(g, xd()?)? {
                Some(gx) => gx,
                None => zero_where(g.clone(), &xd()?.le(0)?)?,
            },
            UnaryOp::Log => g.div(xd()?)?,
            UnaryOp::Tanh => {
                let y = y()?;
                g.mul(&y.mul(y)?.neg()?.add(1.0)?)?
            }
            UnaryOp::Sigmoid => {
                let y = y()?;
                g.mul(&y.mul(&y.neg()?.add(1.0)?)?)?
            }
            UnaryOp::Log1p => g.div(&xd()?.add(1.0)?)?,
            // d/dx (e^x - 1) = e^x = y + 1.
            UnaryOp::Expm1 => g.mul(&y()?.add(1.0)?)?,
            // d/dx erf(x) = 2/sqrt(pi) * exp(-x^2).
            UnaryOp::Erf => {
                let xd = xd()?;
                g.mul(
                    &xd.mul(xd)?
                        .neg()?
                        .exp()?
                        .mul(std::f64::consts::FRAC_2_SQRT_PI)?,
                )?
            }
            // torch's formulas, term for term, so results round alike.
            UnaryOp::Tan => {
                let y = y()?;
                g.mul(&y.mul(y)?.add(1.0)?)?
            }
            UnaryOp::Asin | UnaryOp::Acos => {
                let xd = xd()?;
                let r = g.mul(&xd.mul(xd)?.neg()?.add(1.0)?.rsqrt()?)?;
                if op == UnaryOp::Acos {
                    r.neg()?
                } else {
                    r
                }
            }
            UnaryOp::Atan => {
                let xd = xd()?;
                g.div(&xd.mul(xd)?.add(1.0)?)?
            }
            UnaryOp::Sinh => g.mul(&xd()?.cosh()?)?,
            UnaryOp::Cosh => g.mul(&xd()?.sinh()?)?,
            UnaryOp::Asinh => g.mul(&xd()?.pow(2)?.add(1.0)?.rsqrt()?)?,
            UnaryOp::Acosh => g.mul(&xd()?.pow(2)?.sub(1.0)?.rsqrt()?)?,
            UnaryOp::Atanh => g.div(&xd()?.pow(2)?.neg()?.add(1.0)?)?,
            UnaryOp::Sin => g.mul(&xd()?.cos()?)?,
            UnaryOp::Cos => g.mul(&xd()?.sin()?.neg()?)?,
            UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round | UnaryOp::Sign => zeros_like(g)?,
            // The gamma family: each derivative is the next function along (torch's rules).
            UnaryOp::Lgamma => g.mul(&xd()?.digamma()?)?,
            UnaryOp::Digamma => g.mul(&xd()?.polygamma(1)?)?,
            UnaryOp::Trigamma => g.mul(&xd()?.polygamma(2)?)?,
            // -2/sqrt(pi) exp(-x^2), and erfinv's (sqrt(pi)/2) exp(y^2), in torch's order.
            UnaryOp::Erfc => {
                let xd = xd()?;
                let c = -std::f64::consts::FRAC_2_SQRT_PI;
                xd.mul(xd)?.neg()?.exp()?.mul(c)?.mul(g)?
            }
            UnaryOp::Erfinv => {
                let y = y()?;
                let c = 0.5 * std::f64::consts::PI.sqrt();
                y.mul(y)?.exp()?.mul(c)?.mul(g)?
            }
        };
        Ok(vec![Some(gx)])
    })
}

/// `var` over everything (`dim` None) or along `dim`: the gradient is `2 (x - mean) / (n - c)`
/// times the output's, as torch's `var_backward` (it does not pass through the mean, whose
/// share sums to zero, and stays finite where the mean is infinite).
pub(crate) fn variance(
    x: &Tensor,
    centred: Tensor,
    dim: Option<usize>,
    correction: f64,
    out: Tensor,
) -> Tensor {
    let n = dim.map_or(x.numel(), |d| x.shape()[d]);
    record(out, "var", &[x], move |g| {
        let g = match dim {
            None => g.clone(),
            Some(d) => g.unsqueeze(d as isize)?,
        };
        Ok(vec![Some(
            centred.mul(&g)?.mul(2.0 / (n as f64 - correction))?,
        )])
    })
}

/// A reduction over all elements (`dim` None) or over one dimension.
pub(crate) fn reduce(op: ReduceOp, x: &Tensor, dim: Option<usize>, out: Tensor) -> Tensor {
    if !super::needs_grad(&[x]) {
        return out;
    }
    let dims = x.shape().to_vec();
    // The output's shape with the reduced dimension kept as 1, so it broadcasts over x.
    let kept: Vec<usize> = match dim {
        None => vec![1; dims.len()],
        Some(d) => {
            let mut k = dims.clone();
            k[d] = 1;
            k
        }
    };
    let (xs, ys) = (Saved::new(x), Saved::new(&out));
    let name = match (op, dim) {
        (_, None) => op.name(),
        (ReduceOp::Sum, Some(_)) => "sum_dim",
        (ReduceOp::Max, Some(_)) => "max_dim",
        (ReduceOp::Min, Some(_)) => "min_dim",
        (ReduceOp::Prod, Some(_)) => "prod_dim",
    };
    record(out, name, &[x], move |g| {
        let g = g.reshape(&kept)?;
        let gx = match op {
            ReduceOp::Sum => g.expand_to(&dims)?,
            ReduceOp::Prod => prod_grad(xs.get()?, &ys.get()?.reshape(&kept)?, &g, dim)?,
            ReduceOp::Max | ReduceOp::Min => {
                let (xd, dt) = (xs.get()?, g.dtype());
                match dim {
                    // torch's max(): shared evenly between the elements equal to the result
                    // (all the NaNs when the result is NaN).
                    None => {
                        let y = ys.get()?.reshape(&kept)?;
                        let both_nan = mask(xd.ne(xd)?, dt)?.mul(&mask(y.ne(&y)?, dt)?)?;
                        let m = mask(xd.eq(&y)?, dt)?.add(&both_nan)?;
                        m.mul(&g.div(&m.sum()?)?)?
                    }
                    // torch's max(dim): all of it to the index max(dim) returns, the first
                    // extreme along `d` (or the first NaN), as argmax finds it.
                    Some(d) => {
                        let at = if op == ReduceOp::Max {
                            xd.argmax_dim(d as isize)?
                        } else {
                            xd.argmin_dim(d as isize)?
                        };
                        let mut along = vec![1; dims.len()];
                        along[d] = dims[d];
                        let pos =
                            Tensor::from_vec((0..dims[d] as i64).collect(), along, xd.device())?;
                        mask(pos.eq(&at.reshape(&kept)?)?, dt)?.mul(&g)?
                    }
                }
            }
        };
        Ok(vec![Some(gx)])
    })
}

/// For each element along `d`, the product of the other elements of its line, with no
/// division (exact where the line has zeros): the running product from the left that stops
/// before it, times the one from the right (torch's `prod_safe_zeros_backward`).
fn product_of_others(x: &Tensor, d: isize) -> Result<Tensor> {
    let n = x.shape()[d as usize];
    if n == 0 {
        return x.zeros_like();
    }
    let right = x.narrow(d, 1, n - 1)?.flip(&[d])?.cumprod(d)?.flip(&[d])?;
    shift_in_one(&x.cumprod(d)?, d)?.mul(&Tensor::cat(&[right, ones_at_edge(x, d)?], d)?)
}

/// Ones shaped as `x` with dimension `d` of size 1.
fn ones_at_edge(x: &Tensor, d: isize) -> Result<Tensor> {
    let mut edge = x.shape().to_vec();
    edge[d as usize] = 1;
    Tensor::ones_dtype(edge, x.dtype(), x.device())
}

/// `t` moved one place on along `d`, a one coming in first: applied to a cumprod, the running
/// product that stops before each element.
fn shift_in_one(t: &Tensor, d: isize) -> Result<Tensor> {
    let n = t.shape()[d as usize];
    Tensor::cat(&[ones_at_edge(t, d)?, t.narrow(d, 0, n - 1)?], d)
}

/// prod's gradient with torch's three cases, chosen on the device (no host round trip):
/// where the input has no zero, `g * out / x`; otherwise the product of the other elements
/// (exact with zeros), except that a whole-tensor product with two zeros or more has a zero
/// gradient (torch's short cut, which also holds where infinities would make it NaN).
fn prod_grad(x: &Tensor, out: &Tensor, g: &Tensor, dim: Option<usize>) -> Result<Tensor> {
    // A 0-d input is its own product: torch passes the gradient through.
    if x.rank() == 0 {
        return Ok(g.clone());
    }
    let zeros = x.eq(0.0)?.sum()?;
    let divided = g.mul(out)?.div(x)?;
    let safe = match dim {
        Some(d) => product_of_others(x, d as isize)?.mul(g)?,
        None => {
            let flat = product_of_others(&x.reshape(vec![x.numel()])?, 0)?;
            let safe = flat.reshape(x.shape().to_vec())?.mul(g)?;
            safe.where_(&zeros.le(1i64)?, &zeros_like(&safe)?)?
        }
    };
    divided.where_(&zeros.eq(0i64)?, &safe)
}

/// The sums over `k >= i` along `d` (a cumsum from the far end): cumsum's gradient.
fn reverse_cumsum(t: &Tensor, d: isize) -> Result<Tensor> {
    t.flip(&[d])?.cumsum(d)?.flip(&[d])
}

/// `cumsum` and `cumprod` along `d`.
pub(crate) fn scan(op: ReduceOp, x: &Tensor, d: usize, out: Tensor) -> Tensor {
    if !super::needs_grad(&[x]) {
        return out;
    }
    let scalar = x.rank() == 0;
    let name = if op == ReduceOp::Prod {
        "cumprod"
    } else {
        "cumsum"
    };
    let (xs, ys) = (Saved::new(x), Saved::new(&out));
    record(out, name, &[x], move |g| {
        // A 0-d tensor scans as its one element, which passes its gradient through.
        if scalar {
            return Ok(vec![Some(g.clone())]);
        }
        let d = d as isize;
        let gx = match op {
            ReduceOp::Prod => cumprod_grad(xs.get()?, ys.get()?, g, d)?,
            _ => reverse_cumsum(g, d)?,
        };
        Ok(vec![Some(gx)])
    })
}

/// torch's cumprod gradient, `dL/dx_i = sum over k >= i of g_k * prod(x_0..=x_k without
/// x_i)`, exact where a line has zeros. Before a line's first zero z1 that is the usual
/// `sum over i <= k < z1 of g_k out_k / x_i` (later terms hold x_z1 = 0). At z1 it is the
/// product of the elements before z1 times the sum over z1 <= k < z2 (the next zero, or the
/// line's end) of g_k times the product of the elements after z1 up to k; the terms past z2
/// hold x_z2 = 0, and torch leaves them out even where an infinity would make them NaN. After
/// z1 it is 0 (each product there holds x_z1 and is not x_z1's own).
fn cumprod_grad(x: &Tensor, out: &Tensor, g: &Tensor, d: isize) -> Result<Tensor> {
    // Lines of one element (out = x) or none: the gradient is g, as torch returns it.
    if x.shape()[d as usize] <= 1 {
        return Ok(g.clone());
    }
    let zero = x.eq(0.0)?;
    let zeros_so_far = zero.cumsum(d)?;
    let before = zeros_so_far.eq(0i64)?;
    let from_first = zeros_so_far.eq(1i64)?;
    let first = zero.logical_and(&from_first)?;
    let nothing = zeros_like(g)?;
    let head = reverse_cumsum(&g.mul(out)?.where_(&before, &nothing)?, d)?.div(x)?;
    let one = Tensor::ones_dtype((), x.dtype(), x.device())?;
    let inside = from_first.logical_and(&first.logical_not()?)?;
    let after_first = x.where_(&inside, &one)?.cumprod(d)?;
    let tail = g.mul(&after_first)?.where_(&from_first, &nothing)?;
    let at_first = shift_in_one(out, d)?.mul(&tail.sum_keepdim(d)?)?;
    head.where_(&before, &at_first.where_(&first, &nothing)?)
}

/// Matrix product with torch's 1-D rules: the gradients are computed on the 2-D forms.
pub(crate) fn matmul(a: &Tensor, b: &Tensor, out: Tensor) -> Tensor {
    if !super::needs_grad(&[a, b]) {
        return out;
    }
    let (ad, bd) = (a.shape().to_vec(), b.shape().to_vec());
    let a2 = if ad.len() == 1 {
        a.detach().reshape((1, ad[0]))
    } else {
        Ok(a.detach())
    };
    let b2 = if bd.len() == 1 {
        b.detach().reshape((bd[0], 1))
    } else {
        Ok(b.detach())
    };
    let (Ok(a2), Ok(b2)) = (a2, b2) else {
        return out;
    };
    // Kept with the versions of `a` and `b` (a reshape of a 1-D operand shares its storage).
    let (a2s, b2s) = (Saved::new(&a2), Saved::new(&b2));
    let (m, n) = (a2.shape()[0], b2.shape()[1]);
    let (need_a, need_b) = (a.requires_grad(), b.requires_grad());
    // An operand that is a transposed view (`w.t()` in a Linear layer) gets its gradient
    // as the transpose of a dense product, so that after the transpose rule the leaf's
    // gradient is dense again: the optimiser then reads it as is instead of copying it.
    let a_t = a2.rank() == 2 && !a2.is_contiguous() && a2.t().is_ok_and(|t| t.is_contiguous());
    let b_t = b2.rank() == 2 && !b2.is_contiguous() && b2.t().is_ok_and(|t| t.is_contiguous());
    let name = match (ad.len(), bd.len()) {
        (1, 1) => "dot",
        (2, 1) => "mv",
        (2, 2) => "mm",
        (1, 2) => "vm",
        _ => "matmul",
    };
    record(out, name, &[a, b], move |g| {
        let g2 = g.reshape((m, n))?;
        let (a2, b2) = (|| a2s.get(), || b2s.get());
        let ga = match (need_a, a_t) {
            (false, _) => None,
            (true, false) => Some(g2.matmul(&b2()?.t()?)?.reshape(&ad)?),
            (true, true) => Some(b2()?.matmul(&g2.t()?)?.t()?),
        };
        let gb = match (need_b, b_t) {
            (false, _) => None,
            (true, false) => Some(a2()?.t()?.matmul(&g2)?.reshape(&bd)?),
            (true, true) => Some(g2.t()?.matmul(a2()?)?.t()?),
        };
        Ok(vec![ga, gb])
    })
}

/// `x.where_(cond, other)`: the gradient goes to `x` where `cond` holds, to `other` elsewhere.
pub(crate) fn where_(x: &Tensor, cond: &Tensor, other: &Tensor, out: Tensor) -> Tensor {
    if !super::needs_grad(&[x, other]) {
        return out;
    }
    let cs = Saved::new(cond);
    record(out, "where", &[x, other], move |g| {
        let c = cs.get()?;
        let zero = g.mul(0.0)?;
        Ok(vec![Some(g.where_(c, &zero)?), Some(zero.where_(c, g)?)])
    })
}

/// A view that picks elements without repeating any (narrow, select, permute): the input's
/// gradient is zeros with `g` written through the same view (`apply` makes it from a tensor
/// of the input's shape).
pub(crate) fn view(
    name: &'static str,
    x: &Tensor,
    out: Tensor,
    apply: impl Fn(&Tensor) -> Result<Tensor> + Send + Sync + 'static,
) -> Tensor {
    let dims = x.shape().to_vec();
    record(out, name, &[x], move |g| {
        let z = Tensor::zeros_dtype(dims.clone(), g.dtype(), g.device())?;
        apply(&z)?.copy_(g)?;
        Ok(vec![Some(z)])
    })
}

/// An op whose gradient passes through unchanged: `expand` (the engine sums the gradient
/// back over the repeated dimensions), `contiguous`, `clone`.
pub(crate) fn identity(name: &'static str, x: &Tensor, out: Tensor) -> Tensor {
    record(out, name, &[x], |g| Ok(vec![Some(g.clone())]))
}

/// `cat` along `dim` of inputs whose sizes there are `lens`: each gets its slice of `g`.
pub(crate) fn cat(xs: &[&Tensor], dim: usize, lens: Vec<usize>, out: Tensor) -> Tensor {
    record(out, "cat", xs, move |g| {
        let mut at = 0;
        let mut gs = Vec::with_capacity(lens.len());
        for &len in &lens {
            gs.push(Some(g.narrow(dim as isize, at, len)?));
            at += len;
        }
        Ok(gs)
    })
}

/// `flip` along `dims`: the gradient is flipped back along the same dimensions.
pub(crate) fn flip(x: &Tensor, dims: Vec<isize>, out: Tensor) -> Tensor {
    record(out, "flip", &[x], move |g| Ok(vec![Some(g.flip(&dims)?)]))
}

/// `index_select` along `dim` with indices `idx`: rows of `g` added back where they came
/// from, repeated indices accumulating. One `scatter_add_flat` (a kernel on either device,
/// every float dtype); past the 32-bit index range one in-place add per index.
pub(crate) fn index_select(x: &Tensor, dim: usize, idx: Vec<i64>, out: Tensor) -> Tensor {
    let dims = x.shape().to_vec();
    record(out, "index_select", &[x], move |g| {
        let total: usize = dims.iter().product();
        if total <= i32::MAX as usize {
            let outer: usize = dims[..dim].iter().product();
            let inner: usize = dims[dim + 1..].iter().product();
            let len = dims[dim];
            let mut flat = Vec::with_capacity(outer * idx.len() * inner);
            for o in 0..outer {
                for &j in &idx {
                    let base = (o * len + j as usize) * inner;
                    flat.extend(base as i32..(base + inner) as i32);
                }
            }
            return Ok(vec![Some(
                g.scatter_add_flat(std::sync::Arc::new(flat), dims.clone())?,
            )]);
        }
        let z = Tensor::zeros_dtype(dims.clone(), g.dtype(), g.device())?;
        for (i, &j) in idx.iter().enumerate() {
            z.select(dim as isize, j as isize)?
                .add_(&g.select(dim as isize, i as isize)?)?;
        }
        Ok(vec![Some(z)])
    })
}

/// torch's `gather` along `dim` (`idx` holds the index tensor's values, row-major over
/// `index_dims`): each gradient element is added back at the source element it was read
/// from, repeated indices accumulating (one `scatter_add_flat`).
pub(crate) fn gather(
    x: &Tensor,
    dim: usize,
    idx: &[i64],
    index_dims: &[usize],
    out: Tensor,
) -> Tensor {
    if !super::needs_grad(&[x]) {
        return out;
    }
    let src = x.shape().to_vec();
    let total: usize = src.iter().product();
    // The source's flat offset of each output element: its own coordinates, with the
    // index's value in place of the coordinate along `dim`.
    let flat = (total <= i32::MAX as usize).then(|| {
        let mut stride = vec![1usize; src.len()];
        for k in (0..src.len().saturating_sub(1)).rev() {
            stride[k] = stride[k + 1] * src[k + 1];
        }
        let mut coord = vec![0usize; index_dims.len()];
        let mut flat = Vec::with_capacity(idx.len());
        for &i in idx {
            let off: usize = (0..coord.len())
                .map(|k| if k == dim { i as usize } else { coord[k] } * stride[k])
                .sum();
            flat.push(off as i32);
            for k in (0..coord.len()).rev() {
                coord[k] += 1;
                if coord[k] < index_dims[k] {
                    break;
                }
                coord[k] = 0;
            }
        }
        std::sync::Arc::new(flat)
    });
    record(out, "gather", &[x], move |g| match &flat {
        Some(flat) => Ok(vec![Some(g.scatter_add_flat(flat.clone(), src.clone())?)]),
        None => Err(crate::error::Error::BadShape(format!(
            "gather: the backward of a source of {total} elements (shape {src:?}) is past \
             the 32-bit index range"
        ))),
    })
}
