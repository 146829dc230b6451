//! The state behind `amp::autocast` (torch's autocast dispatch key): which device types have
//! an autocast region open on this thread and in which dtype, and the cast each listed op
//! applies to its inputs there. The public API is in `crate::amp`; the ops call [`autocast`]
//! at their entry.
//!
//! torch applies its policy once per op, at the op's entry; what the op does inside runs
//! below the autocast key (a `linear` casts its inputs to float16, and the matmul and add it
//! is made of do not cast again). Here the op's body runs with autocast suspended on this
//! thread, which is the same thing; so does `backward` (torch's gradients run in the dtypes
//! the forward pass chose).
//!
//! The op lists are torch's (`aten/src/ATen/autocast_mode.{h,cpp}`), for the ops gpulab has.
//! The element-wise ops and `sum` on CUDA's float32 list are listed here too, so the functions
//! gpulab composes from them (a mean is a sum, ELU an `expm1`, average pooling a sum) run their
//! bodies suspended when torch has them as one unlisted op: they keep their input's dtype, as
//! torch's.

use super::{DType, Tensor};
use crate::device::Device;
use crate::error::{Error, Result};
use std::cell::Cell;

/// An op with an autocast policy (the ones gpulab has from torch's lists).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AmpOp {
    // Lower precision (float16/bfloat16) on the CPU and CUDA: the matrix products.
    Matmul,
    Linear,
    Conv2d,
    Conv3d,
    ConvTranspose2d,
    ConvTranspose3d,
    Attention,
    Recurrent,
    // float32 on the CPU and CUDA.
    MseLoss,
    L1Loss,
    SmoothL1Loss,
    HuberLoss,
    NllLoss,
    CrossEntropy,
    BceWithLogits,
    Prod,
    // float32 on CUDA only (torch's CPU list leaves them in the input's dtype).
    Softmax,
    LogSoftmax,
    LayerNorm,
    GroupNorm,
    CosineSimilarity,
    Softplus,
    Interpolate,
    Norm,
    Cumsum,
    Cumprod,
    Exp,
    Expm1,
    Log,
    Log1p,
    Reciprocal,
    Rsqrt,
    Pow,
    Sum,
    Logsumexp,
    /// tan, asin, acos, sinh, cosh.
    Trig,
    // float32 on the CPU; refused on CUDA, as torch refuses it.
    BinaryCrossEntropy,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cast {
    /// To the region's dtype (float16 or bfloat16).
    Lower,
    /// To float32.
    Float32,
    /// Not allowed in an autocast region on this device type.
    Refuse,
}

/// What `op` does to its inputs in an autocast region on CUDA (`cuda`) or the CPU; `None`
/// for no cast.
pub(crate) fn policy(op: AmpOp, cuda: bool) -> Option<Cast> {
    use AmpOp::*;
    let cuda = cuda || cuda_lists();
    match op {
        Matmul | Linear | Conv2d | Conv3d | ConvTranspose2d | ConvTranspose3d | Attention
        | Recurrent => Some(Cast::Lower),
        MseLoss | L1Loss | SmoothL1Loss | HuberLoss | NllLoss | CrossEntropy | BceWithLogits
        | Prod => Some(Cast::Float32),
        Softmax | LogSoftmax | LayerNorm | GroupNorm | CosineSimilarity | Softplus
        | Interpolate | Norm | Cumsum | Cumprod | Exp | Expm1 | Log | Log1p | Reciprocal
        | Rsqrt | Pow | Sum | Logsumexp | Trig => cuda.then_some(Cast::Float32),
        BinaryCrossEntropy => Some(if cuda { Cast::Refuse } else { Cast::Float32 }),
    }
}

thread_local! {
    /// Tests only (`amp::with_cuda_lists`): CPU regions apply CUDA's lists, so what CUDA's
    /// lists do can be checked on a machine without a GPU.
    static CUDA_LISTS: Cell<bool> = const { Cell::new(false) };
}

fn cuda_lists() -> bool {
    CUDA_LISTS.with(|c| c.get())
}

/// Runs `f` with CPU regions applying CUDA's op lists (see `amp::with_cuda_lists`).
pub(crate) fn with_cuda_lists<T>(f: impl FnOnce() -> T) -> T {
    replaced(&CUDA_LISTS, true, f)
}

/// Runs `f` with the thread-local `key` set to `value`, putting the value before back when
/// `f` returns or panics (what regions and the CUDA-lists switch both need).
fn replaced<V: Copy + 'static, T>(
    key: &'static std::thread::LocalKey<Cell<V>>,
    value: V,
    f: impl FnOnce() -> T,
) -> T {
    struct Restore<V: Copy + 'static>(&'static std::thread::LocalKey<Cell<V>>, V);
    impl<V: Copy + 'static> Drop for Restore<V> {
        fn drop(&mut self) {
            self.0.with(|c| c.set(self.1));
        }
    }
    let _restore = Restore(key, key.with(|c| c.replace(value)));
    f()
}

