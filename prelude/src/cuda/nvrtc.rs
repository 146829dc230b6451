//! A thin safe layer over NVRTC: CUDA C++ source in, PTX or CUBIN out, and the full compile
//! log on failure. Works without a GPU as long as `libnvrtc` can be found, which is what the
//! compile tests rely on.

use super::loader;
use crate::error::{Error, Result};
use cudarc::nvrtc::{result, sys};
use std::ffi::CString;

/// What NVRTC produced.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// `sm_XY` (a CUBIN for exactly that architecture) or `compute_XY` (PTX, JIT-compiled by
    /// the driver at load time).
    pub arch: String,
    /// CUBIN bytes, or PTX text followed by a NUL.
    pub image: Vec<u8>,
    pub is_cubin: bool,
    /// NVRTC's log; warnings land here even when compilation succeeds.
    pub log: String,
}

impl Compiled {
    /// The PTX text when this is PTX.
    pub fn ptx(&self) -> Option<&str> {
        if self.is_cubin {
            return None;
        }
        let end = self
            .image
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(self.image.len());
        std::str::from_utf8(&self.image[..end]).ok()
    }
}

/// NVRTC's (major, minor) version.
pub fn version() -> Result<(i32, i32)> {
    loader::nvrtc()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC is loaded (loader::nvrtc above); both out-pointers are valid.
    let r = loader::guarded("nvrtcVersion", || unsafe {
        sys::nvrtcVersion(&mut major, &mut minor)
    })
    .map_err(|p| Error::Cuda {
        op: "nvrtcVersion".into(),
        detail: p,
    })?;
    r.result().map_err(|e| Error::Cuda {
        op: "nvrtcVersion".into(),
        detail: format!("{e:?}"),
    })?;
    Ok((major, minor))
}

/// The SM versions this NVRTC can target, e.g. `[75, 80, 86, 89, 90, 100, 120]`.
pub fn supported_archs() -> Result<Vec<i32>> {
    loader::nvrtc()?;
    let err = |e: result::NvrtcError| Error::Cuda {
        op: "nvrtcGetSupportedArchs".into(),
        detail: format!("{e:?}"),
    };
    let mut n = 0;
    // SAFETY: NVRTC is loaded; `n` is a valid out-pointer.
    unsafe { sys::nvrtcGetNumSupportedArchs(&mut n) }
        .result()
        .map_err(err)?;
    let mut archs = vec![0i32; n.max(0) as usize];
    // SAFETY: `archs` has room for the `n` entries NVRTC just reported.
    unsafe { sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) }
        .result()
        .map_err(err)?;
    Ok(archs)
}

/// The best target for a device of compute capability `cc`: its own `sm_XY` when NVRTC
/// knows it (a CUBIN: nothing left for the driver to JIT, and no PTX-version mismatch with
/// an older driver), else PTX for the newest architecture NVRTC has that the device can run.
pub fn arch_for(cc: (i32, i32)) -> Result<String> {
    let want = cc.0 * 10 + cc.1;
    let archs = supported_archs()?;
    if archs.contains(&want) {
        return Ok(format!("sm_{want}"));
    }
    match archs.iter().filter(|&&a| a <= want).max() {
        Some(a) => Ok(format!("compute_{a}")),
        None => Err(Error::Invalid(format!(
            "this NVRTC cannot target compute capability {}.{} (it supports {archs:?})",
            cc.0, cc.1
        ))),
    }
}

/// The element-type header every builtin kernel file includes (`#include "gpulab_dtypes.cuh"`).
pub const DTYPES_HEADER_NAME: &str = "gpulab_dtypes.cuh";
pub const DTYPES_HEADER: &str = include_str!("../../../kernels-cu/gpulab_dtypes.cuh");

