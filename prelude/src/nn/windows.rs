//! What sliding-window ops (convolutions, pooling) share: their shape checks, the output size
//! of a window along one axis, and a small cache of the index tables their gathers use.

use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::sync::{Arc, Mutex};

/// Which table a window gather builds (each has its own order of entries).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum WindowKind {
    /// conv2d's unfolded input `[N*oh*ow, C*kh*kw]`.
    Conv,
    /// Pooling's windows `[N*C*oh*ow, k*k]`.
    Pool,
    /// conv_transpose2d's input spread out `[N, C, H', W']`: `stride - 1` zeros between
    /// pixels and the borders a stride-1 convolution needs (`pad` holds them).
    Spread,
}

/// What determines a window gather's indices.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct WindowKey {
    pub kind: WindowKind,
    pub dims: [usize; 4],
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    /// Before the first row and the first column.
    pub pad: [isize; 2],
    pub dilation: [usize; 2],
    /// The output size (which also says the padding after).
    pub out: [usize; 2],
}

/// The last few window index tables: a training loop runs the same shapes every step, and
/// building a table (one entry per element of the unfolded input, tens of millions for a
/// CNN batch) costs about as much as the matmul that follows it.
static WINDOWS: Mutex<Vec<(WindowKey, Arc<Vec<i32>>)>> = Mutex::new(Vec::new());
const WINDOWS_KEPT: usize = 8;

pub(super) fn window_indices(key: WindowKey, build: impl FnOnce() -> Vec<i32>) -> Arc<Vec<i32>> {
    if let Some((_, idx)) = WINDOWS.lock().unwrap().iter().find(|(k, _)| *k == key) {
        return idx.clone();
    }
    let idx = Arc::new(build());
    let mut cache = WINDOWS.lock().unwrap();
    if cache.len() >= WINDOWS_KEPT {
        cache.remove(0);
    }
    cache.push((key, idx.clone()));
    idx
}

/// The four sizes of `x`, or an error naming `what` and the `layout` it should have.
pub(super) fn four_d(x: &Tensor, what: &str, layout: &str) -> Result<[usize; 4]> {
    match x.shape()[..] {
        [n, c, h, w] => Ok([n, c, h, w]),
        _ => Err(Error::BadShape(format!(
            "{what}: expected a 4-D {layout}, got shape {:?}",
            x.shape()
        ))),
    }
}

pub(super) fn nchw(x: &Tensor, what: &str) -> Result<[usize; 4]> {
    four_d(x, what, "input [N, C, H, W]")
}

/// What a 2-D op gives back, without the batch of one [`per_image`] added.
pub(super) trait Unbatch: Sized {
    fn unbatch(self) -> Result<Self>;
}

impl Unbatch for Tensor {
    fn unbatch(self) -> Result<Tensor> {
        self.squeeze(0)
    }
}

impl Unbatch for (Tensor, Tensor) {
    fn unbatch(self) -> Result<(Tensor, Tensor)> {
        Ok((self.0.squeeze(0)?, self.1.squeeze(0)?))
    }
}

/// `f` on `x`, where an unbatched image `[C, H, W]` goes in as a batch of one and its
/// result(s) come back without it, as torch's 2-D convolutions and pools take both (the
/// gradient flows through the squeeze, as in torch); a rank other than 3 or 4 is refused
/// here with both layouts named.
pub(super) fn per_image<T: Unbatch>(
    x: &Tensor,
    what: &str,
    f: impl FnOnce(&Tensor) -> Result<T>,
) -> Result<T> {
    match x.rank() {
        4 => f(x),
        3 => f(&x.unsqueeze(0)?)?.unbatch(),
        _ => Err(Error::BadShape(format!(
            "{what}: expected input [N, C, H, W] or [C, H, W], got shape {:?}",
            x.shape()
        ))),
    }
}

/// How many positions a `k`-tap window dilated by `dilation` (spanning `dilation*(k-1)+1`
/// inputs) takes, moved by `stride` over `len` inputs padded by `pad` before and after.
pub(super) fn window_count(
    len: usize,
    k: usize,
    stride: usize,
    pad: [usize; 2],
    dilation: usize,
    what: &str,
) -> Result<usize> {
    if stride == 0 || k == 0 || dilation == 0 {
        return Err(Error::Invalid(format!(
            "{what}: kernel size, stride and dilation must be positive, got kernel {k}, \
             stride {stride}, dilation {dilation}"
        )));
    }
    let padded = pad[0]
        .checked_add(pad[1])
        .and_then(|p| p.checked_add(len))
        .ok_or_else(|| Error::BadShape(format!("{what}: padding {pad:?} is too large")))?;
    let span = (k - 1)
        .checked_mul(dilation)
        .map(|s| s + 1)
        .ok_or_else(|| Error::BadShape(format!("{what}: dilation {dilation} is too large")))?;
    if padded < span {
        let pads = if pad[0] == pad[1] {
            format!("2x{}", pad[0])
        } else {
            format!("{}+{}", pad[0], pad[1])
        };
        let dilated = if dilation > 1 {
            format!(", {span} wide with dilation {dilation}")
        } else {
            String::new()
        };
        return Err(Error::BadShape(format!(
            "{what}: the input ({len} + {pads} padding) is smaller than the kernel ({k}{dilated})"
        )));
    }
    Ok((padded - span) / stride + 1)
}
