//! Tensors as pictures, as torchvision does it: `make_grid` lays a batch of images out in one
//! picture (torchvision's `utils.make_grid`), and `to_image` turns an image tensor into an
//! `RgbImage` that a cell shows inline (torchvision's `to_pil_image`). Notebooks use them to
//! look at MNIST digits, augmented photos and a diffusion model's samples.
//!
//! Both work on the host: a grid is for looking at, so a CUDA tensor is copied to the CPU
//! first (torch's `.cpu()` before `to_pil_image`).

use crate::error::{Error, Result};
use crate::image::RgbImage;
use crate::tensor::host_mem::{checked_numel, host_room};
use crate::tensor::{DType, Tensor};
use crate::Device;

/// A batch `[N, C, H, W]` laid out as one image `[C', H', W']`: `nrow` images per row (fewer
/// when the batch is smaller), `padding` pixels of `pad_value` around and between them.
/// torchvision's rules: a `[H, W]` tensor is one grey image and `[C, H, W]` one image; a
/// single image comes back as it is, without padding; one channel becomes three (grey stays
/// grey); the result keeps the input's dtype. Floats are expected in [0, 1] for `to_image`; map other ranges first (a diffusion
/// model's [-1, 1] is `x.add(1.0)?.div(2.0)?`).
pub fn make_grid(images: &Tensor, nrow: usize, padding: usize, pad_value: f64) -> Result<Tensor> {
    let batch = match images.rank() {
        2 => images.unsqueeze(0)?.unsqueeze(0)?,
        3 => images.unsqueeze(0)?,
        4 => images.clone(),
        _ => {
            return Err(Error::BadShape(format!(
                "make_grid: expected images [N, C, H, W] (or one image [C, H, W] or [H, W]), \
                 got shape {:?}",
                images.shape()
            )))
        }
    };
    let [n, c, h, w] = batch.shape()[..] else {
        unreachable!("batch is 4-D")
    };
    if c != 1 && c != 3 {
        return Err(Error::BadShape(format!(
            "make_grid: images need 1 (grey) or 3 (RGB) channels, got {c} (shape {:?})",
            images.shape()
        )));
    }
    if n == 1 {
        let image = batch.squeeze(0)?;
        return if c == 1 {
            image.expand([3, h, w])?.contiguous()
        } else {
            Ok(image)
        };
    }
    if nrow == 0 {
        return Err(Error::Invalid("make_grid: nrow must be at least 1".into()));
    }
    // An empty batch is the padding alone (torchvision divides by zero there).
    let cols = nrow.min(n);
    let rows = if cols == 0 { 0 } else { n.div_ceil(cols) };
    let (cell_h, cell_w) = (h.saturating_add(padding), w.saturating_add(padding));
    let side = |n: usize, cell: usize| n.checked_mul(cell).and_then(|v| v.checked_add(padding));
    let (gh, gw) = match (side(rows, cell_h), side(cols, cell_w)) {
        (Some(gh), Some(gw)) => (gh, gw),
        _ => (usize::MAX, usize::MAX), // refused just below, with the shape in the message
    };
    let numel = checked_numel("make_grid", &[3, gh, gw])?;
    // The grid is built in f64 (8 bytes an element): checked before a Vec could abort.
    host_room(numel, DType::F64)?;
    let dtype = images.dtype();
    let values = batch.to_f64_vec()?;
    let mut grid = vec![pad_value; numel];
    for k in 0..n {
        let (top, left) = ((k / cols) * cell_h + padding, (k % cols) * cell_w + padding);
        for ch in 0..3 {
            // A grey image fills all three channels.
            let src = &values[(k * c + ch.min(c - 1)) * h * w..][..h * w];
            for y in 0..h {
                let at = (ch * gh + top + y) * gw + left;
                grid[at..at + w].copy_from_slice(&src[y * w..(y + 1) * w]);
            }
        }
    }
    Tensor::from_vec(grid, [3, gh, gw], Device::Cpu)?.to_dtype(dtype)
}

/// An image tensor as an `RgbImage` to show: `[3, H, W]` (RGB), `[1, H, W]` or `[H, W]`
/// (grey), on any device. Floats map [0, 1] to black..white (clamped, as torchvision's
/// `to_pil_image` after `mul(255)`); uint8 is taken as 0..255; bool as black and white.
/// Other integer dtypes are refused (their range is unknown): convert first.
pub fn to_image(image: &Tensor) -> Result<RgbImage> {
    let (c, h, w) = match image.shape()[..] {
        [h, w] => (1, h, w),
        [c, h, w] if c == 1 || c == 3 => (c, h, w),
        _ => {
            return Err(Error::BadShape(format!(
                "to_image: expected an image [3, H, W], [1, H, W] or [H, W], got shape {:?} \
                 (a batch? make_grid lays it out as one image)",
                image.shape()
            )))
        }
    };
    let dtype = image.dtype();
    let scale = match dtype {
        DType::U8 => 1.0,
        DType::Bool => 255.0,
        d if d.is_float() => 255.0,
        d => {
            return Err(Error::Invalid(format!(
                "to_image: {} values have no picture range; use floats in [0, 1] or uint8 \
                 (e.g. x.to_dtype(DType::F32)?.div(255.0)?)",
                d.name()
            )))
        }
    };
    let values = image.to_f64_vec()?;
    let mut pixels = Vec::with_capacity(h * w * 3);
    for i in 0..h * w {
        for ch in 0..3 {
            let v = values[ch.min(c - 1) * h * w + i] * scale;
            // NaN becomes black, as clamping a NaN cannot say.
            pixels.push(if v.is_nan() {
                0
            } else {
                v.round().clamp(0.0, 255.0) as u8
            });
        }
    }
    Ok(RgbImage {
        width: w,
        height: h,
        pixels,
    })
}
