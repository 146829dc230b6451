//! User-facing kernel launches: compile CUDA C++ with NVRTC for a device, look a kernel up
//! by name and launch it with tensors and scalars as arguments.
//!
//! ```no_run
//! # use gpulab::*;
//! # fn main() -> Result<(), gpulab::Error> {
//! # let dev = Device::Cuda(0);
//! # let n = 1024;
//! # let (a, b, mut c) = (Tensor::ones(n, dev)?, Tensor::ones(n, dev)?, Tensor::zeros(n, dev)?);
//! let m = cuda::Module::from_file(&dev, cuda::kernels_dir().join("vector_add.cu"))?;
//! let f = m.function("vector_add")?;
//! f.launch(LaunchConfig::for_elements(n, 256), &mut [
//!     KernelArg::from(&a), KernelArg::from(&b), KernelArg::from(&mut c), KernelArg::from(n as i32),
//! ])?;
//! # Ok(()) }
//! ```

use super::context::{gpu_of, Gpu};
use super::{driver_err, nvrtc};
use crate::device::Device;
use crate::error::{Error, Result};
use cudarc::driver::{sys::CUresult, CudaFunction, CudaModule};
use std::collections::hash_map::DefaultHasher;
use std::ffi::c_void;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::Arc;

/// The kernel sources compiled into the crate, by file stem. To add one, put the `.cu` file in
/// `kernels-cu/` and a line here; `Module::builtin(&dev, "<stem>")` then finds it.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "vector_add",
        include_str!("../../../kernels-cu/vector_add.cu"),
    ),
    (
        "elementwise",
        include_str!("../../../kernels-cu/elementwise.cu"),
    ),
    ("reduce", include_str!("../../../kernels-cu/reduce.cu")),
    ("strided", include_str!("../../../kernels-cu/strided.cu")),
    ("conv", include_str!("../../../kernels-cu/conv.cu")),
    (
        "mandelbrot",
        include_str!("../../../kernels-cu/mandelbrot.cu"),
    ),
];

/// The source of a builtin kernel file by stem (`"reduce"` for `kernels-cu/reduce.cu`).
pub fn builtin_source(stem: &str) -> Option<&'static str> {
    BUILTIN
        .iter()
        .find(|(s, _)| *s == stem)
        .map(|(_, src)| *src)
}

/// Names of the `extern "C" __global__` functions in a source, for error messages.
fn kernel_names(src: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = src;
    while let Some(i) = rest.find("__global__") {
        rest = &rest[i + "__global__".len()..];
        let head = rest.split('(').next().unwrap_or("");
        if let Some(name) = head.split_whitespace().last() {
            names.push(name.trim_start_matches('*').to_string());
        }
    }
    names
}

/// Grid and block sizes of a launch, as in CUDA's `<<<grid, block, shared_mem_bytes>>>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_mem_bytes: u32,
}

impl LaunchConfig {
    /// One thread per element: `block` threads per block and enough blocks to cover `n`.
    /// Past CUDA's limit of 2^31 - 1 blocks the grid is capped there (it never wraps round
    /// to a small grid): kernels for such sizes need a grid-stride loop anyway.
    pub fn for_elements(n: usize, block: u32) -> LaunchConfig {
        let blocks = n
            .div_ceil(block.max(1) as usize)
            .clamp(1, i32::MAX as usize);
        LaunchConfig {
            grid: (blocks as u32, 1, 1),
            block: (block, 1, 1),
            shared_mem_bytes: 0,
        }
    }
}

