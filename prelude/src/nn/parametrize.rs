//! Weight reparametrisations, torch's weight normalisation and spectral normalisation, in both
//! of torch's spellings: `nn.utils.parametrizations.weight_norm` / `spectral_norm` (the layer's
//! weight becomes `parametrizations.weight.original0`, ...) and the older `nn.utils.weight_norm`
//! / `spectral_norm` (`weight_g`, `weight_v`, `weight_orig`, ...).
//!
//! A wrapper owns the layer and learns the tensors the weight is computed from. At each forward
//! it computes the weight and lends it to the layer for that one call (the layer's own handle
//! holds it, history included, so gradients flow back to `g` and `v`); afterwards the handle
//! keeps the weight as computed, without history. Any layer and any of its weights can be
//! wrapped (`"weight_hh_l0"` of an LSTM), and wrappers nest, one per weight.

use super::{Module, Parameter};
use crate::autograd::no_grad;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};
use std::sync::{Mutex, MutexGuard};

/// Which of torch's two APIs a wrapper follows: they differ in the names of the tensors
/// (and so in what `state_dict` holds), the repr, and spectral norm's first steps.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Spelling {
    /// `torch.nn.utils.parametrizations`: `parametrizations.weight.original0`, ...
    Parametrizations,
    /// `torch.nn.utils.weight_norm` / `spectral_norm`: `weight_g`, `weight_orig`, ...
    Legacy,
}

/// The handle of `module`'s tensor `name` (a state_dict name: `weight`, `weight_hh_l0`), a
/// float tensor with elements.
pub(super) fn weight_of(module: &dyn Module, name: &str, op: &str) -> Result<Parameter> {
    let params = module.named_parameters();
    let Some((_, p)) = params.iter().find(|(n, _)| n == name) else {
        let names: Vec<&str> = params.iter().map(|(n, _)| n.as_str()).collect();
        return Err(Error::Invalid(format!(
            "{op}: {} has no parameter named {name:?}; its parameters are {names:?}",
            first_line(&module.describe())
        )));
    };
    let t = p.tensor();
    if !t.dtype().is_float() {
        return Err(Error::Invalid(format!(
            "{op}: the parameter {name:?} is {}, and only floating-point weights can be \
             reparametrised",
            t.dtype()
        )));
    }
    if t.numel() == 0 {
        return Err(Error::Invalid(format!(
            "{op}: the parameter {name:?} has no elements yet (shape {:?}); a lazy layer gets \
             its weights at its first forward, so run one before wrapping it",
            t.shape()
        )));
    }
    Ok(p.clone())
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

/// The layer's `forward` with the weight `compute` gives in `slot` for the call, one call at
/// a time per wrapper (`lock`); the slot then keeps the weight without its history (also when
/// the forward fails or panics).
pub(super) fn forward_lent(
    lock: &Mutex<()>,
    slot: &Parameter,
    compute: impl FnOnce() -> Result<Tensor>,
    forward: impl FnOnce() -> Result<Tensor>,
) -> Result<Tensor> {
    let _held = hold(lock);
    let weight = compute()?;
    lend(slot, weight, forward)
}

fn lend<T>(slot: &Parameter, weight: Tensor, f: impl FnOnce() -> T) -> T {
    struct Restore<'a>(&'a Parameter, Tensor);
    impl Drop for Restore<'_> {
        fn drop(&mut self) {
            self.0.replace(self.1.clone());
        }
    }
    let _restore = Restore(slot, weight.detach());
    slot.replace(weight);
    f()
}

/// One lock per wrapper: lending the weight changes the layer's handle for the call, so two
/// threads may not run the same wrapper's forward at once. (A panic while holding it leaves
/// nothing half-done, so a poisoned lock is taken as it is.)
fn hold(lock: &Mutex<()>) -> MutexGuard<'_, ()> {
    lock.lock().unwrap_or_else(|e| e.into_inner())
}

/// Moves or converts the wrapper's own tensors as `Module::to` / `to_dtype` do.
pub(super) fn move_own(
    params: &[&Parameter],
    buffers: &[&Parameter],
    device: Device,
) -> Result<()> {
    for p in params {
        p.set_data(p.tensor().detach().to(device)?)?;
        p.zero_grad();
    }
    for b in buffers {
        b.set_data(b.tensor().to(device)?)?;
    }
    Ok(())
}

