//! Pooling layers (torch's `nn.MaxPool2d`, `nn.AvgPool2d`, `nn.LPPool2d` and the adaptive pools), thin
//! wrappers over the functions in `pool` and `adaptive_pool` with torch's defaults and reprs.

use super::conv::{Size1, Size2};
use super::conv3d::Size3;
use super::pool::avg_pool2d_divided;
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

/// The sizes a pooling layer takes, one per spatial axis: [`Size1`] (an int) for 1-D, [`Size2`] for 2-D,
/// [`Size3`] for 3-D. It names the layer (`MaxPool2d`), prints sizes as torch's repr does and
/// calls the function of its rank, so [`MaxPool`] and [`AvgPool`] are written once.
pub trait PoolSize: Copy + PartialEq + std::fmt::Debug + Send + Sync + 'static {
    /// 1, 2 or 3.
    const RANK: usize;
    const ZERO: Self;
    const ONE: Self;
    /// As torch's `MaxPool` repr prints a size: an int when every axis agrees, else a tuple.
    fn show(self) -> String;
    /// As torch's `AvgPool` repr prints it (its 1-D layer keeps a one-tuple, `(2,)`).
    fn show_avg(self) -> String {
        self.show()
    }
    fn max_pool(x: &Tensor, k: Self, s: Self, p: Self, d: Self, ceil: bool) -> Result<Tensor>;
    fn max_pool_with_indices(
        x: &Tensor,
        k: Self,
        s: Self,
        p: Self,
        d: Self,
        ceil: bool,
    ) -> Result<(Tensor, Tensor)>;
    /// The output size `forward_sized` of the `MaxUnpool` of this rank takes.
    type Unpooled: Copy + Send + Sync + 'static;
    /// As torch's `MaxUnpool` repr prints a size: always a tuple.
    fn show_tuple(self) -> String;
    fn max_unpool(
        x: &Tensor,
        indices: &Tensor,
        k: Self,
        s: Self,
        p: Self,
        output_size: Option<Self::Unpooled>,
    ) -> Result<Tensor>;
    /// `divisor` is torch's `divisor_override` (only the 2-D and 3-D layers take one).
    fn avg_pool(
        x: &Tensor,
        k: Self,
        s: Self,
        p: Self,
        ceil: bool,
        count_include_pad: bool,
        divisor: Option<usize>,
    ) -> Result<Tensor>;
    /// Power-average pooling; the stride is the kernel size when `None`.
    fn lp_pool(x: &Tensor, norm_type: f64, k: Self, s: Option<Self>, ceil: bool) -> Result<Tensor>;
}

impl PoolSize for Size1 {
    const RANK: usize = 1;
    const ZERO: Size1 = Size1(0);
    const ONE: Size1 = Size1(1);
    type Unpooled = usize;
    fn show_tuple(self) -> String {
        format!("({},)", self.0)
    }
    fn max_unpool(
        x: &Tensor,
        indices: &Tensor,
        k: Size1,
        s: Size1,
        p: Size1,
        output_size: Option<usize>,
    ) -> Result<Tensor> {
        functional::max_unpool1d(x, indices, k.0, Some(s.0), p.0, output_size)
    }
    fn show(self) -> String {
        self.0.to_string()
    }
    fn show_avg(self) -> String {
        format!("({},)", self.0)
    }
    fn max_pool(x: &Tensor, k: Size1, s: Size1, p: Size1, d: Size1, ceil: bool) -> Result<Tensor> {
        functional::max_pool1d(x, k.0, s.0, p.0, d.0, ceil)
    }
    fn max_pool_with_indices(
        x: &Tensor,
        k: Size1,
        s: Size1,
        p: Size1,
        d: Size1,
        ceil: bool,
    ) -> Result<(Tensor, Tensor)> {
        functional::max_pool1d_with_indices(x, k.0, s.0, p.0, d.0, ceil)
    }
    fn avg_pool(
        x: &Tensor,
        k: Size1,
        s: Size1,
        p: Size1,
        ceil: bool,
        include: bool,
        _divisor: Option<usize>,
    ) -> Result<Tensor> {
        functional::avg_pool1d(x, k.0, s.0, p.0, ceil, include)
    }
    fn lp_pool(x: &Tensor, p: f64, k: Size1, s: Option<Size1>, ceil: bool) -> Result<Tensor> {
        functional::lp_pool1d(x, p, k.0, s.map(|s| s.0), ceil)
    }
}

