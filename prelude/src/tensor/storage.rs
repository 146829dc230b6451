//! Where a tensor's numbers are: a `CpuStorage` (one `Vec` per dtype) on the host or a
//! buffer on one GPU. Storage is shared by `Arc<RwLock<..>>` between a tensor, its clones and
//! its views, so `clone`, views and `to(same device)` copy nothing; only the in-place
//! methods (`copy_` and those built on it, through `write_layout`) write into it.
//!
//! `impl Storage` below is the one dispatch point between the tensor layer and the backends:
//! each operation is one method here that sends the CPU case to `cpu_backend` and the CUDA
//! case to `gpu`, and any other combination (mixed devices, a dtype a backend lacks) becomes
//! an error naming the op, the dtypes and the device. Storage knows nothing of shapes beyond
//! what an op needs: the `Layout { shape, strides, offset }` lives next to it in `Tensor`,
//! and the ops here receive dense storage (`Tensor::dense`) except the strided ones
//! (`copy_layout`, `write_layout`, `gather`), which take the layout.

use super::cpu_backend::{unsupported, CpuStorage};
use super::dtype::DType;
use super::gpu;
use super::gpu_strided;
use super::host_mem::host_room;
use super::layout::Layout;
use super::op::{BinaryOp, CmpOp, ReduceOp, UnaryOp};
use super::shape::Broadcast;
use crate::cuda::{self, Gpu};
use crate::device::Device;
use crate::error::{Error, Result};
use cudarc::driver::DevicePtr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, RwLock};

pub(crate) enum Storage {
    Cpu(CpuStorage),
    /// Any dtype: a byte buffer and the dtype of its elements.
    Cuda(CudaBuf),
}

/// A storage as tensors share it: the numbers behind a lock (the in-place methods write
/// them), and what never changes for the storage's life (dtype, device, length) outside it,
/// so asking a tensor its dtype or device takes no lock.
pub(crate) struct Shared {
    pub dtype: DType,
    pub device: Device,
    pub len: usize,
    pub data: RwLock<Storage>,
    /// How many times the numbers were written in place (torch's version counter): autograd
    /// compares it with the count when a rule kept the tensor (`autograd::Saved`).
    pub version: AtomicU64,
}

impl Shared {
    pub fn new(s: Storage) -> Shared {
        Shared {
            dtype: s.dtype(),
            device: s.device(),
            len: s.len(),
            data: RwLock::new(s),
            version: AtomicU64::new(0),
        }
    }
}

pub(crate) struct CudaBuf {
    pub gpu: Arc<Gpu>,
    /// The elements' bytes; at least one element even for an empty tensor (see [`alloc`]).
    pub slice: cuda::alloc::DeviceMem<u8>,
    /// The number of elements the tensor holds (0 for an empty tensor, whose `slice` has 1).
    pub len: usize,
    pub dtype: DType,
}

impl CudaBuf {
    /// The buffer's device address, for kernel arguments.
    pub fn ptr(&self) -> u64 {
        self.slice.device_ptr(&self.gpu.stream).0
    }
}

impl Drop for CudaBuf {
    /// The bytes leave the memory cap's count; the `slice` field, dropped next, frees them
    /// in its own context (`DeviceMem`'s drop binds it first, G8).
    fn drop(&mut self) {
        cuda::memcap::release(self.gpu.ordinal, self.slice.num_bytes() as u64);
    }
}

/// How many elements to ask the driver for: never 0. A zero-byte `cuMemAllocAsync` is
/// undocumented (some drivers return success without writing the pointer, which cudarc
/// would then free), and `cuMemAlloc(0)` is an error (G2).
pub(crate) fn physical_len(n: usize) -> usize {
    n.max(1)
}

