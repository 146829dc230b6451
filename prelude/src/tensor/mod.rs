//! `Tensor`: an n-dimensional array of one dtype (`DType`, float32 by default) on the CPU or
//! on one GPU, with torch's names.
//!
//! A tensor is always contiguous and row-major; operations return new tensors. On a CUDA
//! device every operation is queued on the device's stream and returns at once; `to_vec`,
//! `item` and `cpu` wait for the queue, as in torch.
//!
//! Layers: the public methods (here and in arith.rs) check shapes and dtypes and promote;
//! `Storage` (storage.rs) is the one dispatch point to a backend per device: cpu_backend.rs
//! (with the f32 kernels of cpu.rs and matmul.rs) and gpu.rs (CUDA, float32 only for now).

mod arith;
mod cpu;
mod cpu_backend;
mod dtype;
mod format;
mod gpu;
mod matmul;
mod op;
mod random;
mod shape;
mod storage;

pub use arith::Operand;
pub use dtype::{promote, DType, WithDType};
pub use half::{bf16, f16};
pub use random::manual_seed;
pub use shape::Shape;

use crate::device::Device;
use crate::error::{Error, Result};
use cpu_backend::CpuStorage;
use std::sync::Arc;
use storage::Storage;

#[derive(Clone)]
pub struct Tensor {
    storage: Arc<Storage>,
    dims: Vec<usize>,
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
        // Convert where it is cheaper to do so: on the host (the CUDA backend is f32-only).
        if self.0.is_cuda() {
            t.to_dtype(self.1)?.to_device(self.0)
        } else {
            t.to_device(self.0)?.to_dtype(self.1)
        }
    }
}

impl Tensor {
    fn from_storage(storage: Storage, dims: Vec<usize>) -> Tensor {
        Tensor {
            storage: Arc::new(storage),
            dims,
        }
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
        let n: usize = dims.iter().product();
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
        let n = dims.iter().product();
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
        let n = dims.iter().product();
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
        let device = device.into();
        if dtype == DType::F32 {
            return Tensor::full(dims, value as f32, device);
        }
        let n = dims.iter().product();
        let data = CpuStorage::F64(vec![value; n]).to_dtype(dtype);
        Tensor::from_cpu(data, dims, device)
    }

    /// `start, start + 1, ...` up to but not including `end`, like `torch.arange(start, end)`.
    pub fn arange(start: f32, end: f32, device: impl Into<Device>) -> Result<Tensor> {
        Tensor::arange_step(start, end, 1.0, device)
    }

    pub fn arange_step(
        start: f32,
        end: f32,
        step: f32,
        device: impl Into<Device>,
    ) -> Result<Tensor> {
        if step == 0.0 || !step.is_finite() || (end - start) * step < 0.0 {
            return Err(Error::Invalid(format!(
                "arange: cannot go from {start} to {end} in steps of {step}"
            )));
        }
        let n = ((end - start) / step).ceil().max(0.0) as usize;
        // Multiplying rather than accumulating keeps the last values exact.
        let data: Vec<f32> = (0..n).map(|i| start + i as f32 * step).collect();
        Tensor::from_host(data, vec![n], device.into())
    }

    /// Uniform samples in [0, 1) from the generator seeded by [`manual_seed`]; drawn on the
    /// host, so one seed gives the same numbers on every device.
    pub fn rand(shape: impl Into<Shape>, device: impl Into<Device>) -> Result<Tensor> {
        let dims = shape.into().0;
        let data = random::uniform(dims.iter().product());
        Tensor::from_host(data, dims, device.into())
    }

    /// Standard normal samples; see [`Tensor::rand`].
    pub fn randn(shape: impl Into<Shape>, device: impl Into<Device>) -> Result<Tensor> {
        let dims = shape.into().0;
        let data = random::normal(dims.iter().product());
        Tensor::from_host(data, dims, device.into())
    }

    pub fn shape(&self) -> &[usize] {
        &self.dims
    }

    /// Number of dimensions (torch's `dim()`).
    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.dims.iter().product()
    }

    pub fn device(&self) -> Device {
        self.storage.device()
    }

    pub fn is_cuda(&self) -> bool {
        self.device().is_cuda()
    }

    pub fn dtype(&self) -> DType {
        self.storage.dtype()
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
        let storage = self.storage.to_device(device)?;
        Ok(Tensor::from_storage(storage, self.dims.clone()))
    }

    /// A copy converted to `dtype` (this tensor itself when it already has it). Float to
    /// integer truncates toward zero, anything to bool tests for non-zero, as in torch.
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        let storage = self.storage.to_dtype(dtype)?;
        Ok(Tensor::from_storage(storage, self.dims.clone()))
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
        let host = self.storage.to_cpu()?;
        Ok(T::cpu_slice(&host).expect("dtype checked above").to_vec())
    }

    /// Every element converted to f64, whatever the dtype (for printing and checking).
    pub fn to_f64_vec(&self) -> Result<Vec<f64>> {
        Ok(self.storage.to_cpu()?.to_f64_vec())
    }

    /// The rows of a 2-D tensor.
    pub fn to_vec2<T: WithDType>(&self) -> Result<Vec<Vec<T>>> {
        if self.rank() != 2 {
            return Err(Error::BadShape(format!(
                "to_vec2 needs a 2-D tensor, got shape {:?}",
                self.dims
            )));
        }
        let cols = self.dims[1].max(1);
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
                self.dims,
                self.numel()
            )));
        }
        if T::DTYPE != self.dtype() {
            return Err(self.wrong_type::<T>("item"));
        }
        Ok(self.to_vec::<T>()?[0])
    }

    /// The same data seen with another shape of the same size (no copy).
    pub fn reshape(&self, shape: impl Into<Shape>) -> Result<Tensor> {
        let dims = shape.into().0;
        if dims.iter().product::<usize>() != self.numel() {
            return Err(Error::BadShape(format!(
                "cannot reshape a tensor of shape {:?} ({} elements) to {dims:?}",
                self.dims,
                self.numel()
            )));
        }
        Ok(Tensor {
            storage: self.storage.clone(),
            dims,
        })
    }

    /// A 1-D view of all elements.
    pub fn flatten(&self) -> Tensor {
        Tensor {
            storage: self.storage.clone(),
            dims: vec![self.numel()],
        }
    }

    /// The device address of the data, for kernel arguments.
    pub(crate) fn device_ptr(&self) -> Result<u64> {
        match &*self.storage {
            Storage::Cuda(b) => Ok(b.ptr()),
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