/// The 2-D and 3-D sizes pass themselves to their rank's functions (the 1-D ones, above,
/// unwrap their int).
macro_rules! pool_size {
    ($size:ident: $rank:literal, $zero:expr, $one:expr, $unpooled:ty, $show:expr,
     $max:ident, $max_indices:ident, $avg:path, $unpool:ident, $lp:ident) => {
        impl PoolSize for $size {
            const RANK: usize = $rank;
            const ZERO: $size = $zero;
            const ONE: $size = $one;
            type Unpooled = $unpooled;
            fn show(self) -> String {
                let show: fn($size) -> String = $show;
                show(self)
            }
            fn show_tuple(self) -> String {
                $size::show(self)
            }
            fn max_pool(
                x: &Tensor,
                k: $size,
                s: $size,
                p: $size,
                d: $size,
                ceil: bool,
            ) -> Result<Tensor> {
                functional::$max(x, k, s, p, d, ceil)
            }
            fn max_pool_with_indices(
                x: &Tensor,
                k: $size,
                s: $size,
                p: $size,
                d: $size,
                ceil: bool,
            ) -> Result<(Tensor, Tensor)> {
                functional::$max_indices(x, k, s, p, d, ceil)
            }
            fn max_unpool(
                x: &Tensor,
                indices: &Tensor,
                k: $size,
                s: $size,
                p: $size,
                output_size: Option<$unpooled>,
            ) -> Result<Tensor> {
                functional::$unpool(x, indices, k, Some(s), p, output_size)
            }
            fn avg_pool(
                x: &Tensor,
                k: $size,
                s: $size,
                p: $size,
                ceil: bool,
                include: bool,
                divisor: Option<usize>,
            ) -> Result<Tensor> {
                $avg(x, k, s, p, ceil, include, divisor)
            }
            fn lp_pool(
                x: &Tensor,
                p: f64,
                k: $size,
                s: Option<$size>,
                ceil: bool,
            ) -> Result<Tensor> {
                functional::$lp(x, p, k, s, ceil)
            }
        }
    };
}

pool_size!(Size2: 2, Size2(0, 0), Size2(1, 1), (usize, usize), show,
    max_pool2d, max_pool2d_with_indices, avg_pool2d_divided, max_unpool2d, lp_pool2d);
pool_size!(Size3: 3, Size3(0, 0, 0), Size3(1, 1, 1), (usize, usize, usize),
    |s| if s.0 == s.1 && s.1 == s.2 { s.0.to_string() } else { s.show() },
    max_pool3d, max_pool3d_with_indices, functional::avg_pool3d, max_unpool3d, lp_pool3d);

/// Max pooling (torch's `nn.MaxPool1d`, `nn.MaxPool2d`, `nn.MaxPool3d`); the stride defaults
/// to the kernel size, the padding to 0 (`MaxPool2d::new(3).stride(2).padding(1)` is a ResNet
/// stem's); `.dilation(d)` and `.ceil_mode(true)` as torch's. Sizes are an int, or a pair
/// (2-D) or triple (3-D) per axis.
#[derive(Clone, Copy)]
pub struct MaxPool<S> {
    kernel_size: S,
    stride: S,
    padding: S,
    dilation: S,
    ceil_mode: bool,
}

/// torch's `nn.MaxPool1d`, over `[N, C, L]` or `[C, L]`.
pub type MaxPool1d = MaxPool<Size1>;
/// torch's `nn.MaxPool2d`, over `[N, C, H, W]`.
pub type MaxPool2d = MaxPool<Size2>;
/// torch's `nn.MaxPool3d`, over `[N, C, D, H, W]` or `[C, D, H, W]`.
pub type MaxPool3d = MaxPool<Size3>;