/// An uninitialised buffer of `n` elements of `dtype` on `gpu` (stream-ordered).
pub(crate) fn alloc(gpu: &Arc<Gpu>, n: usize, dtype: DType) -> Result<CudaBuf> {
    // No device has 2^64 bytes: a product that overflows is simply too big (unchecked, it
    // would wrap round to a small buffer that kernels then overrun).
    let bytes = physical_len(n)
        .checked_mul(dtype.size_in_bytes())
        .ok_or(Error::OutOfMemory {
            device: gpu.device(),
            bytes: usize::MAX,
        })?;
    // The kernel's GPU memory cap (cuda/memcap.rs); released by `CudaBuf`'s Drop once kept.
    let charge = cuda::memcap::Charge::new(gpu.ordinal, bytes as u64, || {
        Ok(cuda::get_device_properties(gpu.ordinal)?.total_memory)
    })?;
    let try_alloc = || {
        // SAFETY: every caller writes all n elements (a kernel, a copy or a memset) before
        // the buffer is read; the extra element of an empty buffer is never read.
        unsafe { cuda::alloc::alloc::<u8>(gpu, bytes) }
    };
    let slice = match try_alloc() {
        // Freed tensors may still sit in the memory pool (it keeps them for reuse): give
        // them back to the device and try once more before reporting out of memory.
        Err(e) if cuda::is_oom(&e) => {
            cuda::trim_pool(gpu);
            try_alloc()
        }
        r => r,
    }
    .map_err(|e| {
        if cuda::is_oom(&e) {
            Error::OutOfMemory {
                device: gpu.device(),
                bytes,
            }
        } else {
            cuda::driver_err("cuMemAlloc", e)
        }
    })?;
    charge.keep();
    Ok(CudaBuf {
        gpu: gpu.clone(),
        slice,
        len: n,
        dtype,
    })
}

/// All bits zero: 0 of every dtype (and false).
pub(crate) fn zeros(gpu: &Arc<Gpu>, n: usize, dtype: DType) -> Result<CudaBuf> {
    let mut b = alloc(gpu, n, dtype)?;
    if n > 0 {
        gpu.stream
            .memset_zeros(&mut *b.slice)
            .map_err(|e| cuda::driver_err("cuMemsetD8", e))?;
    }
    Ok(b)
}

/// The bytes of a host vector of any dtype.
fn host_bytes(c: &CpuStorage) -> &[u8] {
    fn bytes<T: Copy>(v: &[T]) -> &[u8] {
        // SAFETY: every dtype's element is plain data without padding (f16/bf16 are
        // transparent u16s, bool one byte of 0 or 1); the slice covers exactly `v`.
        unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
    }
    match c {
        CpuStorage::F32(v) => bytes(v),
        CpuStorage::F64(v) => bytes(v),
        CpuStorage::F16(v) => bytes(v),
        CpuStorage::BF16(v) => bytes(v),
        CpuStorage::I32(v) => bytes(v),
        CpuStorage::I64(v) => bytes(v),
        CpuStorage::U8(v) => bytes(v),
        CpuStorage::Bool(v) => bytes(v),
    }
}

/// Host to device. The driver copies pageable memory through a staging buffer before this
/// returns, so `data` may be dropped at once; the transfer to the device is stream-ordered.
pub(crate) fn upload(gpu: &Arc<Gpu>, data: &CpuStorage) -> Result<CudaBuf> {
    let mut b = alloc(gpu, data.len(), data.dtype())?;
    if data.len() > 0 {
        gpu.stream
            .memcpy_htod(host_bytes(data), &mut *b.slice)
            .map_err(|e| cuda::driver_err("cuMemcpyHtoD", e))?;
    }
    Ok(b)
}

/// A device-side copy of `b` (what copy-on-write makes before a kernel may write).
pub(crate) fn duplicate(b: &CudaBuf) -> Result<CudaBuf> {
    let mut out = alloc(&b.gpu, b.len, b.dtype)?;
    if b.len > 0 {
        b.gpu
            .stream
            .memcpy_dtod(&*b.slice, &mut *out.slice)
            .map_err(|e| cuda::driver_err("cuMemcpyDtoD", e))?;
    }
    Ok(out)
}

