//! The gpulab side of `bench/torch_parity.py`: reads one case per line on stdin, runs it on
//! the device named by `--device` (`cpu` default, `cuda`), and prints `case => result`, where
//! the result is `DTYPE [shape] [values as f64]` or `ERR message`. The Python side runs the
//! same cases in torch and compares; the two must build their inputs the same way (`input`).
//!
//! A case is `kind op dtype [dtype|scalar]`:
//! - `bin`/`sbin`/`tbin` op a b: a binary op or comparison between two tensors (`sbin`: the
//!   left one holds special values, `tbin`: both are transposed views);
//! - `bins` op a s: tensor op Python-style scalar (`2` is an int, `2.5` a float);
//! - `inp`/`inps` op a b|s: the in-place `add_`..`div_`, printing the tensor afterwards;
//! - `un`/`sun` op a: a unary op (`sun`: on the special values); `not` x a: `logical_not`;
//! - `red`/`sred` op a: a reduction (`*_dim` ops along dim 1; `sum_keepdim` keeps it);
//! - `row`/`col` op a b: broadcasting against one row / one column of b;
//! - `cast` x a b, `where` x a b, `cat` x a b, `stack` x a b, `matmul` x a b, `tmatmul` x a b;
//! - `grad`/`sgrad`/`rgrad` op a b x|y: the gradient of `sum(op(a, b) * w)` (w = 1, 2, 3, ..)
//!   for a (`x`) or b (`y`), with b a row of its tensor for `rgrad` and a holding the special
//!   values for `sgrad`; a unary op or a reduction names `-` for b. Both sides say `ERR` when
//!   the tensor gets no gradient (an integer operand);
//! - `nn` op a param out|x|y|w|b: the layers' functions on ramps (`ramp`): `mse`/`bce` (b of
//!   dtype `param`), `ce` (int targets of dtype `param`), `conv` (`s1p0`: stride 1, padding
//!   0; `d2p2` dilation, `g2` groups, `same`, `dw` depthwise), `convT`
//!   (conv_transpose2d: `k2s2`, `s2p1o1`, `g2d2`), `interp` (interpolate: `n2` nearest by 2,
//!   `ne57` nearest-exact to 5x7, `b57a` bilinear with align_corners, ...), `pool` (`k2s2`: kernel 2, stride 2); `out` prints the result, a letter the gradient
//!   of `sum(result * w)` for that input;
//! - `optim` sgd|adam a config [key]: a parameter after three steps whose gradients are ramps
//!   (`plain`, `mom` momentum 0.9, `momwd` and weight decay 0.01; Adam `plain`, `wd`, `betas`),
//!   or with a key that entry of the optimizer's `state_dict` (`exp_avg`, `step`, ...);
//! - `view` op a out|x|y: views and index ops of a ramp (and `where`/`cat` with a second one),
//!   their result or the gradient of `sum(result * w)`;
//! - `arange` case x: `Tensor::arange` / `arange_step` with integer or float arguments;
//! - `empty` op a shape out|x: an op on zeros of a shape with a 0 in it (`3x0`), its result or
//!   its input's gradient; `_d0`/`_dlast` name the dimension. With shape `-`, a layer's
//!   function on an empty batch (`ce`, `mse`, `conv`, `pool`);
//! - `more` op a out|x: torch's conveniences (`isnan`, `sort`, `topk`, `repeat`, ...) on a
//!   ramp (an `s` prefix: on the special values), or a constructor (`linspace`, `eye`); a
//!   list of tensors (`chunk`) prints as its pieces flattened and joined;
//! - `norm` op a out|x|w|b|rm|rv: BatchNorm1d/2d in training (`_train`) or after one training
//!   step in eval (`_eval`), LayerNorm over the last one (`ln`) or two (`ln2`) dimensions:
//!   the output, a gradient, or the running mean / variance afterwards;
//! - `sched` schedule f64 x: the learning rate of an SGD after each of 14 epochs under
//!   `StepLR` (3, 0.5), `ExponentialLR` (0.9) or `CosineAnnealingLR` (5; 4 with eta_min 0.01).

use gpulab::nn::{self, Parameter};
use gpulab::optim::{Adam, AdamW, Optimizer, RMSprop, SGD};
use gpulab::tensor::{DType, Operand};
use gpulab::{linalg, special, Device, Ellipsis, Error, NewAxis, Tensor, F};
use std::io::{BufRead, Write};

fn dtype(s: &str) -> DType {
    match s {
        "f32" => DType::F32,
        "f64" => DType::F64,
        "f16" => DType::F16,
        "bf16" => DType::BF16,
        "i32" => DType::I32,
        "i64" => DType::I64,
        "u8" => DType::U8,
        "bool" => DType::Bool,
        _ => panic!("unknown dtype {s:?}"),
    }
}

/// Six values of dtype `d`, shaped (2, 3): `which` 0 and 1 are ordinary operands, 2 the
/// special values (NaN, infinities, overflow, the integer limits). Mirrored in torch_parity.py.
fn values(d: &str, which: u8) -> Vec<f64> {
    let big = 9007199254740992.0; // 2^53: exact in f64 and in int64
    match (d, which) {
        ("u8", 0) => vec![0., 1., 2., 3., 5., 7.],
        ("u8", 1) => vec![1., 0., 3., 2., 2., 1.],
        ("u8", _) => vec![255., 0., 128., 1., 254., 3.],
        ("bool", 0) => vec![1., 0., 1., 1., 0., 0.],
        ("bool", 1) => vec![1., 1., 0., 1., 0., 1.],
        ("bool", _) => vec![1., 1., 1., 0., 0., 0.],
        ("i32" | "i64", 0) => vec![-3., -1., 0., 1., 2., 7.],
        ("i32" | "i64", 1) => vec![2., -1., 0., 3., 1., -2.],
        ("i32", _) => vec![2147483647., -2147483648., -1., 0., 1., 7.],
        ("i64", _) => vec![big, -big, -1., 0., 1., 7.],
        (_, 0) => vec![-3., -1.5, 0., 0.5, 2., 7.25],
        (_, 1) => vec![2., -1.25, 0.5, 3., 1., -2.],
        (_, _) => vec![
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            131008.0,
            1e-8,
            -0.0,
        ],
    }
}

fn input(d: &str, which: u8, dev: Device) -> Tensor {
    Tensor::from_vec(values(d, which), (2, 3), Device::Cpu)
        .and_then(|t| t.to_dtype(dtype(d)))
        .and_then(|t| t.to(dev))
        .expect("inputs are well-formed")
}

fn show(r: Result<Tensor, Error>) -> String {
    match r.and_then(|t| Ok((t.dtype(), t.shape().to_vec(), t.to_f64_vec()?))) {
        Ok((d, s, v)) => format!("{d:?} {s:?} {v:?}"),
        Err(e) => format!("ERR {}", e.to_string().replace('\n', " ")),
    }
}

fn scalar(s: &str) -> Operand<'static> {
    if s.contains('.') {
        Operand::Scalar(s.parse().expect("a float scalar"))
    } else {
        Operand::Int(s.parse().expect("an int scalar"))
    }
}

fn binary(op: &str, a: &Tensor, rhs: Operand) -> Result<Tensor, Error> {
    match op {
        "add" => a.add(rhs),
        "sub" => a.sub(rhs),
        "mul" => a.mul(rhs),
        "div" => a.div(rhs),
        "pow" => a.pow(rhs),
        "maximum" => a.maximum(rhs),
        "minimum" => a.minimum(rhs),
        "eq" => a.eq(rhs),
        "ne" => a.ne(rhs),
        "lt" => a.lt(rhs),
        "le" => a.le(rhs),
        "gt" => a.gt(rhs),
        "ge" => a.ge(rhs),
        "logical_and" | "logical_or" => match rhs {
            Operand::Tensor(b) if op == "logical_and" => a.logical_and(b),
            Operand::Tensor(b) => a.logical_or(b),
            _ => panic!("{op} takes a tensor"),
        },
        "atan2" => match rhs {
            Operand::Tensor(b) => a.atan2(b),
            _ => panic!("{op} takes a tensor"),
        },
        "fmod" => a.fmod(rhs),
        "remainder" => a.remainder(rhs),
        "floor_divide" => a.floor_divide(rhs),
        "clamp_min" => a.clamp_min(rhs),
        "clamp_max" => a.clamp_max(rhs),
        // Between the operand and 2 (a bound above some elements, below others).
        "clamp" => a.clamp(rhs, 2),
        "add_" => a.add_(rhs).map(|_| a.clone()),
        "sub_" => a.sub_(rhs).map(|_| a.clone()),
        "mul_" => a.mul_(rhs).map(|_| a.clone()),
        "div_" => a.div_(rhs).map(|_| a.clone()),
        _ => panic!("unknown binary op {op:?}"),
    }
}

fn unary(op: &str, a: &Tensor) -> Result<Tensor, Error> {
    match op {
        "neg" => a.neg(),
        "abs" => a.abs(),
        "exp" => a.exp(),
        "log" => a.log(),
        "sqrt" => a.sqrt(),
        "relu" => a.relu(),
        "sigmoid" => a.sigmoid(),
        "tanh" => a.tanh(),
        "sin" => a.sin(),
        "cos" => a.cos(),
        "floor" => a.floor(),
        "ceil" => a.ceil(),
        "round" => a.round(),
        "sign" => a.sign(),
        "log1p" => a.log1p(),
        "expm1" => a.expm1(),
        "erf" => a.erf(),
        "tan" => a.tan(),
        "asin" => a.asin(),
        "acos" => a.acos(),
        "atan" => a.atan(),
        "sinh" => a.sinh(),
        "cosh" => a.cosh(),
        "asinh" => a.asinh(),
        "acosh" => a.acosh(),
        "atanh" => a.atanh(),
        "softmax" => F::softmax(a, 1),
        "log_softmax" => F::log_softmax(a, 1),
        _ => panic!("unknown unary op {op:?}"),
    }
}

fn reduction(op: &str, a: &Tensor) -> Result<Tensor, Error> {
    match op {
        "sum" => a.sum(),
        "mean" => a.mean(),
        "max" => a.max(),
        "min" => a.min(),
        "argmax" => a.argmax(),
        "argmin" => a.argmin(),
        "sum_dim" => a.sum_dim(1),
        "sum_keepdim" => a.sum_keepdim(1),
        "var" => a.var(),
        "std" => a.std(),
        "var_dim" => a.var_dim(1),
        "std_dim" => a.std_dim(0),
        "mean_dim" => a.mean_dim(1),
        "max_dim" => a.max_dim(1),
        "min_dim" => a.min_dim(1),
        "argmax_dim" => a.argmax_dim(1),
        "argmin_dim" => a.argmin_dim(1),
        _ => panic!("unknown reduction {op:?}"),
    }
}

/// The gradient a `grad` case asks for (see the module's doc).
fn gradient(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    let (kind, op) = (w[0], w[1]);
    let x = input(w[2], if kind == "sgrad" { 2 } else { 0 }, dev).requires_grad_(true)?;
    let y = match w[3] {
        "-" => None,
        s if s.parse::<f64>().is_ok() => None,
        d => {
            let t = input(d, 1, dev);
            Some(if t.dtype().is_float() {
                t.requires_grad_(true)?
            } else {
                t
            })
        }
    };
    let out = match &y {
        None if w[3] != "-" => binary(op, &x, scalar(w[3]))?,
        None if op.starts_with("red_") => reduction(&op[4..], &x)?,
        None => unary(op, &x)?,
        Some(y) if op == "matmul" => x.matmul(&y.t()?)?,
        Some(y) if kind == "rgrad" => binary(op, &x, (&y.select(0, 1)?).into())?,
        Some(y) => binary(op, &x, y.into())?,
    };
    weighted_backward(&out)?;
    let of = if w[4] == "y" { y.as_ref() } else { Some(&x) };
    of.and_then(Tensor::grad)
        .ok_or_else(|| Error::Invalid("no gradient".into()))
}

/// `((i % m) - off) * scale` for i = 0, 1, .. in `shape`: inputs with repeats (ties for the
/// pools) and both signs (magnitudes for uint8). Mirrored in torch_parity.py.
fn ramp(
    shape: &[usize],
    m: usize,
    off: f64,
    scale: f64,
    d: &str,
    dev: Device,
) -> Result<Tensor, Error> {
    let n: usize = shape.iter().product();
    // uint8 takes the magnitudes: a negative float cast to it is undefined in torch.
    let v: Vec<f64> = (0..n)
        .map(|i| ((i % m) as f64 - off) * scale)
        .map(|v| if d == "u8" { v.abs() } else { v })
        .collect();
    Tensor::from_vec(v, shape.to_vec(), Device::Cpu)?
        .to_dtype(dtype(d))?
        .to(dev)?
        .requires_grad_(dtype(d).is_float())
}

/// `out` itself (`want` "out"), or the gradient of `sum(out * (1, 2, 3, ..))` for the input
/// named `want`.
fn result_or_grad(out: &Tensor, want: &str, inputs: &[(&str, Tensor)]) -> Result<Tensor, Error> {
    if want == "out" {
        return Ok(out.detach());
    }
    weighted_backward(out)?;
    inputs
        .iter()
        .find(|(name, _)| *name == want)
        .and_then(|(_, t)| t.grad())
        .ok_or_else(|| Error::Invalid("no gradient".into()))
}

/// `sum(out * (1, 2, 3, ..))`'s backward, so every element's gradient differs.
fn weighted_backward(out: &Tensor) -> Result<(), Error> {
    let weights = Tensor::arange(1.0, out.numel() as f32 + 1.0, Device::Cpu)?
        .reshape(out.shape().to_vec())?
        .to_dtype(out.dtype())?
        .to(out.device())?;
    out.mul(&weights)?.sum()?.backward()
}

fn nn_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    let (op, d, param, want) = (w[1], w[2], w[3], w[4]);
    let x = ramp(&[2, 3], 5, 2.0, 0.75, d, dev)?;
    let (out, inputs): (Tensor, Vec<(&str, Tensor)>) = match op {
        "mse" | "bce" => {
            let y = ramp(&[2, 3], 4, 1.0, 0.5, param, dev)?;
            let out = if op == "mse" {
                F::mse_loss(&x, &y)?
            } else {
                F::binary_cross_entropy_with_logits(&x, &y)?
            };
            (out, vec![("x", x), ("y", y)])
        }
        "ce" => {
            let t = Tensor::from_vec(vec![2i64, 0], 2, Device::Cpu)?
                .to_dtype(dtype(param))?
                .to(dev)?;
            (F::cross_entropy(&x, &t)?, vec![("x", x)])
        }
        "conv" => {
            // (input, weight, stride, padding, dilation, groups); see bench/torch_parity.py.
            let (xs, ks, stride, pad, dil, groups): (_, _, _, nn::Padding, _, _) = match param {
                "s1p0" => ([1, 2, 5, 5], [3, 2, 3, 3], (1, 1), 0.into(), (1, 1), 1),
                "s2p1" => ([1, 2, 5, 5], [3, 2, 3, 3], (2, 2), 1.into(), (1, 1), 1),
                "d2p2" => ([1, 2, 5, 5], [3, 2, 3, 3], (1, 1), 2.into(), (2, 2), 1),
                "g2" => ([1, 4, 6, 5], [4, 2, 3, 2], (2, 1), (1, 0).into(), (1, 1), 2),
                "same" => ([1, 2, 5, 6], [3, 2, 2, 4], (1, 1), "same".into(), (1, 2), 1),
                "dw" => ([1, 2, 5, 5], [4, 1, 3, 3], (1, 1), 1.into(), (2, 1), 2),
                _ => ([1, 2, 5, 5], [3, 2, 3, 3], (1, 1), 1.into(), (1, 1), 1),
            };
            let x = ramp(&xs, 7, 3.0, 0.5, d, dev)?;
            let k = ramp(&ks, 5, 2.0, 0.25, d, dev)?;
            let b = ramp(&ks[..1], 3, 1.0, 0.5, d, dev)?;
            let out = F::conv2d(&x, &k, Some(&b), stride, pad, dil, groups)?;
            (out, vec![("x", x), ("w", k), ("b", b)])
        }
        "convT" => {
            // (input, weight, stride, padding, output padding, groups, dilation)
            let (xs, ks, stride, pad, opad, groups, dil) = match param {
                "k2s2" => (
                    [1, 2, 3, 4],
                    [2, 3, 2, 2],
                    (2, 2),
                    (0, 0),
                    (0, 0),
                    1,
                    (1, 1),
                ),
                "s2p1o1" => (
                    [1, 2, 3, 3],
                    [2, 3, 3, 3],
                    (2, 2),
                    (1, 1),
                    (1, 1),
                    1,
                    (1, 1),
                ),
                _ => (
                    [1, 4, 3, 3],
                    [4, 1, 3, 2],
                    (2, 1),
                    (1, 0),
                    (1, 0),
                    2,
                    (1, 2),
                ),
            };
            let x = ramp(&xs, 7, 3.0, 0.5, d, dev)?;
            let k = ramp(&ks, 5, 2.0, 0.25, d, dev)?;
            let b = ramp(&[ks[1] * groups], 3, 1.0, 0.5, d, dev)?;
            let out = F::conv_transpose2d(&x, &k, Some(&b), stride, pad, opad, groups, dil)?;
            (out, vec![("x", x), ("w", k), ("b", b)])
        }
        "interp" => {
            let x = ramp(&[1, 2, 3, 4], 7, 3.0, 0.5, d, dev)?;
            let (size, mode, align): (nn::Resize, _, _) = match param {
                "n2" => (2.0.into(), "nearest", false),
                "n57" => ((5, 7).into(), "nearest", false),
                "n07" => (0.7.into(), "nearest", false),
                "ne57" => ((5, 7).into(), "nearest-exact", false),
                "ne15" => ((1.5, 2.5).into(), "nearest-exact", false),
                "b2" => (2.0.into(), "bilinear", false),
                "b57a" => ((5, 7).into(), "bilinear", true),
                "b15" => ((1.5, 2.5).into(), "bilinear", false),
                _ => ((2, 3).into(), "bilinear", false),
            };
            (F::interpolate(&x, size, mode, align)?, vec![("x", x)])
        }
        "pool" => {
            let x = ramp(&[1, 2, 5, 6], 4, 0.0, 1.0, d, dev)?;
            // kernel, stride, padding, dilation, ceil_mode
            let (kernel, stride, pad, dil, ceil) = match param {
                "k2s2" => ((2, 2), (2, 2), (0, 0), (1, 1), false),
                "k3s1" => ((3, 3), (1, 1), (0, 0), (1, 1), false),
                "k3s2p1" => ((3, 3), (2, 2), (1, 1), (1, 1), false),
                "k2s1p1" => ((2, 2), (1, 1), (1, 1), (1, 1), false),
                "k2s2c" => ((2, 2), (2, 2), (0, 0), (1, 1), true),
                "k3s2p1d2c" => ((3, 3), (2, 2), (1, 1), (2, 2), true),
                "k23s12c" => ((2, 3), (1, 2), (1, 1), (1, 2), true),
                _ => ((2, 2), (1, 1), (0, 0), (1, 1), false),
            };
            (
                F::max_pool2d(&x, kernel, stride, pad, dil, ceil)?,
                vec![("x", x)],
            )
        }
        "avgpool" => {
            let x = ramp(&[1, 2, 5, 6], 7, 3.0, 0.5, d, dev)?;
            // kernel, stride, padding, ceil_mode, count_include_pad
            let (kernel, stride, pad, ceil, include) = match param {
                "k2s2" => ((2, 2), (2, 2), (0, 0), false, true),
                "k3s1p1" => ((3, 3), (1, 1), (1, 1), false, true),
                "k3s2p1" => ((3, 3), (2, 2), (1, 1), false, true),
                "k3s2p1x" => ((3, 3), (2, 2), (1, 1), false, false),
                "k3s2p1c" => ((3, 3), (2, 2), (1, 1), true, true),
                "k3s2p1cx" => ((3, 3), (2, 2), (1, 1), true, false),
                "k23s21c" => ((2, 3), (2, 1), (1, 1), true, true),
                _ => ((2, 2), (1, 1), (0, 0), false, true),
            };
            (
                F::avg_pool2d(&x, kernel, stride, pad, ceil, include)?,
                vec![("x", x)],
            )
        }
        "adapool" => {
            let x = ramp(&[1, 2, 5, 5], 7, 3.0, 0.5, d, dev)?;
            let (h, w) = param[1..].split_once('x').unwrap();
            let size = (h.parse().unwrap(), w.parse().unwrap());
            (F::adaptive_avg_pool2d(&x, size)?, vec![("x", x)])
        }
        "emb" => {
            let table = ramp(&[5, 3], 7, 3.0, 0.5, d, dev)?;
            let idx = Tensor::from_vec(vec![1i64, 4, 1, 0, 3, 4], (2, 3), Device::Cpu)?
                .to_dtype(dtype(param))?
                .to(dev)?;
            (F::embedding(&idx, &table)?, vec![("w", table)])
        }
        "nll" => {
            let t = Tensor::from_vec(vec![2i64, 0], 2, Device::Cpu)?
                .to_dtype(dtype(param))?
                .to(dev)?;
            (F::nll_loss(&x, &t)?, vec![("x", x)])
        }
        "l1" | "smoothl1" | "smoothl1_b0" | "huber" => {
            let y = ramp(&[2, 3], 4, 1.0, 0.5, param, dev)?;
            let out = match op {
                "l1" => F::l1_loss(&x, &y)?,
                "smoothl1" => F::smooth_l1_loss(&x, &y, 1.0)?,
                "smoothl1_b0" => F::smooth_l1_loss(&x, &y, 0.0)?,
                _ => F::huber_loss(&x, &y, 0.75)?,
            };
            (out, vec![("x", x), ("y", y)])
        }
        "bcep" => {
            let p = ramp(&[2, 3], 5, 0.0, 0.25, d, dev)?;
            let y = ramp(&[2, 3], 4, 0.0, 1.0 / 3.0, param, dev)?;
            (F::binary_cross_entropy(&p, &y)?, vec![("x", p), ("y", y)])
        }
        _ if matches!(op.rsplit_once('_'), Some((_, "sum" | "none"))) => {
            let (base, red) = op.rsplit_once('_').unwrap();
            let r = if red == "sum" {
                nn::Reduction::Sum
            } else {
                nn::Reduction::None
            };
            match base {
                "ce" | "nll" => {
                    let t = Tensor::from_vec(vec![2i64, 0], 2, Device::Cpu)?
                        .to_dtype(dtype(param))?
                        .to(dev)?;
                    let out = if base == "ce" {
                        nn::CrossEntropyLoss::new().reduction(r).forward(&x, &t)?
                    } else {
                        nn::NLLLoss::new().reduction(r).forward(&x, &t)?
                    };
                    (out, vec![("x", x)])
                }
                "bcep" => {
                    let p = ramp(&[2, 3], 5, 0.0, 0.25, d, dev)?;
                    let y = ramp(&[2, 3], 4, 0.0, 1.0 / 3.0, param, dev)?;
                    let out = nn::BCELoss::new().reduction(r).forward(&p, &y)?;
                    (out, vec![("x", p), ("y", y)])
                }
                _ => {
                    let y = ramp(&[2, 3], 4, 1.0, 0.5, param, dev)?;
                    let out = match base {
                        "mse" => nn::MSELoss::new().reduction(r).forward(&x, &y)?,
                        "l1" => nn::L1Loss::new().reduction(r).forward(&x, &y)?,
                        "bce" => nn::BCEWithLogitsLoss::new().reduction(r).forward(&x, &y)?,
                        "smoothl1" => nn::SmoothL1Loss::new().reduction(r).forward(&x, &y)?,
                        "huber" => nn::HuberLoss::new()
                            .delta(0.75)
                            .reduction(r)
                            .forward(&x, &y)?,
                        _ => panic!("unknown nn op {op:?}"),
                    };
                    (out, vec![("x", x), ("y", y)])
                }
            }
        }
        "pixshuf" | "pixunshuf" | "chshuf" | "rms" | "lrn" | "lppool" | "lppool1" | "adamax"
        | "adamaxi" | "adaavg1" | "adamax1" | "pdist" | "pooli" | "pool1i" | "unpool"
        | "unpool1" => nn_more(op, d, param, dev)?,
        "conv3d" | "pool3d" | "pool3di" | "avg3d" | "bn3d" | "in3d" | "drop3d" => {
            nn_3d(op, d, param, dev)?
        }
        // threshold .. grid_sample: nn_extra, which names an op it does not know.
        _ => nn_extra(op, d, param, dev)?,
    };
    result_or_grad(&out, want, &inputs)
}

