//! Max unpooling as torch's `F.max_unpool1d` and `F.max_unpool2d` (SegNet's decoder): each
//! value put back where `max_pool*_with_indices` found it, zeros elsewhere, by one `scatter`
//! (whose gradient gathers from the same places); and `F.max_pool1d_with_indices`, the 1-D
//! form of the pooling that gives those indices. The modules are `nn::MaxUnpool1d`/`2d`.

use super::conv::Size2;
use super::conv1d::{as_image, as_sequence};
use super::functional::float_input;
use super::pool::max_pool2d_with_indices;
use super::windows::nchw;
use crate::autograd::{no_grad, record};
use crate::error::{Error, Result};
use crate::tensor::host_mem::checked_numel;
use crate::tensor::{DType, Tensor};

/// [`super::conv1d::max_pool1d`] and where each maximum is, an int64 index along the
/// sequence (torch's `F.max_pool1d(.., return_indices=True)`), over `[N, C, L]` or `[C, L]`.
pub fn max_pool1d_with_indices(
    x: &Tensor,
    kernel_size: usize,
    stride: usize,
    padding: usize,
    dilation: usize,
    ceil_mode: bool,
) -> Result<(Tensor, Tensor)> {
    let (img, unbatched) = as_image("max_pool1d_with_indices", x)?;
    let (v, i) = max_pool2d_with_indices(
        &img,
        (1, kernel_size),
        (1, stride),
        (0, padding),
        (1, dilation),
        ceil_mode,
    )?;
    Ok((as_sequence(v, unbatched)?, as_sequence(i, unbatched)?))
}

/// torch's `_unpool_output_size`: `(in - 1) * stride - 2 * padding + kernel` per axis, or
/// the size asked for, which must lie strictly within `stride` of it.
fn unpooled_size(
    op: &str,
    input: [usize; 2],
    k: Size2,
    s: Size2,
    p: Size2,
    asked: Option<(usize, usize)>,
) -> Result<[usize; 2]> {
    let mut out = [0; 2];
    for (a, (((len, k), s), p)) in input
        .into_iter()
        .zip([k.0, k.1])
        .zip([s.0, s.1])
        .zip([p.0, p.1])
        .enumerate()
    {
        if s == 0 || k == 0 {
            return Err(Error::Invalid(format!(
                "{op}: kernel size and stride must be positive, got kernel {k}, stride {s}"
            )));
        }
        let default = (len.saturating_sub(1) * s + k) as i64 - 2 * p as i64;
        if default <= 0 {
            return Err(Error::BadShape(format!(
                "{op}: an input of {len} with kernel {k}, stride {s} and padding {p} unpools \
                 to nothing ({default})"
            )));
        }
        out[a] = match asked {
            None => default as usize,
            Some(size) => {
                let want = [size.0, size.1][a] as i64;
                let (lo, hi) = (default - s as i64, default + s as i64);
                if !(lo < want && want < hi) {
                    return Err(Error::BadShape(format!(
                        "{op}: invalid output_size {size:?} (dimension {a} must be between \
                         {lo} and {hi}, exclusive)"
                    )));
                }
                want as usize
            }
        };
    }
    Ok(out)
}

/// Each value of `x` (`[N, C, H, W]`) written at its plane position `indices` (int64, the
/// shape of `x`, as `max_pool2d_with_indices` gives) of an output of zeros (torch's
/// `F.max_unpool2d`). The output is `(H - 1) * stride - 2 * padding + kernel` per axis, or
/// `output_size` (within one stride of that, as torch's); the stride defaults to the
/// kernel.
pub fn max_unpool2d(
    x: &Tensor,
    indices: &Tensor,
    kernel: impl Into<Size2>,
    stride: Option<Size2>,
    padding: impl Into<Size2>,
    output_size: Option<(usize, usize)>,
) -> Result<Tensor> {
    const OP: &str = "max_unpool2d";
    let (k, p) = (kernel.into(), padding.into());
    let s = stride.unwrap_or(k);
    if x.rank() == 3 && indices.rank() == 3 {
        // Unbatched, as torch takes it: a batch of one.
        let (x1, i1) = (x.unsqueeze(0)?, indices.unsqueeze(0)?);
        return max_unpool2d(&x1, &i1, k, Some(s), p, output_size)?.squeeze(0);
    }
    let [n, c, h, w] = nchw(x, OP)?;
    float_input(x, OP)?;
    if indices.shape() != x.shape() || indices.dtype() != DType::I64 {
        return Err(Error::BadShape(format!(
            "{OP}: indices must be int64 of the input's shape {:?}, got {} of shape {:?}",
            x.shape(),
            indices.dtype(),
            indices.shape()
        )));
    }
    let [oh, ow] = unpooled_size(OP, [h, w], k, s, p, output_size)?;
    let plane = checked_numel(OP, &[oh, ow])?;
    if indices.numel() > 0 {
        let (lo, hi) = (
            indices.amin(&[], false)?.item::<i64>()?,
            indices.amax(&[], false)?.item::<i64>()?,
        );
        if lo < 0 || hi >= plane as i64 {
            let bad = if lo < 0 { lo } else { hi };
            return Err(Error::Invalid(format!(
                "{OP}: found an invalid max index {bad} (the output planes are {oh} x {ow})"
            )));
        }
    }
    let (idx, src) = (indices.reshape([n, c, h * w])?, x.reshape([n, c, h * w])?);
    let out = no_grad(|| {
        Tensor::zeros_dtype([n, c, plane], x.dtype(), x.device())?.scatter(2, &idx, &src)
    })?;
    // torch's backward is a gather from the same places. With overlapping windows an element
    // that wins two of them is written once, yet both pooled copies get the gradient at its
    // place, so it receives it twice (finite differences see it once): torch's rule, kept so
    // that a network trains as it does in torch. A scatter's gradient would give it once.
    let out = record(out, "max_unpool2d", &[&src], move |g| {
        Ok(vec![Some(g.gather(2, &idx)?)])
    });
    out.reshape([n, c, oh, ow])
}