pub(super) fn convert_own(
    params: &[&Parameter],
    buffers: &[&Parameter],
    dtype: DType,
) -> Result<()> {
    for p in params.iter().chain(buffers) {
        p.set_data(p.tensor().detach().to_dtype(dtype)?)?;
        p.zero_grad();
    }
    Ok(())
}

/// The layer's parameters but the one a wrapper computes (`name`), under their own names: the
/// start of every wrapper's `named_parameters`.
pub(super) fn params_but(module: &dyn Module, name: &str) -> Vec<(String, Parameter)> {
    module
        .named_parameters()
        .into_iter()
        .filter(|(n, _)| n != name)
        .collect()
}

/// torch's repr of a module with parametrised tensors: `ParametrizedLinear(` over the
/// layer's settings and a `(parametrizations)` dict listing each tensor's parametrisations
/// (their reprs, e.g. `_WeightNorm()`). A wrapper of a wrapper adds its tensor to the same dict.
pub(super) fn parametrized_repr(inner: &str, name: &str, chain: &[String]) -> String {
    let mut entry = format!("    ({name}): ParametrizationList(\n");
    for (i, p) in chain.iter().enumerate() {
        entry += &format!("      ({i}): {}\n", p.replace('\n', "\n      "));
    }
    entry += "    )\n";
    if inner.starts_with("Parametrized") {
        if let Some(head) = inner.strip_suffix("  )\n)") {
            return format!("{head}{entry}  )\n)");
        }
    }
    let (head, body) = inner.split_once('(').unwrap_or((inner, ")"));
    let body = body.strip_suffix(')').unwrap_or(body);
    let settings = if body.is_empty() {
        String::new()
    } else if let Some(lines) = body.strip_prefix('\n') {
        lines.to_string()
    } else {
        format!("  {body}\n")
    };
    format!("Parametrized{head}(\n{settings}  (parametrizations): ModuleDict(\n{entry}  )\n)")
}

/// The Euclidean norm of `v` over every dimension but `dim`, which keeps its size (the others
/// size 1); over the whole tensor for None, a 0-d tensor (torch's `norm_except_dim`).
fn norm_except_dim(v: &Tensor, dim: Option<usize>) -> Result<Tensor> {
    let others: Vec<isize> = (0..v.rank())
        .filter(|&d| Some(d) != dim)
        .map(|d| d as isize)
        .collect();
    match dim {
        None => v.norm(),
        // A vector's norm "along everything but its only dimension" is each element's size.
        Some(_) if others.is_empty() => v.abs(),
        Some(_) => crate::linalg::vector_norm(v, 2.0, Some(&others), true),
    }
}

/// A layer whose weight is `g * v / ||v||` (torch's weight normalisation): `g` learns each
/// output's length and `v` its direction, the norm taken over every dimension but `dim` (the
/// whole tensor for None). Made by [`weight_norm`] ([`parametrizations::weight_norm`]) or
/// [`legacy_weight_norm`] (torch's older `nn.utils.weight_norm`).
pub struct WeightNorm<M: Module> {
    module: M,
    name: String,
    dim: Option<usize>,
    /// The weight's norm along `dim` (`original0`, or `weight_g`), kept dimensions of size 1.
    pub g: Parameter,
    /// The weight's direction (`original1`, or `weight_v`), the weight's shape.
    pub v: Parameter,
    slot: Parameter,
    spelling: Spelling,
    lock: Mutex<()>,
}