/// Device to host as `T` (which must be `b`'s element type, or u8 for bool); waits for
/// everything queued before it, like torch's `.cpu()`.
fn download_as<T: Copy>(b: &CudaBuf) -> Result<Vec<T>> {
    debug_assert_eq!(std::mem::size_of::<T>(), b.dtype.size_in_bytes());
    let n = b.len;
    // A download bigger than the host's free memory would abort or get the process killed.
    host_room(n, b.dtype)?;
    // Not zero-filled first (G16): the copy writes every element, and for a multi-GB tensor
    // the fill would be a second full pass over host memory.
    let mut out: Vec<T> = super::cpu::output_vec(n);
    let sync = |op: &str| {
        b.gpu
            .stream
            .synchronize()
            .map_err(|e| cuda::driver_err(op, e))
    };
    if n > 0 {
        b.gpu
            .ctx
            .bind_to_thread()
            .map_err(|e| cuda::driver_err("cuCtxSetCurrent", e))?;
        // SAFETY: `out` has room for n elements and the buffer holds n of the same size; the
        // copy is queued on the buffer's stream after the work that writes it, and the
        // stream is synchronised before the length is set, so no element is read before
        // the driver wrote it.
        unsafe {
            cudarc::driver::sys::cuMemcpyDtoHAsync_v2(
                out.as_mut_ptr() as *mut std::ffi::c_void,
                b.ptr(),
                n * std::mem::size_of::<T>(),
                b.gpu.stream.cu_stream(),
            )
        }
        .result()
        .map_err(|e| cuda::driver_err("cuMemcpyDtoH", e))?;
        sync("cuStreamSynchronize")?;
        // SAFETY: the synchronised copy above initialised all n elements, and every bit
        // pattern is a valid T (T is never bool here).
        unsafe { out.set_len(n) };
    } else {
        sync("cuStreamSynchronize")?;
    }
    Ok(out)
}

/// Device to host, any dtype.
pub(crate) fn download(b: &CudaBuf) -> Result<CpuStorage> {
    Ok(match b.dtype {
        DType::F32 => CpuStorage::F32(download_as(b)?),
        DType::F64 => CpuStorage::F64(download_as(b)?),
        DType::F16 => CpuStorage::F16(download_as(b)?),
        DType::BF16 => CpuStorage::BF16(download_as(b)?),
        DType::I32 => CpuStorage::I32(download_as(b)?),
        DType::I64 => CpuStorage::I64(download_as(b)?),
        DType::U8 => CpuStorage::U8(download_as(b)?),
        // Read as bytes: a user's kernel (KernelArg::TensorMut) may have written any byte,
        // and only 0 and 1 are valid Rust bools.
        DType::Bool => {
            CpuStorage::Bool(download_as::<u8>(b)?.into_iter().map(|x| x != 0).collect())
        }
    })
}

impl cuda::DeviceBuffer for super::Tensor {
    fn buffer_device(&self) -> Device {
        self.device()
    }
    fn buffer_ptr(&self) -> Result<u64> {
        self.device_ptr()
    }
    fn buffer_ptr_mut(&mut self) -> Result<u64> {
        self.device_ptr_mut()
    }
}

impl<'a> From<&'a super::Tensor> for cuda::KernelArg<'a> {
    fn from(t: &'a super::Tensor) -> Self {
        cuda::KernelArg::Tensor(t)
    }
}

impl<'a> From<&'a mut super::Tensor> for cuda::KernelArg<'a> {
    fn from(t: &'a mut super::Tensor) -> Self {
        cuda::KernelArg::TensorMut(t)
    }
}

impl super::Tensor {
    /// The device address of the data for a kernel that writes it: copy-on-write, so the
    /// write cannot reach clones or reshapes that share the storage (G13).
    /// A view or a non-dense tensor gets a private contiguous copy too (the kernel indexes
    /// it row-major and must not write into elements other tensors see).
    pub(crate) fn device_ptr_mut(&mut self) -> Result<u64> {
        if Arc::get_mut(&mut self.storage).is_none() || !self.is_dense() {
            let copy = self.read().copy_layout(&self.layout)?;
            *self = super::Tensor::from_storage(copy, self.shape().to_vec());
        }
        self.device_ptr()
    }
}

impl Storage {
    pub fn device(&self) -> Device {
        match self {
            Storage::Cpu(_) => Device::Cpu,
            Storage::Cuda(b) => b.gpu.device(),
        }
    }

    pub fn dtype(&self) -> DType {
        match self {
            Storage::Cpu(c) => c.dtype(),
            Storage::Cuda(b) => b.dtype,
        }
    }

    /// Number of elements held.
    pub fn len(&self) -> usize {
        match self {
            Storage::Cpu(c) => c.len(),
            Storage::Cuda(b) => b.len,
        }
    }

    /// A contiguous copy of the elements `layout` selects (a plain copy when it is dense).
    pub fn copy_layout(&self, layout: &Layout) -> Result<Storage> {
        match self {
            Storage::Cpu(a) => {
                host_room(layout.numel(), a.dtype())?;
                Ok(Storage::Cpu(a.copy_layout(layout)))
            }
            Storage::Cuda(b) => Ok(Storage::Cuda(gpu_strided::copy_layout(
                b,
                self.dtype(),
                layout,
            )?)),
        }
    }