/// [`max_unpool2d`] along the last dimension of `[N, C, L]` or `[C, L]` (torch's
/// `F.max_unpool1d`), for `max_pool1d_with_indices`'s indices.
pub fn max_unpool1d(
    x: &Tensor,
    indices: &Tensor,
    kernel_size: usize,
    stride: Option<usize>,
    padding: usize,
    output_size: Option<usize>,
) -> Result<Tensor> {
    let (img, unbatched) = as_image("max_unpool1d", x)?;
    let (idx, _) = as_image("max_unpool1d", indices)?;
    let y = max_unpool2d(
        &img,
        &idx,
        (1, kernel_size),
        stride.map(|s| Size2(1, s)),
        (0, padding),
        output_size.map(|l| (1, l)),
    )
    .map_err(|e| match e {
        Error::BadShape(m) => Error::BadShape(m.replace("max_unpool2d", "max_unpool1d")),
        Error::Invalid(m) => Error::Invalid(m.replace("max_unpool2d", "max_unpool1d")),
        e => e,
    })?;
    as_sequence(y, unbatched)
}

/// torch's `nn.MaxUnpool2d(kernel_size)` ([`max_unpool2d`]): stride the kernel size and
/// padding 0 unless set; `forward(x, indices)` or `forward_sized(x, indices, output_size)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MaxUnpool2d {
    kernel: Size2,
    stride: Size2,
    padding: Size2,
}

impl MaxUnpool2d {
    pub fn new(kernel_size: impl Into<Size2>) -> MaxUnpool2d {
        let k = kernel_size.into();
        MaxUnpool2d {
            kernel: k,
            stride: k,
            padding: Size2(0, 0),
        }
    }

    pub fn stride(mut self, stride: impl Into<Size2>) -> MaxUnpool2d {
        self.stride = stride.into();
        self
    }

    pub fn padding(mut self, padding: impl Into<Size2>) -> MaxUnpool2d {
        self.padding = padding.into();
        self
    }

    pub fn forward(&self, x: &Tensor, indices: &Tensor) -> Result<Tensor> {
        self.forward_sized(x, indices, None)
    }

    /// torch's `unpool(x, indices, output_size=...)`: the size the pooling's input had.
    pub fn forward_sized(
        &self,
        x: &Tensor,
        indices: &Tensor,
        output_size: Option<(usize, usize)>,
    ) -> Result<Tensor> {
        let (k, s, p) = (self.kernel, self.stride, self.padding);
        max_unpool2d(x, indices, k, Some(s), p, output_size)
    }

    /// As torch prints it: `MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))`.
    pub fn describe(&self) -> String {
        let pair = |s: Size2| format!("({}, {})", s.0, s.1);
        format!(
            "MaxUnpool2d(kernel_size={}, stride={}, padding={})",
            pair(self.kernel),
            pair(self.stride),
            pair(self.padding)
        )
    }
}

/// torch's `nn.MaxUnpool1d(kernel_size)` ([`max_unpool1d`]): stride the kernel size and
/// padding 0 unless set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MaxUnpool1d {
    kernel: usize,
    stride: usize,
    padding: usize,
}

impl MaxUnpool1d {
    pub fn new(kernel_size: usize) -> MaxUnpool1d {
        MaxUnpool1d {
            kernel: kernel_size,
            stride: kernel_size,
            padding: 0,
        }
    }

    pub fn stride(mut self, stride: usize) -> MaxUnpool1d {
        self.stride = stride;
        self
    }

    pub fn padding(mut self, padding: usize) -> MaxUnpool1d {
        self.padding = padding;
        self
    }

    pub fn forward(&self, x: &Tensor, indices: &Tensor) -> Result<Tensor> {
        self.forward_sized(x, indices, None)
    }

    /// torch's `unpool(x, indices, output_size=...)`: the length the pooling's input had.
    pub fn forward_sized(
        &self,
        x: &Tensor,
        indices: &Tensor,
        output_size: Option<usize>,
    ) -> Result<Tensor> {
        let (k, s, p) = (self.kernel, self.stride, self.padding);
        max_unpool1d(x, indices, k, Some(s), p, output_size)
    }

    /// As torch prints it: `MaxUnpool1d(kernel_size=(2,), stride=(2,), padding=(0,))`.
    pub fn describe(&self) -> String {
        format!(
            "MaxUnpool1d(kernel_size=({},), stride=({},), padding=({},))",
            self.kernel, self.stride, self.padding
        )
    }
}
