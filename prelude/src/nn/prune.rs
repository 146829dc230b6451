//! torch's `nn.utils.prune`: zeroing a share of a layer's weights, by magnitude, by channel
//! norm or at random, through a mask: the layer's tensor becomes `{name}_orig` (learned) and
//! the buffer `{name}_mask`, and each forward lends it `orig * mask` (as `parametrize.rs` lends
//! its weights), so pruned entries stay zero while the rest train. Pruning again prunes
//! among what is left, as torch's `PruningContainer`; `remove()` makes it permanent.

use super::parametrize::{convert_own, forward_lent, move_own, params_but, weight_of};
use super::{Module, Parameter};
use crate::autograd::no_grad;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};
use std::sync::Mutex;

/// How much to prune (torch's `amount`): a number of entries or channels, or a fraction of
/// those still unpruned, rounded half to even as Python's `round`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Amount {
    Count(usize),
    Fraction(f64),
}

impl From<usize> for Amount {
    fn from(n: usize) -> Amount {
        Amount::Count(n)
    }
}

impl From<i32> for Amount {
    /// An integer literal (`prune::l1_unstructured(m, "weight", 3)`); negative is refused
    /// when pruning, as torch's.
    fn from(n: i32) -> Amount {
        Amount::Count(usize::try_from(n).unwrap_or(usize::MAX))
    }
}

impl From<f64> for Amount {
    fn from(f: f64) -> Amount {
        Amount::Fraction(f)
    }
}

impl Amount {
    /// How many of `size` units to prune, checked as torch's.
    fn of(self, size: usize, op: &str) -> Result<usize> {
        match self {
            Amount::Count(usize::MAX) => Err(Error::Invalid(format!(
                "{op}: amount should either be a float in the range [0, 1] or a non-negative \
                 integer, got a negative integer"
            ))),
            Amount::Count(n) if n > size => Err(Error::Invalid(format!(
                "{op}: amount={n} should be smaller than the number of parameters to \
                 prune={size}"
            ))),
            Amount::Count(n) => Ok(n),
            Amount::Fraction(f) if !(0.0..=1.0).contains(&f) => Err(Error::Invalid(format!(
                "{op}: amount={f} should either be a float in the range [0, 1] or a \
                 non-negative integer"
            ))),
            Amount::Fraction(f) => Ok((f * size as f64).round_ties_even() as usize),
        }
    }
}

/// A layer whose tensor `name` is `orig * mask` (torch's pruned module): made by the
/// functions of [`prune`](super::utils::prune), pruned further by its methods.
pub struct Pruned<M: Module> {
    module: M,
    name: String,
    /// The tensor before masking (`{name}_orig`), learned.
    pub orig: Parameter,
    /// Ones where entries are kept, zeros where pruned (the buffer `{name}_mask`), in the
    /// tensor's dtype.
    pub mask: Parameter,
    slot: Parameter,
    lock: Mutex<()>,
}

/// One pruning step over the entries or channels a mask still keeps.
enum Method {
    L1Unstructured(Amount),
    RandomUnstructured(Amount),
    LnStructured { amount: Amount, n: f64, dim: isize },
    RandomStructured { amount: Amount, dim: isize },
    Custom(Tensor),
}

/// `size` random numbers in [0, 1) from the seeded generator.
fn draws(size: usize) -> Result<Vec<f64>> {
    Tensor::rand([size], Device::Cpu)?
        .to_dtype(DType::F64)?
        .to_vec::<f64>()
}

/// The positions of the `k` smallest `score`s among `candidates` (ties: the earlier first).
fn smallest(candidates: &[usize], score: impl Fn(usize) -> f64, k: usize) -> Vec<usize> {
    let mut order = candidates.to_vec();
    order.sort_by(|&a, &b| score(a).total_cmp(&score(b)).then(a.cmp(&b)));
    order.truncate(k);
    order
}

