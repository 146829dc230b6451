//! Layers that only move elements: torch's `F.pixel_shuffle` (sub-pixel convolution's
//! upsampling), `F.pixel_unshuffle` (its inverse) and `F.channel_shuffle` (ShuffleNet's), each
//! a reshape, a permute and a reshape, so every dtype works and the gradient is the inverse
//! move; and their modules `nn::PixelShuffle`, `nn::PixelUnshuffle`, `nn::ChannelShuffle`.

use super::Module;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// The leading dimensions and the last three (`[.., C, H, W]`) of `x`, or torch's error.
fn chw<'a>(x: &'a Tensor, op: &str) -> Result<(&'a [usize], [usize; 3])> {
    let s = x.shape();
    if s.len() < 3 {
        return Err(Error::BadShape(format!(
            "{op}: needs an input of at least 3 dimensions ([.., C, H, W]), got shape {s:?}"
        )));
    }
    let r = s.len();
    Ok((&s[..r - 3], [s[r - 3], s[r - 2], s[r - 1]]))
}

fn positive(op: &str, what: &str, v: usize) -> Result<()> {
    if v == 0 {
        return Err(Error::Invalid(format!(
            "{op}: {what} must be positive, got 0"
        )));
    }
    Ok(())
}

/// `[.., C*r*r, H, W]` to `[.., C, H*r, W*r]` (torch's `F.pixel_shuffle`): each group of
/// `r*r` channels becomes one channel's `r x r` blocks of pixels.
pub fn pixel_shuffle(x: &Tensor, upscale_factor: usize) -> Result<Tensor> {
    let op = "pixel_shuffle";
    let r = upscale_factor;
    positive(op, "upscale_factor", r)?;
    let (lead, [c, h, w]) = chw(x, op)?;
    if c % (r * r) != 0 {
        return Err(Error::BadShape(format!(
            "{op}: the channels (dimension -3, {c}) must divide by upscale_factor squared \
             ({}), got shape {:?}",
            r * r,
            x.shape()
        )));
    }
    let k = lead.len() as isize;
    let split: Vec<usize> = [lead, &[c / (r * r), r, r, h, w]].concat();
    // [.., c, r, r, h, w] -> [.., c, h, r, w, r]
    let order: Vec<isize> = (0..k).chain([k, k + 3, k + 1, k + 4, k + 2]).collect();
    let out: Vec<usize> = [lead, &[c / (r * r), h * r, w * r]].concat();
    x.reshape(split)?.permute(&order)?.reshape(out)
}

/// `[.., C, H*r, W*r]` to `[.., C*r*r, H, W]` (torch's `F.pixel_unshuffle`), the inverse of
/// [`pixel_shuffle`].
pub fn pixel_unshuffle(x: &Tensor, downscale_factor: usize) -> Result<Tensor> {
    let op = "pixel_unshuffle";
    let r = downscale_factor;
    positive(op, "downscale_factor", r)?;
    let (lead, [c, h, w]) = chw(x, op)?;
    if h % r != 0 || w % r != 0 {
        return Err(Error::BadShape(format!(
            "{op}: the height and width ({h} and {w}) must divide by downscale_factor {r}, \
             got shape {:?}",
            x.shape()
        )));
    }
    let k = lead.len() as isize;
    let split: Vec<usize> = [lead, &[c, h / r, r, w / r, r]].concat();
    // [.., c, h, r, w, r] -> [.., c, r, r, h, w]
    let order: Vec<isize> = (0..k).chain([k, k + 2, k + 4, k + 1, k + 3]).collect();
    let out: Vec<usize> = [lead, &[c * r * r, h / r, w / r]].concat();
    x.reshape(split)?.permute(&order)?.reshape(out)
}

/// `[N, C, ..]` with its channels dealt out of `groups` groups in turn (torch's
/// `F.channel_shuffle`): channel `g * (C / groups) + i` moves to `i * groups + g`.
pub fn channel_shuffle(x: &Tensor, groups: usize) -> Result<Tensor> {
    let op = "channel_shuffle";
    positive(op, "groups", groups)?;
    let s = x.shape();
    if s.len() < 3 {
        return Err(Error::BadShape(format!(
            "{op}: needs an input of at least 3 dimensions ([N, C, ..]), got shape {s:?}"
        )));
    }
    if !s[1].is_multiple_of(groups) {
        return Err(Error::BadShape(format!(
            "{op}: the channels ({}) must divide by groups ({groups}), got shape {s:?}",
            s[1]
        )));
    }
    let split: Vec<usize> = [&[s[0], groups, s[1] / groups], &s[2..]].concat();
    x.reshape(split)?.transpose(1, 2)?.reshape(s.to_vec())
}

/// torch's `nn.PixelShuffle(upscale_factor)` ([`pixel_shuffle`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PixelShuffle(pub usize);

/// torch's `nn.PixelUnshuffle(downscale_factor)` ([`pixel_unshuffle`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PixelUnshuffle(pub usize);

/// torch's `nn.ChannelShuffle(groups)` ([`channel_shuffle`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ChannelShuffle(pub usize);

impl Module for PixelShuffle {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        pixel_shuffle(x, self.0)
    }
    fn describe(&self) -> String {
        format!("PixelShuffle(upscale_factor={})", self.0)
    }
}

impl Module for PixelUnshuffle {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        pixel_unshuffle(x, self.0)
    }
    fn describe(&self) -> String {
        format!("PixelUnshuffle(downscale_factor={})", self.0)
    }
}

impl Module for ChannelShuffle {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        channel_shuffle(x, self.0)
    }
    fn describe(&self) -> String {
        format!("ChannelShuffle(groups={})", self.0)
    }
}