/// The lower-precision dtype a new region uses unless it names one (torch's defaults).
pub(crate) fn default_dtype(device: Device) -> DType {
    if device.is_cuda() {
        DType::F16
    } else {
        DType::BF16
    }
}

thread_local! {
    /// The open region's dtype per device type (None: no region), and how deep this thread
    /// is inside an op's body or a backward pass (autocast suspended).
    static CPU: Cell<Option<DType>> = const { Cell::new(None) };
    static CUDA: Cell<Option<DType>> = const { Cell::new(None) };
    static SUSPENDED: Cell<u32> = const { Cell::new(0) };
}

fn slot(device: Device) -> &'static std::thread::LocalKey<Cell<Option<DType>>> {
    if device.is_cuda() {
        &CUDA
    } else {
        &CPU
    }
}

/// The region open for `device`'s type on this thread, if any (torch's
/// `is_autocast_enabled(device_type)` and `get_autocast_dtype`), whether or not an op's
/// body has it suspended.
pub(crate) fn region(device: Device) -> Option<DType> {
    slot(device).with(|c| c.get())
}

/// Runs `f` with the region for `device`'s type set to `dtype` (None: closed), restoring the
/// one before when `f` returns or panics: regions nest as torch's context managers do.
pub(crate) fn with_region<T>(device: Device, dtype: Option<DType>, f: impl FnOnce() -> T) -> T {
    replaced(slot(device), dtype, f)
}

/// Runs `f` with autocast suspended on this thread (an op's body, a backward pass).
pub(crate) fn suspended<T>(f: impl FnOnce() -> T) -> T {
    struct Resume;
    impl Drop for Resume {
        fn drop(&mut self) {
            SUSPENDED.with(|s| s.set(s.get() - 1));
        }
    }
    SUSPENDED.with(|s| s.set(s.get() + 1));
    let _resume = Resume;
    f()
}

/// The dtype an op on `device` is autocast to, when a region is open for its type and not
/// suspended.
fn active(device: Device) -> Option<DType> {
    if SUSPENDED.with(|s| s.get()) > 0 {
        return None;
    }
    region(device)
}

/// For an op that reads tensors of its own besides its inputs (a recurrent layer's weights):
/// the dtype it lowers everything to, when a region is open (and not suspended) for
/// `device`'s type and `op` lowers precision there. The op casts with [`cast`] and runs its
/// body [`suspended`].
pub(crate) fn lowering(op: AmpOp, device: Device) -> Option<DType> {
    let region = active(device)?;
    (policy(op, device.is_cuda())? == Cast::Lower).then_some(region)
}

/// torch's `cached_cast`: a floating-point input on the op's device type, other than
/// float64, is cast to `to`; everything else (integers, bools, float64, other devices) is
/// passed as it is.
pub(crate) fn cast(t: &Tensor, to: DType, cuda: bool) -> Result<Tensor> {
    let d = t.dtype();
    if d.is_float() && d != DType::F64 && d != to && t.device().is_cuda() == cuda {
        t.to_dtype(to)
    } else {
        Ok(t.clone())
    }
}

/// At an op's entry: when an autocast region is open for the device type of the op's first
/// tensor input and `op` has a policy there, the inputs cast as the policy says and `f`
/// (the op again, on them) run with autocast suspended; `None` otherwise, and the op goes on
/// as it would.
pub(crate) fn autocast<R>(
    op: AmpOp,
    name: &str,
    inputs: &[Option<&Tensor>],
    f: impl FnOnce(&[Option<Tensor>]) -> Result<R>,
) -> Option<Result<R>> {
    // The generic part is only the call: this runs at the entry of every op, each with its
    // own closure type, and the policy and casts below need no copy per op.
    Some(cast_inputs(op, name, inputs)?.and_then(|cast| suspended(|| f(&cast))))
}

