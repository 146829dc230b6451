//! Average pooling layers (torch's `nn.AvgPool2d` and `nn.AdaptiveAvgPool2d`), thin wrappers
//! over `functional::avg_pool2d` and `functional::adaptive_avg_pool2d`.

use super::functional;
use super::Module;
use crate::error::Result;
use crate::tensor::Tensor;

/// Mean over square windows (torch's `nn.AvgPool2d`): stride defaults to the kernel size,
/// padding to 0, and padded zeros count in each window's mean, as torch's defaults.
#[derive(Clone, Copy, Debug)]
pub struct AvgPool2d {
    kernel_size: usize,
    stride: usize,
    padding: usize,
}

impl AvgPool2d {
    pub fn new(kernel_size: usize) -> AvgPool2d {
        AvgPool2d {
            kernel_size,
            stride: kernel_size,
            padding: 0,
        }
    }
    pub fn stride(mut self, stride: usize) -> AvgPool2d {
        self.stride = stride;
        self
    }
    pub fn padding(mut self, padding: usize) -> AvgPool2d {
        self.padding = padding;
        self
    }
}

impl Module for AvgPool2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        functional::avg_pool2d(x, self.kernel_size, self.stride, self.padding)
    }
    fn describe(&self) -> String {
        format!(
            "AvgPool2d(kernel_size={}, stride={}, padding={})",
            self.kernel_size, self.stride, self.padding
        )
    }
}

/// Mean over the cells of an `output_size` grid laid over each plane, whatever the input's
/// height and width (torch's `nn.AdaptiveAvgPool2d`); `(1, 1)` is global average pooling.
#[derive(Clone, Copy, Debug)]
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