/// conv3d, the 3-D pools, BatchNorm3d, instance_norm and dropout3d over volumes
/// (bench/torch_parity.py's `nn_3d`).
fn nn_3d(op: &str, d: &str, param: &str, dev: Device) -> Result<Named, Error> {
    use nn::{Padding3, Size3};
    let volume = |unbatched: bool, m: usize, off: f64, scale: f64| {
        let shape: &[usize] = if unbatched {
            &[2, 4, 5, 5]
        } else {
            &[1, 2, 5, 5, 6]
        };
        ramp(shape, m, off, scale, d, dev)
    };
    Ok(match op {
        "conv3d" => {
            let (xs, ws, stride, pad, dil, groups): (
                &[usize],
                &[usize],
                Size3,
                Padding3,
                Size3,
                _,
            ) = match param {
                "s1p0" => (
                    &[1, 2, 3, 4, 4],
                    &[3, 2, 2, 3, 3],
                    1.into(),
                    0.into(),
                    1.into(),
                    1,
                ),
                "s2p1" => (
                    &[2, 2, 4, 5, 5],
                    &[2, 2, 3, 3, 3],
                    2.into(),
                    1.into(),
                    1.into(),
                    1,
                ),
                "d2g2" => (
                    &[1, 4, 5, 5, 6],
                    &[2, 2, 2, 2, 3],
                    (1, 1, 2).into(),
                    (1, 0, 1).into(),
                    (2, 1, 1).into(),
                    2,
                ),
                "same" => (
                    &[1, 2, 4, 4, 5],
                    &[2, 2, 2, 3, 2],
                    1.into(),
                    "same".into(),
                    1.into(),
                    1,
                ),
                _ => (
                    &[2, 3, 4, 4],
                    &[2, 2, 2, 2, 2],
                    1.into(),
                    1.into(),
                    1.into(),
                    1,
                ),
            };
            let x = ramp(xs, 7, 3.0, 0.25, d, dev)?;
            let w = ramp(ws, 5, 2.0, 0.5, d, dev)?;
            let b = ramp(&[ws[0]], 3, 1.0, 0.5, d, dev)?;
            let out = F::conv3d(&x, &w, Some(&b), stride, pad, dil, groups)?;
            (out, vec![("x", x), ("w", w), ("b", b)])
        }
        "pool3d" | "pool3di" => {
            let (k, s, p, dil, ceil): (Size3, Size3, Size3, Size3, _) = match param {
                "k2" => (2.into(), 2.into(), 0.into(), 1.into(), false),
                "k3s2p1" => (3.into(), 2.into(), 1.into(), 1.into(), false),
                "k3s2p1d2c" => (3.into(), 2.into(), 1.into(), 2.into(), true),
                "k122s1" => ((1, 2, 2).into(), 1.into(), 0.into(), 1.into(), false),
                _ => (2.into(), 1.into(), 1.into(), 1.into(), false),
            };
            let x = volume(param == "unb", 4, 0.0, 1.0)?;
            let (v, i) = F::max_pool3d_with_indices(&x, k, s, p, dil, ceil)?;
            let plain = F::max_pool3d(&x, k, s, p, dil, ceil)?;
            // The two entry points must agree; the plain one is what gets the gradient.
            assert!(
                plain.detach().equal(&v.detach())?,
                "max_pool3d and _with_indices differ"
            );
            (if op == "pool3d" { plain } else { i }, vec![("x", x)])
        }
        "avg3d" => {
            let (k, s, p, ceil, inc, div): (Size3, Size3, Size3, _, _, _) = match param {
                "k2" => (2.into(), 2.into(), 0.into(), false, true, None),
                "k3s2p1" => (3.into(), 2.into(), 1.into(), false, true, None),
                "k3s2p1c" => (3.into(), 2.into(), 1.into(), true, true, None),
                "k3s2p1cx" => (3.into(), 2.into(), 1.into(), true, false, None),
                "k2div3" => (2.into(), 1.into(), 0.into(), false, true, Some(3)),
                _ => (
                    (2, 2, 1).into(),
                    1.into(),
                    (1, 0, 0).into(),
                    false,
                    true,
                    None,
                ),
            };
            let x = volume(param == "unb", 7, 3.0, 0.5)?;
            (F::avg_pool3d(&x, k, s, p, ceil, inc, div)?, vec![("x", x)])
        }
        "bn3d" => {
            if !dtype(d).is_float() {
                return Err(Error::Invalid("BatchNorm3d takes floats".into()));
            }
            let m = nn::BatchNorm3d::new(2);
            let params = ramped(&m, d, dev, 0.5)?;
            let x = ramp(&[2, 2, 2, 3, 3], 7, 3.0, 0.5, d, dev)?;
            let out = nn::Module::forward(&m, &x)?;
            let mut inputs = vec![("x", x)];
            for (name, p) in params {
                let name = if name == "weight" { "weight" } else { "bias" };
                inputs.push((name, p.tensor()));
            }
            (out, inputs)
        }
        "in3d" => {
            let x = ramp(&[2, 2, 2, 3, 3], 7, 3.0, 0.5, d, dev)?;
            (
                F::instance_norm(&x, None, None, None, None, true, 0.1, 1e-5)?,
                vec![("x", x)],
            )
        }
        _ => {
            let x = ramp(&[2, 2, 2, 3, 3], 7, 3.0, 0.5, d, dev)?;
            (F::dropout3d(&x, 0.5, false)?, vec![("x", x)])
        }
    })
}

/// Threshold, Softmax2d, RReLU's eval slope, bilinear and the triplet loss with a distance
/// (bench/torch_parity.py's `nn_extra`).
fn nn_extra(op: &str, d: &str, param: &str, dev: Device) -> Result<Named, Error> {
    Ok(match op {
        "thresh" => {
            let x = ramp(&[2, 7], 7, 3.0, 0.5, d, dev)?;
            let (th, val) = if param == "t05v2" {
                (0.5, -2.0)
            } else {
                (0.0, 0.0)
            };
            (
                nn::Module::forward(&nn::Threshold::new(th, val), &x)?,
                vec![("x", x)],
            )
        }
        "smax2d" => {
            let shape: &[usize] = if param == "b" {
                &[2, 3, 2, 2]
            } else {
                &[3, 2, 2]
            };
            let x = ramp(shape, 7, 3.0, 0.5, d, dev)?;
            (nn::Module::forward(&nn::Softmax2d, &x)?, vec![("x", x)])
        }
        "rrelu" => {
            let (lower, upper) = if param == "eval" {
                (1.0 / 8.0, 1.0 / 3.0)
            } else {
                (0.1, 0.9)
            };
            let x = ramp(&[2, 7], 7, 3.0, 0.5, d, dev)?;
            (F::rrelu(&x, lower, upper, false)?, vec![("x", x)])
        }
        "bilin" => {
            let lead: &[usize] = if param == "lead" { &[2, 3] } else { &[3] };
            let with = |last: usize| [lead, &[last]].concat();
            let x1 = ramp(&with(4), 7, 3.0, 0.5, d, dev)?;
            let x2 = ramp(&with(2), 5, 2.0, 0.5, d, dev)?;
            let w = ramp(&[3, 4, 2], 5, 2.0, 0.25, d, dev)?;
            let b = ramp(&[3], 3, 1.0, 0.5, d, dev)?;
            let bias = (param != "nob").then_some(&b);
            let out = F::bilinear(&x1, &x2, &w, bias)?;
            (out, vec![("x1", x1), ("x2", x2), ("w", w), ("b", b)])
        }
        "resize" => {
            let (size, mode, align): (nn::Resize, _, _) = match param {
                "lin2" => (2.0.into(), "linear", false),
                "lin7a" => (7.into(), "linear", true),
                "lin15" => (1.5.into(), "linear", false),
                "bic2" => (2.0.into(), "bicubic", false),
                "bic57a" => ((5, 7).into(), "bicubic", true),
                "bic23" => ((2, 3).into(), "bicubic", false),
                "bic15" => ((1.5, 2.5).into(), "bicubic", false),
                "tri2" => (2.0.into(), "trilinear", false),
                "tri345a" => ((3, 4, 5).into(), "trilinear", true),
                "area1d" => (3.into(), "area", false),
                "area2d" => ((2, 3).into(), "area", false),
                "area3d" => ((2, 2, 3).into(), "area", false),
                "areaup" => ((5, 7).into(), "area", false),
                "n1d" => (2.0.into(), "nearest", false),
                "n3d" => ((3, 4, 5).into(), "nearest", false),
                _ => (1.5.into(), "nearest-exact", false),
            };
            let rank = if mode == "linear" || matches!(param, "area1d" | "n1d") {
                3
            } else if mode == "trilinear" || matches!(param, "area3d" | "n3d" | "ne3d") {
                5
            } else {
                4
            };
            let shape: &[usize] = match rank {
                3 => &[1, 2, 5],
                4 => &[1, 2, 3, 4],
                _ => &[1, 2, 2, 3, 4],
            };
            let x = ramp(shape, 7, 3.0, 0.5, d, dev)?;
            (F::interpolate(&x, size, mode, align)?, vec![("x", x)])
        }
        "convT3d" => {
            type Case = (
                &'static [usize],
                &'static [usize],
                nn::Size3,
                nn::Size3,
                nn::Size3,
                usize,
                nn::Size3,
            );
            let (xs, ws, stride, pad, opad, groups, dil): Case = match param {
                "k2s2" => (
                    &[1, 2, 2, 3, 2],
                    &[2, 3, 2, 2, 2],
                    2.into(),
                    0.into(),
                    0.into(),
                    1,
                    1.into(),
                ),
                "s2p1o1" => (
                    &[1, 2, 2, 2, 3],
                    &[2, 2, 3, 3, 3],
                    2.into(),
                    1.into(),
                    1.into(),
                    1,
                    1.into(),
                ),
                "g2d2" => (
                    &[1, 4, 2, 3, 3],
                    &[4, 1, 2, 2, 2],
                    (1, 2, 1).into(),
                    (0, 1, 0).into(),
                    0.into(),
                    2,
                    (2, 1, 1).into(),
                ),
                _ => (
                    &[2, 2, 2, 2],
                    &[2, 1, 2, 3, 2],
                    1.into(),
                    0.into(),
                    0.into(),
                    1,
                    1.into(),
                ),
            };
            let x = ramp(xs, 7, 3.0, 0.25, d, dev)?;
            let w = ramp(ws, 5, 2.0, 0.5, d, dev)?;
            let b = ramp(&[ws[1] * groups], 3, 1.0, 0.5, d, dev)?;
            let out = F::conv_transpose3d(&x, &w, Some(&b), stride, pad, opad, groups, dil)?;
            (out, vec![("x", x), ("w", w), ("b", b)])
        }
        "gsamp" => {
            let mode = match &param[..1] {
                "b" => "bilinear",
                "n" => "nearest",
                _ => "bicubic",
            };
            let pad = match &param[1..2] {
                "z" => "zeros",
                "b" => "border",
                _ => "reflection",
            };
            let x = ramp(&[1, 2, 4, 5], 7, 3.0, 0.5, d, dev)?;
            let g = ramp(&[1, 3, 4, 2], 11, 5.0, 0.27, d, dev)?;
            let out = F::grid_sample(&x, &g, mode, pad, param.ends_with('a'))?;
            (out, vec![("x", x), ("g", g)])
        }
        "ebag" => {
            let w = ramp(&[6, 3], 5, 2.0, 0.5, d, dev)?;
            let mode = param.split('_').next().unwrap().replace("2d", "");
            let ints = |v: &[i64], shape: &[usize]| {
                Tensor::from_vec(v.to_vec(), shape.to_vec(), Device::Cpu)?.to(dev)
            };
            let (idx, off) = if param.ends_with("2d") {
                (ints(&[1, 2, 2, 5, 0, 3, 4, 1, 5, 5, 0, 2], &[3, 4])?, None)
            } else {
                let end = if param == "sum_last" { 8 } else { 6 };
                (
                    ints(&[1, 2, 4, 0, 3, 5, 1, 0], &[8])?,
                    Some(ints(&[0, 3, 3, end], &[4])?),
                )
            };
            let p = if param == "sum_psw" {
                Some(ramp(&[8], 4, 1.0, 0.75, d, dev)?)
            } else {
                None
            };
            let pad = (param == "mean_pad").then_some(0);
            let out = F::embedding_bag(
                &idx,
                &w,
                off.as_ref(),
                &mode,
                p.as_ref(),
                param == "sum_last",
                pad,
            )?;
            let mut inputs = vec![("w", w)];
            if let Some(p) = p {
                inputs.push(("p", p));
            }
            (out, inputs)
        }
        "affine" => {
            let theta = ramp(&[2, 2, 3], 5, 2.0, 0.4, d, dev)?;
            let out = F::affine_grid(&theta, [2, 1, 3, 4], param == "align")?;
            (out, vec![("x", theta)])
        }
        "adaavg3" | "adamax3" => {
            let size = match param {
                "o111" => (1, 1, 1),
                "o234" | "unb" => (2, 3, 4),
                _ => (3, 2, 2),
            };
            let shape: &[usize] = if param == "unb" {
                &[2, 4, 5, 6]
            } else {
                &[1, 2, 4, 5, 6]
            };
            let x = ramp(shape, 5, 2.0, 0.5, d, dev)?;
            let out = if op == "adaavg3" {
                F::adaptive_avg_pool3d(&x, size)?
            } else {
                F::adaptive_max_pool3d(&x, size)?
            };
            (out, vec![("x", x)])
        }
        "tripletd" => {
            let a = ramp(&[3, 4], 7, 3.0, 0.5, d, dev)?;
            let p = ramp(&[3, 4], 5, 2.0, 0.5, d, dev)?;
            let n = ramp(&[3, 4], 3, 1.0, 0.75, d, dev)?;
            let mut loss = nn::TripletMarginWithDistanceLoss::new()
                .margin(1.5)
                .swap(param == "swap");
            if param == "cos" {
                loss =
                    loss.distance_function(|u, v| F::cosine_similarity(u, v, 1)?.neg()?.add(1.0));
            }
            if param == "sum" {
                loss = loss.reduction(nn::Reduction::Sum);
            }
            let out = loss.forward(&a, &p, &n)?;
            (out, vec![("a", a), ("p", p), ("n", n)])
        }
        _ => nn_unbatched(op, d, param, dev)?,
    })
}

