//! torch's `F.pad`: widen (or, with negative amounts, crop) the last dimensions of a tensor.
//! Built from `narrow`, `cat` and `index_select`, so it runs on every device and has its
//! gradient from theirs.

use crate::device::Device;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Pads `x` as torch's `F.pad(x, pad, mode, value)`: `pad` holds a (before, after) pair
/// per dimension from the last one backwards (`[left, right]` pads the last dimension,
/// `[left, right, top, bottom]` the last two); negative amounts crop. `mode`:
/// - `"constant"`: `value` in the new places (any rank, up to one pair per dimension);
/// - `"reflect"`: the edge mirrored without repeating it (`[1, 2, 3]` by 2 → `3, 2, 1, 2, 3`);
///   each amount below its dimension's size;
/// - `"replicate"`: the edge element repeated;
/// - `"circular"`: the other end wrapped round; each amount at most the dimension's size.
///
/// As torch, the last three need 1 to 3 pairs and an input with one or two more
/// dimensions than pairs (batch and channels before the padded ones).
pub fn pad(x: &Tensor, pad: &[isize], mode: &str, value: f64) -> Result<Tensor> {
    if !pad.len().is_multiple_of(2) {
        return Err(Error::Invalid(format!(
            "pad: the amounts come in (before, after) pairs, got {} of them ({pad:?})",
            pad.len()
        )));
    }
    let pairs = pad.len() / 2;
    let rank = x.rank();
    if pairs > rank {
        return Err(Error::BadShape(format!(
            "pad: {pairs} pairs of amounts ({pad:?}) for a tensor of {rank} dimensions (shape \
             {:?}); at most one pair per dimension",
            x.shape()
        )));
    }
    if !["constant", "reflect", "replicate", "circular"].contains(&mode) {
        return Err(Error::Invalid(format!(
            "pad: unknown mode {mode:?}; expected constant, reflect, replicate or circular"
        )));
    }
    if mode != "constant" && !((1..=3).contains(&pairs) && (rank == pairs + 1 || rank == pairs + 2))
    {
        return Err(Error::BadShape(format!(
            "pad: {mode} padding of {pairs} dimension(s) needs an input of {} or {} dimensions \
             (batch and channels before the padded ones), got shape {:?}",
            pairs + 1,
            pairs + 2,
            x.shape()
        )));
    }
    if matches!(mode, "reflect" | "replicate") {
        x.refuse_bool(&format!("pad: {mode} padding"))?;
    }
    let mut out = x.clone();
    for (i, lr) in pad.chunks(2).enumerate() {
        let d = rank - 1 - i;
        let (l, r) = (lr[0], lr[1]);
        if l == 0 && r == 0 {
            continue;
        }
        let n = out.shape()[d] as isize;
        let len = n + l + r;
        if len < 0 {
            return Err(Error::BadShape(format!(
                "pad: cropping ({l}, {r}) leaves a negative size in dimension {d} of size {n} \
                 (shape {:?})",
                x.shape()
            )));
        }
        out = match mode {
            "constant" => constant(&out, d, l, r, value)?,
            _ => {
                let limit_ok = match mode {
                    "reflect" => l < n && r < n,
                    "circular" => l <= n && r <= n,
                    _ => n > 0 || len == 0,
                };
                if !limit_ok || n == 0 {
                    return Err(Error::BadShape(format!(
                        "pad: {mode} padding ({l}, {r}) of dimension {d} of size {n} (shape \
                         {:?}): {}",
                        x.shape(),
                        match mode {
                            "reflect" => "each amount must be smaller than the size",
                            "circular" => "each amount can be at most the size",
                            _ => "an empty dimension has no edge to repeat",
                        }
                    )));
                }
                let index: Vec<i64> = (0..len)
                    .map(|j| {
                        let p = j - l;
                        (match mode {
                            "reflect" if p < 0 => -p,
                            "reflect" if p >= n => 2 * (n - 1) - p,
                            "replicate" => p.clamp(0, n - 1),
                            "circular" => p.rem_euclid(n),
                            _ => p,
                        }) as i64
                    })
                    .collect();
                let index = Tensor::from_vec(index, len as usize, Device::Cpu)?;
                out.index_select(d as isize, &index)?
            }
        };
    }
    if out.shares_storage(x) {
        // Nothing padded: still a new tensor, as torch's.
        return x.deep_clone();
    }
    Ok(out)
}

/// `value` added before (`l`) and after (`r`) dimension `d`, negative amounts cropping.
fn constant(x: &Tensor, d: usize, l: isize, r: isize, value: f64) -> Result<Tensor> {
    let n = x.shape()[d] as isize;
    let (start, end) = ((-l).max(0), n - (-r).max(0));
    let kept = x.narrow(d as isize, start as usize, (end - start).max(0) as usize)?;
    let fill = |k: isize| -> Result<Tensor> {
        let mut dims = x.shape().to_vec();
        dims[d] = k as usize;
        Tensor::full_dtype(dims, value, x.dtype(), x.device())
    };
    let mut parts = Vec::with_capacity(3);
    if l > 0 {
        parts.push(fill(l)?);
    }
    parts.push(kept);
    if r > 0 {
        parts.push(fill(r)?);
    }
    if parts.len() == 1 {
        return Ok(parts.pop().expect("one part"));
    }
    Tensor::cat(&parts, d as isize)
}

