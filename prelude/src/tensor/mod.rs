//! `Tensor`: an n-dimensional array of `f32` on the CPU or on one GPU, with torch's names.
//!
//! A tensor is always contiguous and row-major; operations return new tensors. On a CUDA
//! device every operation is queued on the device's stream and returns at once; `to_vec`,
//! `item` and `cpu` wait for the queue, as in torch.

mod arith;
mod cpu;
mod format;
mod gpu;
mod matmul;
mod op;
mod random;
mod shape;
mod storage;

pub use random::manual_seed;
pub use shape::Shape;

use crate::cuda;
use crate::device::Device;
use crate::error::{Error, Result};
use std::sync::Arc;
use storage::Storage;

#[derive(Clone)]
pub struct Tensor {
    storage: Arc<Storage>,
    dims: Vec<usize>,
}

impl Tensor {
    fn from_storage(storage: Storage, dims: Vec<usize>) -> Tensor {
        Tensor {
            storage: Arc::new(storage),
            dims,
        }
    }

    /// Places host data on `device` (an upload for CUDA devices).
    fn from_host(data: Vec<f32>, dims: Vec<usize>, device: Device) -> Result<Tensor> {
        let storage = match device {
            Device::Cpu => Storage::Cpu(data),
            Device::Cuda(i) => Storage::Cuda(storage::upload(&cuda::gpu(i)?, &data)?),
        };
        Ok(Tensor::from_storage(storage, dims))
    }

    /// A tensor holding `data`, laid out row-major in `shape`.
    pub fn from_vec(
        data: Vec<f32>,
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
        Tensor::from_host(data, dims, device.into())
    }

    pub fn from_slice(
        data: &[f32],
        shape: impl Into<Shape>,
        device: impl Into<Device>,
    ) -> Result<Tensor> {
        Tensor::from_vec(data.to_vec(), shape, device)
    }

    pub fn zeros(shape: impl Into<Shape>, device: impl Into<Device>) -> Result<Tensor> {
        let dims = shape.into().0;
        let n = dims.iter().product();
        let storage = match device.into() {
            Device::Cpu => Storage::Cpu(vec![0.0; n]),
            Device::Cuda(i) => Storage::Cuda(storage::zeros(&cuda::gpu(i)?, n)?),
        };
        Ok(Tensor::from_storage(storage, dims))
    }

    pub fn ones(shape: impl Into<Shape>, device: impl Into<Device>) -> Result<Tensor> {
        Tensor::full(shape, 1.0, device)
    }

    /// Every element set to `value`.
    pub fn full(shape: impl Into<Shape>, value: f32, device: impl Into<Device>) -> Result<Tensor> {
        let dims = shape.into().0;
        let n = dims.iter().product();
        let storage = match device.into() {
            Device::Cpu => Storage::Cpu(vec![value; n]),
            Device::Cuda(i) => Storage::Cuda(gpu::full(&cuda::gpu(i)?, n, value)?),
        };
        Ok(Tensor::from_storage(storage, dims))
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

    /// A copy on `device`, or this tensor itself when it is already there.
    pub fn to(&self, device: impl Into<Device>) -> Result<Tensor> {
        let device = device.into();
        if device == self.device() {
            return Ok(self.clone());
        }
        let storage = match (&*self.storage, device) {
            (Storage::Cpu(v), Device::Cuda(i)) => {
                Storage::Cuda(storage::upload(&cuda::gpu(i)?, v)?)
            }
            (Storage::Cuda(b), Device::Cpu) => Storage::Cpu(storage::download(b)?),
            // Between GPUs: through the host, which is always allowed (peer access may not be).
            (Storage::Cuda(b), Device::Cuda(i)) => {
                Storage::Cuda(storage::upload(&cuda::gpu(i)?, &storage::download(b)?)?)
            }
            (Storage::Cpu(_), Device::Cpu) => unreachable!(),
        };
        Ok(Tensor::from_storage(storage, self.dims.clone()))
    }

    /// `to(cuda:0)`.
    pub fn cuda(&self) -> Result<Tensor> {
        self.to(Device::Cuda(0))
    }

    /// `to(cpu)`; waits for the GPU.
    pub fn cpu(&self) -> Result<Tensor> {
        self.to(Device::Cpu)
    }

    /// The elements in row-major order (waits for the GPU).
    pub fn to_vec(&self) -> Result<Vec<f32>> {
        match &*self.storage {
            Storage::Cpu(v) => Ok(v.clone()),
            Storage::Cuda(b) => storage::download(b),
        }
    }

    /// The rows of a 2-D tensor.
    pub fn to_vec2(&self) -> Result<Vec<Vec<f32>>> {
        if self.rank() != 2 {
            return Err(Error::BadShape(format!(
                "to_vec2 needs a 2-D tensor, got shape {:?}",
                self.dims
            )));
        }
        let cols = self.dims[1].max(1);
        Ok(self.to_vec()?.chunks(cols).map(<[f32]>::to_vec).collect())
    }

    /// The value of a one-element tensor (waits for the GPU).
    pub fn item(&self) -> Result<f32> {
        if self.numel() != 1 {
            return Err(Error::BadShape(format!(
                "item() needs a tensor with one element, this one has shape {:?} ({} elements)",
                self.dims,
                self.numel()
            )));
        }
        Ok(self.to_vec()?[0])
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

impl From<Vec<f32>> for Tensor {
    /// A 1-D CPU tensor.
    fn from(v: Vec<f32>) -> Tensor {
        let n = v.len();
        Tensor::from_storage(Storage::Cpu(v), vec![n])
    }
}

impl From<&[f32]> for Tensor {
    fn from(v: &[f32]) -> Tensor {
        Tensor::from(v.to_vec())
    }
}