/// One kernel argument. Tensors pass the device address of their `f32` data (`float*` in the
/// kernel); scalars pass their value and must match the kernel's parameter type exactly
/// (`int` is `i32`, `long long` is `i64`, `float` is `f32`).
///
/// `TensorMut` is for outputs: the tensor gets storage of its own first (copy-on-write), so
/// the kernel's writes never show up in clones or reshapes that shared its data.
pub enum KernelArg<'a> {
    Tensor(&'a dyn DeviceBuffer),
    TensorMut(&'a mut dyn DeviceBuffer),
    I32(i32),
    U32(u32),
    I64(i64),
    U64(u64),
    F32(f32),
    F64(f64),
    /// A `#[repr(C)]` struct passed by value, as 8-byte words.
    Struct(Vec<u64>),
}

/// Device memory a kernel argument can point at: `Tensor` implements it (in `tensor/`, so
/// this layer does not depend on the tensor layer above it).
pub trait DeviceBuffer {
    /// Where the memory is.
    fn buffer_device(&self) -> Device;
    /// The device address of the data, for a kernel that only reads it.
    fn buffer_ptr(&self) -> Result<u64>;
    /// The device address for a kernel that may write: the buffer must not be shared
    /// (a tensor copies its storage first when it is).
    fn buffer_ptr_mut(&mut self) -> Result<u64>;
}
macro_rules! scalar_arg {
    ($($t:ty => $v:ident),*) => {$(
        impl From<$t> for KernelArg<'_> {
            fn from(x: $t) -> Self { KernelArg::$v(x) }
        }
    )*};
}
scalar_arg!(i32 => I32, u32 => U32, i64 => I64, u64 => U64, f32 => F32, f64 => F64);

/// Kernels compiled for one device.
pub struct Module {
    gpu: Arc<Gpu>,
    module: Arc<CudaModule>,
    name: String,
    arch: String,
    kernels: Vec<String>,
}

impl Module {
    /// Compiles `src` for `device` (cached per device and source). `name` is what NVRTC calls
    /// the file in its messages.
    pub fn from_source(device: impl Into<Device>, src: &str, name: &str) -> Result<Module> {
        let gpu = gpu_of(device.into())?;
        let (module, arch) = load(&gpu, src, name)?;
        Ok(Module {
            gpu,
            module,
            name: name.to_string(),
            arch,
            kernels: kernel_names(src),
        })
    }

    /// Reads and compiles a `.cu` file.
    pub fn from_file(device: impl Into<Device>, path: impl AsRef<Path>) -> Result<Module> {
        let path = path.as_ref();
        let src = std::fs::read_to_string(path)
            .map_err(|e| Error::Invalid(format!("cannot read {}: {e}", path.display())))?;
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("kernel.cu");
        Module::from_source(device, &src, name)
    }

    /// A kernel file built into the crate (see [`BUILTIN`]), by stem: `"vector_add"`.
    pub fn builtin(device: impl Into<Device>, stem: &str) -> Result<Module> {
        let src = builtin_source(stem).ok_or_else(|| {
            let known: Vec<&str> = BUILTIN.iter().map(|(s, _)| *s).collect();
            Error::Invalid(format!(
                "no builtin kernel file {stem:?} (there are: {})",
                known.join(", ")
            ))
        })?;
        Module::from_source(device, src, &format!("{stem}.cu"))
    }

    /// The architecture this module was compiled for (`sm_90`, or `compute_XY` for PTX).
    pub fn arch(&self) -> &str {
        &self.arch
    }

    pub fn device(&self) -> Device {
        self.gpu.device()
    }

    /// The `extern "C" __global__` functions the source declares.
    pub fn kernels(&self) -> &[String] {
        &self.kernels
    }

    pub fn function(&self, name: &str) -> Result<Function> {
        let missing = || {
            Error::Invalid(format!(
                "no kernel named {name:?} in {} (it declares: {}); kernels need extern \"C\" so \
                 their names are not mangled",
                self.name,
                self.kernels.join(", ")
            ))
        };
        if name.contains('\0') {
            // cudarc would panic turning it into a C string.
            return Err(missing());
        }
        // cuModuleGetFunction works in the current context (G8: a cell may run on any thread).
        self.gpu
            .ctx
            .bind_to_thread()
            .map_err(|e| driver_err("cuCtxSetCurrent", e))?;
        match self.module.load_function(name) {
            Ok(func) => {
                let params = param_sizes(&func);
                Ok(Function {
                    gpu: self.gpu.clone(),
                    func,
                    name: name.to_string(),
                    params,
                })
            }
            // Only "not found" means the name is wrong; anything else (a sticky error from an
            // earlier kernel, say) is reported as what it is (G9).
            Err(e) if e.0 == CUresult::CUDA_ERROR_NOT_FOUND => Err(missing()),
            Err(e) => Err(driver_err(&format!("cuModuleGetFunction({name})"), e)),
        }
    }
}