impl<S: PoolSize> MaxPool<S> {
    pub fn new(kernel_size: impl Into<S>) -> MaxPool<S> {
        let k = kernel_size.into();
        MaxPool {
            kernel_size: k,
            stride: k,
            padding: S::ZERO,
            dilation: S::ONE,
            ceil_mode: false,
        }
    }
    pub fn stride(mut self, stride: impl Into<S>) -> MaxPool<S> {
        self.stride = stride.into();
        self
    }
    /// Padding on every side, at most half the kernel size (torch's rule).
    pub fn padding(mut self, padding: impl Into<S>) -> MaxPool<S> {
        self.padding = padding.into();
        self
    }
    pub fn dilation(mut self, dilation: impl Into<S>) -> MaxPool<S> {
        self.dilation = dilation.into();
        self
    }
    /// Rounds the output size up (a last, partial window), as torch's `ceil_mode=True`.
    pub fn ceil_mode(mut self, ceil: bool) -> MaxPool<S> {
        self.ceil_mode = ceil;
        self
    }
    /// The pooling and where each maximum is (torch's `return_indices=True`), for the
    /// `MaxUnpool` layers.
    pub fn forward_with_indices(&self, x: &Tensor) -> Result<(Tensor, Tensor)> {
        let (k, s, p, d) = (self.kernel_size, self.stride, self.padding, self.dilation);
        S::max_pool_with_indices(x, k, s, p, d, self.ceil_mode)
    }
}

impl<S: PoolSize> Module for MaxPool<S> {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (k, s, p, d) = (self.kernel_size, self.stride, self.padding, self.dilation);
        S::max_pool(x, k, s, p, d, self.ceil_mode)
    }
    fn describe(&self) -> String {
        format!(
            "MaxPool{}d(kernel_size={}, stride={}, padding={}, dilation={}, ceil_mode={})",
            S::RANK,
            self.kernel_size.show(),
            self.stride.show(),
            self.padding.show(),
            self.dilation.show(),
            py_bool(self.ceil_mode)
        )
    }
}

/// Mean over windows (torch's `nn.AvgPool1d`, `nn.AvgPool2d`, `nn.AvgPool3d`): the stride
/// defaults to the kernel size, the padding to 0, and padded zeros count in each window's
/// mean, as torch's defaults; `.count_include_pad(false)` and `.ceil_mode(true)` as torch's,
/// and for 2-D and 3-D `.divisor_override(n)`.
#[derive(Clone, Copy)]
pub struct AvgPool<S> {
    kernel_size: S,
    stride: S,
    padding: S,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<usize>,
}

/// torch's `nn.AvgPool1d`, over `[N, C, L]` or `[C, L]`.
pub type AvgPool1d = AvgPool<Size1>;
/// torch's `nn.AvgPool2d`, over `[N, C, H, W]`.
pub type AvgPool2d = AvgPool<Size2>;
/// torch's `nn.AvgPool3d`, over `[N, C, D, H, W]` or `[C, D, H, W]`.
pub type AvgPool3d = AvgPool<Size3>;

impl<S: PoolSize> AvgPool<S> {
    pub fn new(kernel_size: impl Into<S>) -> AvgPool<S> {
        let k = kernel_size.into();
        AvgPool {
            kernel_size: k,
            stride: k,
            padding: S::ZERO,
            ceil_mode: false,
            count_include_pad: true,
            divisor_override: None,
        }
    }
    pub fn stride(mut self, stride: impl Into<S>) -> AvgPool<S> {
        self.stride = stride.into();
        self
    }
    /// Zeros on every side, at most half the kernel size (torch's rule).
    pub fn padding(mut self, padding: impl Into<S>) -> AvgPool<S> {
        self.padding = padding.into();
        self
    }
    pub fn ceil_mode(mut self, ceil: bool) -> AvgPool<S> {
        self.ceil_mode = ceil;
        self
    }
    /// Whether padded zeros count in a window's divisor (torch's default: they do).
    pub fn count_include_pad(mut self, include: bool) -> AvgPool<S> {
        self.count_include_pad = include;
        self
    }
}