/// The 2-D ops on an unbatched `[C, H, W]` image, conv_transpose1d and AvgPool2d's
/// divisor_override (bench/torch_parity.py's `nn_unbatched`).
fn nn_unbatched(op: &str, d: &str, param: &str, dev: Device) -> Result<Named, Error> {
    use nn::Module;
    Ok(match op {
        "unb2d" => {
            let x = ramp(&[2, 5, 6], 7, 3.0, 0.5, d, dev)?;
            let out = match param {
                "conv" => {
                    let w = ramp(&[3, 2, 3, 3], 5, 2.0, 0.5, d, dev)?;
                    let b = ramp(&[3], 3, 1.0, 0.5, d, dev)?;
                    F::conv2d(&x, &w, Some(&b), 1, 1, 1, 1)?
                }
                "convT" => {
                    let w = ramp(&[2, 3, 2, 2], 5, 2.0, 0.5, d, dev)?;
                    F::conv_transpose2d(&x, &w, None, 2, 0, 0, 1, 1)?
                }
                "unpool" => {
                    let (v, i) = F::max_pool2d_with_indices(&x, 2, 2, 0, 1, false)?;
                    F::max_unpool2d(&v, &i, 2, None, 0, None)?
                }
                "pool" => F::max_pool2d(&x, 3, 2, 1, 1, false)?,
                "avg" => F::avg_pool2d(&x, 3, 2, 1, true, false)?,
                "adaavg" => F::adaptive_avg_pool2d(&x, (2, 3))?,
                "adamax" => F::adaptive_max_pool2d(&x, (2, 3))?,
                "lppool" => F::lp_pool2d(&x, 2.0, 2, None, false)?,
                _ => panic!("unknown unb2d case {param:?}"),
            };
            (out, vec![("x", x)])
        }
        "convT1d" => {
            type Case = (&'static [usize], &'static [usize], [usize; 5]);
            let (xs, ws, [stride, pad, opad, groups, dil]): Case = match param {
                "k3s2" => (&[2, 4, 5], &[4, 3, 3], [2, 0, 0, 1, 1]),
                "p1o1" => (&[2, 4, 5], &[4, 3, 3], [2, 1, 1, 1, 1]),
                "g2d2" => (&[1, 4, 6], &[4, 1, 2], [1, 1, 1, 2, 2]),
                _ => (&[4, 5], &[4, 2, 3], [1, 0, 0, 1, 1]),
            };
            let x = ramp(xs, 7, 3.0, 0.25, d, dev)?;
            let w = ramp(ws, 5, 2.0, 0.5, d, dev)?;
            let b = ramp(&[ws[1] * groups], 3, 1.0, 0.5, d, dev)?;
            let out = F::conv_transpose1d(&x, &w, Some(&b), stride, pad, opad, groups, dil)?;
            (out, vec![("x", x), ("w", w), ("b", b)])
        }
        "avgdiv" => {
            let (k, s, p, ceil, div) = match param {
                "k2d3" => (2, 2, 0, false, 3),
                "k3s2p1cd5" => (3, 2, 1, true, 5),
                _ => (2, 1, 0, false, 2),
            };
            let shape: &[usize] = if param == "unb" {
                &[2, 5, 6]
            } else {
                &[1, 2, 5, 6]
            };
            let x = ramp(shape, 7, 3.0, 0.5, d, dev)?;
            let m = nn::AvgPool2d::new(k)
                .stride(s)
                .padding(p)
                .ceil_mode(ceil)
                .divisor_override(div);
            (m.forward(&x)?, vec![("x", x)])
        }
        "fmp2" | "fmp2i" | "fmp3" | "fmp3i" => {
            let r = if op.starts_with("fmp2") { 2 } else { 3 };
            let mut shape = if r == 2 {
                vec![1, 2, 5, 6]
            } else {
                vec![1, 2, 4, 5, 6]
            };
            if param == "unb" {
                shape.remove(0);
            }
            let indices = op.ends_with('i');
            let (m, off) = if indices { (4, 0.0) } else { (7, 3.0) };
            let x = ramp(&shape, m, off, 1.0, d, dev)?;
            let u = [0.1, 0.7, 0.45, 0.9, 0.3, 0.55][..2 * r].to_vec();
            let u = Tensor::from_vec(u, vec![1, 2, r], Device::Cpu)?;
            let u = if dtype(d).is_float() {
                u.to_dtype(dtype(d))?
            } else {
                u
            }
            .to(dev)?;
            let (v, i) = if r == 2 {
                let (k, out): (nn::Size2, nn::FractionalOutput) = match param {
                    "k2o3" => (2.into(), (3, 3).into()),
                    "k3r05" => (3.into(), 0.5.into()),
                    "k23o34" => ((2, 3).into(), (3, 4).into()),
                    _ => (2.into(), (4, 4).into()),
                };
                F::fractional_max_pool2d_with_indices(&x, k, out, Some(&u))?
            } else {
                let (k, out): (nn::Size3, nn::FractionalOutput) = match param {
                    "k2o233" => (2.into(), (2, 3, 3).into()),
                    "k2r06" => (2.into(), 0.6.into()),
                    _ => ((1, 2, 2).into(), (3, 3, 4).into()),
                };
                F::fractional_max_pool3d_with_indices(&x, k, out, Some(&u))?
            };
            (if indices { i } else { v }, vec![("x", x)])
        }
        "gsamp3" => {
            let mode = if param.starts_with('b') {
                "bilinear"
            } else {
                "nearest"
            };
            let pad = match &param[1..2] {
                "z" => "zeros",
                "b" => "border",
                _ => "reflection",
            };
            let x = ramp(&[1, 2, 3, 4, 5], 7, 3.0, 0.5, d, dev)?;
            let g = ramp(&[1, 2, 3, 2, 3], 11, 5.0, 0.27, d, dev)?;
            let out = F::grid_sample(&x, &g, mode, pad, param.ends_with('a'))?;
            (out, vec![("x", x), ("g", g)])
        }
        "affine3" => {
            let theta = ramp(&[2, 3, 4], 5, 2.0, 0.4, d, dev)?;
            let out = F::affine_grid(&theta, [2, 1, 2, 3, 4], param == "align")?;
            (out, vec![("x", theta)])
        }
        "adamax3i" => {
            let size = match param {
                "o111" => (1, 1, 1),
                "o322" => (3, 2, 2),
                _ => (2, 3, 4),
            };
            let shape: &[usize] = if param == "unb" {
                &[2, 4, 5, 6]
            } else {
                &[1, 2, 4, 5, 6]
            };
            let x = ramp(shape, 4, 0.0, 1.0, d, dev)?;
            let (v, i) = F::adaptive_max_pool3d_with_indices(&x, size)?;
            assert!(
                v.equal(&F::adaptive_max_pool3d(&x, size)?)?,
                "adaptive_max_pool3d and _with_indices differ"
            );
            (i, vec![("x", x)])
        }
        "unpool3d" => {
            type Case = (
                nn::Size3,
                Option<nn::Size3>,
                nn::Size3,
                Option<(usize, usize, usize)>,
            );
            let (k, s, p, size): Case = match param {
                "k2" => (2.into(), None, 0.into(), None),
                "k3s2p1" => (3.into(), Some(2.into()), 1.into(), Some((5, 5, 6))),
                _ => (2.into(), Some(1.into()), 0.into(), None),
            };
            let shape: &[usize] = if param == "unb" {
                &[2, 5, 5, 6]
            } else {
                &[1, 2, 5, 5, 6]
            };
            let x = ramp(shape, 7, 3.0, 0.5, d, dev)?;
            let (v, i) = F::max_pool3d_with_indices(&x, k, s.unwrap_or(k), p, 1, false)?;
            let unpool = nn::MaxUnpool3d::new(k).stride(s.unwrap_or(k)).padding(p);
            (unpool.forward_sized(&v, &i, size)?, vec![("x", x)])
        }
        "ctc" => {
            type Case = (
                usize,
                Vec<i64>,
                Vec<usize>,
                &'static [usize],
                &'static [usize],
            );
            // frames, targets (flat), targets' shape, input lengths, target lengths.
            let (t, targets, tshape, il, tl): Case = match param {
                "none" | "mean" | "short" | "zinf" => {
                    (5, vec![1, 2, 3, 3], vec![2, 2], &[5, 4], &[2, 2])
                }
                "sum" => (5, vec![1, 2, 3, 3], vec![2, 2], &[5, 4], &[2, 1]),
                "concat" => (5, vec![1, 2, 3], vec![3], &[5, 5], &[2, 1]),
                "blank2" => (6, vec![1, 3, 0, 0], vec![2, 2], &[6, 5], &[2, 1]),
                "rep" => (7, vec![2, 2, 2, 1, 2, 1], vec![2, 3], &[7, 7], &[3, 3]),
                "noframes" => (4, vec![1, 2, 3, 3], vec![2, 2], &[4, 0], &[2, 0]),
                _ => (5, vec![1, 3], vec![2], &[5], &[2]),
            };
            let il: &[usize] = if matches!(param, "short" | "zinf") {
                &[1, 5]
            } else {
                il
            };
            let (blank, red, zinf) = match param {
                "mean" | "zinf" => (0, nn::Reduction::Mean, param == "zinf"),
                "blank2" => (2, nn::Reduction::Mean, false),
                "sum" | "unb" => (0, nn::Reduction::Sum, false),
                _ => (0, nn::Reduction::None, false),
            };
            let shape: Vec<usize> = if param == "unb" {
                vec![t, 4]
            } else {
                vec![t, il.len(), 4]
            };
            let x = ramp(&shape, 7, 3.0, 0.5, d, dev)?;
            let targets = Tensor::from_vec(targets, tshape, Device::Cpu)?.to(dev)?;
            let lp = F::log_softmax(&x, -1)?;
            let out = F::ctc_loss(&lp, &targets, il, tl, blank, red, zinf)?;
            (out, vec![("x", x)])
        }
        "lppool3" => {
            let (p, kernel, stride, ceil) = match param {
                "p2k2" | "unb" => (2.0, nn::Size3(2, 2, 2), None, false),
                "p3k3s2c" => (3.0, nn::Size3(3, 3, 3), Some(nn::Size3(2, 2, 2)), true),
                _ => (1.5, nn::Size3(1, 2, 2), Some(nn::Size3(1, 1, 1)), false),
            };
            // Negative values only where the power keeps them real.
            let off = if p == 2.0 { 3.0 } else { 0.0 };
            let shape: &[usize] = if param == "unb" {
                &[2, 4, 5, 6]
            } else {
                &[1, 2, 4, 5, 6]
            };
            let x = ramp(shape, 7, off, 0.5, d, dev)?;
            let layer = nn::LPPool3d::new(p, kernel).ceil_mode(ceil);
            let layer = match stride {
                Some(s) => layer.stride(s),
                None => layer,
            };
            let out = layer.forward(&x)?;
            // The function and the layer are one path; check they agree.
            let f = F::lp_pool3d(&x, p, kernel, stride, ceil)?;
            assert_eq!(f.to_vec::<f64>().ok(), out.to_vec::<f64>().ok());
            (out, vec![("x", x)])
        }
        "adamax1i" => {
            let (shape, size): (&[usize], usize) = if param == "o3" {
                (&[2, 3, 7], 3)
            } else {
                (&[3, 7], 4)
            };
            // Ties on purpose: the index is the first maximum.
            let x = ramp(shape, 4, 0.0, 1.0, d, dev)?;
            let idx = nn::AdaptiveMaxPool1d::new(size).forward_with_indices(&x)?.1;
            (idx, vec![("x", x)])
        }
        "upnear" | "upbil" => {
            let shape: &[usize] = if param == "s3d" {
                &[1, 2, 5]
            } else {
                &[1, 2, 3, 4]
            };
            let x = ramp(shape, 7, 3.0, 0.5, d, dev)?;
            let size: nn::Resize = if param == "sz" {
                (5, 7).into()
            } else {
                2.0.into()
            };
            let m = if op == "upnear" {
                nn::UpsamplingNearest2d::new(size)
            } else {
                nn::UpsamplingBilinear2d::new(size)
            };
            (m.forward(&x)?, vec![("x", x)])
        }
        "padseq" | "packpad" => {
            use gpulab::nn::utils::rnn;
            let pieces = |x: &Tensor| -> Result<Vec<Tensor>, Error> {
                Ok(vec![
                    x.narrow(0, 0, 2)?,
                    x.narrow(0, 2, 4)?,
                    x.narrow(0, 6, 3)?,
                ])
            };
            if op == "padseq" || param == "unpack" {
                let x = ramp(&[9, 2], 7, 3.0, 0.5, d, dev)?;
                let seqs = pieces(&x)?;
                let out = match param {
                    "r" => rnn::pad_sequence(&seqs, false, 0.0, "right")?,
                    "lbf" => rnn::pad_sequence(&seqs, true, 0.0, "left")?,
                    "pv" => rnn::pad_sequence(&seqs, false, -2.0, "right")?,
                    _ => {
                        let p = rnn::pack_sequence(&seqs, false)?;
                        Tensor::cat(&rnn::unpack_sequence(&p)?, 0)?
                    }
                };
                return Ok((out, vec![("x", x)]));
            }
            let (lengths, bf): (&[usize], bool) = match param {
                "sorted" => (&[4, 3, 1], false),
                "unsorted" => (&[2, 4, 3], false),
                "bf" => (&[2, 4, 3], true),
                _ => (&[1, 4, 2], false),
            };
            let shape: &[usize] = if bf { &[3, 4, 2] } else { &[4, 3, 2] };
            let x = ramp(shape, 7, 3.0, 0.5, d, dev)?;
            let p = rnn::pack_padded_sequence(&x, lengths, bf, param == "sorted")?;
            let out = match param {
                "sorted" | "unsorted" => p.data,
                "bf" => rnn::pad_packed_sequence(&p, true, -2.0, Some(5))?.0,
                _ => rnn::pad_packed_sequence(&p, false, 0.0, None)?.0,
            };
            (out, vec![("x", x)])
        }
        "fuse" => {
            use gpulab::nn::utils;
            let bn_for = |bn: nn::BatchNorm| -> Result<nn::BatchNorm, Error> {
                ramped(&bn, d, dev, 0.4)?;
                Ok(bn)
            };
            let conv = param.starts_with("conv");
            let shape: &[usize] = if conv { &[1, 2, 3, 3] } else { &[2, 4] };
            let mut first = vec![4];
            first.extend_from_slice(&shape[1..]);
            let warm = ramp(&first, 5, 1.0, 0.5, d, dev)?;
            let x = ramp(shape, 7, 3.0, 0.5, d, dev)?;
            let out = if param == "convT" {
                let layer = nn::ConvTranspose2d::new(2, 3, 2).stride(2);
                ramped(&layer, d, dev, 0.3)?;
                let mut bn = bn_for(nn::BatchNorm2d::new(3))?;
                gpulab::no_grad(|| bn.forward(&layer.forward(&warm)?))?;
                bn.eval();
                utils::fuse_conv_bn_eval(&layer, &bn)?.forward(&x)?
            } else if conv {
                let layer = nn::Conv2d::new(2, 3, 3).padding(1).bias(param != "convnb");
                ramped(&layer, d, dev, 0.3)?;
                let mut bn = bn_for(nn::BatchNorm2d::new(3).affine(param != "convnb"))?;
                gpulab::no_grad(|| bn.forward(&layer.forward(&warm)?))?;
                bn.eval();
                utils::fuse_conv_bn_eval(&layer, &bn)?.forward(&x)?
            } else {
                let layer = if param == "linnb" {
                    nn::Linear::no_bias(4, 3)
                } else {
                    nn::Linear::new(4, 3)
                };
                ramped(&layer, d, dev, 0.3)?;
                let mut bn = bn_for(nn::BatchNorm1d::new(3))?;
                gpulab::no_grad(|| bn.forward(&layer.forward(&warm)?))?;
                bn.eval();
                utils::fuse_linear_bn_eval(&layer, &bn)?.forward(&x)?
            };
            (out, vec![("x", x)])
        }
        "clipn" | "p2v" => {
            use gpulab::nn::utils;
            let lin = nn::Linear::new(3, 2);
            let params = ramped(&lin, d, dev, 0.5)?;
            let params: Vec<Parameter> = params.into_iter().map(|(_, p)| p).collect();
            let x = ramp(&[4, 3], 7, 3.0, 0.5, d, dev)?;
            if op == "p2v" {
                let v = utils::parameters_to_vector(&params)?;
                utils::vector_to_parameters(&v.detach().mul(0.5)?, &params)?;
                let out = Tensor::cat(&[v, lin.forward(&x)?.flatten()?], 0)?;
                return Ok((out, vec![]));
            }
            weighted_backward(&lin.forward(&x)?)?;
            let p = match param {
                "p1" => 1.0,
                "pinf" => f64::INFINITY,
                _ => 3.0,
            };
            let total = utils::clip_grad_norm_with(&params, 0.5, p, false)?;
            let grads = |i: usize| {
                params[i]
                    .grad()
                    .ok_or_else(|| Error::Invalid("no gradient".into()))
            };
            let out = Tensor::cat(&[total.reshape([1])?, grads(0)?.flatten()?, grads(1)?], 0)?;
            (out, vec![])
        }
        "asm" => {
            let div = if param == "hb" { 2.0 } else { 4.0 };
            let m =
                nn::AdaptiveLogSoftmaxWithLoss::with_options(8, 10, &[3, 6], div, param == "hb")?;
            ramped(&m, d, dev, 0.3)?;
            let x = ramp(&[5, 8], 7, 3.0, 0.5, d, dev)?;
            let t = Tensor::from_vec(vec![0i64, 4, 9, 2, 7], vec![5], Device::Cpu)?.to(dev)?;
            let out = match param {
                "fwd" | "hb" => m.forward_target(&x, &t)?.output,
                "loss" => m.forward_target(&x, &t)?.loss,
                "logp" => m.log_prob(&x)?,
                "pred" => m.predict(&x)?,
                _ => m.forward_target(&x.select(0, 2)?, &t.select(0, 2)?)?.output,
            };
            (out, vec![("x", x)])
        }
        "inact" => {
            let x = ramp(&[2, 5], 7, 3.0, 0.5, d, dev)?;
            let y = x.detach().deep_clone()?;
            let out = match param {
                "relu" => F::relu_(&y)?,
                "elu" => F::elu_(&y, 0.5)?,
                "leaky" => F::leaky_relu_(&y, 0.2)?,
                "hardtanh" => F::hardtanh_(&y, -1.0, 2.0)?,
                "threshold" => F::threshold_(&y, 0.5, -3.0)?,
                "selu" => F::selu_(&y)?,
                "celu" => F::celu_(&y, 1.5)?,
                _ => F::rrelu_(&y, 0.1, 0.3, false)?,
            };
            (out, vec![("x", x)])
        }
        _ => panic!("unknown nn op {op:?}"),
    })
}

/// An op's output and its inputs by name.
type Named = (Tensor, Vec<(&'static str, Tensor)>);

/// pixel_shuffle .. pdist (bench/torch_parity.py's `nn_more`): the output and the inputs by
/// name.
fn nn_more(op: &str, d: &str, param: &str, dev: Device) -> Result<Named, Error> {
    let num = |s: &str| s[1..].parse::<usize>().unwrap();
    Ok(match op {
        "pixshuf" | "pixunshuf" => {
            let r = num(param);
            let shape: &[usize] = match (op, r) {
                ("pixshuf", 2) => &[1, 8, 2, 3],
                ("pixshuf", _) => &[2, 9, 1, 2],
                ("pixunshuf", 2) => &[1, 2, 4, 6],
                _ => &[2, 1, 3, 6],
            };
            let x = ramp(shape, 7, 3.0, 0.5, d, dev)?;
            let out = if op == "pixshuf" {
                F::pixel_shuffle(&x, r)?
            } else {
                F::pixel_unshuffle(&x, r)?
            };
            (out, vec![("x", x)])
        }
        "chshuf" => {
            let g = num(param);
            let shape: &[usize] = if g == 2 { &[1, 6, 2, 2] } else { &[2, 6, 3] };
            let x = ramp(shape, 7, 3.0, 0.5, d, dev)?;
            (F::channel_shuffle(&x, g)?, vec![("x", x)])
        }
        "rms" => {
            let (shape, norm, eps): (&[usize], &[usize], _) = match param {
                "w" => (&[2, 3], &[3], None),
                "n2" => (&[2, 2, 3], &[2, 3], None),
                _ => (&[3, 4], &[4], Some(0.1)),
            };
            let x = ramp(shape, 7, 3.0, 0.5, d, dev)?;
            if param == "w" {
                let w = ramp(norm, 4, 1.0, 0.5, d, dev)?;
                (
                    F::rms_norm(&x, norm, Some(&w), eps)?,
                    vec![("x", x), ("w", w)],
                )
            } else {
                (F::rms_norm(&x, norm, None, eps)?, vec![("x", x)])
            }
        }
        "lrn" => {
            let (shape, size, alpha, beta, k): (&[usize], _, _, _, _) = match param {
                "s3" => (&[1, 5, 2, 3], 3, 0.1, 0.75, 1.0),
                "s2" => (&[2, 4, 3], 2, 1e-4, 0.75, 1.0),
                _ => (&[1, 6, 2, 2], 4, 0.3, 0.5, 2.0),
            };
            let x = ramp(shape, 7, 3.0, 0.5, d, dev)?;
            let out = F::local_response_norm(&x, size, alpha, beta, k)?;
            (out, vec![("x", x)])
        }
        "lppool" | "lppool1" => {
            let (p, kernel, stride, ceil) = match param {
                "p2k2" => (2.0, 2, None, false),
                "p3k3s2c" => (3.0, 3, Some(2), true),
                "p1k2s1" => (1.0, 2, Some(1), false),
                _ => (1.5, 2, None, false),
            };
            // Negative values only where the power keeps them real.
            let off = if param == "p2k2" { 3.0 } else { 0.0 };
            if op == "lppool" {
                let x = ramp(&[1, 2, 5, 5], 7, off, 0.5, d, dev)?;
                let s = stride.map(|s| nn::Size2(s, s));
                (F::lp_pool2d(&x, p, kernel, s, ceil)?, vec![("x", x)])
            } else {
                let x = ramp(&[2, 3, 7], 7, off, 0.5, d, dev)?;
                (F::lp_pool1d(&x, p, kernel, stride, ceil)?, vec![("x", x)])
            }
        }
        "adamax" | "adamaxi" => {
            let x = ramp(&[1, 2, 5, 5], 7, 3.0, 0.5, d, dev)?;
            let (h, w) = param[1..].split_once('x').unwrap();
            let size = (h.parse().unwrap(), w.parse().unwrap());
            let (values, idx) = F::adaptive_max_pool2d_with_indices(&x, size)?;
            (if op == "adamax" { values } else { idx }, vec![("x", x)])
        }
        "adaavg1" | "adamax1" => {
            let shape: &[usize] = if param == "o3" { &[2, 3, 7] } else { &[3, 7] };
            let x = ramp(shape, 5, 2.0, 0.5, d, dev)?;
            let out = if op == "adaavg1" {
                F::adaptive_avg_pool1d(&x, num(param))?
            } else {
                F::adaptive_max_pool1d(&x, num(param))?
            };
            (out, vec![("x", x)])
        }
        "pooli" => {
            // The "pool" cases' input: many ties, which go to the first.
            let x = ramp(&[1, 2, 5, 6], 4, 0.0, 1.0, d, dev)?;
            let (k, s, p, dil, ceil): (nn::Size2, nn::Size2, nn::Size2, nn::Size2, _) = match param
            {
                "k2s2" => (2.into(), 2.into(), 0.into(), 1.into(), false),
                "k3s2p1" => (3.into(), 2.into(), 1.into(), 1.into(), false),
                "k3s2p1d2c" => (3.into(), 2.into(), 1.into(), 2.into(), true),
                _ => ((2, 3).into(), (1, 2).into(), 1.into(), (1, 2).into(), true),
            };
            let (_, idx) = F::max_pool2d_with_indices(&x, k, s, p, dil, ceil)?;
            (idx, vec![("x", x)])
        }
        "pool1i" => {
            let x = ramp(&[2, 3, 7], 4, 0.0, 1.0, d, dev)?;
            let (k, s, p, ceil) = if param == "k2s2" {
                (2, 2, 0, false)
            } else {
                (3, 2, 1, true)
            };
            let (_, idx) = F::max_pool1d_with_indices(&x, k, s, p, 1, ceil)?;
            (idx, vec![("x", x)])
        }
        "unpool" => {
            let x = ramp(&[1, 2, 5, 6], 7, 3.0, 0.5, d, dev)?;
            let (k, s, p, size) = match param {
                "k2s2" => (2, 2, 0, None),
                "k3s2p1" => (3, 2, 1, Some((5, 6))),
                _ => (2, 2, 0, Some((5, 6))),
            };
            let (v, i) = F::max_pool2d_with_indices(&x, k, s, p, 1, false)?;
            let out = F::max_unpool2d(&v, &i, k, Some(nn::Size2(s, s)), p, size)?;
            (out, vec![("x", x)])
        }
        "unpool1" => {
            let x = ramp(&[2, 3, 7], 7, 3.0, 0.5, d, dev)?;
            let (k, s, p, size) = if param == "k2s2" {
                (2, 2, 0, Some(7))
            } else {
                (3, 1, 1, None)
            };
            let (v, i) = F::max_pool1d_with_indices(&x, k, s, p, 1, false)?;
            (
                F::max_unpool1d(&v, &i, k, Some(s), p, size)?,
                vec![("x", x)],
            )
        }
        _ => {
            let x = ramp(&[4, 3], 5, 2.0, 0.75, d, dev)?;
            let p = match param {
                "p2" => 2.0,
                "p1" => 1.0,
                "pinf" => f64::INFINITY,
                "p0" => 0.0,
                _ => 3.0,
            };
            (F::pdist(&x, p)?, vec![("x", x)])
        }
    })
}

/// Three optimizer steps on one parameter, the gradient of step t being ramp t.
fn optim_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    let (opt, d, config) = (w[1], w[2], w[3]);
    let p = Parameter::new(ramp(&[2, 3], 5, 2.0, 0.75, d, dev)?.detach())?;
    let params = vec![p.clone()];
    let mut o: Box<dyn Optimizer> = match (opt, config) {
        ("sgd", "plain") => Box::new(SGD::new(params, 0.1)),
        ("sgd", "mom") => Box::new(SGD::new(params, 0.1).momentum(0.9)),
        ("sgd", _) => Box::new(SGD::new(params, 0.1).momentum(0.9).weight_decay(0.01)),
        ("adam", "plain") => Box::new(Adam::new(params, 0.01)),
        ("adam", "wd") => Box::new(Adam::new(params, 0.01).weight_decay(0.01)),
        ("adam", _) => Box::new(Adam::new(params, 0.01).betas(0.5, 0.9)),
        ("adamw", "plain") => Box::new(AdamW::new(params, 0.01)),
        ("adamw", _) => Box::new(AdamW::new(params, 0.01).weight_decay(0.1)),
        ("rmsprop", "plain") => Box::new(RMSprop::new(params, 0.01)),
        ("rmsprop", "mom") => Box::new(RMSprop::new(params, 0.01).momentum(0.9)),
        _ => Box::new(RMSprop::new(params, 0.01).weight_decay(0.1).alpha(0.9)),
    };
    for t in 0..3 {
        let c = ramp(&[2, 3], 4, t as f64, 0.5, d, dev)?.detach();
        p.tensor().mul(&c)?.sum()?.backward()?;
        o.step()?;
        o.zero_grad();
    }
    // With a fifth word, that entry of the optimizer's state instead of the parameter.
    match w.get(4) {
        Some(key) => {
            let name = format!("state.0.{key}");
            let state = o.state_dict()?;
            let entry = state.into_iter().find(|(n, _)| *n == name);
            entry
                .map(|(_, t)| t)
                .ok_or_else(|| Error::Invalid(format!("no {name} in the state dict")))
        }
        None => Ok(p.tensor().detach()),
    }
}

fn view_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    let (op, d, want) = (w[1], w[2], w[3]);
    let x = ramp(&[2, 3], 5, 2.0, 0.75, d, dev)?;
    let y = ramp(&[2, 3], 4, 1.0, 0.5, d, dev)?;
    let ints = |v: Vec<i64>, shape: Vec<usize>| Tensor::from_vec(v, shape, Device::Cpu)?.to(dev);
    let out = match op {
        "narrow" => x.narrow(1, 1, 2)?,
        "select" => x.select(0, -1)?,
        "t" => x.t()?,
        "permute" => x.unsqueeze(0)?.permute(&[2, 0, 1])?,
        "expand" => x.unsqueeze(0)?.expand((2, 2, 3))?,
        "flip" => x.flip(&[1])?,
        "reshape" => x.reshape((3, 2))?,
        "squeeze" => x.unsqueeze(1)?.squeeze(1)?,
        "index_select" => x.index_select(1, &ints(vec![2, 0, 2], vec![3])?)?,
        "gather" => x.gather(1, &ints(vec![0, 2, 1, 1], vec![2, 2])?)?,
        "where" => x.where_(&x.gt(&y)?, &y)?,
        "cat" => Tensor::cat(&[&x, &y], 1)?,
        "stack" => Tensor::stack(&[&x, &y], 0)?,
        "t_matmul" => x.t()?.matmul(&y)?,
        // Batched: a stack against one matrix, against a stack, broadcast, and vectors.
        "bmm_matrix" => x.reshape((2, 1, 3))?.matmul(&y.t()?)?,
        "bmm_stack" => x.reshape((2, 1, 3))?.matmul(&y.reshape((2, 3, 1))?)?,
        "bmm_broadcast" => x
            .reshape((1, 2, 3))?
            .matmul(&y.reshape((3, 2)).and_then(|t| t.expand((2, 3, 2)))?)?,
        "bmm_vector_left" => x.select(0, 0)?.matmul(&y.reshape((2, 3, 1))?)?,
        "bmm_vector_right" => x.reshape((2, 1, 3))?.matmul(&y.select(0, 1)?)?,
        "bmm_mismatch" => x.reshape((2, 1, 3))?.matmul(&y.reshape((3, 2, 1))?)?,
        _ => panic!("unknown view op {op:?}"),
    };
    if want == "out" {
        return Ok(out.detach());
    }
    weighted_backward(&out)?;
    let of = if want == "y" { &y } else { &x };
    of.grad()
        .ok_or_else(|| Error::Invalid("no gradient".into()))
}