impl<M: Module> WeightNorm<M> {
    fn new(
        module: M,
        name: &str,
        dim: Option<usize>,
        spelling: Spelling,
        op: &str,
    ) -> Result<WeightNorm<M>> {
        let slot = weight_of(&module, name, op)?;
        let w = slot.tensor().detach();
        if let Some(d) = dim {
            if d >= w.rank() {
                return Err(Error::BadShape(format!(
                    "{op}: dim {d} is out of range for the parameter {name:?} of shape {:?}",
                    w.shape()
                )));
            }
        }
        let g = no_grad(|| norm_except_dim(&w, dim))?;
        let (g, v) = (Parameter::new(g)?, Parameter::new(w.deep_clone()?)?);
        for p in [&g, &v] {
            p.requires_grad_(slot.requires_grad())?;
        }
        slot.replace(w);
        Ok(WeightNorm {
            module,
            name: name.to_string(),
            dim,
            g,
            v,
            slot,
            spelling,
            lock: Mutex::new(()),
        })
    }

    /// The weight as the layer sees it, `g * v / ||v||` (torch's `module.weight`), with its
    /// history, so a loss of it reaches `g` and `v`.
    pub fn weight(&self) -> Result<Tensor> {
        let (g, v) = (self.g.tensor(), self.v.tensor());
        // Halves in float32, rounded once (forward and backward), as torch's fused
        // `_weight_norm` kernel.
        let half = matches!(v.dtype(), DType::F16 | DType::BF16);
        let (g32, v32) = if half {
            (g.to_dtype(DType::F32)?, v.to_dtype(DType::F32)?)
        } else {
            (g, v.clone())
        };
        v32.mul(&g32.div(&norm_except_dim(&v32, self.dim)?)?)?
            .to_dtype(v.dtype())
    }

    /// The layer it wraps (its weight is the one last computed).
    pub fn module(&self) -> &M {
        &self.module
    }

    /// The layer back, its weight fixed at `g * v / ||v||` as a plain parameter again
    /// (torch's `remove_weight_norm`, or `remove_parametrizations(m, name)`).
    pub fn remove(self) -> Result<M> {
        let w = no_grad(|| self.weight())?;
        let requires_grad = self.v.requires_grad();
        self.slot.replace(w.detach().requires_grad_(requires_grad)?);
        Ok(self.module)
    }

    fn own_names(&self) -> [String; 2] {
        match self.spelling {
            Spelling::Parametrizations => [
                format!("parametrizations.{}.original0", self.name),
                format!("parametrizations.{}.original1", self.name),
            ],
            Spelling::Legacy => [format!("{}_g", self.name), format!("{}_v", self.name)],
        }
    }
}

impl<M: Module> Module for WeightNorm<M> {
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
        let [g, v] = self.own_names();
        let mut out = params_but(&self.module, &self.name);
        out.extend([(g, self.g.clone()), (v, self.v.clone())]);
        out
    }
    fn buffers(&self) -> Vec<(String, Parameter)> {
        self.module.buffers()
    }
    fn describe(&self) -> String {
        match self.spelling {
            Spelling::Parametrizations => parametrized_repr(
                &self.module.describe(),
                &self.name,
                &["_WeightNorm()".into()],
            ),
            Spelling::Legacy => self.module.describe(),
        }
    }
    fn set_training(&mut self, training: bool) {
        self.module.set_training(training)
    }
    fn to(&self, device: Device) -> Result<()> {
        self.module.to(device)?;
        move_own(&[&self.g, &self.v], &[], device)
    }
    fn to_dtype(&self, dtype: DType) -> Result<()> {
        self.module.to_dtype(dtype)?;
        convert_own(&[&self.g, &self.v], &[], dtype)
    }
}

/// A layer whose weight is divided by its largest singular value, estimated by power iteration
/// (torch's spectral normalisation, for GAN discriminators): the weight is read as a matrix
/// with dimension `dim` as its rows; `u` and `v` estimate the leading singular vectors, and in
/// training mode each forward takes `n_power_iterations` steps of the power method on them
/// first (without gradient). Made by [`spectral_norm`] ([`parametrizations::spectral_norm`])
/// or [`legacy_spectral_norm`] (torch's older `nn.utils.spectral_norm`).
pub struct SpectralNorm<M: Module> {
    module: M,
    name: String,
    dim: usize,
    n_power_iterations: usize,
    eps: f64,
    /// The weight before normalisation (`original`, or `weight_orig`).
    pub original: Parameter,
    /// The estimates of the leading left and right singular vectors (buffers `0._u` and
    /// `0._v`, or `weight_u` and `weight_v`); None for a one-dimensional weight under torch's
    /// parametrizations, which is just scaled to unit length.
    pub u: Option<Parameter>,
    pub v: Option<Parameter>,
    slot: Parameter,
    spelling: Spelling,
    training: bool,
    lock: Mutex<()>,
}

