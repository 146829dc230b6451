//! torch's switch for float32 matrix products on CUDA: `set_float32_matmul_precision`
//! ("highest": true f32 products; "high" and "medium": the tensor cores with inputs rounded
//! to TF32, 10 mantissa bits, accumulated in f32) and its older spelling
//! `backends::cuda::matmul::allow_tf32`. Process-wide, read at each matmul, as in torch.
//! f16 and bf16 products always run on the tensor cores with f32 accumulation; f64 and the
//! CPU are unaffected.

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicU8, Ordering};

const HIGHEST: u8 = 0;
const HIGH: u8 = 1;
const MEDIUM: u8 = 2;

/// torch's default is "highest" (no TF32 for matmul).
static PRECISION: AtomicU8 = AtomicU8::new(HIGHEST);

/// `torch.set_float32_matmul_precision`: "highest", "high" or "medium". On CUDA, "high" and
/// "medium" both let float32 matmul use TF32 tensor cores (torch's CUDA matmul treats them
/// alike; "medium"'s bf16 internals concern other backends).
pub fn set_float32_matmul_precision(precision: &str) -> Result<()> {
    let p = match precision {
        "highest" => HIGHEST,
        "high" => HIGH,
        "medium" => MEDIUM,
        other => {
            return Err(Error::Invalid(format!(
                "set_float32_matmul_precision: expected \"highest\", \"high\" or \"medium\", \
                 got {other:?}"
            )))
        }
    };
    PRECISION.store(p, Ordering::Relaxed);
    Ok(())
}

/// `torch.get_float32_matmul_precision`.
pub fn get_float32_matmul_precision() -> &'static str {
    match PRECISION.load(Ordering::Relaxed) {
        HIGHEST => "highest",
        HIGH => "high",
        _ => "medium",
    }
}

/// Whether float32 matmul on CUDA may use TF32 (`torch.backends.cuda.matmul.allow_tf32`).
pub fn allow_tf32() -> bool {
    PRECISION.load(Ordering::Relaxed) != HIGHEST
}

/// `torch.backends.cuda.matmul.allow_tf32 = on`: the same switch as "high" / "highest".
pub fn set_allow_tf32(on: bool) {
    PRECISION.store(if on { HIGH } else { HIGHEST }, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The only test touching the process-wide switch, so no other test sees it change.
    #[test]
    fn precision_names_and_the_tf32_switch_agree() {
        assert_eq!(get_float32_matmul_precision(), "highest");
        assert!(!allow_tf32(), "torch's default: no TF32 for matmul");
        set_float32_matmul_precision("high").unwrap();
        assert!(allow_tf32());
        set_float32_matmul_precision("medium").unwrap();
        assert_eq!(get_float32_matmul_precision(), "medium");
        assert!(allow_tf32());
        set_allow_tf32(false);
        assert_eq!(get_float32_matmul_precision(), "highest");
        set_allow_tf32(true);
        assert_eq!(get_float32_matmul_precision(), "high");
        let e = set_float32_matmul_precision("low").unwrap_err().to_string();
        assert!(e.contains("\"low\"") && e.contains("highest"), "{e}");
        assert_eq!(
            get_float32_matmul_precision(),
            "high",
            "unchanged by a bad name"
        );
        set_float32_matmul_precision("highest").unwrap();
    }
}