fn empty_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    let (op, d, shape, want) = (w[1], dtype(w[2]), w[3], w[4]);
    let zeros = |dims: &[usize], d: DType| Tensor::zeros_dtype(dims.to_vec(), d, dev);
    let no_index = || zeros(&[0], DType::I64);
    let dims: Vec<usize> = match op {
        "ce" => vec![0, 3],
        "mse" => vec![0],
        "conv" => vec![0, 2, 5, 5],
        "pool" => vec![0, 2, 4, 4],
        _ => shape.split('x').map(|n| n.parse().unwrap()).collect(),
    };
    let x = zeros(&dims, d)?.requires_grad_(d.is_float())?;
    let last = x.rank() as isize - 1;
    let out = match op {
        "ce" => F::cross_entropy(&x, &no_index()?),
        "mse" => F::mse_loss(&x, &zeros(&[0], d)?),
        "conv" => F::conv2d(
            &x,
            &Tensor::ones_dtype([3, 2, 3, 3], d, dev)?,
            None,
            1,
            0,
            1,
            1,
        ),
        "pool" => F::max_pool2d(&x, 2, 2, 0, 1, false),
        "exp" => x.exp(),
        "relu" => x.relu(),
        "neg" => x.neg(),
        "add" => x.add(&x),
        "mul_scalar" => x.mul(2),
        "lt_scalar" => x.lt(1),
        "sum" => x.sum(),
        "mean" => x.mean(),
        "max" => x.max(),
        "argmax" => x.argmax(),
        "var" => x.var(),
        "std" => x.std(),
        "sum_d0" => x.sum_dim(0),
        "sum_dlast" => x.sum_dim(last),
        "mean_d0" => x.mean_dim(0),
        "mean_dlast" => x.mean_dim(last),
        "max_d0" => x.max_dim(0),
        "max_dlast" => x.max_dim(last),
        "argmax_d0" => x.argmax_dim(0),
        "argmax_dlast" => x.argmax_dim(last),
        "var_d0" => x.var_dim(0),
        "var_dlast" => x.var_dim(last),
        "softmax" => F::softmax(&x, last),
        "log_softmax_d0" => F::log_softmax(&x, 0),
        "matmul" => x.matmul(&x.transpose(0, last)?),
        "cat_d0" => Tensor::cat(&[&x, &x], 0),
        "cat_dlast" => Tensor::cat(&[&x, &x], last),
        "stack" => Tensor::stack(&[&x, &x], 1),
        "narrow" => x.narrow(0, 0, 0),
        "index_select" => x.index_select(0, &no_index()?),
        "flip" => x.flip(&[0]),
        "transpose" => x.transpose(0, last)?.contiguous(),
        "reshape" if x.rank() > 1 => x.reshape([-1, 3]),
        "reshape" => x.reshape([-1]),
        "cast" => x.to_dtype(if d == DType::I64 {
            DType::F64
        } else {
            DType::I64
        }),
        "where" => x.where_(&x.gt(0)?, &x.mul(0)?),
        "cumsum_d0" => x.cumsum(0),
        "cumsum_dlast" => x.cumsum(last),
        "cumprod_dlast" => x.cumprod(last),
        "prod" => x.prod(),
        "prod_d0" => x.prod_dim(0),
        "prod_dlast" => x.prod_dim(last),
        "any" => x.any(),
        "all" => x.all(),
        "any_d0" => x.any_dim(0),
        "all_dlast" => x.all_dim(last),
        "count_nonzero" => x.count_nonzero(),
        "amax" => x.amax(&[], false),
        "amax_d0" => x.amax(&[0], false),
        "amax_dlast" => x.amax(&[last], false),
        "logsumexp_d0" => x.logsumexp(0, false),
        "logsumexp_dlast" => x.logsumexp(last, false),
        "median" => x.median(),
        "median_dlast" => Ok(x.median_dim(last)?.0),
        "roll" => x.roll(&[1], &[]),
        "roll_d0" => x.roll(&[1], &[0]),
        "nonzero" => x.nonzero(),
        "unique" => x.unique(),
        "unique_counts" => Ok(x.unique_counts()?.1),
        "masked_select" => x.masked_select(&x.gt(0)?),
        "tile" => x.tile(&[2]),
        _ => panic!("unknown empty-tensor op {op:?}"),
    }?;
    out_or_grad(out, &x, want)
}

/// A case's answer: the result itself (`out`), or the gradient of `sum(result * w)` for `x`.
fn out_or_grad(out: Tensor, x: &Tensor, want: &str) -> Result<Tensor, Error> {
    if want == "out" {
        return Ok(out.detach());
    }
    weighted_backward(&out)?;
    x.grad().ok_or_else(|| Error::Invalid("no gradient".into()))
}

