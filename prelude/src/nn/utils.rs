//! torch's `nn.utils` for training loops: gradient clipping; and `rnn`, batches of
//! sequences of different lengths (padding and packing, in `packed`).

/// torch's `nn.utils.rnn`: `pad_sequence`, `unpad_sequence`, `PackedSequence` and the packing
/// functions; a recurrent layer runs a packed batch with `forward_packed`.
pub use super::fusion::{
    fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights, FuseConv,
};

/// torch's older weight reparametrisations, `nn.utils.weight_norm` / `spectral_norm`
/// (tensors `weight_g`, `weight_v`, `weight_orig`, `weight_u`); torch recommends the ones in
/// [`parametrizations`], which behave the same under other names.
pub use super::parametrize::{
    legacy_spectral_norm as spectral_norm, legacy_spectral_norm_with as spectral_norm_with,
    legacy_weight_norm as weight_norm, legacy_weight_norm_with as weight_norm_with,
};

/// torch's `nn.utils.parametrizations`: `weight_norm`, `spectral_norm` and `orthogonal`, each
/// a wrapper that owns the layer and computes its weight at every forward; `.remove()` gives
/// the layer back with the weight fixed (torch's `parametrize.remove_parametrizations`).
pub mod parametrizations {
    pub use super::super::orthogonal::{orthogonal, orthogonal_with};
    pub use super::super::parametrize::{
        spectral_norm, spectral_norm_with, weight_norm, weight_norm_with, SpectralNorm,
        SpectralOptions, WeightNorm,
    };
}

/// torch's `nn.utils.parametrize`: `register_parametrization` (any module as a tensor's
/// parametrisation, stacked with `Parametrized::register`) and `Parametrized`, whose
/// `remove(leave_parametrized)` is `remove_parametrizations`.
pub mod parametrize {
    pub use super::super::parametrized::{
        register_parametrization, register_parametrization_with, Parametrized,
    };
}

/// torch's `nn.utils.remove_weight_norm`: the layer back, its weight fixed.
pub fn remove_weight_norm<M: super::Module>(m: parametrizations::WeightNorm<M>) -> Result<M> {
    m.remove()
}

/// torch's `nn.utils.remove_spectral_norm`: the layer back, its weight fixed.
pub fn remove_spectral_norm<M: super::Module>(m: parametrizations::SpectralNorm<M>) -> Result<M> {
    m.remove()
}

/// torch's `nn.utils.stateless` (today's `torch.func.functional_call`): a module run with
/// some of its tensors replaced for one call.
pub mod stateless {
    pub use super::super::stateless::{functional_call, functional_call_with, reparametrize};
}

/// torch's `nn.utils.prune`: `l1_unstructured`, `random_unstructured`, `ln_structured`,
/// `random_structured`, `identity`, `custom_from_mask` (each a `Pruned` wrapper with the
/// tensor's `_orig` and `_mask`; its methods of the same names prune further),
/// `global_unstructured` over several and `remove`.
pub mod prune {
    pub use super::super::prune::{
        custom_from_mask, global_unstructured, identity, l1_unstructured, ln_structured,
        random_structured, random_unstructured, remove, Amount, GlobalMethod, GlobalTarget, Pruned,
    };
}

pub mod rnn {
    pub use super::super::packed::{
        pack_padded_sequence, pack_sequence, pad_packed_sequence, pad_sequence, unpack_sequence,
        unpad_sequence, PackedSequence,
    };
}

use super::Parameter;
use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};
use crate::Device;

/// Scales every gradient so that their joint Euclidean norm (the norm of all gradients as one
/// vector) is at most `max_norm`, and returns that norm as it was (torch's
/// `clip_grad_norm_`: the scale is `max_norm / (norm + 1e-6)`, applied only when below 1).
/// Parameters without a gradient are left alone; with none, the norm is 0.
pub fn clip_grad_norm_(parameters: &[Parameter], max_norm: f64) -> Result<Tensor> {
    clip_grad_norm_with(parameters, max_norm, 2.0, false)
}

