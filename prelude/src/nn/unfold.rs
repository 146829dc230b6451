//! im2col and its adjoint as torch's `F.unfold` / `F.fold` and `nn.Unfold` / `nn.Fold`: the
//! sliding windows of an image as the columns of a matrix, which turns a convolution into one
//! matrix product (what `conv2d` does inside). The same index table as conv2d's, with a gather
//! one way and a scatter-add the other, so each is the other's gradient, on every device.

use super::conv::{unfold_indices, Size2};
use super::functional::float_input;
use super::pool_layers::show;
use super::windows::window_count;
use super::Module;
use crate::autograd::relabel;
use crate::error::{Error, Result};
use crate::tensor::host_mem::checked_numel;
use crate::tensor::{ConvGeom, Tensor};

/// The window geometry over an `[n, c, h, w]` image, and the number of windows.
fn geometry(
    op: &str,
    [n, c, h, w]: [usize; 4],
    k: Size2,
    dilation: Size2,
    padding: Size2,
    stride: Size2,
) -> Result<ConvGeom> {
    let oh = window_count(h, k.0, stride.0, [padding.0; 2], dilation.0, op)?;
    let ow = window_count(w, k.1, stride.1, [padding.1; 2], dilation.1, op)?;
    Ok(ConvGeom {
        n,
        c,
        h,
        w,
        o: 0,
        kh: k.0,
        kw: k.1,
        oh,
        ow,
        sh: stride.0,
        sw: stride.1,
        ph: padding.0,
        pw: padding.1,
        dh: dilation.0,
        dw: dilation.1,
    })
}

/// The sliding `kernel_size` windows of `x` `[N, C, H, W]` (or `[C, H, W]`) as columns:
/// `[N, C*kh*kw, L]` with `L` the number of windows, row-major over the output positions
/// (torch's `F.unfold`, im2col). A convolution is then `weight.reshape(O, -1).matmul(cols)`.
pub fn unfold(
    x: &Tensor,
    kernel_size: impl Into<Size2>,
    dilation: impl Into<Size2>,
    padding: impl Into<Size2>,
    stride: impl Into<Size2>,
) -> Result<Tensor> {
    const OP: &str = "unfold";
    float_input(x, OP)?;
    if x.rank() == 3 {
        let cols = unfold(&x.unsqueeze(0)?, kernel_size, dilation, padding, stride)?;
        return cols.squeeze(0);
    }
    let dims = match *x.shape() {
        [n, c, h, w] => [n, c, h, w],
        _ => {
            return Err(Error::BadShape(format!(
                "{OP}: expected input [N, C, H, W] or [C, H, W], got {:?}",
                x.shape()
            )))
        }
    };
    let k = kernel_size.into();
    let g = geometry(OP, dims, k, dilation.into(), padding.into(), stride.into())?;
    let (n, ckk, l) = (g.n, g.c * g.kh * g.kw, g.oh * g.ow);
    let unfolded = checked_numel(OP, &[n, l, ckk])?;
    let idx = unfold_indices(g, unfolded)?;
    let cols = x.gather_flat(idx, vec![n, l, ckk])?.transpose(1, 2)?;
    Ok(relabel("im2col", cols))
}

