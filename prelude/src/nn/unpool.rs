//! Max unpooling as torch's `F.max_unpool1d`, `F.max_unpool2d` and `F.max_unpool3d` (SegNet's decoder): each
//! value put back where `max_pool*_with_indices` found it, zeros elsewhere, by one `scatter`
//! (whose gradient gathers from the same places); and `F.max_pool1d_with_indices`, the 1-D
//! form of the pooling that gives those indices. The modules are `nn::MaxUnpool1d`/`2d`/`3d`, one `MaxUnpool<S>`.

use super::conv::{Size1, Size2};
use super::conv1d::{as_image, as_sequence};
use super::conv3d::{as_volume, unvolume, Size3};
use super::functional::float_input;
use super::pool::max_pool2d_with_indices;
use super::pool_layers::PoolSize;
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
    input: &[usize],
    [k, s, p]: [&[usize]; 3],
    asked: Option<&[usize]>,
) -> Result<Vec<usize>> {
    let show = |v: &[usize]| {
        let items: Vec<String> = v.iter().map(usize::to_string).collect();
        format!("({})", items.join(", "))
    };
    let mut out = vec![0; input.len()];
    for a in 0..input.len() {
        let (len, k, s, p) = (input[a], k[a], s[a], p[a]);
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
                let want = size[a] as i64;
                let (lo, hi) = (default - s as i64, default + s as i64);
                if !(lo < want && want < hi) {
                    return Err(Error::BadShape(format!(
                        "{op}: invalid output_size {} (dimension {a} must be between {lo} and \
                         {hi}, exclusive)",
                        show(size)
                    )));
                }
                want as usize
            }
        };
    }
    Ok(out)
}

/// Each value of `x` (`[N, C, spatial..]`) written at its flat position `indices` (int64, the
/// shape of `x`) in an output of zeros `[N, C, out..]`, after `indices` is checked to lie
/// inside it.
fn unpool(op: &'static str, x: &Tensor, indices: &Tensor, out: &[usize]) -> Result<Tensor> {
    float_input(x, op)?;
    if indices.shape() != x.shape() || indices.dtype() != DType::I64 {
        return Err(Error::BadShape(format!(
            "{op}: indices must be int64 of the input's shape {:?}, got {} of shape {:?}",
            x.shape(),
            indices.dtype(),
            indices.shape()
        )));
    }
    let (n, c) = (x.shape()[0], x.shape()[1]);
    let inside: usize = x.shape()[2..].iter().product();
    let plane = checked_numel(op, out)?;
    checked_numel(op, &[n, c, plane])?;
    if indices.numel() > 0 {
        let (lo, hi) = (
            indices.amin(&[], false)?.item::<i64>()?,
            indices.amax(&[], false)?.item::<i64>()?,
        );
        if lo < 0 || hi >= plane as i64 {
            let bad = if lo < 0 { lo } else { hi };
            let sizes: Vec<String> = out.iter().map(usize::to_string).collect();
            return Err(Error::Invalid(format!(
                "{op}: found an invalid max index {bad} (the output planes are {})",
                sizes.join(" x ")
            )));
        }
    }
    let (idx, src) = (indices.reshape([n, c, inside])?, x.reshape([n, c, inside])?);
    let y = no_grad(|| {
        Tensor::zeros_dtype([n, c, plane], x.dtype(), x.device())?.scatter(2, &idx, &src)
    })?;
    // torch's backward is a gather from the same places. With overlapping windows an element
    // that wins two of them is written once, yet both pooled copies get the gradient at its
    // place, so it receives it twice (finite differences see it once): torch's rule, kept so
    // that a network trains as it does in torch. A scatter's gradient would give it once.
    let y = record(y, op, &[&src], move |g| Ok(vec![Some(g.gather(2, &idx)?)]));
    y.reshape([vec![n, c], out.to_vec()].concat())
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
    let [_, _, h, w] = nchw(x, OP)?;
    let sizes = [[k.0, k.1], [s.0, s.1], [p.0, p.1]];
    let asked = output_size.map(|(a, b)| [a, b]);
    let out = unpooled_size(
        OP,
        &[h, w],
        sizes.each_ref().map(|v| &v[..]),
        asked.as_ref().map(|v| &v[..]),
    )?;
    unpool(OP, x, indices, &out)
}