impl<M: Module> SpectralNorm<M> {
    fn new(
        module: M,
        options: SpectralOptions<'_>,
        spelling: Spelling,
        op: &str,
    ) -> Result<SpectralNorm<M>> {
        let name = options.name;
        let slot = weight_of(&module, name, op)?;
        let w = slot.tensor().detach();
        // torch reads a transposed convolution's weight [in, out, ...] with its outputs as rows.
        let repr = module.describe();
        let kind = repr.trim_start_matches("Parametrized");
        let transposed = kind.trim_start_matches("Lazy").starts_with("ConvTranspose");
        let dim = options.dim.unwrap_or(usize::from(transposed));
        if dim >= w.rank() {
            return Err(Error::BadShape(format!(
                "{op}: dim {dim} is out of range for the parameter {name:?} of shape {:?}",
                w.shape()
            )));
        }
        if options.eps.is_nan() || options.eps <= 0.0 {
            return Err(Error::Invalid(format!(
                "{op}: eps must be positive, got {}",
                options.eps
            )));
        }
        if options.n_power_iterations == 0 {
            return Err(Error::Invalid(format!(
                "{op}: n_power_iterations must be positive, as torch's, got 0"
            )));
        }
        let original = Parameter::new(w.deep_clone()?)?;
        original.requires_grad_(slot.requires_grad())?;
        slot.replace(w.clone());
        let mut sn = SpectralNorm {
            module,
            name: name.to_string(),
            dim,
            n_power_iterations: options.n_power_iterations,
            eps: options.eps,
            original,
            u: None,
            v: None,
            slot,
            spelling,
            training: true,
            lock: Mutex::new(()),
        };
        if w.rank() > 1 || spelling == Spelling::Legacy {
            let m = sn.matrix(&w)?;
            let (rows, cols) = (m.shape()[0], m.shape()[1]);
            let start = |n: usize| -> Result<Parameter> {
                let r = Tensor::randn([n], w.device())?.to_dtype(w.dtype())?;
                Ok(Parameter::buffer(sn.unit(&r)?))
            };
            let (u, v) = (start(rows)?, start(cols)?);
            (sn.u, sn.v) = (Some(u), Some(v));
            // torch's parametrization starts from 15 steps; its older hook from none.
            if spelling == Spelling::Parametrizations {
                sn.power_method(&m, 15)?;
            }
        }
        Ok(sn)
    }

    /// The weight as a matrix: dimension `dim` first, the rest flattened.
    fn matrix(&self, w: &Tensor) -> Result<Tensor> {
        let rank = w.rank();
        let w = if self.dim != 0 {
            let perm: Vec<isize> = std::iter::once(self.dim)
                .chain((0..rank).filter(|&d| d != self.dim))
                .map(|d| d as isize)
                .collect();
            w.permute(&perm)?
        } else {
            w.clone()
        };
        let rows = w.shape().first().copied().unwrap_or(1);
        w.reshape(vec![rows, w.numel() / rows.max(1)])
    }

    /// `x / max(||x||, eps)` (torch's `normalize` with this wrapper's eps).
    fn unit(&self, x: &Tensor) -> Result<Tensor> {
        x.div(&x.norm()?.clamp_min(self.eps)?)
    }

    /// `steps` steps of the power method on `u` and `v`, without gradient: torch's
    /// parametrization updates `u` from `v` then `v` from `u`; its older hook the other way.
    fn power_method(&self, m: &Tensor, steps: usize) -> Result<()> {
        let (Some(u), Some(v)) = (&self.u, &self.v) else {
            return Ok(());
        };
        no_grad(|| {
            let m = m.detach();
            let mt = m.t()?;
            for _ in 0..steps {
                if self.spelling == Spelling::Parametrizations {
                    u.set_data(self.unit(&m.mv(&v.tensor())?)?)?;
                    v.set_data(self.unit(&mt.mv(&u.tensor())?)?)?;
                } else {
                    v.set_data(self.unit(&mt.mv(&u.tensor())?)?)?;
                    u.set_data(self.unit(&m.mv(&v.tensor())?)?)?;
                }
            }
            Ok(())
        })
    }

