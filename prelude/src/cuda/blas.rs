//! The cuBLAS calls the tensors need (`cublasSgemm_v2`, `cublasDgemm_v2`, `cublasGemmEx`),
//! loaded with libloading. A thin layer of our own instead of cudarc's cublas module, which
//! costs more to compile than all the rest of CUDA support together.

use super::loader;
use crate::error::{Error, Result};
use libloading::Library;
use std::ffi::{c_char, c_int, c_void, CStr};

type Handle = *mut c_void;
type SgemmFn = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const f32,
    *const f32,
    c_int,
    *const f32,
    c_int,
    *const f32,
    *mut f32,
    c_int,
) -> c_int;

type DgemmFn = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const f64,
    *const f64,
    c_int,
    *const f64,
    c_int,
    *const f64,
    *mut f64,
    c_int,
) -> c_int;
/// `cublasGemmEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta,
/// C, Ctype, ldc, computeType, algo)`.
type GemmExFn = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const c_void,
    *const c_void,
    c_int,
    c_int,
    *const c_void,
    c_int,
    c_int,
    *const c_void,
    *mut c_void,
    c_int,
    c_int,
    c_int,
    c_int,
) -> c_int;

/// `cudaDataType_t` values (library_types.h).
pub(crate) const CUDA_R_32F: c_int = 0;
pub(crate) const CUDA_R_16F: c_int = 2;
pub(crate) const CUDA_R_16BF: c_int = 14;
/// `cublasComputeType_t` values (cublas_api.h): f32 accumulation, and f32 inputs rounded to
/// TF32 on the tensor cores.
pub(crate) const CUBLAS_COMPUTE_32F: c_int = 68;
pub(crate) const CUBLAS_COMPUTE_32F_FAST_TF32: c_int = 77;
/// `CUBLAS_GEMM_DEFAULT`: cuBLAS's heuristic picks the algorithm (tensor cores included).
const CUBLAS_GEMM_DEFAULT: c_int = -1;

/// `CUBLAS_OP_N`: the matrix as stored.
pub(crate) const OP_N: c_int = 0;

pub(crate) struct Blas {
    handle: Handle,
    sgemm: SgemmFn,
    /// Optional so that a cuBLAS lacking them still serves float32 (an error names the
    /// symbol when a float64 or half product asks for it).
    dgemm: Option<DgemmFn>,
    gemm_ex: Option<GemmExFn>,
    destroy: unsafe extern "C" fn(Handle) -> c_int,
    status_string: Option<unsafe extern "C" fn(c_int) -> *const c_char>,
    _lib: Library,
}

// SAFETY: the handle is only used behind the Mutex that holds this struct.
unsafe impl Send for Blas {}

fn sym<T: Copy>(lib: &Library, name: &str) -> Result<T> {
    // SAFETY: T is the documented C signature of `name`.
    unsafe { lib.get::<T>(name.as_bytes()) }
        .map(|s| *s)
        .map_err(|e| Error::Cuda {
            op: format!("cuBLAS symbol {name}"),
            detail: e.to_string(),
        })
}

impl Blas {
    /// A handle whose work goes on `stream`. The stream's context must be current.
    pub fn new(stream: *mut c_void) -> Result<Blas> {
        let lib = loader::cublas()?;
        let create: unsafe extern "C" fn(*mut Handle) -> c_int = sym(&lib, "cublasCreate_v2")?;
        let set_stream: unsafe extern "C" fn(Handle, *mut c_void) -> c_int =
            sym(&lib, "cublasSetStream_v2")?;
        let mut b = Blas {
            handle: std::ptr::null_mut(),
            sgemm: sym(&lib, "cublasSgemm_v2")?,
            dgemm: sym(&lib, "cublasDgemm_v2").ok(),
            gemm_ex: sym(&lib, "cublasGemmEx").ok(),
            destroy: sym(&lib, "cublasDestroy_v2")?,
            status_string: sym(&lib, "cublasGetStatusString").ok(),
            _lib: lib,
        };
        let mut h: Handle = std::ptr::null_mut();
        // SAFETY: `create` is cublasCreate_v2 from the loaded library; `h` is a valid out-pointer.
        b.check("cublasCreate", unsafe { create(&mut h) })?;
        b.handle = h;
        // SAFETY: `h` was just created; `stream` is the device's live stream, bound to the current context.
        b.check("cublasSetStream", unsafe { set_stream(h, stream) })?;
        Ok(b)
    }