/// [`autocast`]'s policy and casts: the inputs as the op should see them, `None` when no
/// region is open or the op has no policy, an error when autocast refuses the op.
fn cast_inputs(
    op: AmpOp,
    name: &str,
    inputs: &[Option<&Tensor>],
) -> Option<Result<Vec<Option<Tensor>>>> {
    let device = inputs.iter().flatten().next()?.device();
    let region = active(device)?;
    let cuda = device.is_cuda();
    let to = match policy(op, cuda)? {
        Cast::Lower => region,
        Cast::Float32 => DType::F32,
        Cast::Refuse => {
            return Some(Err(Error::Invalid(format!(
                "{name} is unsafe to autocast (torch refuses it in a CUDA autocast region): \
                 a sigmoid followed by binary_cross_entropy loses precision in float16. Use \
                 F::binary_cross_entropy_with_logits (nn::BCEWithLogitsLoss) on the logits, \
                 which is safe to autocast"
            ))))
        }
    };
    Some(
        inputs
            .iter()
            .map(|t| t.map(|t| cast(t, to, cuda)).transpose())
            .collect(),
    )
}

/// Runs an op's body with autocast suspended when a region is open for `x`'s device: for
/// the functions torch has as one op that is on no list (mean, ELU, average pooling, batch
/// norm), which gpulab composes from listed ones (sum, expm1); they keep their input's dtype.
pub(crate) fn unlisted<T>(x: &Tensor, f: impl FnOnce() -> T) -> T {
    if active(x.device()).is_some() {
        suspended(f)
    } else {
        f()
    }
}

/// [`autocast`] for an op of an input, a weight and a bias (layers' functions: `linear`,
/// convolutions, normalisations), the weight and bias optional.
pub(crate) fn autocast3(
    op: AmpOp,
    name: &str,
    x: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    f: impl FnOnce(&Tensor, Option<&Tensor>, Option<&Tensor>) -> Result<Tensor>,
) -> Option<Result<Tensor>> {
    autocast(op, name, &[Some(x), weight, bias], |t| {
        f(
            t[0].as_ref().expect("the input"),
            t[1].as_ref(),
            t[2].as_ref(),
        )
    })
}

/// [`autocast`] for an op of one tensor.
pub(crate) fn autocast1(
    op: AmpOp,
    name: &str,
    x: &Tensor,
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Option<Result<Tensor>> {
    autocast(op, name, &[Some(x)], |t| {
        f(t[0].as_ref().expect("one input"))
    })
}

/// [`autocast`] for an op of two tensors.
pub(crate) fn autocast2(
    op: AmpOp,
    name: &str,
    x: &Tensor,
    y: &Tensor,
    f: impl FnOnce(&Tensor, &Tensor) -> Result<Tensor>,
) -> Option<Result<Tensor>> {
    autocast(op, name, &[Some(x), Some(y)], |t| {
        f(
            t[0].as_ref().expect("two inputs"),
            t[1].as_ref().expect("two inputs"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_nest_and_restore_even_after_a_panic() {
        assert_eq!(region(Device::Cpu), None);
        with_region(Device::Cpu, Some(DType::BF16), || {
            assert_eq!(region(Device::Cpu), Some(DType::BF16));
            assert_eq!(region(Device::Cuda(0)), None);
            with_region(Device::Cpu, None, || assert_eq!(region(Device::Cpu), None));
            assert_eq!(region(Device::Cpu), Some(DType::BF16));
            let r = std::panic::catch_unwind(|| {
                with_region(Device::Cpu, Some(DType::F16), || panic!("inside"))
            });
            assert!(r.is_err());
            assert_eq!(region(Device::Cpu), Some(DType::BF16));
            assert_eq!(active(Device::Cpu), Some(DType::BF16));
            suspended(|| assert_eq!(active(Device::Cpu), None));
            assert_eq!(active(Device::Cpu), Some(DType::BF16));
        });
        assert_eq!(region(Device::Cpu), None);
    }

    #[test]
    fn policies_are_torchs_per_device_type() {
        assert_eq!(policy(AmpOp::Matmul, false), Some(Cast::Lower));
        assert_eq!(policy(AmpOp::Conv2d, true), Some(Cast::Lower));
        assert_eq!(policy(AmpOp::CrossEntropy, false), Some(Cast::Float32));
        assert_eq!(policy(AmpOp::Softmax, false), None);
        assert_eq!(policy(AmpOp::Softmax, true), Some(Cast::Float32));
        assert_eq!(policy(AmpOp::LayerNorm, false), None);
        assert_eq!(
            policy(AmpOp::BinaryCrossEntropy, false),
            Some(Cast::Float32)
        );
        assert_eq!(policy(AmpOp::BinaryCrossEntropy, true), Some(Cast::Refuse));
        assert_eq!(policy(AmpOp::Exp, false), None);
        assert_eq!(policy(AmpOp::Sum, true), Some(Cast::Float32));
        with_cuda_lists(|| assert_eq!(policy(AmpOp::Sum, false), Some(Cast::Float32)));
        assert_eq!(policy(AmpOp::Sum, false), None);
    }
}