/// torch's `divisor_override`, which its 2-D and 3-D layers take (its 1-D one does not).
macro_rules! divisor_override {
    ($($size:ty),*) => {$(
        impl AvgPool<$size> {
            /// Every window's sum divided by `divisor` instead of its size (torch's
            /// `divisor_override`; 0 is refused when the layer runs).
            pub fn divisor_override(mut self, divisor: usize) -> AvgPool<$size> {
                self.divisor_override = Some(divisor);
                self
            }
        }
    )*};
}

divisor_override!(Size2, Size3);

impl<S: PoolSize> Module for AvgPool<S> {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (k, s, p) = (self.kernel_size, self.stride, self.padding);
        let (ceil, include) = (self.ceil_mode, self.count_include_pad);
        S::avg_pool(x, k, s, p, ceil, include, self.divisor_override)
    }
    /// torch's repr (which leaves out the other options).
    fn describe(&self) -> String {
        format!(
            "AvgPool{}d(kernel_size={}, stride={}, padding={})",
            S::RANK,
            self.kernel_size.show_avg(),
            self.stride.show_avg(),
            self.padding.show_avg()
        )
    }
}

/// Power-average pooling (torch's `nn.LPPool1d`, `nn.LPPool2d`, `nn.LPPool3d`): the
/// `norm_type`-norm of each window, no padding; the stride defaults to the kernel size, and
/// `.ceil_mode(true)` as torch's. See [`functional::lp_pool2d`].
#[derive(Clone, Copy, PartialEq)]
pub struct LPPool<S> {
    norm_type: f64,
    kernel_size: S,
    stride: Option<S>,
    ceil_mode: bool,
}

/// torch's `nn.LPPool1d`, over `[N, C, L]` or `[C, L]`.
pub type LPPool1d = LPPool<Size1>;
/// torch's `nn.LPPool2d`, over `[N, C, H, W]` or `[C, H, W]`.
pub type LPPool2d = LPPool<Size2>;
/// torch's `nn.LPPool3d`, over `[N, C, D, H, W]` or `[C, D, H, W]`.
pub type LPPool3d = LPPool<Size3>;

impl<S: PoolSize> LPPool<S> {
    pub fn new(norm_type: f64, kernel_size: impl Into<S>) -> LPPool<S> {
        LPPool {
            norm_type,
            kernel_size: kernel_size.into(),
            stride: None,
            ceil_mode: false,
        }
    }
    pub fn stride(mut self, stride: impl Into<S>) -> LPPool<S> {
        self.stride = Some(stride.into());
        self
    }
    /// Rounds the output size up (a last, partial window), as torch's `ceil_mode=True`.
    pub fn ceil_mode(mut self, ceil: bool) -> LPPool<S> {
        self.ceil_mode = ceil;
        self
    }
}

impl<S: PoolSize> Module for LPPool<S> {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        S::lp_pool(
            x,
            self.norm_type,
            self.kernel_size,
            self.stride,
            self.ceil_mode,
        )
    }
    fn describe(&self) -> String {
        format!(
            "LPPool{}d(norm_type={}, kernel_size={}, stride={}, ceil_mode={})",
            S::RANK,
            self.norm_type,
            self.kernel_size.show(),
            self.stride.map_or("None".into(), S::show),
            py_bool(self.ceil_mode)
        )
    }
}

generic_repr!(PoolSize: MaxPool, AvgPool, LPPool);

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

impl AdaptiveMaxPool2d {
    /// The pooling and where each maximum is in its plane (torch's `return_indices=True`),
    /// for `MaxUnpool2d`.
    pub fn forward_with_indices(&self, x: &Tensor) -> Result<(Tensor, Tensor)> {
        functional::adaptive_max_pool2d_with_indices(x, self.output_size)
    }
}

impl AdaptiveMaxPool1d {
    /// The pooling and where each maximum is along its sequence (torch's
    /// `return_indices=True`), for `MaxUnpool1d`.
    pub fn forward_with_indices(&self, x: &Tensor) -> Result<(Tensor, Tensor)> {
        functional::adaptive_max_pool1d_with_indices(x, self.output_size)
    }
}