fn more_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    let (mut op, d, want) = (w[1], w[2], w[3]);
    match op {
        "linspace" => return Tensor::linspace(-3.0, 7.25, 7, dev),
        "linspace_one" => return Tensor::linspace(2.0, 5.0, 1, dev),
        "linspace_none" => return Tensor::linspace(0.0, 1.0, 0, dev),
        "eye" => return Tensor::eye(3, dev),
        "eye_none" => return Tensor::eye(0, dev),
        "logspace" => return Tensor::logspace(-1.5, 2.25, 7, 10.0, dev),
        "logspace_base2" => return Tensor::logspace(-1.0, 1.0, 5, 2.0, dev),
        "logspace_one" => return Tensor::logspace(0.0, 1.0, 1, 10.0, dev),
        "tril_indices" => return Tensor::tril_indices(3, 4, 1, dev),
        "triu_indices" => return Tensor::triu_indices(4, 3, -1, dev),
        _ => {}
    }
    let special = [
        "sisnan",
        "sisinf",
        "sisfinite",
        "sreciprocal",
        "snorm",
        "sleaky_relu",
        "ssilu",
        "ssoftplus",
        "sgelu",
        "selu",
        "shardtanh",
        "srelu6",
        "smish",
        "sisclose",
        "ssort",
        "stopk",
        "scumsum",
        "scumprod",
        "sprod",
        "snormalize",
        "sany",
        "sall",
        "samax",
        "slogsumexp",
        "smedian",
        "smedian_dim",
        "snonzero",
        "sunique",
        "shistc",
        "slog2",
        "sexp2",
        "snansum",
        "snansum_dim",
        "snanmean",
        "snanmean_dim",
        "strunc",
        "sfrac",
        "snan_to_num",
        "snan_to_num_args",
        "slogaddexp",
        "slogaddexp2",
        "sxlogy",
        "scummax",
        "scummin",
        "ssearchsorted",
        "squantile_dim",
        "snanquantile_dim",
        "slogsigmoid",
        "sselu_act",
        "sfmax",
        "sfmin",
        "shypot",
        "scopysign",
        "ssignbit",
        "sisposinf",
        "sisneginf",
        "ssinc",
        "smsort",
        "svector_norm3",
        "svector_norm_inf",
        "slogcumsumexp",
        "slgamma",
        "sdigamma",
        "spolygamma1",
        "serfc",
        "serfinv",
        "sndtr",
        "sentr",
        "sxlog1py",
    ];
    let x = if special.contains(&op) {
        op = &op[1..];
        input(d, 2, dev).requires_grad_(dtype(d).is_float())?
    } else {
        ramp(&[2, 3], 5, 2.0, 0.75, d, dev)?
    };
    let y = ramp(&[2, 3], 4, 1.0, 0.5, d, dev)?;
    let w1 = || ramp(&[3, 2, 2], 5, 2.0, 0.25, d, dev);
    let b1 = || ramp(&[3], 3, 1.0, 0.5, d, dev);
    // `input(d, 1)` with 5 for its zeros: a divisor an integer op takes.
    let nonzero = || {
        let t = input(d, 1, dev);
        t.masked_fill(&t.eq(0)?, 5.0)
    };
    let flat = |parts: Vec<Tensor>| -> Result<Tensor, Error> {
        let parts = parts
            .iter()
            .map(Tensor::flatten)
            .collect::<Result<Vec<_>, _>>()?;
        Tensor::cat(&parts, 0)
    };
    // The pieces' values, then each piece's size (as torch_parity.py's `pieces`).
    let pieces = |parts: Vec<Tensor>| -> Result<Tensor, Error> {
        let sizes: Vec<i64> = parts.iter().map(|p| p.numel() as i64).collect();
        let n = sizes.len();
        let mut all = parts
            .iter()
            .map(Tensor::flatten)
            .collect::<Result<Vec<_>, _>>()?;
        all.push(Tensor::from_vec(sizes, [n], dev)?);
        Tensor::cat(&all, 0)
    };
    let idx = |v: Vec<i64>, shape: &[usize]| Tensor::from_vec(v, shape.to_vec(), dev);
    // Targets of 1 or -1, class indices and label lists (as torch_parity.py's pm, cls, ml).
    let pm = || y.gt(0.5)?.to_dtype(DType::I64)?.mul(2)?.sub(1);
    let cls = || idx(vec![2, 0], &[2]);
    let ml = || idx(vec![2, -1, 0, 1, 1, -1], &[2, 3]);
    // A regular 3 x 3 matrix holding x (as torch_parity.py's `sq`).
    let sq =
        || Tensor::cat(&[x.clone(), y.narrow(0, 0, 1)?], 0)?.add(&Tensor::eye(3, dev)?.mul(3)?);
    // sq with its last row zeroed: singular (as torch_parity.py's `sing`).
    let sing = || -> Result<Tensor, Error> {
        let s = sq()?;
        Tensor::cat(&[s.narrow(0, 0, 2)?, s.narrow(0, 2, 1)?.mul(0)?], 0)
    };
    let both = |(v, i): (Tensor, Tensor)| -> Result<Tensor, Error> {
        Tensor::cat(
            &[
                v.to_dtype(DType::F64)?.flatten()?,
                i.to_dtype(DType::F64)?.flatten()?,
            ],
            0,
        )
    };
    let out = match op {
        "isnan" => x.isnan(),
        "isinf" => x.isinf(),
        "isfinite" => x.isfinite(),
        "square" => x.square(),
        "reciprocal" => x.reciprocal(),
        "rsqrt" => x.rsqrt(),
        "norm" => x.norm(),
        "leaky_relu" => F::leaky_relu(&x, 0.1),
        "silu" => F::silu(&x),
        "softplus" => F::softplus(&x),
        "gelu" => F::gelu(&x),
        "elu" => F::elu(&x, 1.0),
        "elu_half" => F::elu(&x, 0.5),
        "hardtanh" => F::hardtanh(&x, -1.0, 1.0),
        "hardtanh_wide" => F::hardtanh(&x, -0.75, 1.5),
        "relu6" => F::relu6(&x),
        "relu6_big" if x.dtype().is_float() => F::relu6(&x.mul(4)?),
        "relu6_big" => F::relu6(&x),
        "mish" => F::mish(&x),
        "gelu_wide" if x.dtype().is_float() => F::gelu(&x.mul(4)?),
        "gelu_wide" => F::gelu(&x),
        "softplus_big" if x.dtype().is_float() => F::softplus(&x.mul(30)?),
        "softplus_big" => F::softplus(&x),
        "isclose" => x.isclose(&y, 0.5, 0.25),
        "allclose" => {
            let close = x.allclose(&x.mul(1)?, 0.0, 0.0)?;
            Tensor::from_vec(vec![close], (), Device::Cpu)
        }
        "masked_fill" => x.masked_fill(&input("bool", 1, dev), 2.5),
        "tril" => x.tril(0),
        "triu" => x.triu(1),
        "tril_neg" => x.tril(-1),
        "outer" => x.select(0, 0)?.outer(&y.select(0, 1)?),
        "dot" => x.select(0, 0)?.dot(&y.select(0, 1)?),
        "repeat" => x.repeat(&[2, 1]),
        "repeat_more" => x.repeat(&[2, 1, 2]),
        "chunk" => flat(x.chunk(2, 1)?),
        "chunk_many" => flat(x.chunk(4, 1)?),
        "split" => flat(x.split(2, 1)?),
        "sort" => both(x.sort(1, false)?),
        "sort_desc" => Ok(x.sort(1, true)?.0),
        "argsort" => x.argsort(0, false),
        "topk" => both(x.topk(2, 1, true)?),
        "topk_smallest" => Ok(x.topk(2, 1, false)?.0),
        "topk_dim0" => Ok(x.topk(1, 0, true)?.1),
        "zeros_like" => x.zeros_like(),
        "ones_like" => x.ones_like(),
        "full_like" => x.full_like(2.5),
        "cumsum" => x.cumsum(1),
        "cumsum_d0" => x.cumsum(0),
        "cumprod" => x.cumprod(1),
        "cumprod_d0" => x.cumprod(0),
        "cumprod_zeros" => x.repeat(&[1, 2])?.cumprod(1),
        "prod" => x.prod(),
        "prod_dim" => x.prod_dim(1),
        "prod_keepdim" => x.prod_keepdim(0),
        "prod_zeros" => x.repeat(&[1, 2])?.prod_dim(1),
        "normalize" => F::normalize(&x, 1),
        "normalize_d0" => F::normalize(&x, 0),
        "norm_dim" => x.norm_dim(1),
        "norm_keepdim" => x.norm_keepdim(0),
        "cosine" => F::cosine_similarity(&x, &y, 1),
        "cosine_pairs" => F::cosine_similarity(&x.unsqueeze(1)?, &y.unsqueeze(0)?, 2),
        "one_hot" => F::one_hot(&x.to_dtype(DType::I64)?.abs()?, None),
        "one_hot_n" => F::one_hot(&x.to_dtype(DType::I64)?.abs()?, Some(4)),
        "any" => x.any(),
        "any_dim" => x.any_dim(1),
        "all" => x.all(),
        "all_dim" => x.all_dim(0),
        "count_nonzero" => x.count_nonzero(),
        "count_nonzero_dim" => x.count_nonzero_dim(1),
        "amax" => x.amax(&[1], false),
        "amin_all" => x.amin(&[0, 1], false),
        "amax_keep" => x.amax(&[0], true),
        "amax_ties" => x.repeat(&[1, 2])?.amax(&[1], false),
        "logsumexp" => x.logsumexp(1, false),
        "logsumexp_keep" => x.logsumexp(0, true),
        "var_mean" => {
            let (v, m) = x.var_mean(1)?;
            flat(vec![v, m])
        }
        "std_mean" => {
            let (v, m) = x.std_mean(1)?;
            flat(vec![v, m])
        }
        "median" => x.median(),
        "median_dim" => both(x.median_dim(1)?),
        "median_d0" => both(x.median_dim(0)?),
        "kthvalue" => both(x.kthvalue(2, 1)?),
        "roll" => x.roll(&[1], &[1]),
        "roll_flat" => x.roll(&[2], &[]),
        "roll2" => x.roll(&[1, -4], &[0, 1]),
        "diag" => x.diag(0),
        "diag_up" => x.diag(1),
        "diag_vec" => x.select(0, 0)?.diag(0),
        "diag_vec_down" => x.select(0, 1)?.diag(-1),
        "trace" => x.trace(),
        "movedim" => x.unsqueeze(2)?.movedim(0, 2),
        "swapaxes" => x.swapaxes(0, 1),
        "unflatten" => x.flatten()?.unflatten(0, &[3, 2]),
        "tile" => x.tile(&[2]),
        "tile_more" => x.tile(&[2, 1, 1]),
        "nonzero" => x.nonzero(),
        "masked_select" => x.masked_select(&input("bool", 1, dev)),
        "masked_select_row" => x.masked_select(&input("bool", 1, dev).select(0, 0)?),
        "unique" => x.unique(),
        "unique_counts" => both(x.unique_counts()?),
        "bincount" => x.flatten()?.abs()?.bincount(0),
        "bincount_min" => x.flatten()?.abs()?.bincount(8),
        "histc" => x.histc(4, -2.0, 2.0),
        "histc_auto" => x.histc(3, 0.0, 0.0),
        "log2" => x.log2(),
        "log10" => x.log10(),
        "exp2" => x.exp2(),
        "trunc" => x.trunc(),
        "frac" => x.frac(),
        "lerp" => x.lerp(&y, 0.25),
        "lerp_far" => x.lerp(&y, 0.75),
        "addmm" => y
            .select(0, 0)?
            .narrow(0, 0, 2)?
            .addmm(&x, &y.t()?, 2.0, 3.0),
        "addmm_beta0" => y
            .select(0, 0)?
            .narrow(0, 0, 2)?
            .addmm(&x, &y.t()?, 0.0, 1.0),
        "equal" => Tensor::from_vec(vec![x.equal(&x.deep_clone()?)?], (), Device::Cpu),
        "equal_not" => Tensor::from_vec(vec![x.equal(&y)?], (), Device::Cpu),
        "pad" => F::pad(&x, &[1, 2], "constant", 0.0),
        "pad_value" => F::pad(&x, &[1, 1, 1, 0], "constant", 2.5),
        "pad_crop" => F::pad(&x, &[-1, 1, 0, -1], "constant", 0.0),
        "pad_three" => F::pad(&x, &[1, 1, 1, 1, 1, 1], "constant", 0.0),
        "reflect" => F::pad(&x.unsqueeze(0)?, &[2, 1], "reflect", 0.0),
        "reflect2" => F::pad(&x.reshape([1, 1, 2, 3])?, &[1, 2, 1, 0], "reflect", 0.0),
        "reflect_crop" => F::pad(&x.unsqueeze(0)?, &[-1, 2], "reflect", 0.0),
        "reflect_far" => F::pad(&x.unsqueeze(0)?, &[3, 0], "reflect", 0.0),
        "replicate" => F::pad(&x.unsqueeze(0)?, &[2, 3], "replicate", 0.0),
        "replicate2" => F::pad(&x.unsqueeze(0)?, &[1, 0, 2, 1], "replicate", 0.0),
        "circular" => F::pad(&x.unsqueeze(0)?, &[1, 2, 1, 0], "circular", 0.0),
        "circular_far" => F::pad(&x.unsqueeze(0)?, &[4, 0], "circular", 0.0),
        "pad_mode" => F::pad(&x, &[1, 1], "reflect", 0.0),
        "nansum" => x.nansum(),
        "nansum_dim" => x.nansum_dim(1),
        "nanmean" => x.nanmean(),
        "nanmean_dim" => x.nanmean_dim(0),
        "diagonal" => x.diagonal(0, 0, 1),
        "diagonal_below" => x.t()?.diagonal(-1, 0, 1),
        "diagonal_3d" => x.unsqueeze(1)?.diagonal(0, 0, 2),
        "new_zeros" => x.new_zeros([2, 2]),
        "new_full" => x.new_full([3], 2.5),
        "fmod_nz" => x.fmod(&nonzero()?),
        "remainder_nz" => x.remainder(&nonzero()?),
        "floor_divide_nz" => input(d, 0, dev).floor_divide(&nonzero()?),
        "fmod_wide" => input(d, 0, dev).fmod(&nonzero()?),
        "remainder_wide" => input(d, 0, dev).remainder(&nonzero()?),
        "deg2rad" => x.deg2rad(),
        "rad2deg" => x.rad2deg(),
        "atan2_bcast" => x.atan2(&y.select(0, 1)?),
        "nan_to_num" => x.nan_to_num(0.0, None, None),
        "nan_to_num_args" => x.nan_to_num(1.5, Some(100.0), Some(-100.0)),
        "logical_xor" => x.logical_xor(&y),
        "logaddexp" => x.logaddexp(&y),
        "logaddexp2" => x.logaddexp2(&y),
        "xlogy" => x.xlogy(&y.abs()?),
        "logit" => x.mul(0.3)?.add(0.5)?.logit(None),
        "logit_eps" => x.mul(0.3)?.add(0.5)?.logit(Some(0.2)),
        "cdist" => x.cdist(&y, 2.0),
        "cdist_p1" => x.cdist(&y, 1.0),
        "cdist_inf" => x.cdist(&y, f64::INFINITY),
        "cdist_p0" => x.cdist(&y, 0.0),
        "cdist_p3" => x.cdist(&y, 3.0),
        "cdist_self" => x.cdist(&x, 2.0),
        "dist" => x.dist(&y, 2.0),
        "dist_p3" => x.dist(&y, 3.0),
        "dist_inf" => x.dist(&y, f64::INFINITY),
        "cross" => x.cross(&y, -1),
        "unbind" => flat(x.unbind(1)?),
        "unbind_d0" => flat(x.unbind(0)?),
        "meshgrid_ij" | "meshgrid_xy" => {
            let (a, b) = (x.select(0, 0)?, y.select(0, 1)?.narrow(0, 0, 2)?);
            flat(Tensor::meshgrid(&[&a, &b], &op[9..])?)
        }
        "repeat_interleave" => x.repeat_interleave(2, None),
        "repeat_interleave_dim" => x.repeat_interleave(3, Some(0)),
        "repeat_interleave_counts" => x.repeat_interleave_counts(
            &Tensor::from_vec(vec![1i64, 0, 2], 3, Device::Cpu)?.to(dev)?,
            Some(1),
        ),
        "cummax" => both(x.cummax(1)?),
        "cummax_d0" => both(x.cummax(0)?),
        "cummin" => both(x.cummin(1)?),
        "searchsorted" => Tensor::searchsorted(&y.flatten()?.sort(0, false)?.0, &x, false),
        "searchsorted_right" => Tensor::searchsorted(&y.flatten()?.sort(0, false)?.0, &x, true),
        "searchsorted_rows" => Tensor::searchsorted(&y.sort(1, false)?.0, &x, false),
        "bucketize" => x.bucketize(&y.flatten()?.sort(0, false)?.0, false),
        "bucketize_right" => x.bucketize(&y.flatten()?.sort(0, false)?.0, true),
        "index_int" => x.i(1),
        "index_neg" => x.i((.., -1)),
        "index_step" => x.i((.., (0..).step_by(2))),
        "index_range" => x.i((.., 1..)),
        "index_none" => x.i((NewAxis, 0)),
        "index_ellipsis" => x.i((Ellipsis, 1)),
        "index_tensor" => x.i((
            ..,
            &Tensor::from_vec(vec![2i64, 0, 2], 3, Device::Cpu)?.to(dev)?,
        )),
        "index_tensor2d" => {
            x.i(&Tensor::from_vec(vec![1i64, 0, 1, 1], (2, 2), Device::Cpu)?.to(dev)?)
        }
        "index_mask" => x.i(&y.gt(0)?),
        "index_clamp" => x.i((.., 1..100)),
        "index_step_range" => x.i((.., (0..3).step_by(2))),
        "conv1d" => F::conv1d(&x.unsqueeze(0)?, &w1()?, Some(&b1()?), 1, 0, 1, 1),
        "conv1d_pad" => F::conv1d(&x.unsqueeze(0)?, &w1()?, Some(&b1()?), 2, 1, 1, 1),
        "conv1d_same" => F::conv1d(&x.unsqueeze(0)?, &w1()?, None, 1, "same", 2, 1),
        "conv1d_groups" => F::conv1d(
            &x.unsqueeze(0)?,
            &ramp(&[2, 1, 2], 5, 2.0, 0.25, d, dev)?,
            None,
            1,
            0,
            1,
            2,
        ),
        "conv1d_unbatched" => F::conv1d(&x, &w1()?, None, 1, 0, 1, 1),
        "max_pool1d" => F::max_pool1d(&x.unsqueeze(0)?, 2, 1, 0, 1, false),
        "max_pool1d_pad" => F::max_pool1d(&x.unsqueeze(0)?, 2, 2, 1, 1, false),
        "avg_pool1d" => F::avg_pool1d(&x.unsqueeze(0)?, 2, 1, 0, false, true),
        "avg_pool1d_pad" => F::avg_pool1d(&x.unsqueeze(0)?, 3, 2, 1, false, false),
        "unfold" => F::unfold(&x.reshape([1, 1, 2, 3])?, 2, 1, 0, 1),
        "unfold_pad" => F::unfold(&x.reshape([1, 1, 2, 3])?, 2, 1, 1, 2),
        "unfold_3d" => F::unfold(&x.reshape([1, 2, 3])?, (1, 2), 1, 0, 1),
        "fold" => F::fold(&x.reshape([1, 2, 3])?, (1, 4), (1, 2), 1, 0, 1),
        "fold_overlap" => F::fold(&x.reshape([1, 2, 3])?, (3, 2), (1, 2), 1, 0, 1),
        "kl_div" => F::kl_div(&x, &y.abs()?, "mean", false),
        "kl_div_batchmean" => F::kl_div(&x, &y.abs()?, "batchmean", false),
        "kl_div_sum" => F::kl_div(&x, &y.abs()?, "sum", false),
        "kl_div_none" => F::kl_div(&x, &y.abs()?, "none", false),
        "kl_div_log" => F::kl_div(&x, &y, "batchmean", true),
        "kl_div_bad" => F::kl_div(&x, &y.abs()?, "foo", false),
        "var_pop" => x.var_with(Some(1), 0.0, false),
        "var_keep" => x.var_with(Some(0), 1.0, true),
        "std_pop_all" => x.std_with(None, 0.0, false),
        "std_keep_all" => x.std_with(None, 2.0, true),
        "quantile" => x.quantile(0.3, None, false),
        "quantile_dim" => x.quantile(0.75, Some(1), false),
        "quantile_keep" => x.quantile(0.4, Some(0), true),
        "quantile_end" => x.quantile(1.0, Some(1), false),
        "nanquantile_dim" => x.nanquantile(0.6, Some(1), false),
        "quantile_bad" => x.quantile(1.5, None, false),
        "cov" => x.cov(1.0),
        "cov_pop" => x.cov(0.0),
        "cov_vec" => x.select(0, 0)?.cov(1.0),
        "corrcoef" => x.add(&y)?.corrcoef(),
        "corrcoef_vec" => x.select(0, 1)?.corrcoef(),
        "aminmax" => {
            let (a, b) = x.aminmax(None, false)?;
            Tensor::stack(&[a, b], 0)
        }
        "aminmax_dim" => {
            let (a, b) = x.aminmax(Some(1), false)?;
            Tensor::cat(&[a, b], 0)
        }
        "diff" => x.diff(1, -1),
        "diff_d0" => x.diff(1, 0),
        "diff_two" => x.diff(2, -1),
        "flatten_from" => x.unsqueeze(0)?.flatten_from(1),
        "flatten_dims" => x.reshape([1, 2, 3, 1])?.flatten_dims(1, 2),
        "expand_as" => x.select(0, 0)?.expand_as(&y),
        "type_as" => x.type_as(&y.to_dtype(DType::F64)?),
        "take" => x.take(&Tensor::from_vec(vec![5i64, 0, -1, 2], 4, Device::Cpu)?.to(dev)?),
        "take_2d" => x.take(&Tensor::from_vec(vec![1i64, 2, 3, 4], (2, 2), Device::Cpu)?.to(dev)?),
        "index_fill" => x.index_fill(
            1,
            &Tensor::from_vec(vec![0i64, 2], 2, Device::Cpu)?.to(dev)?,
            2.0,
        ),
        "index_copy" => x.index_copy(
            0,
            &Tensor::from_vec(vec![1i64], 1, Device::Cpu)?.to(dev)?,
            &y.narrow(0, 0, 1)?,
        ),
        "index_fill_" | "index_copy_" => {
            let t = x.detach().deep_clone()?;
            if op == "index_fill_" {
                t.index_fill_(
                    1,
                    &Tensor::from_vec(vec![2i64], 1, Device::Cpu)?.to(dev)?,
                    2.0,
                )?;
            } else {
                t.index_copy_(
                    1,
                    &Tensor::from_vec(vec![2i64, 0], 2, Device::Cpu)?.to(dev)?,
                    &y.detach().narrow(1, 0, 2)?,
                )?;
            }
            Ok(t)
        }
        "rot90" => x.rot90(1, [0, 1]),
        "rot90_k2" => x.rot90(2, [0, 1]),
        "rot90_neg" => x.unsqueeze(0)?.rot90(-1, [1, 2]),
        "fliplr" => x.fliplr(),
        "flipud" => x.flipud(),
        "pairwise_distance" => F::pairwise_distance(&x, &y, 2.0, 1e-6, false),
        "pairwise_distance_p1" => F::pairwise_distance(&x, &y, 1.0, 1e-6, true),
        "pairwise_distance_inf" => F::pairwise_distance(&x, &y, f64::INFINITY, 1e-6, false),
        "hardsigmoid" => F::hardsigmoid(&x),
        "hardsigmoid_wide" | "hardswish_wide" => {
            let wide = if x.dtype().is_float() {
                x.mul(4.0)?
            } else {
                x.clone()
            };
            if op == "hardswish_wide" {
                F::hardswish(&wide)
            } else {
                F::hardsigmoid(&wide)
            }
        }
        "hardswish" => F::hardswish(&x),
        "logsigmoid" => F::logsigmoid(&x),
        "softsign" => F::softsign(&x),
        "tanhshrink" => F::tanhshrink(&x),
        "softshrink" => F::softshrink(&x, 0.75),
        "hardshrink" => F::hardshrink(&x, 0.75),
        "glu" => F::glu(&x.repeat(&[1, 2])?, -1),
        "glu_d0" => F::glu(&x, 0),
        "celu" => F::celu(&x, 1.0),
        "celu_half" => F::celu(&x, 0.5),
        "selu_act" => F::selu(&x),
        "softmin" => F::softmin(&x, 1),
        "prelu" => F::prelu(&x, &ramp(&[3], 3, 1.0, 0.25, d, dev)?),
        "prelu_one" => F::prelu(&x, &ramp(&[1], 3, 1.0, 0.25, d, dev)?),
        "mm" => x.mm(&y.t()?),
        "bmm" => x.unsqueeze(0)?.bmm(&y.t()?.unsqueeze(0)?),
        "mv" => x.mv(&y.select(0, 1)?),
        "inner" => x.inner(&y),
        "inner_vec" => x.select(0, 0)?.inner(&y.select(0, 1)?),
        "vdot" => x.select(0, 0)?.vdot(&y.select(0, 1)?),
        "kron" => x.kron(&y.narrow(1, 0, 2)?),
        "kron_vec" => x.select(0, 0)?.kron(&y),
        "addmv" => y
            .select(0, 0)?
            .narrow(0, 0, 2)?
            .addmv(&x, &y.select(0, 1)?, 2.0, 3.0),
        "addr" => x.addr(&y.select(1, 0)?, &y.select(0, 1)?, 2.0, 3.0),
        "baddbmm" => y.select(0, 0)?.narrow(0, 0, 2)?.baddbmm(
            &x.unsqueeze(0)?,
            &y.t()?.unsqueeze(0)?,
            2.0,
            3.0,
        ),
        "addbmm" => y.select(0, 0)?.narrow(0, 0, 1)?.addbmm(
            &x.reshape([2, 1, 3])?,
            &y.reshape([2, 3, 1])?,
            2.0,
            3.0,
        ),
        "addmm_half" => y
            .select(0, 0)?
            .narrow(0, 0, 2)?
            .addmm(&x, &y.t()?, 0.5, 1.5),
        "addcmul" => x.addcmul(&x, &y, 2.0),
        "addcmul_half" => y.addcmul(&x, &y, 0.5),
        "addcdiv" => y.addcdiv(&x, &nonzero()?, 0.5),
        "addcdiv_int" => x.addcdiv(&y, &nonzero()?, 2.0),
        "fmax" => x.fmax(&y),
        "fmin" => x.fmin(&y),
        "hypot" => x.hypot(&y),
        "copysign" => x.copysign(&y),
        "copysign_zero" => x.copysign(&y.mul(-0.0)?),
        "heaviside" => x.heaviside(&y),
        "signbit" => x.signbit(),
        "isposinf" => x.isposinf(),
        "isneginf" => x.isneginf(),
        "sinc" => x.sinc(),
        "float_power" => x.float_power(2),
        "float_power_t" => x.float_power(&y),
        "sgn" => x.sgn(),
        "clip" => x.clip(-1, 1),
        "arccos" => x.arccos(),
        "arctan2" => x.arctan2(&y),
        "true_divide" => x.true_divide(&nonzero()?),
        "atleast_2d" => x.select(0, 0)?.select(0, 0)?.atleast_2d(),
        "atleast_3d" => x.select(0, 0)?.atleast_3d(),
        "atleast_3d_mat" => x.atleast_3d(),
        "hstack" => Tensor::hstack(&[&x, &y]),
        "hstack_vec" => Tensor::hstack(&[x.select(0, 0)?, y.select(0, 1)?]),
        "vstack" => Tensor::vstack(&[x.clone(), y.select(0, 0)?]),
        "dstack" => Tensor::dstack(&[&x, &y]),
        "column_stack" => Tensor::column_stack(&[x.select(0, 0)?, y.t()?]),
        "tensor_split" => pieces(x.tensor_split(2, 1)?),
        "tensor_split_many" => pieces(x.tensor_split(4, 1)?),
        "tensor_split_at" => pieces(x.tensor_split_at(&[1, 5, -2], 1)?),
        "hsplit" => pieces(x.hsplit(3)?),
        "hsplit_bad" => pieces(x.hsplit(2)?),
        "vsplit" => pieces(x.vsplit(2)?),
        "dsplit" => pieces(x.reshape([1, 2, 3])?.dsplit(3)?),
        "block_diag" => {
            Tensor::block_diag(&[x.clone(), y.select(0, 0)?, y.select(0, 1)?.select(0, 0)?])
        }
        "cartesian_prod" => {
            Tensor::cartesian_prod(&[x.select(0, 0)?, y.select(0, 1)?.narrow(0, 0, 2)?])
        }
        "take_along_dim" => x.take_along_dim(&x.sort(1, false)?.1, Some(1)),
        "take_along_dim_flat" => x.take_along_dim(&idx(vec![5, 0, 2], &[3])?, None),
        "take_along_dim_bcast" => x.take_along_dim(&idx(vec![1, 0, 1], &[3, 1])?, Some(0)),
        "ravel" => x.t()?.ravel(),
        "msort" => x.msort(),
        "moveaxis" => x.unsqueeze(2)?.moveaxis(0, 2),
        "det" => sq()?.det(),
        "det_2" => x.narrow(1, 0, 2)?.det(),
        "det_batch" => Tensor::stack(&[sq()?, sq()?.t()?.mul(2)?], 0)?.det(),
        "slogdet" => {
            let (sign, logabs) = sq()?.sub(&Tensor::eye(3, dev)?.mul(5)?)?.slogdet()?;
            Tensor::stack(&[sign, logabs], 0)
        }
        "inv" => linalg::inv(&sq()?),
        "inv_2" => linalg::inv(&x.narrow(1, 0, 2)?),
        "inv_singular" => linalg::inv(&x.narrow(1, 0, 2)?.mul(0)?),
        "solve" => linalg::solve(&sq()?, &y.t()?),
        "solve_vec" => linalg::solve(&sq()?, &y.select(0, 1)?),
        "solve_batch" => linalg::solve(&Tensor::stack(&[sq()?, sq()?.t()?], 0)?, &y.t()?),
        "solve_bad" => linalg::solve(&sq()?, &y),
        "lgamma" => x.lgamma(),
        "digamma" => x.digamma(),
        "polygamma1" => x.polygamma(1),
        "polygamma2" => x.polygamma(2),
        "polygamma3" => x.polygamma(3),
        "mvlgamma" => x.mvlgamma(2),
        "mvlgamma_3" => x.mul(&x)?.add(1)?.mvlgamma(3),
        "erfc" => x.erfc(),
        "erfinv" => x.mul(0.5)?.erfinv(),
        "zeta" => x.mul(&x)?.add(1.5)?.zeta(&y.mul(&y)?.add(0.25)?),
        "zeta_q" => y.mul(&y)?.add(2)?.zeta(&x),
        "zeta_number" => special::zeta(2.5, &x.mul(&x)?.add(0.5)?),
        "zeta_other" => x.mul(&x)?.add(1.25)?.zeta(2),
        "ndtr" => special::ndtr(&x.mul(3)?),
        "entr" => special::entr(&x),
        "xlog1py" => special::xlog1py(&x, &y),
        "vector_norm3" => linalg::vector_norm(&x, 3.0, None, false),
        "vector_norm_dim" => linalg::vector_norm(&x, 2.0, Some(&[0]), true),
        "vector_norm_inf" => linalg::vector_norm(&x, f64::INFINITY, Some(&[1]), false),
        "vector_norm_ninf" => linalg::vector_norm(&x, f64::NEG_INFINITY, Some(&[1]), false),
        "vector_norm0" => linalg::vector_norm(&x, 0.0, Some(&[0, 1]), false),
        "vector_norm_neg" => linalg::vector_norm(&x, -1.5, Some(&[0]), false),
        "vector_norm_half" => linalg::vector_norm(&x, 0.5, None, false),
        "matrix_norm_fro" => linalg::matrix_norm(&x, "fro", false),
        "matrix_norm1" => linalg::matrix_norm(&x, "1", false),
        "matrix_norm_ninf" => linalg::matrix_norm(&x, "-inf", false),
        "matrix_norm_inf" => linalg::matrix_norm(&x, "inf", true),
        "matrix_power0" => linalg::matrix_power(&sq()?, 0),
        "matrix_power1" => linalg::matrix_power(&sq()?, 1),
        "matrix_power3" => linalg::matrix_power(&sq()?, 3),
        "matrix_power5" => linalg::matrix_power(&sq()?, 5),
        "matrix_power_neg" => linalg::matrix_power(&sq()?, -2),
        "cholesky" | "cholesky_upper" => {
            let s = sq()?;
            linalg::cholesky(&s.matmul(&s.transpose(-2, -1)?)?, op == "cholesky_upper")
        }
        "cholesky_bad" => linalg::cholesky(&sq()?.sub(&Tensor::eye(3, dev)?.mul(5)?)?, false),
        "qr" | "qr_tall" | "qr_sq" | "qr_complete" => {
            let (a, mode) = match op {
                "qr" => (x.clone(), "reduced"),
                "qr_sq" => (sq()?, "reduced"),
                "qr_tall" => (x.t()?, "reduced"),
                _ => (x.t()?, "complete"),
            };
            let (q, r) = linalg::qr(&a, mode)?;
            flat(vec![q, r])
        }
        "qr_r" => Ok(linalg::qr(&x.t()?, "r")?.1),
        "eigh" | "eigh_upper" => {
            let (a, uplo) = if op == "eigh" {
                (sq()?.add(&sq()?.t()?)?, "L")
            } else {
                (sq()?, "U")
            };
            let (l, v) = linalg::eigh(&a, uplo)?;
            flat(vec![l, v.mul(&v)?])
        }
        "eigvalsh" => linalg::eigvalsh(&sq()?.add(&sq()?.t()?)?, "L"),
        "svd" | "svd_full" | "svd_sq" => {
            let (a, full) = match op {
                "svd" => (x.clone(), false),
                "svd_full" => (x.t()?, true),
                _ => (sq()?, true),
            };
            let (u, s, vh) = linalg::svd(&a, full)?;
            flat(vec![u.mul(&u)?, s, vh.mul(&vh)?])
        }
        "svdvals" => linalg::svdvals(&x),
        "matrix_norm2" => linalg::matrix_norm(&x, "2", false),
        "matrix_norm_n2" => linalg::matrix_norm(&x, "-2", false),
        "matrix_norm_nuc" => linalg::matrix_norm(&x, "nuc", true),
        "matrix_rank" => linalg::matrix_rank(&sq()?, None, None),
        "matrix_rank_low" => {
            linalg::matrix_rank(&x.select(0, 0)?.outer(&y.select(0, 1)?)?, None, None)
        }
        "matrix_rank_rtol" => linalg::matrix_rank(&sq()?, None, Some(0.5)),
        "pinv" => linalg::pinv(&x, None, None),
        "pinv_sq" => linalg::pinv(&sq()?, None, None),
        "pinv_rank1" => linalg::pinv(&x.select(0, 0)?.outer(&y.select(0, 1)?)?, None, None),
        "cond" => linalg::cond(&sq()?, "2"),
        "cond_fro" => linalg::cond(&sq()?, "fro"),
        "cond_tall" => linalg::cond(&x.t()?, "2"),
        "solve_triangular" => linalg::solve_triangular(&sq()?, &y.t()?, true, true, false),
        "solve_triangular_right" => linalg::solve_triangular(&sq()?, &y, false, false, false),
        "solve_triangular_unit" => linalg::solve_triangular(&sq()?, &y.t()?, false, true, true),
        "lstsq" | "lstsq_res" | "lstsq_rank" | "lstsq_vec" => {
            let b = if op == "lstsq_vec" {
                y.select(0, 0)?
            } else {
                y.t()?
            };
            let (x, res, rank, _) = linalg::lstsq(&x.t()?, &b, None, None)?;
            Ok(match op {
                "lstsq_res" => res,
                "lstsq_rank" => rank,
                _ => x,
            })
        }
        "lstsq_gelsd" => {
            let (x, res, _, _) = linalg::lstsq(&x.t()?, &y.t()?, None, Some("gelsd"))?;
            flat(vec![x, res])
        }
        "multi_dot" => linalg::multi_dot(&[&x, &y.t()?, &x]),
        "multi_dot_vec" => linalg::multi_dot(&[&x.select(0, 0)?, &y.t()?, &x, &y.select(0, 1)?]),
        "vecdot" => linalg::vecdot(&x, &y, -1),
        "vecdot_d0" => linalg::vecdot(&x, &y, 0),
        "vander" => linalg::vander(&x.select(0, 0)?, None),
        "vander_n" => linalg::vander(&x, Some(4)),
        "lu_factor" => Ok(linalg::lu_factor(&sq()?)?.0),
        "lu_pivots" => Ok(linalg::lu_factor(&sq()?)?.1),
        "lu" | "lu_tall" | "lu_wide" => {
            let a = match op {
                "lu" => sq()?,
                "lu_tall" => x.t()?,
                _ => x.clone(),
            };
            let (p, l, u) = linalg::lu(&a)?;
            flat(vec![p, l, u])
        }
        "matrix_exp" => linalg::matrix_exp(&sq()?.mul(0.5)?),
        "matrix_exp_big" => sq()?.matrix_exp(),
        "matrix_exp_batch" => {
            linalg::matrix_exp(&Tensor::stack(&[sq()?.mul(0.1)?, sq()?.mul(-0.3)?], 0)?)
        }
        "lnorm" => linalg::norm(&x, None, None, false),
        "lnorm_ord" => linalg::norm(&x.select(0, 0)?, Some("3"), None, false),
        "lnorm_dim" => linalg::norm(&x, None, Some(&[1]), false),
        "lnorm_mat" => linalg::norm(&x, Some("nuc"), None, false),
        "lnorm_mat_dims" => linalg::norm(&x.reshape([2, 1, 3])?, Some("inf"), Some(&[2, 0]), true),
        "logdet" => sq()?.logdet(),
        "logdet_neg" => sq()?.sub(&Tensor::eye(3, dev)?.mul(5)?)?.logdet(),
        "cholesky_solve"
        | "cholesky_solve_upper"
        | "cholesky_inverse"
        | "cholesky_inverse_upper" => {
            let s = sq()?;
            let upper = op.ends_with("upper");
            let l = linalg::cholesky(&s.matmul(&s.t()?)?, upper)?;
            if op.starts_with("cholesky_solve") {
                x.t()?.cholesky_solve(&l, upper)
            } else {
                l.cholesky_inverse(upper)
            }
        }
        "pinverse" => x.pinverse(1e-15),
        "inv_ex" => {
            let (inv, info) = linalg::inv_ex(&sq()?)?;
            flat(vec![inv, info])
        }
        "inv_ex_singular" => Ok(linalg::inv_ex(&Tensor::stack(&[sing()?, sq()?], 0)?)?.1),
        "solve_ex" => {
            let (x, info) = linalg::solve_ex(&sq()?, &y.t()?)?;
            flat(vec![x, info])
        }
        "cholesky_ex" => {
            let (l, info) = linalg::cholesky_ex(&sq()?.matmul(&sq()?.t()?)?, false)?;
            flat(vec![l, info])
        }
        "cholesky_ex_bad" => {
            let spd = sq()?.matmul(&sq()?.t()?)?;
            let d = Tensor::from_vec(vec![1.0, -1.0, 1.0], [3], dev)?
                .to_dtype(spd.dtype())?
                .diag(0)?;
            Ok(linalg::cholesky_ex(&Tensor::stack(&[spd.clone(), spd.neg()?, d], 0)?, false)?.1)
        }
        "lu_factor_ex" | "lu_factor_ex_singular" => {
            let a = if op == "lu_factor_ex" {
                sq()?
            } else {
                Tensor::stack(&[sing()?, sq()?], 0)?
            };
            let (lu, piv, info) = linalg::lu_factor_ex(&a)?;
            flat(vec![lu, piv, info])
        }
        "lu_factor_singular" => Ok(linalg::lu_factor(&sing()?)?.0),
        "tensordot" => x.tensordot(&y.t()?, 1),
        "tensordot_dims" => x.tensordot_dims(&y, &[0], &[0]),
        "tensordot_0" => x.select(0, 0)?.tensordot(&y.select(0, 0)?, 0),
        "tensordot_bcast" => x.narrow(1, 0, 1)?.tensordot_dims(&y, &[1], &[0]),
        "tensorinv" => linalg::tensorinv(&sq()?.kron(&sq()?)?.reshape([3, 3, 3, 3])?, 2),
        "tensorsolve" => {
            linalg::tensorsolve(&sq()?.kron(&sq()?)?.reshape([3, 3, 3, 3])?, &sq()?, None)
        }
        "tensorsolve_dims" => linalg::tensorsolve(
            &sq()?.kron(&sq()?.mul(0.5)?)?.reshape([3, 3, 3, 3])?,
            &sq()?,
            Some(&[0]),
        ),
        "householder_product" => {
            linalg::householder_product(&x.t()?, &y.select(0, 0)?.narrow(0, 0, 2)?)
        }
        "householder_batch" => linalg::householder_product(
            &Tensor::stack(&[x.t()?, y.t()?], 0)?,
            &Tensor::stack(
                &[
                    x.select(0, 1)?.narrow(0, 0, 1)?,
                    y.select(0, 1)?.narrow(0, 0, 1)?,
                ],
                0,
            )?,
        ),
        "geqrf" => {
            let (a, tau) = sq()?.geqrf()?;
            flat(vec![a, tau])
        }
        "geqrf_tall" => {
            let (a, tau) = linalg::geqrf(&x.t()?)?;
            flat(vec![a, tau])
        }
        "orgqr" => {
            let (a, tau) = x.t()?.detach().geqrf()?;
            a.orgqr(&tau)?.add(&x.t()?)
        }
        "margin_ranking" => F::margin_ranking_loss(&x, &y, &pm()?, 0.5),
        "margin_ranking_none" => nn::MarginRankingLoss::new()
            .margin(0.5)
            .reduction(nn::Reduction::None)
            .forward(&x, &y, &pm()?),
        "hinge_embedding" => F::hinge_embedding_loss(&x, &pm()?, 1.5),
        "hinge_embedding_sum" => nn::HingeEmbeddingLoss::new()
            .reduction(nn::Reduction::Sum)
            .forward(&x, &pm()?),
        "soft_margin" => F::soft_margin_loss(&x, &pm()?),
        "soft_margin_none" => nn::SoftMarginLoss::new()
            .reduction(nn::Reduction::None)
            .forward(&x, &pm()?),
        "cosine_embedding" => F::cosine_embedding_loss(&x, &y, &pm()?.select(1, 0)?, 0.25),
        "cosine_embedding_vec" => F::cosine_embedding_loss(
            &x.select(0, 0)?,
            &y.select(0, 0)?,
            &pm()?.select(0, 0)?.select(0, 0)?,
            0.0,
        ),
        "cosine_embedding_none" => nn::CosineEmbeddingLoss::new()
            .reduction(nn::Reduction::None)
            .forward(&x, &y, &pm()?.select(1, 1)?),
        "triplet" => F::triplet_margin_loss(&x, &y, &y.flip(&[0])?, F::TripletMargin::default()),
        "triplet_swap_p1" => {
            let how = F::TripletMargin {
                margin: 0.5,
                p: 1.0,
                swap: true,
                ..Default::default()
            };
            F::triplet_margin_loss(&x, &y, &y.flip(&[0])?, how)
        }
        "triplet_none" => nn::TripletMarginLoss::new()
            .reduction(nn::Reduction::None)
            .forward(&x, &y.flip(&[1])?, &y),
        "triplet_bad" => nn::TripletMarginLoss::new().margin(0.0).forward(&x, &y, &y),
        "multi_margin" => F::multi_margin_loss(&x, &cls()?, 1, 1.0, None),
        "multi_margin_p2_w" => F::multi_margin_loss(&x, &cls()?, 2, 0.5, Some(&b1()?.detach())),
        "multi_margin_vec" => {
            F::multi_margin_loss(&x.select(0, 1)?, &cls()?.narrow(0, 0, 1)?, 1, 1.0, None)
        }
        "multi_margin_none" => nn::MultiMarginLoss::new()
            .reduction(nn::Reduction::None)
            .forward(&x, &cls()?),
        "multi_margin_bad" => F::multi_margin_loss(&x, &cls()?.add(1)?, 1, 1.0, None),
        "multilabel_margin" => F::multilabel_margin_loss(&x, &ml()?),
        "multilabel_margin_none" => nn::MultiLabelMarginLoss::new()
            .reduction(nn::Reduction::None)
            .forward(&x, &ml()?),
        "multilabel_margin_vec" => {
            F::multilabel_margin_loss(&x.select(0, 1)?, &ml()?.select(0, 1)?)
        }
        "multilabel_soft" => {
            F::multilabel_soft_margin_loss(&x, &y.gt(0.5)?.to_dtype(DType::I64)?, None)
        }
        "multilabel_soft_w" => F::multilabel_soft_margin_loss(
            &x,
            &y.gt(0.5)?.to_dtype(DType::I64)?,
            Some(&b1()?.detach()),
        ),
        "multilabel_soft_none" => nn::MultiLabelSoftMarginLoss::new()
            .reduction(nn::Reduction::None)
            .forward(&x, &y.gt(0.5)?.to_dtype(DType::I64)?),
        "poisson_nll" => F::poisson_nll_loss(&x, &y.abs()?, F::PoissonNll::default()),
        "poisson_nll_rate_full" => {
            let how = F::PoissonNll {
                log_input: false,
                full: true,
                ..Default::default()
            };
            F::poisson_nll_loss(&x.abs()?, &y.abs()?.mul(3)?, how)
        }
        "poisson_nll_none" => nn::PoissonNLLLoss::new()
            .reduction(nn::Reduction::None)
            .forward(&x, &y.abs()?),
        "gaussian_nll" => F::gaussian_nll_loss(&x, &y, &y.abs()?.add(0.25)?, false, 1e-6),
        "gaussian_nll_eps" => F::gaussian_nll_loss(&x, &y, &y.abs()?, false, 0.5),
        "gaussian_nll_var" => F::gaussian_nll_loss(&y, &y.flip(&[0])?, &x.add(1.5)?, false, 0.5),
        "gaussian_nll_row" => {
            F::gaussian_nll_loss(&x, &y, &y.abs()?.select(1, 0)?.add(0.5)?, true, 1e-6)
        }
        "gaussian_nll_bad" => F::gaussian_nll_loss(&x, &y, &y, false, 1e-6),
        "gaussian_nll_none" => nn::GaussianNLLLoss::new()
            .reduction(nn::Reduction::None)
            .forward(&x, &y, &y.abs()?.add(0.25)?),
        "lcross" => linalg::cross(&x, &y, -1),
        "lcross_rank" => linalg::cross(&x.select(0, 0)?, &y, -1),
        "ldiagonal" => linalg::diagonal(&x, 0, -2, -1),
        "ldiagonal_off" => linalg::diagonal(&x, 1, -2, -1),
        "lu_solve" | "lu_solve_adj" | "lu_solve_right" => {
            let (lu, piv) = linalg::lu_factor(&sq()?)?;
            match op {
                "lu_solve" => linalg::lu_solve(&lu, &piv, &y.t()?, true, false),
                "lu_solve_adj" => linalg::lu_solve(&lu, &piv, &y.t()?, true, true),
                _ => linalg::lu_solve(&lu, &piv, &y, false, false),
            }
        }
        "logcumsumexp" => x.logcumsumexp(1),
        "logcumsumexp_wide" => x.mul(300)?.logcumsumexp(1),
        "logcumsumexp_d0" => x.logcumsumexp(0),
        "lgamma_" | "erfinv_" | "polygamma_" => {
            let t = x.detach().deep_clone()?;
            match op {
                "lgamma_" => t.lgamma_(),
                "erfinv_" => t.erfinv_(),
                _ => t.polygamma_(2),
            }?;
            Ok(t)
        }
        "instance_norm" => {
            F::instance_norm(&x.unsqueeze(0)?, None, None, None, None, true, 0.1, 1e-5)
        }
        "instance_norm_affine" => F::instance_norm(
            &x.unsqueeze(0)?,
            None,
            None,
            Some(&ramp(&[2], 3, 1.0, 0.5, d, dev)?),
            Some(&ramp(&[2], 4, 2.0, 0.25, d, dev)?),
            true,
            0.1,
            1e-5,
        ),
        "fmod_" | "remainder_" | "tan_" => {
            let t = x.detach().deep_clone()?;
            match op {
                "fmod_" => t.fmod_(2),
                "remainder_" => t.remainder_(-2),
                _ => t.tan_(),
            }?;
            Ok(t)
        }
        "exp_" | "relu_" | "sqrt_" | "round_" | "neg_" | "abs_" | "sigmoid_" | "clamp_"
        | "pow_" | "masked_fill_" | "log2_" | "trunc_" | "square_" => {
            let t = x.detach().deep_clone()?;
            match op {
                "exp_" => t.exp_(),
                "relu_" => t.relu_(),
                "sqrt_" => t.sqrt_(),
                "round_" => t.round_(),
                "neg_" => t.neg_(),
                "abs_" => t.abs_(),
                "sigmoid_" => t.sigmoid_(),
                "clamp_" => t.clamp_(-1, 1),
                "pow_" => t.pow_(2),
                "masked_fill_" => t.masked_fill_(&input("bool", 1, dev), 2.0),
                "log2_" => t.log2_(),
                "trunc_" => t.trunc_(),
                _ => t.square_(),
            }?;
            Ok(t)
        }
        _ => panic!("unknown op {op:?}"),
    }?;
    out_or_grad(out, &x, want)
}

