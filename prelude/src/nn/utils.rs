//! torch's `nn.utils` for training loops: gradient clipping; and `rnn`, batches of
//! sequences of different lengths (padding and packing, in `packed`).

/// torch's `nn.utils.rnn`: `pad_sequence`, `unpad_sequence`, `PackedSequence` and the packing
/// functions; a recurrent layer runs a packed batch with `forward_packed`.
pub mod rnn {
    pub use super::super::packed::{
        pack_padded_sequence, pack_sequence, pad_packed_sequence, pad_sequence, unpack_sequence,
        unpad_sequence, PackedSequence,
    };
}

use super::Parameter;
use crate::autograd::no_grad;
use crate::error::Result;
use crate::tensor::{DType, Tensor};
use crate::Device;

/// Scales every gradient so that their joint Euclidean norm (the norm of all gradients as one
/// vector) is at most `max_norm`, and returns that norm as it was (torch's
/// `clip_grad_norm_`: the scale is `max_norm / (norm + 1e-6)`, applied only when below 1).
/// Parameters without a gradient are left alone; with none, the norm is 0.
pub fn clip_grad_norm_(parameters: &[Parameter], max_norm: f64) -> Result<Tensor> {
    // The gradients are float32 whatever a region says (torch's norm of them is too).
    crate::tensor::autocast::suspended(|| clip_grad_norm_body(parameters, max_norm))
}

fn clip_grad_norm_body(parameters: &[Parameter], max_norm: f64) -> Result<Tensor> {
    no_grad(|| {
        let grads: Vec<(Parameter, Tensor)> = parameters
            .iter()
            .filter_map(|p| p.grad().map(|g| (p.clone(), g)))
            .collect();
        let Some((_, first)) = grads.first() else {
            return Tensor::zeros_dtype((), DType::F32, Device::Cpu);
        };
        let device = first.device();
        let norms: Vec<Tensor> = grads
            .iter()
            .map(|(_, g)| g.norm()?.to(device))
            .collect::<Result<_>>()?;
        let total = Tensor::stack(&norms, 0)?.norm()?;
        let scale = total
            .add(1e-6)?
            .reciprocal()?
            .mul(max_norm)?
            .clamp_max(1.0)?;
        for (p, g) in &grads {
            let s = scale.to(g.device())?.to_dtype(g.dtype())?;
            p.tensor().set_grad(Some(g.mul(&s)?));
        }
        Ok(total)
    })
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