    /// Writes the dense `src` (same dtype and device, `layout.numel()` elements) into the
    /// elements `layout` selects here: the one write path of the in-place ops.
    pub fn write_layout(&mut self, layout: &Layout, src: &Storage) -> Result<()> {
        let dtype = self.dtype();
        if src.dtype() != dtype {
            return Err(unsupported("copy_", &[dtype, src.dtype()], self.device()));
        }
        match (self, src) {
            (Storage::Cpu(a), Storage::Cpu(b)) => a.write_layout(layout, b),
            (Storage::Cuda(a), Storage::Cuda(b)) => gpu_strided::write_layout(a, dtype, layout, b),
            (a, b) => Err(a.mixed(b)),
        }
    }

    /// Output element at coordinates `c` (row-major over `out_dims`) is the element of
    /// `layout` at `c` with `c[dim]` replaced by `idx[sum(c * idx_strides)]`: index_select
    /// and gather. The indices are checked against `layout.dims()[dim]` by the caller.
    pub fn gather(
        &self,
        layout: &Layout,
        dim: usize,
        idx: &[i64],
        idx_strides: &[usize],
        out_dims: &[usize],
    ) -> Result<Storage> {
        match self {
            Storage::Cpu(a) => Ok(Storage::Cpu({
                host_room(out_dims.iter().product(), a.dtype())?;
                a.gather(layout, dim, idx, idx_strides, out_dims)
            })),
            Storage::Cuda(b) => Ok(Storage::Cuda(gpu_strided::gather(
                b,
                self.dtype(),
                layout,
                dim,
                idx,
                idx_strides,
                out_dims,
            )?)),
        }
    }

    /// The elements `layout` selects, reversed along each dimension where `flip` is true,
    /// contiguous (torch's `flip`). The CPU walks them in one pass; CUDA has no flip kernel
    /// and runs one gather per flipped dimension with the reversed indices (the kernel of
    /// `index_select`, already tested on GPUs), the first straight from the layout.
    pub fn flip(&self, layout: &Layout, flip: &[bool]) -> Result<Storage> {
        match self {
            Storage::Cpu(a) => Ok(Storage::Cpu(a.flip(layout, flip))),
            Storage::Cuda(b) => {
                let dims = layout.dims();
                let mut done: Option<CudaBuf> = None;
                // Reversing a dimension of size 0 or 1 changes nothing; an empty tensor
                // has nothing to move.
                let empty = layout.numel() == 0;
                for d in (0..dims.len()).filter(|&d| flip[d] && dims[d] > 1 && !empty) {
                    let idx: Vec<i64> = (0..dims[d] as i64).rev().collect();
                    let mut idx_strides = vec![0; dims.len()];
                    idx_strides[d] = 1;
                    let dense = Layout::contiguous(dims.to_vec());
                    let (src, from) = match &done {
                        Some(c) => (c, &dense),
                        None => (b, layout),
                    };
                    let dtype = self.dtype();
                    let next = gpu_strided::gather(src, dtype, from, d, &idx, &idx_strides, dims)?;
                    done = Some(next);
                }
                match done {
                    Some(c) => Ok(Storage::Cuda(c)),
                    None => self.copy_layout(layout),
                }
            }
        }
    }

    /// `n` float32 values equal to `value` (a memset for zeros on a GPU).
    pub fn full_f32(n: usize, value: f32, device: Device) -> Result<Storage> {
        Storage::full(n, value as f64, DType::F32, device)
    }

