//! `Tensor`: an n-dimensional array of one dtype (`DType`, float32 by default) on the CPU or
//! on one GPU, with torch's names.
//!
//! A tensor is a `Storage` (the numbers) seen through a `Layout` (shape, strides, offset;
//! layout.rs). Views (`transpose`, `t`, `permute`, `narrow`, `slice`, `select`, `expand`,
//! `unsqueeze`, `squeeze`, and `reshape`/`view` when strides allow; view.rs) share the
//! storage and copy nothing. Operations return new tensors; the in-place methods
//! (`fill_`, `copy_`, `add_`, `sub_`, `mul_`, `div_`) write through the layout into the shared
//! storage, so, as in torch, a write into `x.narrow(..)` or `x.t()` is visible in `x`.
//!
//! Sharing rules: every view and every Rust `clone()` share storage (a clone is torch's
//! `b = a`, not torch's `a.clone()`, which is [`Tensor::deep_clone`] here); `to(..)` and
//! `to_dtype` return the tensor itself when nothing changes, as torch does. Storage sits
//! behind an `RwLock` (`storage::Shared`, which also keeps its dtype, device and length, fixed for
//! its life, outside the lock) so writes through a shared `&Tensor` are possible; ops take a read lock
//! for the length of one backend call. A user kernel's `KernelArg::TensorMut` keeps its
//! copy-on-write rule: when the storage is shared (a clone, a view) or the tensor is not
//! dense, the tensor first gets a private contiguous copy, so a hand-written kernel never
//! writes into memory another tensor sees (G13); use the in-place methods to write through
//! views.
//!
//! Non-contiguous inputs: backends receive dense storage only. `Tensor::dense` is the one
//! place that turns a view into a contiguous copy (a no-op for a dense tensor, so contiguous
//! tensors take the same fast paths as before); every op reads its operands through it.
//!
//! On a CUDA device every operation is queued on the device's stream and returns at once;
//! `to_vec`, `item` and `cpu` wait for the queue, as in torch.
//!
//! Layers: the public methods (here and in arith.rs) check shapes and dtypes and promote;
//! `Storage` (storage.rs) is the one dispatch point to a backend per device: cpu_backend.rs
//! (with the f32 kernels of cpu.rs and matmul.rs) and gpu.rs (CUDA: kernels-cu/ instantiated
//! per dtype, cuBLAS for matmul).

mod arith;
pub(crate) mod autocast;
mod cpu;
mod cpu_backend;
mod distance;
mod division;
mod dtype;
mod einsum;
mod format;
mod fused;
mod gamma;
mod gamma_math;
mod gather;
mod gpu;
mod gpu_strided;
mod grad;
pub(crate) mod host_mem;
mod index;
mod index_put;
mod inplace;
mod layout;
mod math;
mod matmul;
pub(crate) mod op;
mod pointwise;
pub(crate) mod precision;
mod products;
mod random;
mod rearrange;
mod reductions;
mod scan;
mod scatter;
mod select;
pub(crate) mod shape;
mod sort;
mod special;
mod stacking;
mod stats;
mod storage;
mod trig;
mod view;

pub use arith::Operand;
pub(crate) use dtype::fill_value;
pub use dtype::{promote, promote_dims, DType, Number, WithDType};

/// A number `Tensor::arange` counts in, and the dtype it gives, as torch's: a Rust integer
/// gives int64 (a Python int's), a float the default float32 (a Python float's).
pub trait ArangeValue: Copy + std::fmt::Display {
    const ONE: Self;
    const DTYPE: DType;
    fn as_f64(self) -> f64;
}

macro_rules! arange_value {
    ($dtype:ident, $one:expr, $($t:ty),*) => {$(
        impl ArangeValue for $t {
            const ONE: Self = $one;
            const DTYPE: DType = DType::$dtype;
            fn as_f64(self) -> f64 {
                self as f64
            }
        }
    )*};
}
arange_value!(I64, 1, i32, i64, usize);
arange_value!(F32, 1.0, f32, f64);
pub(crate) use cpu::release_freed_memory;
pub use format::{get_printoptions, set_printoptions, PrintOptions};
pub(crate) use fused::{AdamCoeffs, ConvGeom};
pub(crate) use gather::PoolGeom;
pub use half::{bf16, f16};
pub use index::{Ellipsis, Idx, IndexArg, NewAxis};
pub use precision::{get_float32_matmul_precision, set_float32_matmul_precision};
pub(crate) use random::SplitMix;
pub use random::{fork_rng, manual_seed};
pub use shape::{IntoViewShape, Shape, ViewDim, ViewShape};
pub(crate) use special::{x_times_log, XLog};