    fn check(&self, op: &str, status: c_int) -> Result<()> {
        if status == 0 {
            return Ok(());
        }
        let text = self
            .status_string
            .map(|f| {
                // SAFETY: cublasGetStatusString returns a static NUL-terminated string for any status.
                unsafe { CStr::from_ptr(f(status)) }
                    .to_string_lossy()
                    .into_owned()
            })
            .unwrap_or_else(|| format!("status {status}"));
        Err(Error::Cuda {
            op: op.to_string(),
            detail: text,
        })
    }

    /// Column-major `C = A B` (m x k times k x n), device pointers.
    ///
    /// # Safety
    /// The pointers must address at least `lda*k`, `ldb*n` and `ldc*n` floats on this
    /// handle's device.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn sgemm(
        &self,
        m: c_int,
        n: c_int,
        k: c_int,
        a: u64,
        lda: c_int,
        b: u64,
        ldb: c_int,
        c: u64,
        ldc: c_int,
    ) -> Result<()> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        let status = (self.sgemm)(
            self.handle,
            OP_N,
            OP_N,
            m,
            n,
            k,
            &alpha,
            a as *const f32,
            lda,
            b as *const f32,
            ldb,
            &beta,
            c as *mut f32,
            ldc,
        );
        self.check("cublasSgemm", status)
    }

    /// Column-major `C = A B` in float64; see [`Blas::sgemm`].
    ///
    /// # Safety
    /// As [`Blas::sgemm`], counting doubles.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn dgemm(
        &self,
        m: c_int,
        n: c_int,
        k: c_int,
        a: u64,
        lda: c_int,
        b: u64,
        ldb: c_int,
        c: u64,
        ldc: c_int,
    ) -> Result<()> {
        let f = self.dgemm.ok_or_else(|| missing("cublasDgemm_v2"))?;
        let (alpha, beta) = (1.0f64, 0.0f64);
        let status = f(
            self.handle,
            OP_N,
            OP_N,
            m,
            n,
            k,
            &alpha,
            a as *const f64,
            lda,
            b as *const f64,
            ldb,
            &beta,
            c as *mut f64,
            ldc,
        );
        self.check("cublasDgemm", status)
    }

    /// Column-major `C = A B` with `cublasGemmEx`: A, B and C all of `dtype` (a
    /// `cudaDataType_t`: [`CUDA_R_16F`], [`CUDA_R_16BF`] or [`CUDA_R_32F`]), accumulated as
    /// `compute` says ([`CUBLAS_COMPUTE_32F`], or [`CUBLAS_COMPUTE_32F_FAST_TF32`] for f32
    /// inputs on the tensor cores). alpha and beta are floats for both compute types.
    ///
    /// # Safety
    /// As [`Blas::sgemm`], counting elements of `dtype`.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gemm_ex(
        &self,
        dtype: c_int,
        compute: c_int,
        m: c_int,
        n: c_int,
        k: c_int,
        a: u64,
        lda: c_int,
        b: u64,
        ldb: c_int,
        c: u64,
        ldc: c_int,
    ) -> Result<()> {
        let f = self.gemm_ex.ok_or_else(|| missing("cublasGemmEx"))?;
        let (alpha, beta) = (1.0f32, 0.0f32);
        let status = f(
            self.handle,
            OP_N,
            OP_N,
            m,
            n,
            k,
            &alpha as *const f32 as *const c_void,
            a as *const c_void,
            dtype,
            lda,
            b as *const c_void,
            dtype,
            ldb,
            &beta as *const f32 as *const c_void,
            c as *mut c_void,
            dtype,
            ldc,
            compute,
            CUBLAS_GEMM_DEFAULT,
        );
        self.check("cublasGemmEx", status)
    }
}

fn missing(name: &str) -> Error {
    Error::Cuda {
        op: format!("cuBLAS symbol {name}"),
        detail: "the loaded cuBLAS does not export it".into(),
    }
}

impl Drop for Blas {
    fn drop(&mut self) {
        if !self.handle.is_null() {
            // SAFETY: the handle was created by cublasCreate and is destroyed exactly once, here.
            unsafe { (self.destroy)(self.handle) };
        }
    }
}