fn norm_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    use gpulab::nn::{BatchNorm1d, BatchNorm2d, GroupNorm, InstanceNorm, LayerNorm, Module};
    let (op, d, want) = (w[1], w[2], w[3]);
    let (mut m, shape): (Box<dyn Module>, Vec<usize>) = match op.split('_').next().unwrap() {
        // torch's options (NORM_OPTIONS in torch_parity.py).
        "bn1dna" => (Box::new(BatchNorm1d::new(3).affine(false)), vec![4, 3]),
        "bn2dnt" => (
            Box::new(BatchNorm2d::new(3).track_running_stats(false)),
            vec![2, 3, 2, 2],
        ),
        "bn1dcum" => (Box::new(BatchNorm1d::new(3).momentum(None)), vec![2, 3, 4]),
        "in2dtr" => (
            Box::new(
                InstanceNorm::new_2d(3)
                    .affine(true)
                    .track_running_stats(true),
            ),
            vec![2, 3, 2, 3],
        ),
        "in1dtr" => (
            Box::new(InstanceNorm::new_1d(3).track_running_stats(true)),
            vec![2, 3, 4],
        ),
        "in2dunb" => (
            Box::new(InstanceNorm::new_2d(3).affine(true)),
            vec![3, 2, 3],
        ),
        "in1dmn" => (
            Box::new(
                InstanceNorm::new_1d(3)
                    .momentum(None)
                    .track_running_stats(true),
            ),
            vec![2, 3, 4],
        ),
        "bn2d" => (Box::new(BatchNorm2d::new(3)), vec![2, 3, 2, 2]),
        "bn1d" => (Box::new(BatchNorm1d::new(3)), vec![4, 3]),
        "bn1d3" => (Box::new(BatchNorm1d::new(3)), vec![2, 3, 4]),
        "ln" => (Box::new(LayerNorm::new([3])), vec![2, 3]),
        "gn" => (Box::new(GroupNorm::new(2, 4)), vec![2, 4, 2, 3]),
        "gn1" => (Box::new(GroupNorm::new(1, 3)), vec![2, 3, 2, 2]),
        "gn3d" => (Box::new(GroupNorm::new(3, 6)), vec![2, 6, 5]),
        _ => (Box::new(LayerNorm::new([2, 2])), vec![2, 3, 2, 2]),
    };
    m.to_dtype(dtype(d))?;
    m.to(dev)?;
    let params = m.named_parameters();
    for (name, p) in &params {
        let (k, off, scale) = if name == "weight" {
            (3, 1.0, 0.5)
        } else {
            (4, 2.0, 0.25)
        };
        p.set_data(ramp(&p.shape(), k, off, scale, d, dev)?)?;
    }
    let mut x = ramp(&shape, 5, 2.0, 0.75, d, dev)?;
    if op.contains("cum") {
        // A first step, so the average is over two.
        m.forward(&ramp(&shape, 3, 0.5, 1.5, d, dev)?)?;
    }
    if op.ends_with("_eval") {
        m.forward(&x)?;
        m.eval();
        x = ramp(&shape, 4, 1.0, 0.5, d, dev)?;
    }
    let out = m.forward(&x)?;
    let buffer = |name: &str| {
        m.buffers()
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.tensor())
            .ok_or_else(|| Error::Invalid(format!("no buffer {name}")))
    };
    match want {
        "rm" => return buffer("running_mean"),
        "rv" => return buffer("running_var"),
        "out" => return Ok(out.detach()),
        _ => {}
    }
    weighted_backward(&out)?;
    let g = match want {
        "x" => x.grad(),
        "w" => params[0].1.grad(),
        _ => params[1].1.grad(),
    };
    g.ok_or_else(|| Error::Invalid("no gradient".into()))
}

/// global_unstructured (mirrors the `GLOBAL_PRUNES` branch of `prune_case` in torch_parity.py).
fn global_prune_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    use gpulab::nn::utils::prune::{self as P, GlobalMethod};
    use gpulab::nn::{Linear, Module, Sequential};
    let (op, d, want) = (w[1], w[2], w[3]);
    let (l0, l1) = (Linear::new(4, 3), Linear::new(3, 2));
    let (mut at, mut k) = (0usize, 0usize);
    for m in [&l0 as &dyn Module, &l1] {
        m.to_dtype(dtype(d))?;
        m.to(dev)?;
        for (_, p) in m.named_parameters() {
            let steps = Tensor::arange(0.0, p.numel() as f64, Device::Cpu)?
                .to_dtype(DType::F64)?
                .add(at as f64)?
                .mul(0.013)?
                .reshape(p.shape())?
                .to_dtype(dtype(d))?
                .to(dev)?;
            let r = ramp(&p.shape(), 5 + k % 3, 2.0, 0.25, d, dev)?.detach();
            p.set_data(r.add(&steps)?)?;
            at += p.numel();
            k += 1;
        }
    }
    let mut p0 = P::identity(l0, "weight")?;
    let mut p1 = if op == "global_pre" {
        P::l1_unstructured(l1, "weight", 0.5)?
    } else {
        P::identity(l1, "weight")?
    };
    let amounts: &[f64] = match op {
        "global" => &[0.4],
        "global_twice" => &[0.3, 0.3],
        _ => &[0.25],
    };
    for &a in amounts {
        P::global_unstructured(&mut [&mut p0, &mut p1], GlobalMethod::L1Unstructured, a)?;
    }
    let (m0, m1) = (p0.mask.tensor(), p1.mask.tensor());
    let model = Sequential::new().add(p0).add(p1);
    let x = ramp(&[2, 4], 5, 2.0, 0.75, d, dev)?;
    let out = model.forward(&x)?;
    match want {
        "m0" => Ok(m0),
        "m1" => Ok(m1),
        "out" => Ok(out.detach()),
        _ => {
            weighted_backward(&out)?;
            x.grad().ok_or_else(|| Error::Invalid("no gradient".into()))
        }
    }
}

/// nn.utils.prune (mirrors `prune_case` and `PRUNES` in torch_parity.py).
fn prune_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    use gpulab::nn::utils::prune as P;
    use gpulab::nn::{Conv2d, Linear, Module};
    let (op, d, want) = (w[1], w[2], w[3]);
    if op.starts_with("global") {
        return global_prune_case(w, dev);
    }
    fn distinct(m: &dyn Module, d: &str, dev: Device) -> Result<(), Error> {
        ramped(m, d, dev, 0.25)?;
        for p in m.parameters() {
            let steps = Tensor::arange(0.0, p.numel() as f64, Device::Cpu)?
                .to_dtype(DType::F64)?
                .mul(0.01)?
                .reshape(p.shape())?
                .to_dtype(dtype(d))?
                .to(dev)?;
            p.set_data(p.tensor().add(&steps)?)?;
        }
        Ok(())
    }
    fn pruned<M: Module + 'static>(
        m: M,
        d: &str,
        dev: Device,
        first: impl FnOnce(M) -> Result<P::Pruned<M>, Error>,
        then: impl FnOnce(&mut P::Pruned<M>) -> Result<(), Error>,
    ) -> Result<Box<dyn Module>, Error> {
        distinct(&m, d, dev)?;
        let mut p = first(m)?;
        then(&mut p)?;
        Ok(Box::new(p))
    }
    let lin = || Linear::new(4, 3);
    let none = |_: &mut P::Pruned<Linear>| Ok(());
    let m: Box<dyn Module> = match op {
        "l1_03" => pruned(
            lin(),
            d,
            dev,
            |m| P::l1_unstructured(m, "weight", 0.3),
            none,
        )?,
        "l1_5" => pruned(lin(), d, dev, |m| P::l1_unstructured(m, "weight", 5), none)?,
        "l1_twice" => pruned(
            lin(),
            d,
            dev,
            |m| P::l1_unstructured(m, "weight", 0.25),
            |p| p.l1_unstructured(0.5),
        )?,
        "ln2_d0" => pruned(
            lin(),
            d,
            dev,
            |m| P::ln_structured(m, "weight", 1, 2.0, 0),
            none,
        )?,
        "ln1_last" => pruned(
            lin(),
            d,
            dev,
            |m| P::ln_structured(m, "weight", 0.5, 1.0, -1),
            none,
        )?,
        "lninf_d0" => pruned(
            lin(),
            d,
            dev,
            |m| P::ln_structured(m, "weight", 1, f64::INFINITY, 0),
            none,
        )?,
        "ln_l1" => pruned(
            lin(),
            d,
            dev,
            |m| P::ln_structured(m, "weight", 1, 2.0, 0),
            |p| p.l1_unstructured(0.5),
        )?,
        "l1_ln" => pruned(
            lin(),
            d,
            dev,
            |m| P::l1_unstructured(m, "weight", 0.3),
            |p| p.ln_structured(1, 2.0, 1),
        )?,
        "custom" => {
            let keep = Tensor::arange(0i64, 12, Device::Cpu)?
                .remainder(3)?
                .ne(0)?
                .reshape([3, 4])?
                .to(dev)?;
            pruned(
                lin(),
                d,
                dev,
                |m| P::custom_from_mask(m, "weight", &keep),
                |p| p.l1_unstructured(0.25),
            )?
        }
        "conv" => pruned(
            Conv2d::new(2, 3, 2),
            d,
            dev,
            |m| P::ln_structured(m, "weight", 0.34, 2.0, 0),
            |_| Ok(()),
        )?,
        "bias" => pruned(lin(), d, dev, |m| P::l1_unstructured(m, "bias", 2), none)?,
        _ => pruned(lin(), d, dev, |m| P::identity(m, "weight"), none)?,
    };
    let params = m.named_parameters();
    let x = ramp(
        if op == "conv" { &[1, 2, 4, 4] } else { &[2, 4] },
        5,
        2.0,
        0.75,
        d,
        dev,
    )?;
    let out = m.forward(&x)?;
    if want == "out" {
        return Ok(out.detach());
    }
    if want == "b0" {
        return Ok(m.buffers()[0].1.tensor());
    }
    weighted_backward(&out)?;
    let g = match want {
        "x" => x.grad(),
        _ => params[want[1..].parse::<usize>().unwrap()].1.grad(),
    };
    g.ok_or_else(|| Error::Invalid("no gradient".into()))
}

/// torch.func (mirrors `func_case` and `FUNCS` in torch_parity.py).
fn func_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    use gpulab::func as fun;
    let (op, d, want) = (w[1], w[2], w[3]);
    let x = ramp(&[2, 3], 5, 2.0, 0.75, d, dev)?.detach();
    let sin_x = |t: &Tensor| t.sin()?.mul(t)?.sum();
    match op {
        "grad_sin" => fun::grad(sin_x, &x),
        "grad_value" => {
            let (g, y) = fun::grad_and_value(sin_x, &x)?;
            Ok(if want == "out" { g } else { y })
        }
        "vjp_twice" => {
            let (y, pullback) = fun::vjp(|t| t.tanh()?.mul(t), &x)?;
            match want {
                "out" => Ok(y),
                "v1" => pullback(&ramp(&[2, 3], 3, 1.0, 0.5, d, dev)?.detach()),
                _ => pullback(&ramp(&[2, 3], 4, 2.0, 0.25, d, dev)?.detach()),
            }
        }
        "jacrev_tanh" => fun::jacrev(|t| t.tanh()?.mul(&t.sum()?), &x),
        "vmap_rows" => fun::vmap(|r| F::softmax(r, 0)?.mul(&r.sum()?), &x, 0, 0),
        "vmap_cols" => fun::vmap(|c| c.cumsum(0), &x, 1, 1),
        _ => fun::vmap(|r| fun::grad(|t| t.sin()?.pow(2.0)?.sum(), r), &x, 0, 0),
    }
}

/// torch.autograd.functional (mirrors `jac_case` and `JACS` in torch_parity.py).
fn jac_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    use gpulab::autograd::functional::{jacobian, vjp};
    let (op, d, want) = (w[1], w[2], w[3]);
    let x = ramp(&[2, 3], 5, 2.0, 0.75, d, dev)?.detach();
    let wc = ramp(&[3, 2], 4, 1.0, 0.5, d, dev)?.detach();
    match op {
        "sin_sum" => jacobian(|t| t.sin()?.mul(&t.sum()?), &x),
        "mm" => jacobian(|t| t.matmul(&wc), &x),
        "const" => jacobian(|_| wc.sum()?.mul(2.0), &x),
        "vjp_tanh" => {
            let v = ramp(&[2, 3], 3, 1.0, 0.5, d, dev)?.detach();
            let (y, g) = vjp(|t| t.tanh()?.mul(2.0), &x, Some(&v))?;
            Ok(if want == "out" { g } else { y })
        }
        _ => Ok(vjp(|t| t.mul(t)?.sum(), &x, None)?.1),
    }
}

/// torch.autograd.grad (mirrors `agrad_case` and `AGRADS` in torch_parity.py).
fn agrad_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    use gpulab::autograd::{grad, grad_with};
    let (op, d, want) = (w[1], w[2], w[3]);
    let x = ramp(&[2, 3], 5, 2.0, 0.75, d, dev)?;
    let wt = ramp(&[2, 3], 4, 1.0, 0.5, d, dev)?;
    let z = ramp(&[3], 3, 1.0, 0.5, d, dev)?;
    if op == "retain" {
        // backward, with an activation's gradient kept by retain_grad.
        let h = x.exp()?;
        h.retain_grad()?;
        h.mul(&h.sin()?)?.sum()?.backward()?;
        let g = if want == "h" { h.grad() } else { x.grad() };
        return g.ok_or_else(|| Error::Invalid("no gradient".into()));
    }
    let (names, gs): (&[&str], Vec<Option<Tensor>>) = match op {
        "chain" => (
            &["x", "w"],
            grad(&x.mul(&wt)?.tanh()?.sum()?, &[&x, &wt])?
                .into_iter()
                .map(Some)
                .collect(),
        ),
        "mid" => {
            let h = x.exp()?;
            let y = h.mul(&h.sin()?)?.sum()?;
            (&["h"], vec![Some(grad(&y, &[&h])?.remove(0))])
        }
        "seed" => {
            let seed = ramp(&[2, 2], 3, 1.0, 0.5, d, dev)?.detach();
            let y = x.matmul(&wt.t()?)?;
            (&["w"], grad_with(&y, &[&wt], Some(&seed), false, false)?)
        }
        _ => {
            let y = x.mul(&wt)?.sum()?;
            (
                &["w", "z"],
                grad_with(&y, &[&wt, &z], None, false, op == "unused")?,
            )
        }
    };
    let g = if want == "xgrad" {
        x.grad()
    } else {
        gs[names.iter().position(|n| *n == want).unwrap()].clone()
    };
    g.ok_or_else(|| Error::Invalid("no gradient".into()))
}

/// torch.func.functional_call (mirrors `fcall_case` and `FCALLS` in torch_parity.py).
fn fcall_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    use gpulab::nn::{BatchNorm1d, Linear, Module, Sequential};
    let (op, d, want) = (w[1], w[2], w[3]);
    let (mut m, names): (Box<dyn Module>, &[&str]) = match op {
        "seq_bn" => (
            Box::new(
                Sequential::new()
                    .add(Linear::new(3, 4))
                    .add(BatchNorm1d::new(4)),
            ),
            &["0.weight", "1.running_mean", "1.running_var"],
        ),
        "lin" => (Box::new(Linear::new(3, 4)), &["weight", "bias"]),
        _ => (Box::new(Linear::new(3, 4)), &["weight"]),
    };
    let own = ramped(m.as_ref(), d, dev, 0.25)?;
    m.eval();
    let tensors: Vec<(String, Parameter)> = m
        .named_parameters()
        .into_iter()
        .chain(m.buffers())
        .collect();
    let mut given: Vec<(&str, Tensor)> = Vec::new();
    for (k, name) in names.iter().enumerate() {
        let shape = tensors.iter().find(|(n, _)| n == name).unwrap().1.shape();
        let mut t = ramp(&shape, 4 + k % 3, 1.0, 0.5, d, dev)?;
        // Buffers, without gradient; a variance is positive.
        if *name == "1.running_mean" {
            t = t.detach();
        }
        if *name == "1.running_var" {
            t = t.detach().abs()?.add(0.5)?;
        }
        given.push((name, t));
    }
    let x = ramp(&[2, 3], 5, 2.0, 0.75, d, dev)?;
    let out = gpulab::func::functional_call(m.as_ref(), &given, &x)?;
    if want == "out" {
        return Ok(out.detach());
    }
    weighted_backward(&out)?;
    let g = match want {
        "x" => x.grad(),
        "own" => own[0].1.grad(),
        "ownb" => own[1].1.grad(),
        _ => given[want[1..].parse::<usize>().unwrap()].1.grad(),
    };
    g.ok_or_else(|| Error::Invalid("no gradient".into()))
}

/// torch_parity.py's `Symmetric` parametrization: the upper triangle mirrored.
struct Symmetric;
impl nn::Module for Symmetric {
    fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        x.triu(0)?.add(&x.triu(1)?.transpose(-2, -1)?)
    }
    fn describe(&self) -> String {
        "Symmetric()".into()
    }
}

/// torch_parity.py's `Scaled`: columns scaled by a learned vector `s`.
struct Scaled(Parameter);
impl nn::Module for Scaled {
    fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        x.mul(&self.0.tensor())
    }
    fn parameters(&self) -> Vec<Parameter> {
        vec![self.0.clone()]
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        vec![("s".into(), self.0.clone())]
    }
    fn describe(&self) -> String {
        "Scaled()".into()
    }
}