use crate::device::Device;
use crate::error::{Error, Result};
use cpu_backend::CpuStorage;
use layout::Layout;
use std::borrow::Cow;
use std::sync::{Arc, RwLockReadGuard, RwLockWriteGuard};
use storage::{Shared, Storage};

/// See the module documentation for what `clone()` and views share.
#[derive(Clone)]
pub struct Tensor {
    storage: Arc<Shared>,
    layout: Layout,
    /// Autograd's record for this tensor (`crate::autograd`): `None` for a tensor that does
    /// not require grad; shared by clones, so a clone is the same variable, as in torch.
    grad_meta: Option<Arc<crate::autograd::Meta>>,
}

/// What `Tensor::to` accepts, as torch's `.to` does: a device, a dtype, or both.
pub trait TensorTo {
    fn convert(self, t: &Tensor) -> Result<Tensor>;
}

impl TensorTo for Device {
    fn convert(self, t: &Tensor) -> Result<Tensor> {
        t.to_device(self)
    }
}
impl TensorTo for &Device {
    fn convert(self, t: &Tensor) -> Result<Tensor> {
        t.to_device(*self)
    }
}
impl TensorTo for DType {
    fn convert(self, t: &Tensor) -> Result<Tensor> {
        t.to_dtype(self)
    }
}
impl TensorTo for (Device, DType) {
    fn convert(self, t: &Tensor) -> Result<Tensor> {
        // Both backends convert every dtype; convert on the side where the data is smaller,
        // so the copy between host and device moves the fewer bytes.
        if self.1.size_in_bytes() < t.dtype().size_in_bytes() {
            t.to_dtype(self.1)?.to_device(self.0)
        } else {
            t.to_device(self.0)?.to_dtype(self.1)
        }
    }
}

impl Tensor {
    /// The one constructor of a tensor with fresh storage (contiguous over `dims`).
    /// Built without autograd history (`autograd::record` attaches it afterwards).
    fn from_storage(storage: Storage, dims: Vec<usize>) -> Tensor {
        Tensor {
            storage: Arc::new(Shared::new(storage)),
            layout: Layout::contiguous(dims),
            grad_meta: None,
        }
    }

    /// The one constructor of a view: this tensor's storage seen through `layout`.
    fn view_of(&self, layout: Layout) -> Tensor {
        debug_assert!(
            layout.end() <= self.storage.len,
            "{layout:?} overruns its storage"
        );
        Tensor {
            storage: self.storage.clone(),
            layout,
            grad_meta: None,
        }
    }