    /// The weight as the layer sees it, `original / sigma` with `sigma = u . (W v)` (torch's
    /// `module.weight`), with its history. As torch's, in training mode each call first
    /// takes the power-iteration steps.
    pub fn weight(&self) -> Result<Tensor> {
        let w = self.original.tensor();
        let (Some(u), Some(v)) = (&self.u, &self.v) else {
            return self.unit(&w);
        };
        let m = self.matrix(&w)?;
        if self.training {
            self.power_method(&m, self.n_power_iterations)?;
        }
        let sigma = u.tensor().dot(&m.mv(&v.tensor())?)?;
        w.div(&sigma)
    }

    /// The layer it wraps (its weight is the one last computed).
    pub fn module(&self) -> &M {
        &self.module
    }

    /// The layer back, its weight fixed at the normalised one as a plain parameter again
    /// (torch's `remove_spectral_norm`, or `remove_parametrizations(m, name)`). No
    /// power-iteration step is taken.
    pub fn remove(mut self) -> Result<M> {
        self.training = false;
        let w = no_grad(|| self.weight())?;
        let requires_grad = self.original.requires_grad();
        self.slot.replace(w.detach().requires_grad_(requires_grad)?);
        Ok(self.module)
    }

    fn own_buffers(&self) -> Vec<(String, Parameter)> {
        let names = match self.spelling {
            Spelling::Parametrizations => [
                format!("parametrizations.{}.0._u", self.name),
                format!("parametrizations.{}.0._v", self.name),
            ],
            Spelling::Legacy => [format!("{}_u", self.name), format!("{}_v", self.name)],
        };
        names
            .into_iter()
            .zip([&self.u, &self.v])
            .filter_map(|(n, b)| b.clone().map(|b| (n, b)))
            .collect()
    }

    fn own_tensors(&self) -> Vec<&Parameter> {
        self.u.iter().chain(&self.v).collect()
    }
}

impl<M: Module> Module for SpectralNorm<M> {
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
        let original = match self.spelling {
            Spelling::Parametrizations => format!("parametrizations.{}.original", self.name),
            Spelling::Legacy => format!("{}_orig", self.name),
        };
        let mut out = params_but(&self.module, &self.name);
        out.push((original, self.original.clone()));
        out
    }
    fn buffers(&self) -> Vec<(String, Parameter)> {
        let mut b = self.module.buffers();
        b.extend(self.own_buffers());
        b
    }
    fn describe(&self) -> String {
        match self.spelling {
            Spelling::Parametrizations => parametrized_repr(
                &self.module.describe(),
                &self.name,
                &["_SpectralNorm()".into()],
            ),
            Spelling::Legacy => self.module.describe(),
        }
    }
    fn set_training(&mut self, training: bool) {
        self.training = training;
        self.module.set_training(training)
    }
    fn to(&self, device: Device) -> Result<()> {
        self.module.to(device)?;
        move_own(&[&self.original], &self.own_tensors(), device)
    }
    fn to_dtype(&self, dtype: DType) -> Result<()> {
        self.module.to_dtype(dtype)?;
        convert_own(&[&self.original], &self.own_tensors(), dtype)
    }
}

/// Spectral normalisation's settings, torch's keyword arguments (see [`spectral_norm_with`]).
#[derive(Clone, Copy, Debug)]
pub struct SpectralOptions<'a> {
    /// The tensor to normalise (`"weight"`).
    pub name: &'a str,
    /// Power-iteration steps per training forward (1).
    pub n_power_iterations: usize,
    /// The smallest norm divided by when normalising `u` and `v` (1e-12).
    pub eps: f64,
    /// The weight's dimension read as the matrix's rows; None: 1 for a transposed
    /// convolution, else 0, as torch.
    pub dim: Option<usize>,
}