    /// `n` values equal to `value` converted to `dtype` (as `to_dtype` converts).
    pub fn full(n: usize, value: f64, dtype: DType, device: Device) -> Result<Storage> {
        Ok(match device {
            Device::Cpu => Storage::Cpu(match dtype {
                // Checked first: `vec!` aborts the process on a failed allocation.
                DType::F32 => {
                    host_room(n, dtype)?;
                    // Zeros come from calloc, untouched, so the huge-page advice still
                    // comes before the first write; other values are written once.
                    let mut v = if value.to_bits() == 0 {
                        vec![0f32; n]
                    } else {
                        Vec::with_capacity(n)
                    };
                    super::cpu::advise_huge_pages(&v);
                    v.resize(n, value as f32);
                    CpuStorage::F32(v)
                }
                _ => {
                    host_room(n, DType::F64)?;
                    CpuStorage::F64(vec![value; n]).to_dtype(dtype)
                }
            }),
            Device::Cuda(i) => {
                let one = CpuStorage::F64(vec![value]).to_dtype(dtype);
                let gpu = cuda::gpu(i)?;
                // The element's bit pattern, widened: a memset when it is all zeros (+0.0,
                // 0, false), else the fill kernel for its size.
                let mut bits = [0u8; 8];
                let b = host_bytes(&one);
                bits[..b.len()].copy_from_slice(b);
                let bits = u64::from_le_bytes(bits);
                if bits == 0 {
                    Storage::Cuda(zeros(&gpu, n, dtype)?)
                } else {
                    Storage::Cuda(gpu::fill(&gpu, n, dtype, bits)?)
                }
            }
        })
    }

    fn mixed(&self, rhs: &Storage) -> Error {
        Error::DeviceMismatch {
            lhs: self.device(),
            rhs: rhs.device(),
        }
    }

    /// A copy on `device` (host <-> device, or between GPUs through the host, which is
    /// always allowed where peer access may not be).
    pub fn to_device(&self, device: Device) -> Result<Storage> {
        Ok(match (self, device) {
            (Storage::Cpu(c), Device::Cpu) => Storage::Cpu(c.clone()),
            (Storage::Cpu(c), Device::Cuda(i)) => Storage::Cuda(upload(&cuda::gpu(i)?, c)?),
            (Storage::Cuda(b), Device::Cpu) => Storage::Cpu(download(b)?),
            (Storage::Cuda(b), Device::Cuda(i)) => {
                Storage::Cuda(upload(&cuda::gpu(i)?, &download(b)?)?)
            }
        })
    }

    /// `f` of the values on the host: CPU storage lent in place (no copy, so reading a
    /// tensor back costs one buffer, not two), CUDA storage downloaded (waits for the GPU).
    pub fn with_host<R>(&self, f: impl FnOnce(&CpuStorage) -> R) -> Result<R> {
        match self {
            Storage::Cpu(c) => Ok(f(c)),
            Storage::Cuda(b) => Ok(f(&download(b)?)),
        }
    }

    pub fn to_dtype(&self, dtype: DType) -> Result<Storage> {
        match self {
            Storage::Cpu(c) => Ok(Storage::Cpu(c.to_dtype(dtype))),
            Storage::Cuda(b) if dtype == b.dtype => Ok(Storage::Cuda(duplicate(b)?)),
            Storage::Cuda(b) => Ok(Storage::Cuda(gpu::cast(b, dtype)?)),
        }
    }

    pub fn binary(&self, rhs: &Storage, op: BinaryOp, bc: Option<&Broadcast>) -> Result<Storage> {
        match (self, rhs) {
            (Storage::Cpu(a), Storage::Cpu(b)) => {
                host_room(bc.map_or(a.len(), Broadcast::numel), a.dtype())?;
                Ok(Storage::Cpu(a.binary(b, op, bc)?))
            }
            (Storage::Cuda(a), Storage::Cuda(b)) => Ok(Storage::Cuda(gpu::binary(op, a, b, bc)?)),
            _ => Err(self.mixed(rhs)),
        }
    }

    pub fn binary_scalar(&self, op: BinaryOp, s: f64, scalar_first: bool) -> Result<Storage> {
        match self {
            Storage::Cpu(a) => Ok(Storage::Cpu(a.binary_scalar(op, s, scalar_first)?)),
            Storage::Cuda(a) => Ok(Storage::Cuda(gpu::binary_scalar(op, a, s, scalar_first)?)),
        }
    }

    pub fn unary(&self, op: UnaryOp) -> Result<Storage> {
        match self {
            Storage::Cpu(a) => Ok(Storage::Cpu(a.unary(op)?)),
            Storage::Cuda(a) => Ok(Storage::Cuda(gpu::unary(op, a)?)),
        }
    }