/// The `norm_type`-norm of all `tensors` as one vector (torch's `get_total_norm`): the norm
/// of their norms, on the first one's device; 0 for none. With `error_if_nonfinite`, a NaN or
/// infinite norm is an error.
pub fn get_total_norm(
    tensors: &[Tensor],
    norm_type: f64,
    error_if_nonfinite: bool,
) -> Result<Tensor> {
    no_grad(|| {
        let Some(first) = tensors.first() else {
            return Tensor::zeros_dtype((), DType::F32, Device::Cpu);
        };
        let device = first.device();
        let norms: Vec<Tensor> = tensors
            .iter()
            .map(|t| crate::linalg::vector_norm(t, norm_type, None, false)?.to(device))
            .collect::<Result<_>>()?;
        let total = crate::linalg::vector_norm(&Tensor::stack(&norms, 0)?, norm_type, None, false)?;
        if error_if_nonfinite && !total.to_dtype(DType::F64)?.item::<f64>()?.is_finite() {
            return Err(Error::Invalid(format!(
                "get_total_norm: the total norm of order {norm_type} of the gradients is \
                 non-finite, so it cannot be clipped; pass error_if_nonfinite=false to scale \
                 them by it anyway"
            )));
        }
        Ok(total)
    })
}

/// Scales every gradient by `max_norm / (total_norm + 1e-6)` when that is below 1 (torch's
/// `clip_grads_with_norm_`, the second half of `clip_grad_norm_`).
pub fn clip_grads_with_norm_(
    parameters: &[Parameter],
    max_norm: f64,
    total_norm: &Tensor,
) -> Result<()> {
    no_grad(|| {
        let scale = total_norm
            .add(1e-6)?
            .reciprocal()?
            .mul(max_norm)?
            .clamp_max(1.0)?;
        for p in parameters {
            if let Some(g) = p.grad() {
                let s = scale.to(g.device())?.to_dtype(g.dtype())?;
                p.tensor().set_grad(Some(g.mul(&s)?));
            }
        }
        Ok(())
    })
}

/// torch's `clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite)`: the
/// gradients' total `norm_type`-norm ([`get_total_norm`]; `f64::INFINITY` for the largest
/// element), the gradients scaled by [`clip_grads_with_norm_`], and the norm as it was.
pub fn clip_grad_norm_with(
    parameters: &[Parameter],
    max_norm: f64,
    norm_type: f64,
    error_if_nonfinite: bool,
) -> Result<Tensor> {
    crate::tensor::autocast::suspended(|| {
        let grads: Vec<Tensor> = parameters.iter().filter_map(Parameter::grad).collect();
        let total = get_total_norm(&grads, norm_type, error_if_nonfinite)?;
        clip_grads_with_norm_(parameters, max_norm, &total)?;
        Ok(total)
    })
}

/// All `parameters` flattened into one vector, in order (torch's `parameters_to_vector`);
/// gradients flow back to them.
pub fn parameters_to_vector(parameters: &[Parameter]) -> Result<Tensor> {
    let Some(first) = parameters.first() else {
        return Tensor::zeros_dtype([0], DType::F32, Device::Cpu);
    };
    let device = first.device();
    let flat = parameters
        .iter()
        .map(|p| {
            if p.device() != device {
                return Err(Error::Invalid(format!(
                    "parameters_to_vector: found parameters on {device} and {}; move the model \
                     to one device first",
                    p.device()
                )));
            }
            p.tensor().flatten()
        })
        .collect::<Result<Vec<_>>>()?;
    Tensor::cat(&flat, 0)
}

/// Sets `parameters`, in order, from the slices of `vec` (torch's `vector_to_parameters`,
/// the inverse of [`parameters_to_vector`]); `vec` must hold exactly their elements.
pub fn vector_to_parameters(vec: &Tensor, parameters: &[Parameter]) -> Result<()> {
    let total: usize = parameters.iter().map(Parameter::numel).sum();
    if vec.rank() != 1 || vec.numel() != total {
        return Err(Error::BadShape(format!(
            "vector_to_parameters: expected a vector of the parameters' {total} elements, got \
             shape {:?}",
            vec.shape()
        )));
    }
    let mut at = 0;
    for p in parameters {
        let n = p.numel();
        let piece = vec.detach().narrow(0, at, n)?.reshape(p.shape())?;
        let t = p.tensor();
        p.set_data(piece.to_dtype(t.dtype())?.to(t.device())?.contiguous()?)?;
        at += n;
    }
    Ok(())
}

/// Clamps every gradient element into `[-clip_value, clip_value]` (torch's
/// `clip_grad_value_`).
pub fn clip_grad_value_(parameters: &[Parameter], clip_value: f64) -> Result<()> {
    no_grad(|| {
        for p in parameters {
            if let Some(g) = p.grad() {
                p.tensor().set_grad(Some(g.clamp(-clip_value, clip_value)?));
            }
        }
        Ok(())
    })
}