impl Method {
    fn name(&self) -> &'static str {
        match self {
            Method::L1Unstructured(_) => "prune.l1_unstructured",
            Method::RandomUnstructured(_) => "prune.random_unstructured",
            Method::LnStructured { .. } => "prune.ln_structured",
            Method::RandomStructured { .. } => "prune.random_structured",
            Method::Custom(_) => "prune.custom_from_mask",
        }
    }

    /// The new mask from the importance scores `t` (the tensor as pruned so far) and the
    /// current `mask`, both as host values in `shape`'s row-major order.
    fn apply(&self, t: &[f64], mask: &[f64], shape: &[usize]) -> Result<Vec<f64>> {
        let op = self.name();
        let mut out = mask.to_vec();
        match self {
            Method::L1Unstructured(amount) | Method::RandomUnstructured(amount) => {
                let live: Vec<usize> = (0..t.len()).filter(|&i| mask[i] == 1.0).collect();
                let k = amount.of(live.len(), op)?;
                let gone = if let Method::L1Unstructured(_) = self {
                    smallest(&live, |i| t[i].abs(), k)
                } else {
                    let p = draws(live.len())?;
                    let by_draw: Vec<usize> = (0..live.len()).collect();
                    // torch zeroes the k largest draws.
                    smallest(&by_draw, |j| -p[j], k)
                        .into_iter()
                        .map(|j| live[j])
                        .collect()
                };
                for i in gone {
                    out[i] = 0.0;
                }
            }
            Method::LnStructured { amount, dim, .. } | Method::RandomStructured { amount, dim } => {
                let rank = shape.len();
                if rank < 2 {
                    return Err(Error::BadShape(format!(
                        "{op}: structured pruning can only be applied to multidimensional \
                         tensors, found a tensor of shape {shape:?} with {rank} dims"
                    )));
                }
                let d = if *dim < 0 { *dim + rank as isize } else { *dim };
                if d < 0 || d as usize >= rank {
                    return Err(Error::BadShape(format!(
                        "{op}: invalid index {dim} for a tensor of size {shape:?}"
                    )));
                }
                let d = d as usize;
                let channels = shape[d];
                let inner: usize = shape[d + 1..].iter().product();
                let channel = |i: usize| (i / inner) % channels;
                // Channels still in play: those the mask has not zeroed entirely.
                let mut sums = vec![0.0; channels];
                for (i, m) in mask.iter().enumerate() {
                    sums[channel(i)] += m;
                }
                let live: Vec<usize> = (0..channels).filter(|&c| sums[c] != 0.0).collect();
                let k = amount.of(live.len(), op)?;
                if k == 0 {
                    return Ok(out);
                }
                let gone: Vec<usize> = if let Method::LnStructured { n, .. } = self {
                    let p = *n;
                    let start = if p == f64::NEG_INFINITY {
                        f64::INFINITY
                    } else {
                        0.0
                    };
                    let mut norms = vec![start; channels];
                    for (i, v) in t.iter().enumerate() {
                        let (c, a) = (channel(i), v.abs());
                        norms[c] = if p == f64::INFINITY {
                            norms[c].max(a)
                        } else if p == f64::NEG_INFINITY {
                            norms[c].min(a)
                        } else if p == 0.0 {
                            norms[c] + f64::from(a != 0.0)
                        } else {
                            norms[c] + a.powf(p)
                        };
                    }
                    let norm = |c: usize| {
                        if p.is_infinite() || p == 0.0 {
                            norms[c]
                        } else {
                            norms[c].powf(1.0 / p)
                        }
                    };
                    // torch keeps the largest norms; the rest go.
                    let mut keep = live.clone();
                    keep.sort_by(|&a, &b| norm(b).total_cmp(&norm(a)).then(a.cmp(&b)));
                    keep.split_off(live.len() - k)
                } else {
                    let p = draws(live.len())?;
                    let by_draw: Vec<usize> = (0..live.len()).collect();
                    smallest(&by_draw, |j| p[j], k)
                        .into_iter()
                        .map(|j| live[j])
                        .collect()
                };
                for (i, m) in out.iter_mut().enumerate() {
                    if gone.contains(&channel(i)) {
                        *m = 0.0;
                    }
                }
            }
            Method::Custom(given) => {
                if given.shape() != shape {
                    return Err(Error::BadShape(format!(
                        "{op}: the mask has shape {:?} but the tensor has {shape:?}",
                        given.shape()
                    )));
                }
                let given = given.to_dtype(DType::F64)?.to_vec::<f64>()?;
                for (m, g) in out.iter_mut().zip(given) {
                    *m *= g;
                }
            }
        }
        Ok(out)
    }
}