/// The amounts of a padding layer, as torch's padding layers take them: one number for every
/// side, or one per side, last dimension first (`(left, right)`, then `(top, bottom)`, then
/// `(front, back)`).
macro_rules! pad_amounts {
    ($(#[$doc:meta])* $name:ident, $n:literal, ($($f:ident),+)) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name($(pub pad_amounts!(@isize $f)),+);

        impl From<isize> for $name {
            fn from(p: isize) -> $name {
                $name($(pad_amounts!(@same p $f)),+)
            }
        }

        impl From<i32> for $name {
            fn from(p: i32) -> $name {
                $name::from(p as isize)
            }
        }

        impl From<usize> for $name {
            fn from(p: usize) -> $name {
                $name::from(p as isize)
            }
        }

        impl From<($(pad_amounts!(@isize $f)),+)> for $name {
            fn from(($($f),+): ($(pad_amounts!(@isize $f)),+)) -> $name {
                $name($($f),+)
            }
        }

        impl From<($(pad_amounts!(@i32 $f)),+)> for $name {
            fn from(($($f),+): ($(pad_amounts!(@i32 $f)),+)) -> $name {
                $name($($f as isize),+)
            }
        }

        impl $name {
            fn amounts(self) -> [isize; $n] {
                let $name($($f),+) = self;
                [$($f),+]
            }
            fn tuple(self) -> String {
                let parts: Vec<String> = self.amounts().iter().map(|v| v.to_string()).collect();
                format!("({})", parts.join(", "))
            }
        }
    };
    (@isize $f:ident) => { isize };
    (@i32 $f:ident) => { i32 };
    (@same $p:ident $f:ident) => { $p };
}

pad_amounts!(
    /// A 1-D padding layer's `(left, right)`.
    Pad2,
    2,
    (l, r)
);
pad_amounts!(
    /// A 2-D padding layer's `(left, right, top, bottom)`.
    Pad4,
    4,
    (l, r, t, b)
);
pad_amounts!(
    /// A 3-D padding layer's `(left, right, top, bottom, front, back)`.
    Pad6,
    6,
    (l, r, t, b, f, k)
);

/// torch's padding layers: each pads the last one, two or three dimensions of its input
/// with [`pad`] in one mode.
macro_rules! pad_layer {
    ($(#[$doc:meta])* $name:ident, $amounts:ident, $mode:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy)]
        pub struct $name {
            padding: $amounts,
        }

        impl $name {
            pub fn new(padding: impl Into<$amounts>) -> $name {
                $name { padding: padding.into() }
            }
        }

        impl super::Module for $name {
            fn forward(&self, x: &Tensor) -> Result<Tensor> {
                pad(x, &self.padding.amounts(), $mode, 0.0)
            }
            fn describe(&self) -> String {
                format!("{}({})", stringify!($name), self.padding.tuple())
            }
        }
    };
}

/// torch's constant padding layers: `value` around the last one, two or three dimensions.
macro_rules! constant_pad_layer {
    ($(#[$doc:meta])* $name:ident, $amounts:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy)]
        pub struct $name {
            padding: $amounts,
            value: f64,
        }

        impl $name {
            pub fn new(padding: impl Into<$amounts>, value: f64) -> $name {
                $name {
                    padding: padding.into(),
                    value,
                }
            }
        }

        impl super::Module for $name {
            fn forward(&self, x: &Tensor) -> Result<Tensor> {
                pad(x, &self.padding.amounts(), "constant", self.value)
            }
            fn describe(&self) -> String {
                format!(
                    "{}(padding={}, value={})",
                    stringify!($name),
                    self.padding.tuple(),
                    super::py_float(self.value)
                )
            }
        }
    };
}

pad_layer!(
    /// Zeros around the last dimension (torch's `nn.ZeroPad1d`).
    ZeroPad1d,
    Pad2,
    "constant"
);
pad_layer!(
    /// Zeros around the last two dimensions (torch's `nn.ZeroPad2d`).
    ZeroPad2d,
    Pad4,
    "constant"
);
pad_layer!(
    /// Zeros around the last three dimensions (torch's `nn.ZeroPad3d`).
    ZeroPad3d,
    Pad6,
    "constant"
);
pad_layer!(
    /// The edges mirrored (torch's `nn.ReflectionPad1d`).
    ReflectionPad1d,
    Pad2,
    "reflect"
);
pad_layer!(
    /// The edges mirrored (torch's `nn.ReflectionPad2d`).
    ReflectionPad2d,
    Pad4,
    "reflect"
);
pad_layer!(
    /// The faces mirrored (torch's `nn.ReflectionPad3d`).
    ReflectionPad3d,
    Pad6,
    "reflect"
);
pad_layer!(
    /// The edge elements repeated (torch's `nn.ReplicationPad1d`).
    ReplicationPad1d,
    Pad2,
    "replicate"
);
pad_layer!(
    /// The edge elements repeated (torch's `nn.ReplicationPad2d`).
    ReplicationPad2d,
    Pad4,
    "replicate"
);
pad_layer!(
    /// The face elements repeated (torch's `nn.ReplicationPad3d`).
    ReplicationPad3d,
    Pad6,
    "replicate"
);
pad_layer!(
    /// The opposite ends wrapped round (torch's `nn.CircularPad1d`).
    CircularPad1d,
    Pad2,
    "circular"
);
pad_layer!(
    /// The opposite edges wrapped round (torch's `nn.CircularPad2d`).
    CircularPad2d,
    Pad4,
    "circular"
);
pad_layer!(
    /// The opposite faces wrapped round (torch's `nn.CircularPad3d`).
    CircularPad3d,
    Pad6,
    "circular"
);
constant_pad_layer!(
    /// `value` around the last dimension (torch's `nn.ConstantPad1d`).
    ConstantPad1d,
    Pad2
);
constant_pad_layer!(
    /// `value` around the last two dimensions (torch's `nn.ConstantPad2d`).
    ConstantPad2d,
    Pad4
);
constant_pad_layer!(
    /// `value` around the last three dimensions (torch's `nn.ConstantPad3d`).
    ConstantPad3d,
    Pad6
);