/// The adjoint of [`unfold`] (torch's `F.fold`, col2im): columns `[N, C*kh*kw, L]` (or
/// `[C*kh*kw, L]`) added back into an image of `output_size`, overlapping windows summed.
pub fn fold(
    cols: &Tensor,
    output_size: impl Into<Size2>,
    kernel_size: impl Into<Size2>,
    dilation: impl Into<Size2>,
    padding: impl Into<Size2>,
    stride: impl Into<Size2>,
) -> Result<Tensor> {
    const OP: &str = "fold";
    float_input(cols, OP)?;
    if cols.rank() == 2 {
        let out = fold(
            &cols.unsqueeze(0)?,
            output_size,
            kernel_size,
            dilation,
            padding,
            stride,
        )?;
        return out.squeeze(0);
    }
    let (k, out) = (kernel_size.into(), output_size.into());
    let [n, ckk, l] = match *cols.shape() {
        [n, ckk, l] => [n, ckk, l],
        _ => {
            return Err(Error::BadShape(format!(
                "{OP}: expected columns [N, C*kh*kw, L] or [C*kh*kw, L], got {:?}",
                cols.shape()
            )))
        }
    };
    let area = k.0 * k.1;
    if area == 0 || ckk % area != 0 {
        return Err(Error::BadShape(format!(
            "{OP}: the columns' second size {ckk} must be a multiple of the kernel's area \
             {area} (kernel {}; shape {:?})",
            k.show(),
            cols.shape()
        )));
    }
    let g = geometry(
        OP,
        [n, ckk / area, out.0, out.1],
        k,
        dilation.into(),
        padding.into(),
        stride.into(),
    )?;
    if g.oh * g.ow != l {
        return Err(Error::BadShape(format!(
            "{OP}: output size {} with kernel {} has {} x {} = {} windows, but the columns \
             have {l} (shape {:?})",
            out.show(),
            k.show(),
            g.oh,
            g.ow,
            g.oh * g.ow,
            cols.shape()
        )));
    }
    let idx = unfold_indices(g, checked_numel(OP, &[n, l, ckk])?)?;
    let image = cols
        .transpose(1, 2)?
        .scatter_add_flat(idx, vec![n, g.c, out.0, out.1])?;
    Ok(relabel("col2im", image))
}

/// torch's `nn.Unfold`: [`unfold`] as a layer, `Unfold::new(3).padding(1)`.
#[derive(Clone, Debug)]
pub struct Unfold {
    kernel_size: Size2,
    dilation: Size2,
    padding: Size2,
    stride: Size2,
}

/// torch's `nn.Fold`: [`fold`] as a layer, `Fold::new((28, 28), 2).stride(2)`.
#[derive(Clone, Debug)]
pub struct Fold {
    output_size: Size2,
    kernel_size: Size2,
    dilation: Size2,
    padding: Size2,
    stride: Size2,
}

macro_rules! window_builders {
    ($layer:ident) => {
        impl $layer {
            pub fn dilation(mut self, dilation: impl Into<Size2>) -> $layer {
                self.dilation = dilation.into();
                self
            }
            pub fn padding(mut self, padding: impl Into<Size2>) -> $layer {
                self.padding = padding.into();
                self
            }
            pub fn stride(mut self, stride: impl Into<Size2>) -> $layer {
                self.stride = stride.into();
                self
            }
        }
    };
}

impl Unfold {
    pub fn new(kernel_size: impl Into<Size2>) -> Unfold {
        Unfold {
            kernel_size: kernel_size.into(),
            dilation: Size2(1, 1),
            padding: Size2(0, 0),
            stride: Size2(1, 1),
        }
    }
}

impl Fold {
    pub fn new(output_size: impl Into<Size2>, kernel_size: impl Into<Size2>) -> Fold {
        Fold {
            output_size: output_size.into(),
            kernel_size: kernel_size.into(),
            dilation: Size2(1, 1),
            padding: Size2(0, 0),
            stride: Size2(1, 1),
        }
    }
}

window_builders!(Unfold);
window_builders!(Fold);

impl Module for Unfold {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        unfold(
            x,
            self.kernel_size,
            self.dilation,
            self.padding,
            self.stride,
        )
    }
    fn describe(&self) -> String {
        format!(
            "Unfold(kernel_size={}, dilation={}, padding={}, stride={})",
            show(self.kernel_size),
            show(self.dilation),
            show(self.padding),
            show(self.stride)
        )
    }
}

impl Module for Fold {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        fold(
            x,
            self.output_size,
            self.kernel_size,
            self.dilation,
            self.padding,
            self.stride,
        )
    }
    fn describe(&self) -> String {
        format!(
            "Fold(output_size={}, kernel_size={}, dilation={}, padding={}, stride={})",
            show(self.output_size),
            show(self.kernel_size),
            show(self.dilation),
            show(self.padding),
            show(self.stride)
        )
    }
}