/// A layer under weight_norm / spectral_norm (mirrors `param_case` and `PARAMS` in
/// torch_parity.py): the output, the input's gradient, parameter `pK`'s (in
/// `named_parameters` order) or buffer `bK` after the forward.
fn param_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    use gpulab::nn::utils::{self as U, parametrizations as P, parametrize as R};
    use gpulab::nn::{Conv1d, Conv2d, ConvTranspose2d, Linear, Module, SpectralOptions, GRU};
    let (op, d, want) = (w[1], w[2], w[3]);
    let sn = |name, n_power_iterations, dim| SpectralOptions {
        name,
        n_power_iterations,
        dim,
        ..Default::default()
    };
    let (mut m, shape): (Box<dyn Module>, Vec<usize>) = match op {
        "wn_lin" => (Box::new(P::weight_norm(Linear::new(3, 4))?), vec![2, 3]),
        "wn_lin_none" => (
            Box::new(P::weight_norm_with(Linear::new(3, 4), "weight", None)?),
            vec![2, 3],
        ),
        "wn_conv_d1" => (
            Box::new(P::weight_norm_with(
                Conv2d::new(2, 3, 2),
                "weight",
                Some(1),
            )?),
            vec![1, 2, 4, 4],
        ),
        "wn_old_conv1d" => (
            Box::new(U::weight_norm(Conv1d::new(2, 3, 2))?),
            vec![1, 2, 5],
        ),
        "wn_old_gru_hh" => (
            Box::new(U::weight_norm_with(
                GRU::new(3, 4),
                "weight_hh_l0",
                Some(0),
            )?),
            vec![4, 2, 3],
        ),
        "wn_old_gru_both" => {
            let ih = U::weight_norm_with(GRU::new(3, 4), "weight_ih_l0", Some(0))?;
            (
                Box::new(U::weight_norm_with(ih, "weight_hh_l0", Some(0))?),
                vec![4, 2, 3],
            )
        }
        "wn_sn_lin" => {
            let wn = P::weight_norm(Linear::new(3, 4))?;
            (
                Box::new(P::spectral_norm_with(wn, sn("bias", 1, None))?),
                vec![2, 3],
            )
        }
        "sn_lin" | "sn_lin_eval" => (Box::new(P::spectral_norm(Linear::new(3, 4))?), vec![2, 3]),
        "sn_lin_it3" => (
            Box::new(P::spectral_norm_with(
                Linear::new(3, 4),
                sn("weight", 3, None),
            )?),
            vec![2, 3],
        ),
        "sn_convT" => (
            Box::new(P::spectral_norm(ConvTranspose2d::new(2, 3, 2))?),
            vec![1, 2, 3, 3],
        ),
        "sn_conv_d1" => (
            Box::new(P::spectral_norm_with(
                Conv2d::new(2, 3, 2),
                sn("weight", 1, Some(1)),
            )?),
            vec![1, 2, 4, 4],
        ),
        "sn_bias" => (
            Box::new(P::spectral_norm_with(
                Linear::new(3, 4),
                sn("bias", 1, None),
            )?),
            vec![2, 3],
        ),
        "sn_old_lin" | "sn_old_eval" => {
            (Box::new(U::spectral_norm(Linear::new(3, 4))?), vec![2, 3])
        }
        "sn_old_bias" => (
            Box::new(U::spectral_norm_with(
                Linear::new(3, 4),
                sn("bias", 1, None),
            )?),
            vec![2, 3],
        ),
        "orth_sq" => (Box::new(P::orthogonal(Linear::new(3, 3))?), vec![2, 3]),
        "orth_tall" => (Box::new(P::orthogonal(Linear::new(3, 4))?), vec![2, 3]),
        "orth_wide" => (Box::new(P::orthogonal(Linear::new(4, 3))?), vec![2, 4]),
        "orth_cayley" => (
            Box::new(P::orthogonal_with(
                Linear::new(3, 3),
                "weight",
                Some("cayley"),
                true,
            )?),
            vec![2, 3],
        ),
        "orth_exp_tall" => (
            Box::new(P::orthogonal_with(
                Linear::new(3, 4),
                "weight",
                Some("matrix_exp"),
                true,
            )?),
            vec![2, 3],
        ),
        "orth_hh_notriv" => (
            Box::new(P::orthogonal_with(
                Linear::new(3, 4),
                "weight",
                None,
                false,
            )?),
            vec![2, 3],
        ),
        "orth_init" => {
            let lin = Linear::new(3, 3);
            ramped(&lin, d, dev, 1.0)?;
            (Box::new(P::orthogonal(lin)?), vec![2, 3])
        }
        "reg_sym" => (
            Box::new(R::register_parametrization(
                Linear::new(3, 3),
                "weight",
                Symmetric,
            )?),
            vec![2, 3],
        ),
        "reg_two" => {
            let mut sym = R::register_parametrization(Linear::new(3, 3), "weight", Symmetric)?;
            let s = Parameter::new(Tensor::ones([3], Device::Cpu)?)?;
            sym.register(Scaled(s))?;
            (Box::new(sym), vec![2, 3])
        }
        _ => panic!("unknown param case {op}"),
    };
    let (params, buffers) = if op.ends_with("_init") {
        // As orthogonal() left it.
        m.to_dtype(dtype(d))?;
        m.to(dev)?;
        (m.named_parameters(), m.buffers())
    } else {
        let scale = if op.starts_with("orth") { 1.0 } else { 0.25 };
        let params = ramped(m.as_ref(), d, dev, scale)?;
        let buffers = m.buffers();
        for (k, (_, b)) in buffers.iter().enumerate() {
            b.set_data(ramp(&b.shape(), 3 + k % 2, 1.0, 0.5, d, dev)?)?;
        }
        (params, buffers)
    };
    if op.ends_with("_eval") {
        m.eval();
    }
    let x = ramp(&shape, 5, 2.0, 0.75, d, dev)?;
    let out = m.forward(&x)?;
    if want == "out" {
        return Ok(out.detach());
    }
    if let Some(k) = want.strip_prefix('b') {
        return Ok(buffers[k.parse::<usize>().unwrap()].1.tensor());
    }
    weighted_backward(&out)?;
    let g = match want {
        "x" => x.grad(),
        _ => params[want[1..].parse::<usize>().unwrap()].1.grad(),
    };
    g.ok_or_else(|| Error::Invalid("no gradient".into()))
}

/// einsum (mirrors `einsum_case` and `EINSUM` in torch_parity.py).
fn einsum_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    let (op, d, want) = (w[1], w[2], w[3]);
    let (eq, shapes): (&str, &[&[usize]]) = match op {
        "mm" => ("ij,jk->ik", &[&[2, 3], &[3, 4]]),
        "dot" => ("i,i->", &[&[3], &[3]]),
        "outer" => ("i,j->ij", &[&[3], &[2]]),
        "t" => ("ij->ji", &[&[2, 3]]),
        "sum" => ("ij->", &[&[2, 3]]),
        "rows" => ("ij->i", &[&[2, 3]]),
        "diag" => ("ii->i", &[&[3, 3]]),
        "trace" => ("ii", &[&[3, 3]]),
        "bmm" => ("bij,bjk->bik", &[&[2, 2, 3], &[2, 3, 2]]),
        "mv" => ("ij,j->i", &[&[2, 3], &[3]]),
        "implicit" => ("ij,jk", &[&[2, 3], &[3, 4]]),
        "rev" => ("ijk->kji", &[&[2, 3, 2]]),
        "attn" => ("bhqd,bhkd->bhqk", &[&[1, 2, 3, 2], &[1, 2, 4, 2]]),
        "three" => ("ij,jk,kl->il", &[&[2, 3], &[3, 2], &[2, 2]]),
        "hadamard" => ("ij,ij->ij", &[&[2, 3], &[2, 3]]),
        "bilinear" => ("i,ij,j->", &[&[2], &[2, 3], &[3]]),
        "diag2" => ("iij->ij", &[&[2, 2, 3]]),
        "bad_out" => ("ij,jk->il", &[&[2, 3], &[3, 4]]),
        "bad_size" => ("ij,jk->ik", &[&[2, 3], &[2, 4]]),
        "ell_bmm" => ("...ij,...jk->...ik", &[&[2, 1, 3, 2], &[4, 2, 3]]),
        "ell_noarrow" => ("...ij,...jk", &[&[2, 1, 3, 2], &[4, 2, 3]]),
        "ell_sum" => ("i...->...", &[&[3, 2, 2]]),
        "ell_diag" => ("...ii->...i", &[&[2, 3, 3]]),
        "ell_drop" => ("...ij->ij", &[&[2, 3, 2]]),
        "ell_mid" => ("ij...->...ji", &[&[2, 3, 2, 2]]),
        "ell_bad" => ("...i,...i", &[&[2, 3], &[4, 3]]),
        "ell_bcast" => ("...,...->...", &[&[3], &[2, 1]]),
        _ => ("ij,jk->ik", &[&[2, 3]]),
    };
    let ts: Vec<Tensor> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| ramp(s, 5 + i, 2.0, 0.5 + 0.25 * i as f64, d, dev))
        .collect::<Result<_, _>>()?;
    let refs: Vec<&Tensor> = ts.iter().collect();
    let out = Tensor::einsum(eq, &refs)?;
    let mut inputs = vec![("x", ts[0].clone())];
    if let Some(y) = ts.get(1) {
        inputs.push(("y", y.clone()));
    }
    result_or_grad(&out, want, &inputs)
}

/// Advanced indexing, index_put and Python's `x[idx] = v` (`i_set`) on a [2, 3, 4] ramp
/// (mirrors `adv_case` in torch_parity.py).
fn adv_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    let (op, d, want) = (w[1], w[2], w[3]);
    let x = ramp(&[2, 3, 4], 7, 3.0, 0.5, d, dev)?;
    let ix = |v: Vec<i64>| Tensor::from(v).to(dev);
    let (i, j) = (ix(vec![2, 0])?, ix(vec![1, 3])?);
    let m = Tensor::from_vec(
        vec![true, false, true, false, true, false],
        (2, 3),
        Device::Cpu,
    )?
    .to(dev)?;
    let v2 = ramp(&[2], 3, 1.0, 1.5, d, dev)?;
    if let Some(set) = op.strip_prefix("set_") {
        let y = x.detach().deep_clone()?;
        match set {
            "scalar" => y.i_set((.., &i, &j), 2)?,
            "slice" => y.i_set((.., 0), 2.5)?,
            "mask" => y.i_set(&m, 0)?,
            "tensor" => y.i_set((0, 1), &ix(vec![1, -2, 3, 0])?)?,
            "float" => y.i_set((&ix(vec![1, 0])?, 1..3), -1.5)?,
            "big" => y.i_set((.., 0), 300)?,
            "neg" => y.i_set(0, -1)?,
            "fill_big" => y.fill_(70000.0)?,
            "fill_nan" => y.fill_(f64::NAN)?,
            "fill_neg" => y.fill_(-1)?,
            "fill_negf" => y.fill_(-1.0)?,
            "masked_negf" => return y.masked_fill(&m.unsqueeze(-1)?, -2.0),
            "masked_big" => return y.masked_fill(&m, 256),
            "full_like_big" => return y.full_like(1i64 << 31),
            _ => return y.index_fill(0, &ix(vec![0])?, -256),
        }
        return Ok(y);
    }
    let mut v = v2.clone();
    let out = match op {
        "pair" => x.i((.., &i, &j))?,
        "int_sep" => x.i((0, .., &j))?,
        "sep" => x.i((&ix(vec![1, 0])?, .., &j))?,
        "int_adj" => x.i((.., &i, 1))?,
        "bcast" => x.i((Ellipsis, &ix(vec![2, 0])?.reshape((2, 1))?, &j))?,
        "none_sep" => x.i((NewAxis, &ix(vec![1, 0])?, .., &j))?,
        "mask2" => x.i(&m)?,
        "mask_int" => x.i((&m, 1))?,
        "mask_mid" => x.i((.., &m.i(0)?, &j))?,
        "t0" => x.i((&Tensor::from_vec(vec![1i64], (), dev)?, .., &j))?,
        "list" => x.i([1, 0])?,
        "list_pair" => x.i(([0, 1], [1, 2]))?,
        "bool0" => x.i(&Tensor::from_vec(vec![true], (), dev)?)?,
        "bool0_false" => x.i(&Tensor::from_vec(vec![false], (), dev)?)?,
        "neg" => x.i((.., &ix(vec![-1, 0])?, &ix(vec![-4, 2])?))?,
        "u8mask" => x.i((0, &Tensor::from(vec![1u8, 0, 1]).to(dev)?))?,
        "empty" => x.i((.., &ix(vec![])?, &j.narrow(0, 0, 0)?))?,
        "bad_bcast" => x.i((.., &ix(vec![0, 1, 2])?, &ix(vec![0, 1])?))?,
        "oob" => x.i((.., &i, &ix(vec![4, 0])?))?,
        "put" => x.index_put((&ix(vec![0])?, &i, &j), &v2, false)?,
        "put_acc" => x.index_put(
            (&ix(vec![0, 0])?, &ix(vec![1, 1])?, &ix(vec![2, 2])?),
            &v2,
            true,
        )?,
        "put_bcast" => {
            v = ramp(&[4], 3, 1.0, 1.5, d, dev)?;
            x.index_put(&ix(vec![1, 0])?, &v, false)?
        }
        "put_mask" => {
            v = ramp(&[4], 3, 1.0, 1.5, d, dev)?;
            x.index_put(&m, &v, false)?
        }
        "put_basic" => {
            v = ramp(&[3, 4], 5, 1.0, 0.5, d, dev)?;
            x.index_put(&ix(vec![1])?, &v, false)?
        }
        "put_bad" => {
            v = ramp(&[3], 3, 1.0, 1.5, d, dev)?;
            x.index_put((&ix(vec![0])?, &i, &j), &v, false)?
        }
        _ => {
            let other = if d == "f64" { DType::F32 } else { DType::F64 };
            v = v2.detach().to_dtype(other)?;
            x.index_put((&ix(vec![0])?, &i, &j), &v, false)?
        }
    };
    result_or_grad(&out, want, &[("x", x.clone()), ("y", v.clone())])
}

/// scatter_add / scatter / index_add (mirrors `scat_case` in torch_parity.py).
fn scat_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    let (op, d, want) = (w[1], w[2], w[3]);
    let x = ramp(&[3, 4], 5, 2.0, 0.75, d, dev)?;
    let mut src = ramp(
        if op == "scatter_add_small" {
            &[3, 5]
        } else {
            &[2, 4]
        },
        4,
        1.0,
        0.5,
        d,
        dev,
    )?;
    let i64s = |v: Vec<i64>, dims: &[usize]| Tensor::from_vec(v, dims, dev);
    let rows = i64s(vec![0, 1, 2, 0, 2, 0, 1, 1], &[2, 4])?;
    let cols = i64s(vec![3, 1, 0, 0, 2, 3], &[3, 2])?;
    let small = |d: &str| ramp(&[3, 2], 4, 1.0, 0.5, d, dev);
    let out = match op {
        "scatter_add" | "scatter_add_small" => x.scatter_add(0, &rows, &src)?,
        "scatter_add_d1" => {
            src = small(d)?;
            x.scatter_add(1, &cols, &src)?
        }
        "scatter" => x.scatter(0, &rows, &src)?,
        "scatter_d1" => {
            src = small(d)?;
            x.scatter(1, &i64s(vec![3, 1, 0, 2, 2, 3], &[3, 2])?, &src)?
        }
        "scatter_value" => x.scatter_value(
            1,
            &i64s(vec![1, 0, 3], &[3, 1])?,
            if x.dtype().is_float() { 2.5 } else { 2.0 },
        )?,
        "index_add" | "index_add_alpha" => {
            src = ramp(&[3, 4], 4, 1.0, 0.5, d, dev)?;
            let alpha = if op == "index_add_alpha" { 2.0 } else { 1.0 };
            x.index_add(0, &i64s(vec![2, 0, 2], &[3])?, &src, alpha)?
        }
        "index_add_d1" => {
            src = small(d)?;
            x.index_add(1, &i64s(vec![3, 1], &[2])?, &src, 1.0)?
        }
        "scatter_add_" => {
            let out = x.detach().deep_clone()?;
            out.scatter_add_(0, &rows, &src.detach())?;
            out
        }
        "index_add_" => {
            let out = x.detach().deep_clone()?;
            out.index_add_(1, &i64s(vec![3, 1], &[2])?, &small(d)?.detach(), 1.0)?;
            out
        }
        "scatter_bad" => x.scatter_add(0, &i64s(vec![0, 3, 0, 0], &[1, 4])?, &src)?,
        "scatter_i32" => x.scatter_add(0, &rows.to_dtype(DType::I32)?, &src)?,
        _ => x.index_add(0, &i64s(vec![0, 1], &[2])?, &src.narrow(1, 0, 3)?, 1.0)?,
    };
    result_or_grad(&out, want, &[("x", x.clone()), ("y", src.clone())])
}

/// cross_entropy / nll_loss with torch's options (mirrors `cls_case` in torch_parity.py).
fn cls_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    use gpulab::nn::functional::ClassLossOptions;
    use gpulab::nn::Reduction;
    let (op, d, want) = (w[1], w[2], w[3]);
    let kdim = op.contains("kdim");
    let shape: &[usize] = if kdim {
        &[2, 3, 2, 2]
    } else if op == "ce_1d" {
        &[3]
    } else {
        &[4, 3]
    };
    let x = ramp(shape, 7, 3.0, 0.4, d, dev)?;
    let weight = Tensor::from_vec(vec![0.5f64, 2.0, 1.25], 3, dev)?.to_dtype(dtype(d))?;
    let labels: Vec<i64> = match op {
        "ce_ignore" | "ce_ignore_none" | "ce_ls_w" => vec![2, -100, 1, 0],
        "ce_all_ignored" => vec![-100; 4],
        "nll_ignore1" => vec![2, 1, 1, 0],
        "ce_bad_label" => vec![2, 3, 1, 0],
        _ => vec![2, 0, 1, 1],
    };
    let mut t = Tensor::from_vec(labels, 4, dev)?;
    if kdim {
        t = Tensor::from_vec(vec![0i64, 2, 1, -100, 2, 2, 0, 1], [2, 2, 2], dev)?;
    }
    if op == "ce_1d" {
        t = Tensor::from_vec(vec![1i64], (), dev)?;
    }
    if op.contains("prob") {
        let p = ramp(&[4, 3], 5, 0.0, 0.2, d, dev)?.detach();
        t = p.div(&p.sum_keepdim(1)?)?;
    }
    let mut opts = ClassLossOptions::default();
    if op.contains("_w") {
        opts.weight = Some(weight.clone());
    }
    if op == "ce_bad_w" {
        opts.weight = Some(weight.narrow(0, 0, 2)?);
    }
    if op.contains("_ls") {
        opts.label_smoothing = 0.2;
    }
    if op == "nll_ignore1" {
        opts.ignore_index = 1;
    }
    if op.ends_with("_sum") {
        opts.reduction = Reduction::Sum;
    }
    if op.ends_with("_none") {
        opts.reduction = Reduction::None;
    }
    let out = if op.starts_with("nll") {
        F::nll_loss_with(&x, &t, &opts)?
    } else {
        F::cross_entropy_with(&x, &t, &opts)?
    };
    out_or_grad(out, &x, want)
}

fn sched_case(w: &[&str]) -> Result<Tensor, Error> {
    use gpulab::optim::lr_scheduler::{
        CosineAnnealingLR, CosineAnnealingWarmRestarts, ExponentialLR, LRScheduler, LambdaLR,
        LinearLR, MultiStepLR, PlateauMode, ReduceLROnPlateau, StepLR, ThresholdMode,
    };
    let p = Parameter::new(Tensor::zeros([1], Device::Cpu)?)?;
    let mut opt = SGD::new(vec![p], 0.1);
    let metrics = [
        1.0, 0.9, 0.95, 0.95, 0.95, 0.8, 0.85, 0.78, 0.85, 0.85, 0.7, 0.7, 0.69, 0.7,
    ];
    let mut rates = Vec::new();
    if w[1].starts_with("plateau") {
        let s = ReduceLROnPlateau::new(&opt);
        let mut s = match w[1] {
            "plateau" => s.factor(0.5).patience(2).cooldown(1),
            "plateau_max" => s
                .mode(PlateauMode::Max)
                .factor(0.3)
                .patience(1)
                .min_lr(0.005),
            _ => s
                .factor(0.5)
                .patience(1)
                .threshold(0.06, ThresholdMode::Abs),
        };
        for m in metrics {
            opt.step()?;
            s.step(&mut opt, if w[1] == "plateau_max" { -m } else { m });
            rates.push(opt.lr());
        }
        return Tensor::from_vec(rates, 14, Device::Cpu);
    }
    let mut sched: Box<dyn LRScheduler> = match w[1] {
        "step" => Box::new(StepLR::new(&opt, 3, 0.5)),
        "exp" => Box::new(ExponentialLR::new(&opt, 0.9)),
        "cos" => Box::new(CosineAnnealingLR::new(&opt, 5, 0.0)),
        "multistep" => Box::new(MultiStepLR::new(&opt, &[2, 5, 5, 9], 0.5)),
        "linear" => Box::new(LinearLR::new(&mut opt, 1.0 / 3.0, 1.0, 5)),
        "linear_up" => Box::new(LinearLR::new(&mut opt, 0.25, 0.75, 6)),
        "lambda" => Box::new(LambdaLR::new(&mut opt, |e| 1.0 / (1.0 + e as f64))),
        "warm_restarts" => Box::new(CosineAnnealingWarmRestarts::new(&opt, 3, 2, 0.01)),
        "warm_restarts_flat" => Box::new(CosineAnnealingWarmRestarts::new(&opt, 4, 1, 0.0)),
        _ => Box::new(CosineAnnealingLR::new(&opt, 4, 0.01)),
    };
    for _ in metrics {
        opt.step()?;
        sched.step(&mut opt);
        rates.push(opt.lr());
    }
    Tensor::from_vec(rates, 14, Device::Cpu)
}

/// Gradient clipping over two parameters: the norm returned (for `norm`) and the gradients
/// after, flattened into one float64 vector.
fn clip_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    let (kind, d, v) = (w[1], w[2], w[3].parse::<f64>().unwrap());
    let p1 = Parameter::new(ramp(&[2, 3], 5, 2.0, 0.75, d, dev)?.detach())?;
    let p2 = Parameter::new(ramp(&[4], 3, 1.0, 2.0, d, dev)?.detach())?;
    p1.tensor()
        .mul(&ramp(&[2, 3], 4, 1.0, 0.5, d, dev)?.detach())?
        .sum()?
        .backward()?;
    p2.tensor().mul(&p2.tensor())?.sum()?.backward()?;
    let params = [p1.clone(), p2.clone()];
    let mut parts = Vec::new();
    if kind == "norm" {
        parts.push(gpulab::nn::utils::clip_grad_norm_(&params, v)?.reshape([1])?);
    } else {
        gpulab::nn::utils::clip_grad_value_(&params, v)?;
    }
    for p in &params {
        parts.push(p.grad().expect("a gradient").reshape([-1])?);
    }
    let parts: Vec<Tensor> = parts
        .iter()
        .map(|t| t.to_dtype(DType::F64))
        .collect::<Result<_, Error>>()?;
    Tensor::cat(&parts, 0)
}

/// Moves `m` to `dev` in dtype `d` and sets its parameters, in `named_parameters` order, to
/// ramps (bench/torch_parity.py sets torch's the same way); returns them.
fn ramped(
    m: &dyn nn::Module,
    d: &str,
    dev: Device,
    scale: f64,
) -> Result<Vec<(String, Parameter)>, Error> {
    m.to_dtype(dtype(d))?;
    m.to(dev)?;
    let params = m.named_parameters();
    for (k, (_, p)) in params.iter().enumerate() {
        p.set_data(ramp(&p.shape(), 5 + k % 3, 2.0, scale, d, dev)?)?;
    }
    Ok(params)
}

