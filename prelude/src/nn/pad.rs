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

/// The four amounts of a 2-D padding layer, `(left, right, top, bottom)`: one number for
/// all four, or the four, as torch's padding layers take them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pad4(pub isize, pub isize, pub isize, pub isize);

impl From<isize> for Pad4 {
    fn from(p: isize) -> Pad4 {
        Pad4(p, p, p, p)
    }
}

impl From<i32> for Pad4 {
    fn from(p: i32) -> Pad4 {
        Pad4::from(p as isize)
    }
}

impl From<usize> for Pad4 {
    fn from(p: usize) -> Pad4 {
        Pad4::from(p as isize)
    }
}

impl From<(isize, isize, isize, isize)> for Pad4 {
    fn from((l, r, t, b): (isize, isize, isize, isize)) -> Pad4 {
        Pad4(l, r, t, b)
    }
}

impl From<(i32, i32, i32, i32)> for Pad4 {
    fn from((l, r, t, b): (i32, i32, i32, i32)) -> Pad4 {
        Pad4(l as isize, r as isize, t as isize, b as isize)
    }
}

impl Pad4 {
    fn amounts(self) -> [isize; 4] {
        [self.0, self.1, self.2, self.3]
    }
    fn tuple(self) -> String {
        format!("({}, {}, {}, {})", self.0, self.1, self.2, self.3)
    }
}

/// torch's 2-D padding layers: each pads the last two dimensions of its input with
/// [`pad`] in one mode.
macro_rules! pad_layer {
    ($(#[$doc:meta])* $name:ident, $mode:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy)]
        pub struct $name {
            padding: Pad4,
        }

        impl $name {
            pub fn new(padding: impl Into<Pad4>) -> $name {
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

pad_layer!(
    /// Zeros around the last two dimensions (torch's `nn.ZeroPad2d`).
    ZeroPad2d,
    "constant"
);
pad_layer!(
    /// The edges mirrored (torch's `nn.ReflectionPad2d`).
    ReflectionPad2d,
    "reflect"
);
pad_layer!(
    /// The edge elements repeated (torch's `nn.ReplicationPad2d`).
    ReplicationPad2d,
    "replicate"
);
pad_layer!(
    /// The opposite edges wrapped round (torch's `nn.CircularPad2d`).
    CircularPad2d,
    "circular"
);

/// `value` around the last two dimensions (torch's `nn.ConstantPad2d`).
#[derive(Clone, Copy)]
pub struct ConstantPad2d {
    padding: Pad4,
    value: f64,
}

impl ConstantPad2d {
    pub fn new(padding: impl Into<Pad4>, value: f64) -> ConstantPad2d {
        ConstantPad2d {
            padding: padding.into(),
            value,
        }
    }
}

impl super::Module for ConstantPad2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        pad(x, &self.padding.amounts(), "constant", self.value)
    }
    fn describe(&self) -> String {
        format!(
            "ConstantPad2d(padding={}, value={})",
            self.padding.tuple(),
            super::py_float(self.value)
        )
    }
}
