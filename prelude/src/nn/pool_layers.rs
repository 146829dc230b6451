//! Pooling layers (torch's `nn.MaxPool2d`, `nn.AvgPool2d` and the adaptive pools), thin
//! wrappers over the functions in `pool` and `adaptive_pool` with torch's defaults and reprs.

use super::conv::Size2;
use super::{functional, Module};
use crate::error::Result;
use crate::tensor::Tensor;

/// As torch prints a pooling size: an int when both axes agree, else the pair.
pub(super) fn show(s: Size2) -> String {
    if s.0 == s.1 {
        s.0.to_string()
    } else {
        format!("({}, {})", s.0, s.1)
    }
}

/// A `(d, h, w)` output size as torch prints it.
pub(super) fn show_triple((d, h, w): (usize, usize, usize)) -> String {
    format!("({d}, {h}, {w})")
}

pub(super) fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// Max pooling (torch's `nn.MaxPool2d`); the stride defaults to the kernel size, the padding
/// to 0 (`MaxPool2d::new(3).stride(2).padding(1)` is a ResNet stem's); `.dilation(d)` and
/// `.ceil_mode(true)` as torch's. Sizes are an int or an `(h, w)` pair.
#[derive(Clone, Copy)]
pub struct MaxPool2d {
    kernel_size: Size2,
    stride: Size2,
    padding: Size2,
    dilation: Size2,
    ceil_mode: bool,
}

impl MaxPool2d {
    pub fn new(kernel_size: impl Into<Size2>) -> MaxPool2d {
        let k = kernel_size.into();
        MaxPool2d {
            kernel_size: k,
            stride: k,
            padding: Size2(0, 0),
            dilation: Size2(1, 1),
            ceil_mode: false,
        }
    }
    pub fn stride(mut self, stride: impl Into<Size2>) -> MaxPool2d {
        self.stride = stride.into();
        self
    }
    /// Padding on every side, at most half the kernel size (torch's rule).
    pub fn padding(mut self, padding: impl Into<Size2>) -> MaxPool2d {
        self.padding = padding.into();
        self
    }
    pub fn dilation(mut self, dilation: impl Into<Size2>) -> MaxPool2d {
        self.dilation = dilation.into();
        self
    }
    /// Rounds the output size up (a last, partial window), as torch's `ceil_mode=True`.
    pub fn ceil_mode(mut self, ceil: bool) -> MaxPool2d {
        self.ceil_mode = ceil;
        self
    }
}

impl MaxPool2d {
    /// The pooling and where each maximum is (torch's `return_indices=True`), for
    /// `MaxUnpool2d`.
    pub fn forward_with_indices(&self, x: &Tensor) -> Result<(Tensor, Tensor)> {
        functional::max_pool2d_with_indices(
            x,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            self.ceil_mode,
        )
    }
}

impl Module for MaxPool2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        functional::max_pool2d(
            x,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            self.ceil_mode,
        )
    }
    fn describe(&self) -> String {
        format!(
            "MaxPool2d(kernel_size={}, stride={}, padding={}, dilation={}, ceil_mode={})",
            show(self.kernel_size),
            show(self.stride),
            show(self.padding),
            show(self.dilation),
            py_bool(self.ceil_mode)
        )
    }
}

/// Mean over windows (torch's `nn.AvgPool2d`): stride defaults to the kernel size, padding
/// to 0, and padded zeros count in each window's mean, as torch's defaults;
/// `.count_include_pad(false)` and `.ceil_mode(true)` as torch's.
#[derive(Clone, Copy)]
pub struct AvgPool2d {
    kernel_size: Size2,
    stride: Size2,
    padding: Size2,
    ceil_mode: bool,
    count_include_pad: bool,
}

impl AvgPool2d {
    pub fn new(kernel_size: impl Into<Size2>) -> AvgPool2d {
        let k = kernel_size.into();
        AvgPool2d {
            kernel_size: k,
            stride: k,
            padding: Size2(0, 0),
            ceil_mode: false,
            count_include_pad: true,
        }
    }
    pub fn stride(mut self, stride: impl Into<Size2>) -> AvgPool2d {
        self.stride = stride.into();
        self
    }
    pub fn padding(mut self, padding: impl Into<Size2>) -> AvgPool2d {
        self.padding = padding.into();
        self
    }
    pub fn ceil_mode(mut self, ceil: bool) -> AvgPool2d {
        self.ceil_mode = ceil;
        self
    }
    /// Whether padded zeros count in a window's divisor (torch's default: they do).
    pub fn count_include_pad(mut self, include: bool) -> AvgPool2d {
        self.count_include_pad = include;
        self
    }
}

impl Module for AvgPool2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        functional::avg_pool2d(
            x,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
        )
    }
    /// torch's repr (which leaves out `ceil_mode` and `count_include_pad`).
    fn describe(&self) -> String {
        format!(
            "AvgPool2d(kernel_size={}, stride={}, padding={})",
            show(self.kernel_size),
            show(self.stride),
            show(self.padding)
        )
    }
}

/// Mean over the cells of an `output_size` grid laid over each plane, whatever the input's
/// height and width (torch's `nn.AdaptiveAvgPool2d`); `(1, 1)` is global average pooling.
#[derive(Clone, Copy)]
pub struct AdaptiveAvgPool2d {
    output_size: (usize, usize),
}

impl AdaptiveAvgPool2d {
    pub fn new(output_size: (usize, usize)) -> AdaptiveAvgPool2d {
        AdaptiveAvgPool2d { output_size }
    }
}

impl Module for AdaptiveAvgPool2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        functional::adaptive_avg_pool2d(x, self.output_size)
    }
    fn describe(&self) -> String {
        format!(
            "AdaptiveAvgPool2d(output_size=({}, {}))",
            self.output_size.0, self.output_size.1
        )
    }
}

/// One adaptive pooling module: the output size and the function it calls.
macro_rules! adaptive_module {
    ($(#[$doc:meta])* $name:ident($size:ty) => $f:ident, $show:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy)]
        pub struct $name {
            output_size: $size,
        }

        impl $name {
            pub fn new(output_size: $size) -> $name {
                $name { output_size }
            }
        }

        impl Module for $name {
            fn forward(&self, x: &Tensor) -> Result<Tensor> {
                functional::$f(x, self.output_size)
            }
            fn describe(&self) -> String {
                let show: fn($size) -> String = $show;
                format!(
                    "{}(output_size={})",
                    stringify!($name),
                    show(self.output_size)
                )
            }
        }
    };
}

adaptive_module!(
    /// Max over the cells of an `output_size` grid laid over each plane (torch's
    /// `nn.AdaptiveMaxPool2d`).
    AdaptiveMaxPool2d((usize, usize)) => adaptive_max_pool2d, |(h, w)| format!("({h}, {w})")
);
adaptive_module!(
    /// Mean over `output_size` cells laid along each sequence (torch's
    /// `nn.AdaptiveAvgPool1d`).
    AdaptiveAvgPool1d(usize) => adaptive_avg_pool1d, |n| n.to_string()
);
adaptive_module!(
    /// Max over `output_size` cells laid along each sequence (torch's
    /// `nn.AdaptiveMaxPool1d`).
    AdaptiveMaxPool1d(usize) => adaptive_max_pool1d, |n| n.to_string()
);