/// A recurrent layer with ramp weights on a ramp sequence (see bench/torch_parity.py's
/// `rnn_case`): its output, final states, or a gradient of `sum(output * w)`.
fn rnn_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    use gpulab::nn::{GRU, LSTM, RNN};
    let (op, d, want) = (w[1], w[2], w[3]);
    let kind = op.split('_').next().unwrap();
    let layers = if matches!(kind, "lstm2" | "gru2") {
        2
    } else {
        1
    };
    let m = match kind {
        "rnn" => RNN::new(3, 4),
        "rnnrelu" => RNN::new(3, 4).nonlinearity("relu"),
        "lstm" | "lstm2" => LSTM::new(3, 4),
        _ => GRU::new(3, 4),
    }
    .num_layers(layers)
    .batch_first(kind == "lstm2")
    .bias(op != "gru_nobias")
    .bidirectional(op.ends_with("_bi"));
    let params = ramped(&m, d, dev, 0.2)?;
    let unbatched = op.ends_with("_unbatched");
    // A packed batch of three sequences (RNNS in torch_parity.py).
    let packed = op.contains("_packed");
    let lengths: &[usize] = if op.contains("unsorted") {
        &[4, 2, 3]
    } else {
        &[4, 3, 2]
    };
    let xs: &[usize] = match (packed, unbatched) {
        (true, _) => &[4, 3, 3],
        (_, true) => &[3, 3],
        _ => &[3, 2, 3],
    };
    let x = ramp(xs, 7, 3.0, 0.4, d, dev)?;
    let slots = layers * if op.ends_with("_bi") { 2 } else { 1 };
    let n = if packed { 3 } else { 2 };
    let hs: Vec<usize> = if unbatched {
        vec![slots, 4]
    } else {
        vec![slots, n, 4]
    };
    let h0 = ramp(&hs, 3, 1.0, 0.3, d, dev)?;
    let c0 = kind
        .starts_with("lstm")
        .then(|| ramp(&hs, 4, 2.0, 0.25, d, dev))
        .transpose()?;
    let r = if packed {
        use gpulab::nn::utils::rnn;
        let xp = rnn::pack_padded_sequence(&x, lengths, false, !op.contains("unsorted"))?;
        let r = m.forward_packed(&xp, Some(&h0), c0.as_ref())?;
        gpulab::nn::RecurrentOutput {
            output: r.output.data,
            h_n: r.h_n,
            c_n: r.c_n,
        }
    } else {
        m.forward_with(&x, Some(&h0), c0.as_ref())?
    };
    match want {
        "out" => return Ok(r.output.detach()),
        "hn" => return Ok(r.h_n.detach()),
        "cn" => {
            return r
                .c_n
                .map(|c| c.detach())
                .ok_or_else(|| Error::Invalid("no c_n".into()))
        }
        _ => {}
    }
    weighted_backward(&r.output)?;
    let param = |name: &str| {
        params
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, p)| p.grad())
    };
    let g = match want {
        "x" => x.grad(),
        "h0" => h0.grad(),
        "wih" => param("weight_ih_l0"),
        "whh" => param("weight_hh_l0"),
        _ => param("bias_hh_l0"),
    };
    g.ok_or_else(|| Error::Invalid("no gradient".into()))
}

/// Transformer decoder layers and stacks with a causal target mask (see
/// bench/torch_parity.py's `tfm_case`).
fn tfm_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    use gpulab::nn::{
        LayerNorm, Transformer, TransformerConfig, TransformerDecoderLayer, TransformerEncoder,
        TransformerEncoderLayer, TransformerMasks,
    };
    let (op, d, want) = (w[1], w[2], w[3]);
    let causal = Tensor::from_vec(
        vec![false, true, true, false, false, true, false, false, false],
        (3, 3),
        dev,
    )?;
    let tgt = ramp(&[3, 2, 8], 7, 3.0, 0.4, d, dev)?;
    let mem = ramp(&[4, 2, 8], 5, 2.0, 0.35, d, dev)?;
    let masks = TransformerMasks {
        tgt_mask: Some(&causal),
        ..Default::default()
    };
    let (out, params, names) = if op.starts_with("dec") {
        let m = TransformerDecoderLayer::new(8, 2)
            .dim_feedforward(16)
            .dropout(0.0)
            .activation(if op == "dec_pre" { "gelu" } else { "relu" })
            .norm_first(op == "dec_pre");
        let params = ramped(&m, d, dev, 0.3)?;
        let out = m.forward_with(&tgt, &mem, &masks)?;
        (
            out,
            params,
            ["multihead_attn.in_proj_weight", "linear2.weight"],
        )
    } else if op == "encstack" {
        let layer = || {
            TransformerEncoderLayer::new(8, 2)
                .dim_feedforward(16)
                .dropout(0.0)
        };
        let m = TransformerEncoder::new(layer, 2).norm(LayerNorm::new([8]));
        let params = ramped(&m, d, dev, 0.3)?;
        let out = m.forward_with(&tgt, Some(&causal), None)?;
        (
            out,
            params,
            [
                "layers.0.self_attn.in_proj_weight",
                "layers.1.linear2.weight",
            ],
        )
    } else {
        let m = Transformer::new(TransformerConfig {
            d_model: 8,
            nhead: 2,
            num_encoder_layers: 2,
            num_decoder_layers: 1,
            dim_feedforward: 16,
            dropout: 0.0,
            ..Default::default()
        });
        let params = ramped(&m, d, dev, 0.3)?;
        let out = m.forward_with(&mem, &tgt, &masks)?;
        (
            out,
            params,
            [
                "encoder.layers.0.self_attn.in_proj_weight",
                "decoder.layers.0.linear2.weight",
            ],
        )
    };
    let param = |name: &str| {
        params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p.tensor())
            .expect("the layer has it")
    };
    let inputs = vec![
        ("q", tgt.clone()),
        ("mem", mem.clone()),
        ("inw", param(names[0])),
        ("outw", param(names[1])),
    ];
    result_or_grad(&out, want, &inputs)
}

/// A recurrent cell stepped twice by hand (see bench/torch_parity.py's `cell_case`).
fn cell_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    use gpulab::nn::{GRUCell, LSTMCell, RNNCell};
    let (op, d, want) = (w[1], w[2], w[3]);
    let kind = op.split('_').next().unwrap();
    let m = match kind {
        "rnncell" => RNNCell::new(3, 4),
        "lstmcell" => LSTMCell::new(3, 4),
        _ => GRUCell::new(3, 4),
    };
    let m = if op == "rnncell_relu" {
        m.nonlinearity("relu")
    } else {
        m
    }
    .bias(!op.ends_with("_nobias"));
    let params = ramped(&m, d, dev, 0.2)?;
    let unbatched = op.ends_with("_unbatched");
    let xs: &[usize] = if unbatched { &[2, 3] } else { &[2, 2, 3] };
    let hs: &[usize] = if unbatched { &[4] } else { &[2, 4] };
    let x = ramp(xs, 7, 3.0, 0.4, d, dev)?;
    let h0 = ramp(hs, 3, 1.0, 0.3, d, dev)?;
    let lstm = kind == "lstmcell";
    let (mut h, mut c) = (h0.clone(), None);
    if lstm {
        c = Some(ramp(hs, 4, 2.0, 0.25, d, dev)?);
    }
    for t in 0..2 {
        let xt = x.select(0, t)?;
        if lstm {
            let (h1, c1) = m.forward_lstm(&xt, Some((&h, c.as_ref().unwrap())))?;
            (h, c) = (h1, Some(c1));
        } else {
            h = m.forward_with(&xt, Some(&h))?;
        }
    }
    match want {
        "out" => return Ok(h.detach()),
        "cn" => {
            return c
                .map(|c| c.detach())
                .ok_or_else(|| Error::Invalid("no c".into()))
        }
        _ => {}
    }
    weighted_backward(&h)?;
    let param = |name: &str| {
        params
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, p)| p.grad())
    };
    let g = match want {
        "x" => x.grad(),
        "h0" => h0.grad(),
        "wih" => param("weight_ih"),
        "whh" => param("weight_hh"),
        _ => param("bias_hh"),
    };
    g.ok_or_else(|| Error::Invalid("no gradient".into()))
}

/// Attention on ramps (see bench/torch_parity.py's `attn_case`).
fn attn_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    use gpulab::nn::{MultiheadAttention, TransformerEncoderLayer};
    let (op, d, want) = (w[1], w[2], w[3]);
    // Key 3 of every query's row is masked out for the bool masks (no row fully masked).
    let allow: Vec<bool> = (0..15).map(|i| i % 5 != 3 || i / 5 == 0).collect();
    let (out, inputs) = if op.starts_with("sdpa") {
        let q = ramp(&[2, 2, 3, 4], 7, 3.0, 0.3, d, dev)?;
        let k = ramp(&[2, 2, 5, 4], 5, 2.0, 0.4, d, dev)?;
        let v = ramp(&[2, 2, 5, 3], 4, 1.0, 0.5, d, dev)?;
        let mask = match op {
            "sdpa_bool" => Some(Tensor::from_vec(allow, (3, 5), Device::Cpu)?.to(dev)?),
            "sdpa_float" => Some(ramp(&[3, 5], 3, 1.0, 0.5, d, dev)?.detach()),
            _ => None,
        };
        let scale = (op == "sdpa_scale").then_some(0.5);
        let out = F::scaled_dot_product_attention(
            &q,
            &k,
            &v,
            mask.as_ref(),
            0.0,
            op == "sdpa_causal",
            scale,
        )?;
        (out, vec![("q", q), ("k", k), ("v", v)])
    } else if op.starts_with("enc") {
        let bf = op == "enc_kpm";
        let m = TransformerEncoderLayer::new(8, 2)
            .dim_feedforward(16)
            .dropout(0.0)
            .activation(if op == "enc_pre" { "gelu" } else { "relu" })
            .batch_first(bf)
            .norm_first(op == "enc_pre");
        let params = ramped(&m, d, dev, 0.3)?;
        let x = ramp(
            if bf { &[2, 3, 8] } else { &[3, 2, 8] },
            7,
            3.0,
            0.4,
            d,
            dev,
        )?;
        let kpm = bf
            .then(|| Tensor::from_vec(vec![false, false, false, false, false, true], (2, 3), dev))
            .transpose()?;
        let out = m.forward_masked(&x, kpm.as_ref())?;
        if want == "out" {
            return Ok(out.detach());
        }
        weighted_backward(&out)?;
        let param = |name: &str| {
            params
                .iter()
                .find(|(n, _)| n == name)
                .and_then(|(_, p)| p.grad())
        };
        let g = match want {
            "q" => x.grad(),
            "inw" => param("self_attn.in_proj_weight"),
            _ => param("linear1.weight"),
        };
        return g.ok_or_else(|| Error::Invalid("no gradient".into()));
    } else {
        let bf = op == "mha_kpm";
        let m = MultiheadAttention::new(4, 2).batch_first(bf);
        let params = ramped(&m, d, dev, 0.3)?;
        let x = ramp(
            if bf { &[2, 3, 4] } else { &[3, 2, 4] },
            7,
            3.0,
            0.4,
            d,
            dev,
        )?;
        let kv = if op == "mha_cross" {
            ramp(&[5, 2, 4], 6, 2.0, 0.35, d, dev)?
        } else {
            x.clone()
        };
        let kpm = bf
            .then(|| Tensor::from_vec(vec![false, false, false, false, false, true], (2, 3), dev))
            .transpose()?;
        let am = (op == "mha_amask")
            .then(|| ramp(&[3, 3], 3, 1.0, 0.5, d, dev).map(|t| t.detach()))
            .transpose()?;
        let r = m.attend(&x, &kv, &kv, kpm.as_ref(), true, am.as_ref())?;
        if want == "w" {
            return r.weights.ok_or_else(|| Error::Invalid("no weights".into()));
        }
        if want == "out" {
            return Ok(r.output.detach());
        }
        weighted_backward(&r.output)?;
        let g = match want {
            "q" => x.grad(),
            "inw" => params[0].1.grad(),
            _ => params[2].1.grad(),
        };
        return g.ok_or_else(|| Error::Invalid("no gradient".into()));
    };
    result_or_grad(&out, want, &inputs)
}

/// An op or a small layer in an `amp::autocast` region of dtype `w[2]` on float32 ramps (see
/// bench/torch_parity.py's `amp_case`): its result, or the float32 gradient of
/// `sum(result * w)` for its input (`x`), a weight (`w`) or a bias (`b`). `amp64`: the same
/// in float64 without a region, the reference both sides are measured against.
fn amp_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    use gpulab::amp::Autocast;
    use gpulab::nn::{Module, MultiheadAttention, GRU, LSTM};
    let (op, d, want) = (w[1], w[2], w[3]);
    let work = if w[0] == "amp64" { "f64" } else { "f32" };
    let r = |shape: &[usize], m, off, scale| ramp(shape, m, off, scale, work, dev);
    let x = r(&[4, 3], 5, 2.0, 0.37)?;
    let (lw, lb) = (r(&[5, 3], 7, 3.0, 0.29)?, r(&[5], 3, 1.0, 0.41)?);
    let img = r(&[2, 2, 5, 5], 6, 2.5, 0.3)?;
    let (kw, kb) = (r(&[3, 2, 3, 3], 5, 2.0, 0.2)?, r(&[3], 3, 1.0, 0.3)?);
    let (nw, nb) = (r(&[5], 4, 1.0, 0.5)?, r(&[5], 3, 1.0, 0.25)?);
    let (cw, cb) = (r(&[3], 4, 1.0, 0.5)?, r(&[3], 3, 1.0, 0.25)?);
    let target = r(&[4, 5], 6, 2.0, 0.3)?.detach();
    let probs = r(&[4, 5], 5, 0.0, 0.2)?.detach();
    let labels = Tensor::from_vec(vec![0i64, 4, 2, 1], 4, Device::Cpu)?.to(dev)?;
    let mut inputs = vec![("x", x.clone()), ("w", lw.clone()), ("b", lb.clone())];
    let region = Autocast::new(dev).enabled(work == "f32");
    let region = if work == "f32" {
        region.dtype(dtype(d))
    } else {
        region
    };
    let out = region.run(|| -> Result<Tensor, Error> {
        let h = F::linear(&x, &lw, Some(&lb))?;
        let conv = || F::conv2d(&img, &kw, Some(&kb), 1, 1, 1, 1);
        let img_inputs = vec![("x", img.clone()), ("w", kw.clone()), ("b", kb.clone())];
        Ok(match op {
            "linear" => h,
            "matmul" => x.matmul(&lw.t()?)?,
            "dot" => x.select(0, 0)?.dot(&x.select(0, 1)?)?,
            "bmm" => {
                let (a, b) = (r(&[2, 3, 4], 7, 3.0, 0.3)?, r(&[2, 4, 2], 5, 2.0, 0.4)?);
                inputs = vec![("x", a.clone()), ("w", b.clone())];
                a.matmul(&b)?
            }
            "conv" => {
                inputs = img_inputs;
                conv()?
            }
            "convT" => {
                let (t, tw) = (
                    r(&[1, 2, 3, 3], 5, 2.0, 0.4)?,
                    r(&[2, 3, 2, 2], 7, 3.0, 0.3)?,
                );
                inputs = vec![("x", t.clone()), ("w", tw.clone()), ("b", kb.clone())];
                F::conv_transpose2d(&t, &tw, Some(&kb), 2, 0, 0, 1, 1)?
            }
            "sdpa" => {
                let (q, k) = (r(&[2, 3, 4], 7, 3.0, 0.3)?, r(&[2, 5, 4], 5, 2.0, 0.4)?);
                let v = r(&[2, 5, 3], 4, 1.0, 0.5)?;
                inputs = vec![("x", q.clone()), ("w", k.clone()), ("b", v.clone())];
                F::scaled_dot_product_attention(&q, &k, &v, None, 0.0, false, None)?
            }
            "ce" => F::cross_entropy(&h, &labels)?,
            "nll" => F::nll_loss(&F::log_softmax(&h, 1)?, &labels)?,
            "mse" => F::mse_loss(&h, &target)?,
            "l1" => F::l1_loss(&h, &target)?,
            "bce" => F::binary_cross_entropy(&h.sigmoid()?, &probs)?,
            "bcel" => F::binary_cross_entropy_with_logits(&h, &probs)?,
            "softmax" => h.softmax(1)?,
            "logsoftmax" => h.log_softmax(1)?,
            "ln" => {
                inputs = vec![("x", x.clone()), ("w", nw.clone()), ("b", nb.clone())];
                F::layer_norm(&h, &[5], Some(&nw), Some(&nb), 1e-5)?
            }
            "gn" | "bn" => {
                inputs = vec![("x", img.clone()), ("w", cw.clone()), ("b", cb.clone())];
                if op == "gn" {
                    F::group_norm(&conv()?, 3, Some(&cw), Some(&cb), 1e-5)?
                } else {
                    F::batch_norm(&conv()?, None, None, Some(&cw), Some(&cb), true, 0.1, 1e-5)?
                }
            }
            "relu" => h.relu()?,
            "addf32" => h.add(&target)?,
            "prod" => h.prod_dim(1)?,
            "cumsum" => h.cumsum(1)?,
            "norm" => h.norm_dim(1)?,
            "exp" => h.exp()?,
            "sinh" => h.sinh()?,
            "log" => h.abs()?.add(1.0)?.log()?,
            "pow" => h.pow(3)?,
            "square" => h.square()?,
            "sum" => h.sum_dim(1)?,
            "mean" => h.mean_dim(1)?,
            "var" => h.var_dim(1)?,
            "elu" => F::elu(&h, 1.0)?,
            "mish" => F::mish(&h)?,
            "avgpool" => {
                inputs = img_inputs;
                F::avg_pool2d(&conv()?, 2, 2, 0, false, true)?
            }
            "interp" => {
                inputs = img_inputs;
                F::interpolate(&conv()?, 2.0, "bilinear", false)?
            }
            "lstm" | "gru" => {
                let m: Box<dyn Module> = if op == "lstm" {
                    Box::new(LSTM::new(3, 4))
                } else {
                    Box::new(GRU::new(3, 4))
                };
                let params = ramped(m.as_ref(), work, dev, 0.2)?;
                let xs = r(&[3, 2, 3], 7, 3.0, 0.4)?;
                let p = |name: &str| params.iter().find(|(n, _)| n == name).unwrap().1.tensor();
                inputs = vec![
                    ("x", xs.clone()),
                    ("w", p("weight_ih_l0")),
                    ("b", p("bias_hh_l0")),
                ];
                m.forward(&xs)?
            }
            "mha" => {
                let m = MultiheadAttention::new(4, 2);
                let params = ramped(&m, work, dev, 0.3)?;
                let xs = r(&[3, 2, 4], 7, 3.0, 0.4)?;
                let p = |name: &str| params.iter().find(|(n, _)| n == name).unwrap().1.tensor();
                inputs = vec![
                    ("x", xs.clone()),
                    ("w", p("in_proj_weight")),
                    ("b", p("out_proj.weight")),
                ];
                m.attend(&xs, &xs, &xs, None, true, None)?.output
            }
            _ => panic!("unknown amp case {op:?}"),
        })
    })?;
    result_or_grad(&out, want, &inputs)
}

/// Four SGD steps through a `GradScaler` (see bench/torch_parity.py's `scaler_case`): the
/// parameter after each step and the scale after each update, joined.
fn scaler_case(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    use gpulab::amp::GradScaler;
    let c = w[1];
    let p = Parameter::new(ramp(&[3], 3, 1.0, 0.5, "f32", dev)?.detach())?;
    let mut opt = SGD::new(vec![p.clone()], 0.1);
    let mut scaler = GradScaler::new()
        .init_scale(1024.0)
        .growth_interval(if c == "growth" { 1 } else { 2 });
    let mut seen = Vec::new();
    for step in 0..4 {
        opt.zero_grad();
        let s = (step + 1) as f32;
        let mut k = vec![s, -2.0 * s, 0.5 * s];
        if c == "inf" && step == 1 {
            k = vec![1.0, f32::INFINITY, 0.5];
        }
        let k = Tensor::from_vec(k, 3, Device::Cpu)?.to(dev)?;
        let w = p.tensor();
        let loss = w.mul(&w)?.mul(&k)?.sum()?;
        scaler.scale(&loss)?.backward()?;
        if c == "unscale" {
            scaler.unscale_(&opt)?;
            gpulab::nn::utils::clip_grad_norm_(std::slice::from_ref(&p), 1.0)?;
        }
        scaler.step(&mut opt)?;
        scaler.update()?;
        seen.extend(p.tensor().to_f64_vec()?);
        seen.push(scaler.get_scale());
    }
    Tensor::from_vec(seen, vec![16], Device::Cpu)?.to_dtype(DType::F32)
}

fn run(w: &[&str], dev: Device) -> Result<Tensor, Error> {
    let (kind, op, d) = (w[0], w[1], w[2]);
    if kind == "amp" || kind == "amp64" {
        return amp_case(w, dev);
    }
    if kind == "scaler" {
        return scaler_case(w, dev);
    }
    if kind == "attn" {
        return attn_case(w, dev);
    }
    if kind == "rnn" {
        return rnn_case(w, dev);
    }
    if kind == "cell" {
        return cell_case(w, dev);
    }
    if kind == "tfm" {
        return tfm_case(w, dev);
    }
    if kind == "sched" {
        return sched_case(w);
    }
    if kind == "cls" {
        return cls_case(w, dev);
    }
    if kind == "scat" {
        return scat_case(w, dev);
    }
    if kind == "einsum" {
        return einsum_case(w, dev);
    }
    if kind == "adv" {
        return adv_case(w, dev);
    }
    if kind == "clip" {
        return clip_case(w, dev);
    }
    if kind == "norm" {
        return norm_case(w, dev);
    }
    if kind == "param" {
        return param_case(w, dev);
    }
    if kind == "fcall" {
        return fcall_case(w, dev);
    }
    if kind == "agrad" {
        return agrad_case(w, dev);
    }
    if kind == "jac" {
        return jac_case(w, dev);
    }
    if kind == "prune" {
        return prune_case(w, dev);
    }
    if kind == "func" {
        return func_case(w, dev);
    }
    if kind == "more" {
        return more_case(w, dev);
    }
    if kind == "empty" {
        return empty_case(w, dev);
    }
    if kind == "arange" {
        return match op {
            "int" => Tensor::arange(0, 5, dev),
            "float" => Tensor::arange(0.0, 5.0, dev),
            "step" => Tensor::arange_step(1.0, 2.0, 0.25, dev),
            "down" => Tensor::arange_step(5, 0, -2, dev),
            "tenth" => Tensor::arange_step(0.0, 1.0, 0.1, dev),
            "empty" => Tensor::arange(3, 3, dev),
            "zero_step" => Tensor::arange_step(0, 5, 0, dev),
            _ => Tensor::arange_step(5.0, 0.0, 1.0, dev),
        };
    }
    let a = input(d, if kind.starts_with('s') { 2 } else { 0 }, dev);
    let b = || input(w[3], 1, dev);
    match kind {
        "bin" | "sbin" | "inp" => binary(op, &a, (&b()).into()),
        "tbin" => binary(op, &a.t()?, (&b().t()?).into()),
        "bins" | "inps" => binary(op, &a, scalar(w[3])),
        "un" | "sun" => unary(op, &a),
        "not" => a.logical_not(),
        "red" | "sred" => reduction(op, &a),
        "row" => binary(op, &a, (&b().select(0, 1)?).into()),
        "col" => binary(op, &a, (&b().narrow(1, 2, 1)?).into()),
        "zero" => binary(op, &a, (&b().select(0, 1)?.select(0, 1)?).into()),
        "zlhs" => binary(op, &b().select(0, 1)?.select(0, 1)?, (&a).into()),
        "cast" => a.to_dtype(dtype(w[3])),
        "where" => a.where_(&input("bool", 1, dev), &b()),
        "zwhere" => a.where_(&input("bool", 1, dev), &b().select(0, 1)?.select(0, 1)?),
        "cat" => Tensor::cat(&[a, b()], 0),
        "stack" => Tensor::stack(&[a, b()], 1),
        "matmul" => a.matmul(&b().t()?),
        "tmatmul" => a.t()?.matmul(&b()),
        "grad" | "sgrad" | "rgrad" => gradient(w, dev),
        "nn" => nn_case(w, dev),
        "optim" => optim_case(w, dev),
        "view" => view_case(w, dev),
        _ => panic!("unknown case kind {kind:?}"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dev = match args.iter().position(|a| a == "--device") {
        Some(i) => Device::new(&args[i + 1]).expect("--device cpu|cuda|cuda:N"),
        None => Device::Cpu,
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("stdin is text");
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.is_empty() {
            continue;
        }
        // A panic is a finding too (the kernel would show it as an error): report and go on.
        let result =
            std::panic::catch_unwind(|| show(run(&w, dev))).unwrap_or_else(|_| "PANIC".to_string());
        writeln!(out, "{line} => {result}").expect("stdout is open");
    }
}