impl<M: Module> Pruned<M> {
    fn first(module: M, name: &str, method: Method) -> Result<Pruned<M>> {
        let slot = weight_of(&module, name, method.name())?;
        let w = slot.tensor().detach();
        let orig = Parameter::new(w.deep_clone()?)?;
        orig.requires_grad_(slot.requires_grad())?;
        let mask = Parameter::buffer(w.ones_like()?);
        slot.replace(w);
        let mut pruned = Pruned {
            module,
            name: name.to_string(),
            orig,
            mask,
            slot,
            lock: Mutex::new(()),
        };
        pruned.prune(method)?;
        Ok(pruned)
    }

    /// One more step; nothing changes when it fails (a bad amount), so the model lives on.
    fn prune(&mut self, method: Method) -> Result<()> {
        let (t, mask) = self.host_state()?;
        let new = method.apply(&t, &mask, &self.orig.shape())?;
        self.set_mask(new)
    }

    /// The importance scores (the tensor as pruned so far) and the mask, as host values.
    fn host_state(&self) -> Result<(Vec<f64>, Vec<f64>)> {
        no_grad(|| -> Result<_> {
            let host = |x: Tensor| x.to_dtype(DType::F64)?.to_vec::<f64>();
            Ok((host(self.weight()?)?, host(self.mask.tensor())?))
        })
    }

    fn set_mask(&mut self, new: Vec<f64>) -> Result<()> {
        let shape = self.orig.shape();
        let m = self.mask.tensor();
        self.mask.set_data(
            Tensor::from_vec(new, shape, Device::Cpu)?
                .to_dtype(m.dtype())?
                .to(m.device())?,
        )?;
        self.slot.replace(no_grad(|| self.weight())?.detach());
        Ok(())
    }

    /// The tensor as the layer sees it, `orig * mask`, with its history.
    pub fn weight(&self) -> Result<Tensor> {
        let orig = self.orig.tensor();
        orig.mul(&self.mask.tensor().to_dtype(orig.dtype())?)
    }

    /// The layer it wraps (its tensor is the one last computed).
    pub fn module(&self) -> &M {
        &self.module
    }

    /// Prunes `amount` more of the entries left, those of smallest magnitude (torch's
    /// `prune.l1_unstructured` on a pruned module).
    pub fn l1_unstructured(&mut self, amount: impl Into<Amount>) -> Result<()> {
        self.prune(Method::L1Unstructured(amount.into()))
    }

    /// Prunes `amount` more of the entries left, at random (seeded generator).
    pub fn random_unstructured(&mut self, amount: impl Into<Amount>) -> Result<()> {
        self.prune(Method::RandomUnstructured(amount.into()))
    }

    /// Prunes `amount` more of the channels along `dim` left, those of smallest L`n` norm
    /// (`n` any real or `f64::INFINITY`; torch's `'fro'` is 2).
    pub fn ln_structured(&mut self, amount: impl Into<Amount>, n: f64, dim: isize) -> Result<()> {
        self.prune(Method::LnStructured {
            amount: amount.into(),
            n,
            dim,
        })
    }

    /// Prunes `amount` more of the channels along `dim` left, at random.
    pub fn random_structured(&mut self, amount: impl Into<Amount>, dim: isize) -> Result<()> {
        self.prune(Method::RandomStructured {
            amount: amount.into(),
            dim,
        })
    }

