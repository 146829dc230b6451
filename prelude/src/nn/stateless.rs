//! torch's `torch.func.functional_call` (and the older `nn.utils.stateless.functional_call`):
//! a module run with some of its parameters and buffers replaced, for that one call, by
//! tensors the caller gives, whose gradients are then the caller's (meta-learning, a model
//! averaged over weights, gradients with respect to a weight that is not a leaf).

use super::{Module, Parameter};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// `module.forward(x)` with the parameters and buffers named in `tensors` (their `state_dict`
/// names: `"weight"`, `"0.bias"`, `"1.running_mean"`) replaced by those tensors for the call
/// (torch's `torch.func.functional_call(module, dict(tensors), x)`). The others keep the
/// module's values. Gradients reach the given tensors, not the module's. Tied parameters (one
/// `Parameter` under two names) are replaced together, torch's `tie_weights=True`.
pub fn functional_call(
    module: &dyn Module,
    tensors: &[(&str, Tensor)],
    x: &Tensor,
) -> Result<Tensor> {
    reparametrize(module, tensors, false, || module.forward(x))
}

/// [`functional_call`] with torch's `strict`: true requires a tensor for every parameter and
/// buffer of the module.
pub fn functional_call_with(
    module: &dyn Module,
    tensors: &[(&str, Tensor)],
    x: &Tensor,
    strict: bool,
) -> Result<Tensor> {
    reparametrize(module, tensors, strict, || module.forward(x))
}

/// Runs `f` with the module's tensors named in `tensors` replaced (what [`functional_call`]
/// does around a forward; here any call, e.g. a two-input module's `forward_with`), putting
/// the module's own back afterwards, also when `f` fails or panics. Unknown names are an
/// error (a misspelt name would otherwise silently change nothing), as are two values for
/// one tied parameter. Buffers a training forward updates (batch norm's running statistics)
/// are updated in the module's slot for the call and then dropped with it, where torch would
/// write into the given tensor.
pub fn reparametrize<T>(
    module: &dyn Module,
    tensors: &[(&str, Tensor)],
    strict: bool,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let op = "functional_call";
    let own: Vec<(String, Parameter)> = module
        .named_parameters()
        .into_iter()
        .chain(module.buffers())
        .collect();
    let mut swaps: Vec<(Parameter, Tensor)> = Vec::new();
    let mut given: Vec<&str> = Vec::new();
    for (name, t) in tensors {
        let Some((_, slot)) = own.iter().find(|(n, _)| n == name) else {
            let names: Vec<&str> = own.iter().map(|(n, _)| n.as_str()).collect();
            return Err(Error::Invalid(format!(
                "{op}: {} has no parameter or buffer named {name:?}; its names are {names:?}",
                module.describe().lines().next().unwrap_or("the module")
            )));
        };
        if given.contains(name) {
            return Err(Error::Invalid(format!("{op}: {name:?} is given twice")));
        }
        // Tied: another given name holds the same parameter.
        if let Some((other, _)) = tensors
            .iter()
            .take_while(|(n, _)| n != name)
            .find(|(n, _)| own.iter().any(|(m, p)| m == n && p.same_as(slot)))
        {
            return Err(Error::Invalid(format!(
                "{op}: {other:?} and {name:?} are one tied parameter, so only one of them may \
                 be given"
            )));
        }
        given.push(name);
        swaps.push((slot.clone(), t.clone()));
    }
    if strict {
        let missing: Vec<&str> = own
            .iter()
            .map(|(n, _)| n.as_str())
            .filter(|n| !given.contains(n))
            .collect();
        if !missing.is_empty() {
            return Err(Error::Invalid(format!(
                "{op}: strict, and no tensor is given for {missing:?}"
            )));
        }
    }
    struct Restore(Vec<(Parameter, Tensor)>);
    impl Drop for Restore {
        fn drop(&mut self) {
            for (slot, own) in self.0.drain(..).rev() {
                slot.replace(own);
            }
        }
    }
    let restore = Restore(
        swaps
            .into_iter()
            .map(|(slot, t)| {
                let own = slot.replace(t);
                (slot, own)
            })
            .collect(),
    );
    let out = f();
    drop(restore);
    out
}