/// Compiles (or finds in the device's cache) and loads `src`.
fn load(gpu: &Arc<Gpu>, src: &str, name: &str) -> Result<(Arc<CudaModule>, String)> {
    let arch = nvrtc::arch_for(gpu.cc)?;
    let mut h = DefaultHasher::new();
    (src, &arch).hash(&mut h);
    let key = h.finish();
    if let Some(m) = gpu.modules.lock().unwrap().get(&key) {
        return Ok((m.clone(), arch));
    }
    let compiled = nvrtc::compile(src, name, &arch)?;
    let ptx = cudarc::nvrtc::Ptx::from_binary(compiled.image);
    let module = gpu
        .ctx
        .load_module(ptx)
        .map_err(|e| driver_err(&format!("loading {name} ({arch})"), e))?;
    gpu.modules.lock().unwrap().insert(key, module.clone());
    Ok((module, arch))
}

/// A kernel ready to launch on its device's stream.
#[derive(Clone)]
pub struct Function {
    gpu: Arc<Gpu>,
    func: CudaFunction,
    name: String,
    /// The size in bytes of each kernel parameter, from the driver (`None` on drivers older
    /// than CUDA 12.4, which cannot tell).
    params: Option<Vec<usize>>,
}

impl Function {
    /// Queues the kernel on the device's stream and returns at once (errors inside the kernel
    /// show up at the next synchronising call).
    ///
    /// The arguments are checked against the kernel's parameter list: their number and each
    /// one's size (`cuFuncGetParamInfo`, drivers for CUDA 12.4 and newer; older drivers skip
    /// the check). What no check can see is left to you, as in CUDA C++: a `float*` where
    /// the kernel expects an `int*`, or a kernel that indexes past the end of a tensor. Such
    /// a kernel faults on the device (CUDA_ERROR_ILLEGAL_ADDRESS, sticky: the kernel has to be
    /// restarted) or writes garbage into device memory; it cannot touch host memory, since
    /// tensors are device allocations.
    pub fn launch(&self, cfg: LaunchConfig, args: &mut [KernelArg]) -> Result<()> {
        if let Some(params) = &self.params {
            check_args(&self.name, params, args)?;
        }
        launch_args(&self.gpu, &self.func, &self.name, cfg, args)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The size in bytes of each of the kernel's parameters, when the driver can tell
    /// (CUDA 12.4 and newer).
    pub fn param_sizes(&self) -> Option<&[usize]> {
        self.params.as_deref()
    }
}

/// The kernel's parameter sizes through `cuFuncGetParamInfo` (driver API 12.4+); `None`
/// when the driver is older or the query fails, so launching still works unchecked.
fn param_sizes(func: &CudaFunction) -> Option<Vec<usize>> {
    use cudarc::driver::sys;
    let v = super::driver_version().ok()?;
    if (v.major, v.minor) < (12, 4) {
        return None;
    }
    let f = func.cu_function();
    // `guarded`: cudarc panics when a symbol is missing from the loaded libcuda.
    super::loader::guarded("cuFuncGetParamInfo", || {
        let mut sizes = Vec::new();
        // A kernel has at most 32764 bytes of parameters, so at most that many parameters.
        for i in 0..32_768usize {
            let (mut offset, mut size) = (0usize, 0usize);
            // SAFETY: `f` is a live function handle and both out-pointers are valid.
            let r = unsafe { sys::cuFuncGetParamInfo(f, i, &mut offset, &mut size) };
            match r {
                CUresult::CUDA_SUCCESS => sizes.push(size),
                // Past the last parameter.
                CUresult::CUDA_ERROR_INVALID_VALUE => return Some(sizes),
                _ => return None,
            }
        }
        None
    })
    .ok()
    .flatten()
}

/// The bytes an argument occupies as a kernel parameter: (smallest, largest) size of a
/// parameter it can fill (a `Struct` of w words fills a C struct of 8(w-1)+1 to 8w bytes).
fn arg_size(a: &KernelArg) -> (usize, usize, &'static str) {
    match a {
        KernelArg::Tensor(_) | KernelArg::TensorMut(_) => (8, 8, "a tensor (float*)"),
        KernelArg::I32(_) => (4, 4, "an i32"),
        KernelArg::U32(_) => (4, 4, "a u32"),
        KernelArg::F32(_) => (4, 4, "an f32"),
        KernelArg::I64(_) => (8, 8, "an i64"),
        KernelArg::U64(_) => (8, 8, "a u64"),
        KernelArg::F64(_) => (8, 8, "an f64"),
        KernelArg::Struct(w) => (8 * w.len().max(1) - 7, 8 * w.len(), "a struct"),
    }
}

fn c_types(size: usize) -> String {
    match size {
        4 => "4 bytes: int, unsigned int or float; pass an i32, u32 or f32".into(),
        8 => "8 bytes: a pointer, long long or double; pass a tensor, i64, u64 or f64".into(),
        n => format!("{n} bytes"),
    }
}

/// Checks `args` against the kernel's parameter sizes (as `cuFuncGetParamInfo` reports them).
pub(crate) fn check_args(kernel: &str, params: &[usize], args: &[KernelArg]) -> Result<()> {
    if params.len() != args.len() {
        return Err(Error::Invalid(format!(
            "kernel {kernel} takes {} argument{}, but {} {} given",
            params.len(),
            if params.len() == 1 { "" } else { "s" },
            args.len(),
            if args.len() == 1 { "was" } else { "were" },
        )));
    }
    for (i, (&want, a)) in params.iter().zip(args).enumerate() {
        let (lo, hi, what) = arg_size(a);
        if want < lo || want > hi {
            return Err(Error::Invalid(format!(
                "argument {i} of kernel {kernel} is {what} ({hi} bytes), but the kernel's \
                 parameter {i} is {}",
                c_types(want)
            )));
        }
    }
    Ok(())
}

fn check_device(t: &dyn DeviceBuffer, dev: Device, kernel: &str, i: usize) -> Result<()> {
    if t.buffer_device() != dev {
        return Err(Error::Invalid(format!(
            "argument {i} of kernel {kernel} is a tensor on {}, but the kernel runs on {dev}",
            t.buffer_device()
        )));
    }
    Ok(())
}

/// Lays the arguments out as the driver wants them and launches.
fn launch_args(
    gpu: &Gpu,
    func: &CudaFunction,
    name: &str,
    cfg: LaunchConfig,
    args: &mut [KernelArg],
) -> Result<()> {
    let dev = gpu.device();
    // Values live here while the driver copies them; params point into it.
    let mut words: Vec<Vec<u64>> = Vec::with_capacity(args.len());
    for (i, a) in args.iter_mut().enumerate() {
        let w = match a {
            KernelArg::Tensor(t) => {
                check_device(*t, dev, name, i)?;
                vec![t.buffer_ptr()?]
            }
            KernelArg::TensorMut(t) => {
                check_device(&**t, dev, name, i)?;
                // Copy-on-write: the kernel may write, so the tensor must own its storage.
                vec![t.buffer_ptr_mut()?]
            }
            KernelArg::I32(v) => vec![*v as u32 as u64],
            KernelArg::U32(v) => vec![*v as u64],
            KernelArg::I64(v) => vec![*v as u64],
            KernelArg::U64(v) => vec![*v],
            KernelArg::F32(v) => vec![v.to_bits() as u64],
            KernelArg::F64(v) => vec![v.to_bits()],
            KernelArg::Struct(w) => w.clone(),
        };
        words.push(w);
    }
    // Little-endian: a 4-byte value sits in the low bytes of its word, where the driver
    // reads it.
    let mut params: Vec<*mut c_void> = words
        .iter_mut()
        .map(|w| w.as_mut_ptr() as *mut c_void)
        .collect();
    raw_launch(gpu, func, cfg, &mut params).map_err(|e| match e {
        Error::Cuda { detail, .. } => Error::Cuda {
            op: format!("launching {name}"),
            detail,
        },
        e => e,
    })
}

/// Launches a builtin kernel (what the tensor operations do); pointers go in as `U64`.
/// `prefix` goes before the file's source (a `#define` choosing which instances to build,
/// see tensor::gpu::Variant); each distinct prefix is its own module, compiled once.
pub(crate) fn launch_builtin(
    gpu: &Arc<Gpu>,
    stem: &'static str,
    prefix: &str,
    kernel: &str,
    cfg: LaunchConfig,
    args: &mut [KernelArg],
) -> Result<()> {
    let f = builtin_function(gpu, stem, prefix, kernel)?;
    launch_args(gpu, &f, kernel, cfg, args)
}

/// `cuLaunchKernel` on the device's stream with prepared parameter pointers.
pub(crate) fn raw_launch(
    gpu: &Gpu,
    func: &CudaFunction,
    cfg: LaunchConfig,
    params: &mut [*mut c_void],
) -> Result<()> {
    gpu.ctx
        .bind_to_thread()
        .map_err(|e| driver_err("cuCtxSetCurrent", e))?;
    // SAFETY: params point at live values for the duration of the call, which is when the
    // driver copies them; their match with the kernel's signature is the caller's contract.
    unsafe {
        cudarc::driver::result::launch_kernel(
            func.cu_function(),
            cfg.grid,
            cfg.block,
            cfg.shared_mem_bytes,
            gpu.stream.cu_stream(),
            params,
        )
    }
    .map_err(|e| driver_err("cuLaunchKernel", e))
}

/// A builtin kernel function, cached per device: what the tensor operations launch.
pub(crate) fn builtin_function(
    gpu: &Arc<Gpu>,
    stem: &'static str,
    prefix: &str,
    kernel: &str,
) -> Result<CudaFunction> {
    // Kernel names are unique across a file's variants, so the name alone keys the cache.
    if let Some(f) = gpu
        .functions
        .lock()
        .unwrap()
        .get(&(stem, kernel.to_string()))
    {
        return Ok(f.clone());
    }
    let src = format!(
        "{prefix}{}",
        builtin_source(stem).expect("builtin kernel file")
    );
    let (module, _) = load(gpu, &src, &format!("{stem}.cu"))?;
    gpu.ctx
        .bind_to_thread()
        .map_err(|e| driver_err("cuCtxSetCurrent", e))?;
    let f = module
        .load_function(kernel)
        .map_err(|e| driver_err(&format!("cuModuleGetFunction({kernel})"), e))?;
    gpu.functions
        .lock()
        .unwrap()
        .insert((stem, kernel.to_string()), f.clone());
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::{check_args, KernelArg as A, LaunchConfig};

    #[test]
    fn argument_count_and_sizes_are_checked_against_the_parameters() {
        // vector_add(const float*, const float*, float*, int)
        let params = [8, 8, 8, 4];
        let ok = [A::U64(1), A::U64(2), A::U64(3), A::I32(4)];
        assert!(check_args("vector_add", &params, &ok).is_ok());
        let e = check_args("vector_add", &params, &ok[..3])
            .unwrap_err()
            .to_string();
        assert_eq!(e, "kernel vector_add takes 4 arguments, but 3 were given");
        let e = check_args("k", &[4], &[]).unwrap_err().to_string();
        assert_eq!(e, "kernel k takes 1 argument, but 0 were given");
        let wrong = [A::U64(1), A::U64(2), A::U64(3), A::I64(4)];
        let e = check_args("vector_add", &params, &wrong)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("argument 3 of kernel vector_add is an i64 (8 bytes)"),
            "{e}"
        );
        assert!(e.contains("pass an i32, u32 or f32"), "{e}");
        let e = check_args("k", &[8], &[A::F32(1.0)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("pass a tensor, i64, u64 or f64"), "{e}");
        // A 12-byte struct fits in two words, a 152-byte one in 19; not in one or three.
        assert!(check_args("s", &[12], &[A::Struct(vec![0, 0])]).is_ok());
        assert!(check_args("s", &[152], &[A::Struct(vec![0; 19])]).is_ok());
        assert!(check_args("s", &[12], &[A::Struct(vec![0])]).is_err());
        assert!(check_args("s", &[12], &[A::Struct(vec![0; 3])]).is_err());
    }

    #[test]
    fn for_elements_never_wraps_the_grid() {
        assert_eq!(LaunchConfig::for_elements(1000, 256).grid.0, 4);
        assert_eq!(LaunchConfig::for_elements(0, 256).grid.0, 1);
        let huge = LaunchConfig::for_elements(1usize << 41, 256);
        assert_eq!(
            huge.grid.0,
            i32::MAX as u32,
            "capped, not truncated to {}",
            (1u64 << 33) as u32
        );
    }
}