    /// Prunes where `mask` is 0 as well (torch's `prune.custom_from_mask`).
    pub fn custom_from_mask(&mut self, mask: &Tensor) -> Result<()> {
        self.prune(Method::Custom(mask.detach()))
    }

    /// The layer back with `orig * mask` as a plain parameter (torch's `prune.remove`): the
    /// zeros stay, but nothing keeps them zero any more.
    pub fn remove(self) -> Result<M> {
        let w = no_grad(|| self.weight())?;
        let requires_grad = self.orig.requires_grad();
        self.slot
            .replace(w.detach().deep_clone()?.requires_grad_(requires_grad)?);
        Ok(self.module)
    }

    /// The share of the tensor's entries that are pruned (0 to 1).
    pub fn sparsity(&self) -> Result<f64> {
        let m = self.mask.tensor().to_dtype(DType::F64)?.to_vec::<f64>()?;
        Ok(m.iter().filter(|&&v| v == 0.0).count() as f64 / m.len().max(1) as f64)
    }
}

impl<M: Module> Module for Pruned<M> {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        forward_lent(
            &self.lock,
            &self.slot,
            || self.weight(),
            || self.module.forward(x),
        )
    }
    fn parameters(&self) -> Vec<Parameter> {
        self.named_parameters()
            .into_iter()
            .map(|(_, p)| p)
            .collect()
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        let mut out = params_but(&self.module, &self.name);
        out.push((format!("{}_orig", self.name), self.orig.clone()));
        out
    }
    fn buffers(&self) -> Vec<(String, Parameter)> {
        let mut b = self.module.buffers();
        b.push((format!("{}_mask", self.name), self.mask.clone()));
        b
    }
    fn describe(&self) -> String {
        self.module.describe()
    }
    fn set_training(&mut self, training: bool) {
        self.module.set_training(training)
    }
    fn to(&self, device: Device) -> Result<()> {
        self.module.to(device)?;
        move_own(&[&self.orig], &[&self.mask], device)
    }
    fn to_dtype(&self, dtype: DType) -> Result<()> {
        self.module.to_dtype(dtype)?;
        convert_own(&[&self.orig], &[&self.mask], dtype)
    }
}

/// torch's `prune.l1_unstructured(module, name, amount)`: zeroes the `amount` entries of
/// smallest magnitude.
pub fn l1_unstructured<M: Module>(
    module: M,
    name: &str,
    amount: impl Into<Amount>,
) -> Result<Pruned<M>> {
    Pruned::first(module, name, Method::L1Unstructured(amount.into()))
}

/// torch's `prune.random_unstructured(module, name, amount)`: zeroes `amount` entries at
/// random (the seeded generator).
pub fn random_unstructured<M: Module>(
    module: M,
    name: &str,
    amount: impl Into<Amount>,
) -> Result<Pruned<M>> {
    Pruned::first(module, name, Method::RandomUnstructured(amount.into()))
}

/// torch's `prune.ln_structured(module, name, amount, n, dim)`: zeroes the `amount` channels
/// along `dim` of smallest L`n` norm (output channels for `dim = 0`).
pub fn ln_structured<M: Module>(
    module: M,
    name: &str,
    amount: impl Into<Amount>,
    n: f64,
    dim: isize,
) -> Result<Pruned<M>> {
    let amount = amount.into();
    Pruned::first(module, name, Method::LnStructured { amount, n, dim })
}

/// torch's `prune.random_structured(module, name, amount, dim)`: zeroes `amount` channels
/// along `dim` at random.
pub fn random_structured<M: Module>(
    module: M,
    name: &str,
    amount: impl Into<Amount>,
    dim: isize,
) -> Result<Pruned<M>> {
    let amount = amount.into();
    Pruned::first(module, name, Method::RandomStructured { amount, dim })
}