    pub fn cmp(&self, rhs: &Storage, op: CmpOp, bc: Option<&Broadcast>) -> Result<Storage> {
        match (self, rhs) {
            (Storage::Cpu(a), Storage::Cpu(b)) => {
                host_room(bc.map_or(a.len(), Broadcast::numel), DType::Bool)?;
                Ok(Storage::Cpu(a.cmp(b, op, bc)?))
            }
            (Storage::Cuda(a), Storage::Cuda(b)) => Ok(Storage::Cuda(gpu::cmp(op, a, b, bc)?)),
            _ => Err(self.mixed(rhs)),
        }
    }

    /// `cond ? x : y`, all three of one shape.
    pub fn where_(cond: &Storage, x: &Storage, y: &Storage) -> Result<Storage> {
        match (cond, x, y) {
            (Storage::Cpu(c), Storage::Cpu(a), Storage::Cpu(b)) => {
                Ok(Storage::Cpu(CpuStorage::where_(c, a, b)?))
            }
            (Storage::Cuda(c), Storage::Cuda(a), Storage::Cuda(b)) => {
                Ok(Storage::Cuda(gpu::where_(c, a, b)?))
            }
            _ if cond.device() != x.device() => Err(cond.mixed(x)),
            _ => Err(x.mixed(y)),
        }
    }

    pub fn reduce_all(&self, op: ReduceOp) -> Result<Storage> {
        match self {
            Storage::Cpu(a) => Ok(Storage::Cpu(a.reduce_all(op)?)),
            Storage::Cuda(a) => Ok(Storage::Cuda(gpu::reduce_all(op, a)?)),
        }
    }

    pub fn reduce_dim(
        &self,
        op: ReduceOp,
        outer: usize,
        len: usize,
        inner: usize,
    ) -> Result<Storage> {
        match self {
            Storage::Cpu(a) => Ok(Storage::Cpu(a.reduce_dim(op, outer, len, inner)?)),
            Storage::Cuda(a) => Ok(Storage::Cuda(gpu::reduce_dim(op, a, outer, len, inner)?)),
        }
    }

    /// Inclusive scan (`Sum`: cumsum, `Prod`: cumprod) along the middle axis of
    /// `[outer, len, inner]`, the shape kept; integers and bools give int64. Checked here for
    /// both backends: they write int64 for integer scans, right for these two ops only.
    pub fn scan_dim(
        &self,
        op: ReduceOp,
        outer: usize,
        len: usize,
        inner: usize,
    ) -> Result<Storage> {
        if !matches!(op, ReduceOp::Sum | ReduceOp::Prod) {
            let name = format!("cum{}", op.name());
            return Err(unsupported(&name, &[self.dtype()], self.device()));
        }
        match self {
            Storage::Cpu(a) => {
                host_room(a.len(), DType::F64)?;
                Ok(Storage::Cpu(a.scan_dim(op, outer, len, inner)?))
            }
            Storage::Cuda(a) => Ok(Storage::Cuda(gpu::scan_dim(op, a, outer, len, inner)?)),
        }
    }

    /// argmax (`max`) or argmin along the middle axis of `[outer, len, inner]`, as int64.
    pub fn arg_reduce(&self, max: bool, outer: usize, len: usize, inner: usize) -> Result<Storage> {
        match self {
            Storage::Cpu(a) => Ok(Storage::Cpu(a.arg_reduce(max, outer, len, inner))),
            Storage::Cuda(a) => Ok(Storage::Cuda(gpu::arg_reduce(max, a, outer, len, inner)?)),
        }
    }

    pub fn matmul(&self, rhs: &Storage, m: usize, k: usize, n: usize) -> Result<Storage> {
        match (self, rhs) {
            (Storage::Cpu(a), Storage::Cpu(b)) => {
                host_room(m.saturating_mul(n), a.dtype())?;
                Ok(Storage::Cpu(a.matmul(b, m, k, n)?))
            }
            (Storage::Cuda(a), Storage::Cuda(b)) => Ok(Storage::Cuda(gpu::matmul(a, b, m, k, n)?)),
            _ => Err(self.mixed(rhs)),
        }
    }
}

#[cfg(test)]
mod tests {
    /// G2: an empty tensor's buffer is one float, so the driver is never asked for 0 bytes;
    /// every other size is exact (no hidden padding the kernels could read).
    #[test]
    fn the_driver_is_never_asked_for_zero_bytes() {
        assert_eq!(super::physical_len(0), 1);
        for n in [1usize, 2, 1000, 1 << 30] {
            assert_eq!(super::physical_len(n), n);
        }
    }
}