impl Default for SpectralOptions<'_> {
    fn default() -> Self {
        SpectralOptions {
            name: "weight",
            n_power_iterations: 1,
            eps: 1e-12,
            dim: None,
        }
    }
}

/// torch's `nn.utils.parametrizations.weight_norm(module)`: the layer's `weight` becomes
/// `g * v / ||v||`, the norm over every dimension but the first (each output's own).
pub fn weight_norm<M: Module>(module: M) -> Result<WeightNorm<M>> {
    weight_norm_with(module, "weight", Some(0))
}

/// [`weight_norm`] of the tensor `name`, the norm over every dimension but `dim` (over the
/// whole tensor for None, torch's `dim=None`).
pub fn weight_norm_with<M: Module>(
    module: M,
    name: &str,
    dim: Option<usize>,
) -> Result<WeightNorm<M>> {
    WeightNorm::new(
        module,
        name,
        dim,
        Spelling::Parametrizations,
        "parametrizations.weight_norm",
    )
}

/// torch's older `nn.utils.weight_norm(module)`: as [`weight_norm`], the tensors named
/// `weight_g` and `weight_v` and the repr the layer's own.
pub fn legacy_weight_norm<M: Module>(module: M) -> Result<WeightNorm<M>> {
    legacy_weight_norm_with(module, "weight", Some(0))
}

/// [`legacy_weight_norm`] of the tensor `name` along `dim` (the whole tensor for None).
pub fn legacy_weight_norm_with<M: Module>(
    module: M,
    name: &str,
    dim: Option<usize>,
) -> Result<WeightNorm<M>> {
    WeightNorm::new(module, name, dim, Spelling::Legacy, "weight_norm")
}

/// torch's `nn.utils.parametrizations.spectral_norm(module)`: the layer's `weight` divided by
/// its spectral norm, estimated with one power-iteration step per training forward (after 15
/// at the start, from random unit vectors drawn from the seeded generator).
pub fn spectral_norm<M: Module>(module: M) -> Result<SpectralNorm<M>> {
    spectral_norm_with(module, SpectralOptions::default())
}

/// [`spectral_norm`] with torch's keyword arguments:
/// `spectral_norm_with(m, SpectralOptions { n_power_iterations: 2, ..Default::default() })`.
pub fn spectral_norm_with<M: Module>(
    module: M,
    options: SpectralOptions<'_>,
) -> Result<SpectralNorm<M>> {
    SpectralNorm::new(
        module,
        options,
        Spelling::Parametrizations,
        "parametrizations.spectral_norm",
    )
}

/// torch's older `nn.utils.spectral_norm(module)`: as [`spectral_norm`], the tensors named
/// `weight_orig`, `weight_u` and `weight_v`, no steps at the start, and each step updating
/// `v` before `u`, as that hook does.
pub fn legacy_spectral_norm<M: Module>(module: M) -> Result<SpectralNorm<M>> {
    legacy_spectral_norm_with(module, SpectralOptions::default())
}

/// [`legacy_spectral_norm`] with torch's keyword arguments.
pub fn legacy_spectral_norm_with<M: Module>(
    module: M,
    options: SpectralOptions<'_>,
) -> Result<SpectralNorm<M>> {
    SpectralNorm::new(module, options, Spelling::Legacy, "spectral_norm")
}

#[cfg(test)]
mod tests {
    use super::parametrized_repr;

    #[test]
    fn reprs_follow_torch() {
        let one = parametrized_repr(
            "Linear(in_features=3, out_features=4, bias=True)",
            "weight",
            &["_WeightNorm()".into()],
        );
        assert_eq!(
            one,
            "ParametrizedLinear(\n  in_features=3, out_features=4, bias=True\n  \
             (parametrizations): ModuleDict(\n    (weight): ParametrizationList(\n      \
             (0): _WeightNorm()\n    )\n  )\n)"
        );
        let two = parametrized_repr(&one, "bias", &["_SpectralNorm()".into()]);
        assert!(two.ends_with(
            "(0): _WeightNorm()\n    )\n    (bias): ParametrizationList(\n      (0): \
             _SpectralNorm()\n    )\n  )\n)"
        ));
    }
}