/// Each value of `x` (`[N, C, D, H, W]` or `[C, D, H, W]`) written at its volume position
/// `indices` (int64, as `max_pool3d_with_indices` gives) of an output of zeros (torch's
/// `F.max_unpool3d`); the output size per axis as [`max_unpool2d`]'s.
pub fn max_unpool3d(
    x: &Tensor,
    indices: &Tensor,
    kernel: impl Into<Size3>,
    stride: Option<Size3>,
    padding: impl Into<Size3>,
    output_size: Option<(usize, usize, usize)>,
) -> Result<Tensor> {
    const OP: &str = "max_unpool3d";
    let (k, p) = (kernel.into(), padding.into());
    let s = stride.unwrap_or(k);
    let (v, unbatched) = as_volume(OP, x)?;
    let (i, _) = as_volume(OP, indices)?;
    let spatial = [v.shape()[2], v.shape()[3], v.shape()[4]];
    let sizes = [[k.0, k.1, k.2], [s.0, s.1, s.2], [p.0, p.1, p.2]];
    let asked = output_size.map(|(a, b, c)| [a, b, c]);
    let out = unpooled_size(
        OP,
        &spatial,
        sizes.each_ref().map(|v| &v[..]),
        asked.as_ref().map(|v| &v[..]),
    )?;
    unvolume(unpool(OP, &v, &i, &out)?, unbatched)
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

/// torch's `nn.MaxUnpool1d`, `nn.MaxUnpool2d` and `nn.MaxUnpool3d` ([`max_unpool2d`]):
/// stride the kernel size and padding 0 unless set; `forward(x, indices)`, or
/// `forward_sized(x, indices, output_size)` with the size the pooling's input had.
#[derive(Clone, Copy, PartialEq)]
pub struct MaxUnpool<S> {
    kernel: S,
    stride: S,
    padding: S,
}

/// torch's `nn.MaxUnpool1d`, for `MaxPool1d`'s indices.
pub type MaxUnpool1d = MaxUnpool<Size1>;
/// torch's `nn.MaxUnpool2d`, for `MaxPool2d`'s indices.
pub type MaxUnpool2d = MaxUnpool<Size2>;
/// torch's `nn.MaxUnpool3d`, for `MaxPool3d`'s indices.
pub type MaxUnpool3d = MaxUnpool<Size3>;

impl<S: PoolSize> MaxUnpool<S> {
    pub fn new(kernel_size: impl Into<S>) -> MaxUnpool<S> {
        let k = kernel_size.into();
        MaxUnpool {
            kernel: k,
            stride: k,
            padding: S::ZERO,
        }
    }

    pub fn stride(mut self, stride: impl Into<S>) -> MaxUnpool<S> {
        self.stride = stride.into();
        self
    }

    pub fn padding(mut self, padding: impl Into<S>) -> MaxUnpool<S> {
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
        output_size: Option<S::Unpooled>,
    ) -> Result<Tensor> {
        let (k, s, p) = (self.kernel, self.stride, self.padding);
        S::max_unpool(x, indices, k, s, p, output_size)
    }

    /// As torch prints it: `MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))`.
    pub fn describe(&self) -> String {
        format!(
            "MaxUnpool{}d(kernel_size={}, stride={}, padding={})",
            S::RANK,
            self.kernel.show_tuple(),
            self.stride.show_tuple(),
            self.padding.show_tuple()
        )
    }
}

generic_repr!(PoolSize: MaxUnpool);