/// torch's `prune.identity(module, name)`: the mask machinery with nothing pruned.
pub fn identity<M: Module>(module: M, name: &str) -> Result<Pruned<M>> {
    Pruned::first(module, name, Method::L1Unstructured(Amount::Count(0)))
}

/// torch's `prune.custom_from_mask(module, name, mask)`: zeroes where `mask` is 0.
pub fn custom_from_mask<M: Module>(module: M, name: &str, mask: &Tensor) -> Result<Pruned<M>> {
    Pruned::first(module, name, Method::Custom(mask.detach()))
}

/// A pruned tensor that [`global_unstructured`] can prune together with others, whatever
/// the layer (`Pruned<Linear>`, `Pruned<Conv2d>`, ...).
pub trait GlobalTarget {
    /// The importance scores (the tensor as pruned so far) and the mask, as host values.
    fn scores_and_mask(&self) -> Result<(Vec<f64>, Vec<f64>)>;
    /// Replaces the mask (same length, row-major).
    fn replace_mask(&mut self, mask: Vec<f64>) -> Result<()>;
}

impl<M: Module> GlobalTarget for Pruned<M> {
    fn scores_and_mask(&self) -> Result<(Vec<f64>, Vec<f64>)> {
        self.host_state()
    }
    fn replace_mask(&mut self, mask: Vec<f64>) -> Result<()> {
        self.set_mask(mask)
    }
}

/// How [`global_unstructured`] picks (torch's `pruning_method=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GlobalMethod {
    /// The smallest magnitudes over all the tensors together (`prune.L1Unstructured`).
    L1Unstructured,
    /// At random over all of them (`prune.RandomUnstructured`).
    RandomUnstructured,
}

/// torch's `prune.global_unstructured(parameters, pruning_method, amount)`: prunes `amount`
/// of all the given tensors' unpruned entries taken as one, so a layer with small weights
/// loses more than one with large. Wrap each layer first (`prune::identity(layer, "weight")`
/// when it is not pruned yet), then build the model from the wrappers. Nothing changes when
/// it fails.
pub fn global_unstructured(
    targets: &mut [&mut dyn GlobalTarget],
    method: GlobalMethod,
    amount: impl Into<Amount>,
) -> Result<()> {
    let amount = amount.into();
    let (mut scores, mut masks, mut sizes) = (Vec::new(), Vec::new(), Vec::new());
    for t in targets.iter() {
        let (s, m) = t.scores_and_mask()?;
        sizes.push(s.len());
        scores.extend(s);
        masks.extend(m);
    }
    let step = match method {
        GlobalMethod::L1Unstructured => Method::L1Unstructured(amount),
        GlobalMethod::RandomUnstructured => Method::RandomUnstructured(amount),
    };
    let new = step.apply(&scores, &masks, &[scores.len()])?;
    let mut at = 0;
    for (t, n) in targets.iter_mut().zip(sizes) {
        t.replace_mask(new[at..at + n].to_vec())?;
        at += n;
    }
    Ok(())
}

/// torch's `prune.remove(module, name)`: see [`Pruned::remove`].
pub fn remove<M: Module>(pruned: Pruned<M>) -> Result<M> {
    pruned.remove()
}

#[cfg(test)]
mod tests {
    use super::Amount;

    #[test]
    fn amounts_round_as_python() {
        // Python's round: half to even.
        assert_eq!(Amount::Fraction(0.5).of(5, "t").unwrap(), 2);
        assert_eq!(Amount::Fraction(0.5).of(7, "t").unwrap(), 4);
        assert_eq!(Amount::Fraction(0.3).of(12, "t").unwrap(), 4);
        assert_eq!(Amount::from(3).of(12, "t").unwrap(), 3);
        assert!(Amount::from(13).of(12, "t").is_err());
        assert!(Amount::from(-1).of(12, "t").is_err());
        assert!(Amount::Fraction(1.5).of(12, "t").is_err());
    }
}