    /// The storage, read-locked (a poisoned lock still holds valid numbers: writers only
    /// store whole results).
    fn read(&self) -> RwLockReadGuard<'_, Storage> {
        self.storage.data.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The storage, write-locked for an in-place write: the write counts as a new version.
    fn write(&self) -> RwLockWriteGuard<'_, Storage> {
        let guard = self.storage.data.write().unwrap_or_else(|e| e.into_inner());
        self.storage
            .version
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        guard
    }

    /// How many in-place writes the storage has had (torch's `_version`), shared by every
    /// view of it.
    pub(crate) fn version(&self) -> u64 {
        self.storage
            .version
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// True when the elements fill the storage row-major from element 0: what the backends
    /// take as is.
    fn is_dense(&self) -> bool {
        self.layout.offset() == 0 && self.storage.len == self.numel() && self.layout.is_contiguous()
    }

    /// This tensor when it is dense, else a contiguous copy of its elements: the one place
    /// where non-contiguous inputs become what every backend op expects.
    /// Borrowed when dense, so the common case costs one check and no clone.
    pub(crate) fn dense(&self) -> Result<Cow<'_, Tensor>> {
        if self.is_dense() {
            return Ok(Cow::Borrowed(self));
        }
        let storage = self.read().copy_layout(&self.layout)?;
        Ok(Cow::Owned(Tensor::from_storage(
            storage,
            self.shape().to_vec(),
        )))
    }

    /// Places host data on `device` (an upload for CUDA devices).
    fn from_cpu(data: CpuStorage, dims: Vec<usize>, device: Device) -> Result<Tensor> {
        let storage = Storage::Cpu(data);
        let storage = match device {
            Device::Cpu => storage,
            d => storage.to_device(d)?,
        };
        Ok(Tensor::from_storage(storage, dims))
    }

    fn from_host(data: Vec<f32>, dims: Vec<usize>, device: Device) -> Result<Tensor> {
        Tensor::from_cpu(CpuStorage::F32(data), dims, device)
    }

    /// A tensor holding `data`, laid out row-major in `shape`; the dtype is the element
    /// type's (`vec![1i64, 2]` gives int64, `vec![1.0f32]` float32; an unsuffixed Rust
    /// float literal is f64 and an unsuffixed integer i32, as Rust infers them).
    pub fn from_vec<T: WithDType>(
        data: Vec<T>,
        shape: impl Into<Shape>,
        device: impl Into<Device>,
    ) -> Result<Tensor> {
        let dims = shape.into().0;
        let n = host_mem::checked_numel("from_vec", &dims)?;
        if n != data.len() {
            return Err(Error::BadShape(format!(
                "{} values cannot fill shape {dims:?} ({n} elements)",
                data.len()
            )));
        }
        Tensor::from_cpu(T::into_cpu(data), dims, device.into())
    }

    pub fn from_slice<T: WithDType>(
        data: &[T],
        shape: impl Into<Shape>,
        device: impl Into<Device>,
    ) -> Result<Tensor> {
        Tensor::from_vec(data.to_vec(), shape, device)
    }

    pub fn zeros(shape: impl Into<Shape>, device: impl Into<Device>) -> Result<Tensor> {
        let dims = shape.into().0;
        let n = host_mem::checked_numel("zeros", &dims)?;
        let storage = Storage::full_f32(n, 0.0, device.into())?;
        Ok(Tensor::from_storage(storage, dims))
    }

    /// Zeros of `dtype` (torch's `zeros(..., dtype=)`).
    pub fn zeros_dtype(
        shape: impl Into<Shape>,
        dtype: DType,
        device: impl Into<Device>,
    ) -> Result<Tensor> {
        Tensor::full_dtype(shape, 0.0, dtype, device)
    }

    pub fn ones(shape: impl Into<Shape>, device: impl Into<Device>) -> Result<Tensor> {
        Tensor::full(shape, 1.0, device)
    }

    pub fn ones_dtype(
        shape: impl Into<Shape>,
        dtype: DType,
        device: impl Into<Device>,
    ) -> Result<Tensor> {
        Tensor::full_dtype(shape, 1.0, dtype, device)
    }

    /// Every element set to `value`.
    pub fn full(shape: impl Into<Shape>, value: f32, device: impl Into<Device>) -> Result<Tensor> {
        let dims = shape.into().0;
        let n = host_mem::checked_numel("full", &dims)?;
        let storage = Storage::full_f32(n, value, device.into())?;
        Ok(Tensor::from_storage(storage, dims))
    }

    /// Every element set to `value` converted to `dtype`.
    pub fn full_dtype(
        shape: impl Into<Shape>,
        value: f64,
        dtype: DType,
        device: impl Into<Device>,
    ) -> Result<Tensor> {
        let dims = shape.into().0;
        let n = host_mem::checked_numel("full", &dims)?;
        let storage = Storage::full(n, value, dtype, device.into())?;
        Ok(Tensor::from_storage(storage, dims))
    }

    /// `start, start + 1, ...` up to but not including `end`, like `torch.arange(start, end)`:
    /// integers give int64 (`arange(0, 5)`), floats float32 (`arange(0.0, 5.0)`).
    pub fn arange<T: ArangeValue>(start: T, end: T, device: impl Into<Device>) -> Result<Tensor> {
        Tensor::arange_step(start, end, T::ONE, device)
    }

    /// `arange` in steps of `step` (negative to count down), as `torch.arange(start, end, step)`.
    pub fn arange_step<T: ArangeValue>(
        start: T,
        end: T,
        step: T,
        device: impl Into<Device>,
    ) -> Result<Tensor> {
        let (a, b, s) = (start.as_f64(), end.as_f64(), step.as_f64());
        if s == 0.0 || !(a.is_finite() && b.is_finite() && s.is_finite()) || (b - a) * s < 0.0 {
            return Err(Error::Invalid(format!(
                "arange: cannot go from {start} to {end} in steps of {step}"
            )));
        }
        // As torch: the count from double arithmetic, each value `start + i * step` (not
        // accumulated, so the last ones stay exact), then the dtype. Counts past 2^63 are
        // refused with the rest by host_room (the f64 intermediate would need 8 bytes each).
        let n = ((b - a) / s).ceil().clamp(0.0, (usize::MAX / 16) as f64) as usize;
        host_mem::host_room(n, DType::F64)?;
        let data: Vec<f64> = (0..n).map(|i| a + i as f64 * s).collect();
        Tensor::from_cpu(CpuStorage::F64(data), vec![n], Device::Cpu)?
            .to_dtype(T::DTYPE)?
            .to_device(device.into())
    }

    /// `steps` evenly spaced float32 values from `start` to `end`, both included, as
    /// `torch.linspace` (computed as torch does: from the start in the first half, from the
    /// end in the second, so both ends are exact).
    pub fn linspace(
        start: f64,
        end: f64,
        steps: usize,
        device: impl Into<Device>,
    ) -> Result<Tensor> {
        host_mem::host_room(steps, DType::F32)?;
        let (a, b) = (start as f32, end as f32);
        let step = if steps > 1 {
            (b - a) / (steps - 1) as f32
        } else {
            0.0
        };
        let half = steps / 2;
        let data: Vec<f32> = (0..steps)
            .map(|i| {
                if i < half || steps == 1 {
                    a + step * i as f32
                } else {
                    b - step * (steps - 1 - i) as f32
                }
            })
            .collect();
        Tensor::from_host(data, vec![steps], device.into())
    }

    /// `steps` float32 values from `base^start` to `base^end`, evenly spaced in the exponent
    /// (torch's `logspace(start, end, steps, base)`; base 10 is torch's default).
    pub fn logspace(
        start: f64,
        end: f64,
        steps: usize,
        base: f64,
        device: impl Into<Device>,
    ) -> Result<Tensor> {
        let exponents = Tensor::linspace(start, end, steps, Device::Cpu)?.to_vec::<f32>()?;
        let data: Vec<f32> = exponents.iter().map(|&e| (base as f32).powf(e)).collect();
        Tensor::from_host(data, vec![steps], device.into())
    }

    /// The `n x n` identity matrix in float32, as `torch.eye(n)`.
    pub fn eye(n: usize, device: impl Into<Device>) -> Result<Tensor> {
        let len = host_mem::checked_numel("eye", &[n, n])?;
        host_mem::host_room(len, DType::F32)?;
        let data: Vec<f32> = (0..len)
            .map(|p| {
                if p / n.max(1) == p % n.max(1) {
                    1.0
                } else {
                    0.0
                }
            })
            .collect();
        Tensor::from_host(data, vec![n, n], device.into())
    }

    /// Random int64 values in `low..high` from the generator seeded by [`manual_seed`], as
    /// `torch.randint(low, high, shape)`.
    pub fn randint(
        low: i64,
        high: i64,
        shape: impl Into<Shape>,
        device: impl Into<Device>,
    ) -> Result<Tensor> {
        if low >= high {
            return Err(Error::Invalid(format!(
                "randint: the range {low}..{high} is empty (low must be below high)"
            )));
        }
        let dims = shape.into().0;
        let n = host_mem::checked_numel("randint", &dims)?;
        host_mem::host_room(n, DType::I64)?;
        let span = (high as i128 - low as i128) as u128;
        let data: Vec<i64> = random::bits(n)
            .into_iter()
            .map(|r| (low as i128 + (r as u128 % span) as i128) as i64)
            .collect();
        Tensor::from_cpu(CpuStorage::I64(data), dims, device.into())
    }

    /// Uniform samples in [0, 1) from the generator seeded by [`manual_seed`]; drawn on the
    /// host, so one seed gives the same numbers on every device.
    pub fn rand(shape: impl Into<Shape>, device: impl Into<Device>) -> Result<Tensor> {
        let dims = shape.into().0;
        let n = host_mem::checked_numel("rand", &dims)?;
        host_mem::host_room(n, DType::F32)?;
        let data = random::uniform(n);
        Tensor::from_host(data, dims, device.into())
    }

    /// Standard normal samples; see [`Tensor::rand`].
    pub fn randn(shape: impl Into<Shape>, device: impl Into<Device>) -> Result<Tensor> {
        let dims = shape.into().0;
        let n = host_mem::checked_numel("randn", &dims)?;
        host_mem::host_room(n, DType::F32)?;
        let data = random::normal(n);
        Tensor::from_host(data, dims, device.into())
    }

    pub fn shape(&self) -> &[usize] {
        self.layout.dims()
    }

    /// Number of dimensions (torch's `dim()`).
    pub fn rank(&self) -> usize {
        self.shape().len()
    }

    /// Number of dimensions, under torch's name (`rank`).
    pub fn dim(&self) -> usize {
        self.rank()
    }

    /// Number of dimensions, as torch's `ndim` (`rank`).
    pub fn ndim(&self) -> usize {
        self.rank()
    }

    /// The shape, as torch's `size()` (`shape`).
    pub fn size(&self) -> &[usize] {
        self.shape()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.layout.numel()
    }

    pub fn device(&self) -> Device {
        self.storage.device
    }

    pub fn is_cuda(&self) -> bool {
        self.device().is_cuda()
    }

    pub fn dtype(&self) -> DType {
        self.storage.dtype
    }

    /// A copy on a device, in a dtype, or both, like torch's `.to`: `t.to(Device::Cuda(0))`,
    /// `t.to(DType::F16)`, `t.to((Device::Cpu, DType::I64))`. Returns this tensor itself
    /// when nothing changes.
    pub fn to(&self, target: impl TensorTo) -> Result<Tensor> {
        target.convert(self)
    }

    fn to_device(&self, device: Device) -> Result<Tensor> {
        if device == self.device() {
            return Ok(self.clone());
        }
        let storage = self.dense()?.read().to_device(device)?;
        let out = Tensor::from_storage(storage, self.shape().to_vec());
        Ok(crate::autograd::rules::cast(self, out))
    }

    /// A copy converted to `dtype` (this tensor itself when it already has it). Float to
    /// integer truncates toward zero, anything to bool tests for non-zero, as in torch.
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        let storage = self.dense()?.read().to_dtype(dtype)?;
        let out = Tensor::from_storage(storage, self.shape().to_vec());
        Ok(crate::autograd::rules::cast(self, out))
    }

    /// torch's dtype shortcuts, each `to_dtype`: `float()` float32, `double()` float64,
    /// `half()` float16, `bfloat16()`, `int()` int32, `long()` int64, `byte()` uint8,
    /// `bool()`.
    pub fn float(&self) -> Result<Tensor> {
        self.to_dtype(DType::F32)
    }
    pub fn double(&self) -> Result<Tensor> {
        self.to_dtype(DType::F64)
    }
    pub fn half(&self) -> Result<Tensor> {
        self.to_dtype(DType::F16)
    }
    pub fn bfloat16(&self) -> Result<Tensor> {
        self.to_dtype(DType::BF16)
    }
    pub fn int(&self) -> Result<Tensor> {
        self.to_dtype(DType::I32)
    }
    pub fn long(&self) -> Result<Tensor> {
        self.to_dtype(DType::I64)
    }
    pub fn byte(&self) -> Result<Tensor> {
        self.to_dtype(DType::U8)
    }
    pub fn bool(&self) -> Result<Tensor> {
        self.to_dtype(DType::Bool)
    }

    /// `to` the current CUDA device (`cuda::current_device()`, cuda:0 unless
    /// `cuda::set_device` or a `cuda::device` block changed it), as torch's `.cuda()`.
    pub fn cuda(&self) -> Result<Tensor> {
        self.to_device(Device::Cuda(crate::cuda::current_device()?))
    }

    /// The CUDA ordinal of the tensor's device, -1 on the CPU (torch's `get_device()`).
    pub fn get_device(&self) -> i64 {
        self.device().index().map_or(-1, |i| i as i64)
    }

    /// `to(cpu)`; waits for the GPU.
    pub fn cpu(&self) -> Result<Tensor> {
        self.to_device(Device::Cpu)
    }

    /// The error for an op that torch does not run on bool tensors (`topk`, `argmax`,
    /// `median`, `trace`, ...), naming the op, the shape and the device.
    pub(crate) fn refuse_bool(&self, op: &str) -> Result<()> {
        if self.dtype() != DType::Bool {
            return Ok(());
        }
        Err(Error::Invalid(format!(
            "{op} does not support bool input, as in torch (shape {:?} on {}); convert it \
             first, e.g. t.to_dtype(DType::U8)",
            self.shape(),
            self.device()
        )))
    }

    fn wrong_type<T: WithDType>(&self, what: &str) -> Error {
        Error::Invalid(format!(
            "{what}::<{}>() on a {} tensor: the element types differ; \
             convert first with .to_dtype(DType::{:?})",
            T::DTYPE.name(),
            self.dtype(),
            T::DTYPE
        ))
    }

    /// The elements in row-major order (waits for the GPU). `T` must be the tensor's
    /// element type (`f32` for float32, `i64` for int64, ...); it is usually inferred,
    /// or named as in `t.to_vec::<i64>()`.
    pub fn to_vec<T: WithDType>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype() {
            return Err(self.wrong_type::<T>("to_vec"));
        }
        // The Vec handed back is a new host buffer: refused, not aborted, when it cannot fit.
        host_mem::host_room(self.numel(), T::DTYPE)?;
        self.dense()?
            .read()
            .with_host(|host| T::cpu_slice(host).expect("dtype checked above").to_vec())
    }

    /// Every element converted to f64, whatever the dtype (for printing and checking).
    pub fn to_f64_vec(&self) -> Result<Vec<f64>> {
        host_mem::host_room(self.numel(), DType::F64)?;
        self.dense()?.read().with_host(CpuStorage::to_f64_vec)
    }

    /// The rows of a 2-D tensor.
    pub fn to_vec2<T: WithDType>(&self) -> Result<Vec<Vec<T>>> {
        if self.rank() != 2 {
            return Err(Error::BadShape(format!(
                "to_vec2 needs a 2-D tensor, got shape {:?}",
                self.shape()
            )));
        }
        let cols = self.shape()[1].max(1);
        Ok(self
            .to_vec::<T>()?
            .chunks(cols)
            .map(<[T]>::to_vec)
            .collect())
    }

    /// The value of a one-element tensor (waits for the GPU); `T` as for [`Tensor::to_vec`].
    pub fn item<T: WithDType>(&self) -> Result<T> {
        if self.numel() != 1 {
            return Err(Error::BadShape(format!(
                "item() needs a tensor with one element, this one has shape {:?} ({} elements)",
                self.shape(),
                self.numel()
            )));
        }
        if T::DTYPE != self.dtype() {
            return Err(self.wrong_type::<T>("item"));
        }
        Ok(self.to_vec::<T>()?[0])
    }

    /// The device address of the data, for kernel arguments.
    /// A view must be contiguous (an offset is added to the address); a strided one is
    /// refused, since a kernel indexes its argument row-major.
    pub(crate) fn device_ptr(&self) -> Result<u64> {
        if !self.layout.is_contiguous() {
            return Err(Error::Invalid(format!(
                "a kernel argument must be contiguous; this tensor is a view with shape {:?} \
                 and strides {:?}: pass .contiguous()? instead",
                self.shape(),
                self.layout.strides()
            )));
        }
        let elem = self.dtype().size_in_bytes() as u64;
        match &*self.read() {
            Storage::Cuda(b) => Ok(b.ptr() + self.layout.offset() as u64 * elem),
            Storage::Cpu(_) => Err(Error::Invalid("a CPU tensor has no device address".into())),
        }
    }

    /// Fails with torch's message unless both tensors are on one device.
    fn same_device(&self, other: &Tensor) -> Result<Device> {
        let (a, b) = (self.device(), other.device());
        if a != b {
            return Err(Error::DeviceMismatch { lhs: a, rhs: b });
        }
        Ok(a)
    }
}

impl<T: WithDType> From<Vec<T>> for Tensor {
    /// A 1-D CPU tensor.
    fn from(v: Vec<T>) -> Tensor {
        let n = v.len();
        Tensor::from_storage(Storage::Cpu(T::into_cpu(v)), vec![n])
    }
}

impl<T: WithDType> From<&[T]> for Tensor {
    fn from(v: &[T]) -> Tensor {
        Tensor::from(v.to_vec())
    }
}