/// Compiles `src` for `arch` (`sm_XY` gives a CUBIN, `compute_XY` PTX). `name` appears in
/// NVRTC's messages, so pass the file name.
pub fn compile(src: &str, name: &str, arch: &str) -> Result<Compiled> {
    loader::nvrtc()?;
    let csrc = CString::new(src)
        .map_err(|_| Error::Invalid(format!("{name}: source contains a NUL byte")))?;
    let cname =
        CString::new(name).map_err(|_| Error::Invalid("kernel name contains a NUL byte".into()))?;
    let err = |op: &str, e: result::NvrtcError| Error::Cuda {
        op: format!("{op} ({name})"),
        detail: format!("{e:?}"),
    };
    // gpulab's own header, so kernel files (builtin or a user's) can `#include` it without an
    // include path: NVRTC resolves a named header before searching any directory.
    let header_src = CString::new(DTYPES_HEADER).expect("no NUL in the header");
    let header_name = CString::new(DTYPES_HEADER_NAME).expect("no NUL in the name");
    let headers = [header_src.as_ptr()];
    let header_names = [header_name.as_ptr()];
    let mut raw_prog = std::mem::MaybeUninit::uninit();
    // SAFETY: every pointer is a live NUL-terminated string for the duration of the call,
    // and the two arrays hold one entry each, as the count says.
    unsafe {
        sys::nvrtcCreateProgram(
            raw_prog.as_mut_ptr(),
            csrc.as_ptr(),
            cname.as_ptr(),
            1,
            headers.as_ptr(),
            header_names.as_ptr(),
        )
    }
    .result()
    .map_err(|e| err("nvrtcCreateProgram", e))?;
    // SAFETY: nvrtcCreateProgram succeeded, so it wrote the program handle.
    let prog = unsafe { raw_prog.assume_init() };
    struct Prog(sys::nvrtcProgram);
    impl Drop for Prog {
        fn drop(&mut self) {
            // SAFETY: the program was created by nvrtcCreateProgram and is destroyed once, on drop.
            let _ = unsafe { result::destroy_program(self.0) };
        }
    }
    let prog = Prog(prog);
    let opts = [
        format!("--gpu-architecture={arch}"),
        "--std=c++17".to_string(),
    ];
    // SAFETY: `prog` is a live program; the options outlive the call.
    let compiled = unsafe { result::compile_program(prog.0, &opts) };
    // SAFETY: `prog` is a live program, compiled (successfully or not) above.
    let log = unsafe { result::get_program_log(prog.0) }
        .map(|raw| {
            let bytes: Vec<u8> = raw
                .iter()
                .map(|&c| c as u8)
                .take_while(|&b| b != 0)
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        })
        .unwrap_or_default();
    if let Err(e) = compiled {
        let log = if log.trim().is_empty() {
            format!("{e:?} (NVRTC gave no log)")
        } else {
            log
        };
        return Err(Error::Compile {
            name: name.to_string(),
            arch: arch.to_string(),
            log,
        });
    }
    let is_cubin = arch.starts_with("sm_");
    let image = if is_cubin {
        let mut size = 0usize;
        // SAFETY: `prog` compiled successfully; `size` is a valid out-pointer.
        unsafe { sys::nvrtcGetCUBINSize(prog.0, &mut size) }
            .result()
            .map_err(|e| err("nvrtcGetCUBINSize", e))?;
        let mut buf = vec![0u8; size];
        // SAFETY: `buf` has the `size` bytes NVRTC just reported.
        unsafe { sys::nvrtcGetCUBIN(prog.0, buf.as_mut_ptr() as *mut _) }
            .result()
            .map_err(|e| err("nvrtcGetCUBIN", e))?;
        buf
    } else {
        // SAFETY: `prog` compiled successfully for a compute_XY target, so it has PTX.
        let raw = unsafe { result::get_ptx(prog.0) }.map_err(|e| err("nvrtcGetPTX", e))?;
        raw.iter().map(|&c| c as u8).collect()
    };
    Ok(Compiled {
        arch: arch.to_string(),
        image,
        is_cubin,
        log,
    })
}

/// Compiles `src` to PTX text for a virtual architecture such as `compute_90`: the form the
/// compile tests check without a GPU.
pub fn compile_ptx(src: &str, name: &str, arch: &str) -> Result<String> {
    let c = compile(src, name, arch)?;
    c.ptx()
        .map(str::to_string)
        .ok_or_else(|| Error::Invalid(format!("{arch} produces a CUBIN, not PTX; use compute_XY")))
}
