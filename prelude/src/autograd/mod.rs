//! Reverse-mode automatic differentiation, with torch's names and semantics.
//!
//! A tensor that requires grad carries an `Arc<Meta>` (`Tensor::grad_meta`, shared by its
//! clones). A leaf (made by `requires_grad_(true)`) has no `Node`; its `grad` accumulates
//! what `backward` sends it. A tensor computed from tensors that require grad (while grad
//! mode is on, see [`no_grad`]) gets a `Node`: the op's name, the metas of its inputs and a
//! closure that turns the output's gradient into one gradient per input (`rules.rs`).
//!
//! `backward` sorts the nodes reachable from the root topologically (depth first, no
//! recursion), then walks them from the root, summing the gradients that reach each tensor
//! before passing them on, so every node runs once. The closures run under `no_grad`: the
//! backward pass is not itself recorded (no higher-order gradients yet). The engine fits each
//! gradient to its input (sums broadcast dimensions away, casts back to the input's dtype and
//! device), so the rules never deal with broadcasting or promotion themselves.
//!
//! As in torch, `backward` frees what each node saved (the activations and weights its rule
//! reads) as soon as that node has run, so they do not outlive the backward pass while the
//! loss is still held (through the optimiser's step, say): a second `backward` through the
//! same graph is then an error that says so, unless the first was
//! `backward_retain_graph` (torch's `retain_graph=True`). The graph's structure lives as long
//! as the tensors that hold it.

pub mod functional;
pub(crate) mod rules;

use crate::device::Device;
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

type BackwardFn = Box<dyn Fn(&Tensor) -> Result<Vec<Option<Tensor>>> + Send + Sync>;

/// What autograd knows about one tensor that requires grad.
pub struct Meta {
    grad: Mutex<Option<Tensor>>,
    node: Option<Node>,
    /// A non-leaf that keeps the gradient reaching it in `grad` (torch's `retain_grad()`).
    retains: AtomicBool,
}

struct Node {
    name: &'static str,
    inputs: Vec<Option<Input>>,
    /// The rule, and with it every tensor it saved; `None` once a backward pass freed it.
    backward: Mutex<Option<BackwardFn>>,
}

impl Node {
    /// The op and torch's name for its node, for messages: `matmul (MvBackward0)`.
    fn describe(&self) -> String {
        format!("{} ({})", op_label(self.name), torch_node_name(self.name))
    }
}

/// An input of a node that requires grad, and what its gradient must look like.
struct Input {
    meta: Arc<Meta>,
    dims: Vec<usize>,
    dtype: DType,
    device: Device,
}

impl Meta {
    pub(crate) fn leaf() -> Arc<Meta> {
        Arc::new(Meta {
            grad: Mutex::new(None),
            node: None,
            retains: AtomicBool::new(false),
        })
    }
    pub(crate) fn is_leaf(&self) -> bool {
        self.node.is_none()
    }
    pub(crate) fn retain_grad(&self) {
        self.retains.store(true, Ordering::Relaxed);
    }
    pub(crate) fn retains_grad(&self) -> bool {
        self.retains.load(Ordering::Relaxed)
    }
    pub(crate) fn grad(&self) -> Option<Tensor> {
        self.grad.lock().unwrap().clone()
    }
    pub(crate) fn set_grad(&self, g: Option<Tensor>) {
        *self.grad.lock().unwrap() = g;
    }
    /// The op that computed this tensor, as error messages name it (`matmul`, `sum`).
    pub(crate) fn op_name(&self) -> Option<&'static str> {
        self.node.as_ref().map(|n| op_label(n.name))
    }
    /// torch's name for this tensor's backward node (`grad_fn`).
    pub(crate) fn node_name(&self) -> Option<&'static str> {
        self.node.as_ref().map(|n| torch_node_name(n.name))
    }
}

/// The public op behind a recorded name that tells overloads apart for `torch_node_name`.
fn op_label(recorded: &'static str) -> &'static str {
    match recorded {
        "mm" | "mv" | "dot" | "vm" => "matmul",
        "pow_scalar" | "scalar_pow" => "pow",
        "rsub" => "sub",
        "rdiv" => "div",
        "sum_dim" => "sum",
        "prod_dim" => "prod",
        "max_dim" => "max",
        "min_dim" => "min",
        "mean_dim" => "mean",
        "median_dim" => "median",
        other => other,
    }
}

/// The class name torch gives the backward node of the op recorded as `op` (what
/// `type(t.grad_fn).__name__` prints), checked against torch 2.9. Ops that gpulab composes from
/// others (mean, softmax, the losses) show their last recorded step, as a composition in
/// torch would.
fn torch_node_name(op: &'static str) -> &'static str {
    match op {
        "add" => "AddBackward0",
        "sub" => "SubBackward0",
        "rsub" => "RsubBackward1",
        "mul" | "rdiv" => "MulBackward0",
        "div" => "DivBackward0",
        "pow_scalar" => "PowBackward0",
        "pow" => "PowBackward1",
        "scalar_pow" => "PowBackward2",
        "maximum" => "MaximumBackward0",
        "minimum" => "MinimumBackward0",
        "neg" => "NegBackward0",
        "abs" => "AbsBackward0",
        "exp" => "ExpBackward0",
        "sqrt" => "SqrtBackward0",
        "relu" => "ReluBackward0",
        "log" => "LogBackward0",
        "tanh" => "TanhBackward0",
        "sigmoid" => "SigmoidBackward0",
        "sin" => "SinBackward0",
        "cos" => "CosBackward0",
        "floor" => "FloorBackward0",
        "ceil" => "CeilBackward0",
        "round" => "RoundBackward0",
        "sign" => "SignBackward0",
        "log1p" => "Log1PBackward0",
        "expm1" => "Expm1Backward0",
        "erf" => "ErfBackward0",
        "tan" => "TanBackward0",
        "asin" => "AsinBackward0",
        "acos" => "AcosBackward0",
        "atan" => "AtanBackward0",
        "sinh" => "SinhBackward0",
        "cosh" => "CoshBackward0",
        "asinh" => "AsinhBackward0",
        "acosh" => "AcoshBackward0",
        "atanh" => "AtanhBackward0",
        "atan2" => "Atan2Backward0",
        "lgamma" => "LgammaBackward0",
        "digamma" => "DigammaBackward0",
        "polygamma" => "PolygammaBackward0",
        "mvlgamma" => "MvlgammaBackward0",
        "erfc" => "ErfcBackward0",
        "erfinv" => "ErfinvBackward0",
        "zeta" => "SpecialZetaBackward0",
        "zeta_self_scalar" => "SpecialZetaBackward1",
        "zeta_other_scalar" => "SpecialZetaBackward2",
        "xlog1py" => "SpecialXlog1pyBackward0",
        "entr" => "SpecialEntrBackward0",
        "ndtr" => "SpecialNdtrBackward0",
        "logcumsumexp" => "LogcumsumexpBackward0",
        "fmod" => "FmodBackward1",
        "fmod_scalar" => "FmodBackward0",
        "remainder" => "RemainderBackward1",
        "remainder_scalar" => "RemainderBackward0",
        "sum" => "SumBackward0",
        "sum_dim" => "SumBackward1",
        "prod" => "ProdBackward0",
        "prod_dim" => "ProdBackward1",
        // torch numbers max/min the other way round: the overload with a dim came first.
        "max" => "MaxBackward1",
        "max_dim" => "MaxBackward0",
        "min" => "MinBackward1",
        "min_dim" => "MinBackward0",
        "var" => "VarBackward0",
        "cumsum" => "CumsumBackward0",
        "cumprod" => "CumprodBackward0",
        "reshape" => "ViewBackward0",
        "to" => "ToCopyBackward0",
        "transpose" => "TransposeBackward0",
        "permute" => "PermuteBackward0",
        "narrow" | "slice" => "SliceBackward0",
        "select" => "SelectBackward0",
        "expand" => "ExpandBackward0",
        "clone" | "contiguous" => "CloneBackward0",
        "mm" => "MmBackward0",
        "mv" => "MvBackward0",
        "dot" => "DotBackward0",
        // torch computes these as a 2-D product and a view of it, and names the view.
        "vm" => "SqueezeBackward4",
        "matmul" => "UnsafeViewBackward0",
        "where" => "WhereBackward0",
        "cat" => "CatBackward0",
        "flip" => "FlipBackward0",
        "index_select" => "IndexSelectBackward0",
        "index" => "IndexBackward0",
        "index_put" => "IndexPutBackward0",
        "gather" => "GatherBackward0",
        "scatter_add" => "ScatterAddBackward0",
        "norm" => "LinalgVectorNormBackward0",
        "conv2d" => "ConvolutionBackward0",
        "binary_cross_entropy" => "BinaryCrossEntropyBackward0",
        "binary_cross_entropy_with_logits" => "BinaryCrossEntropyWithLogitsBackward0",
        // Composed here, one op in torch (`relabel`).
        "mean" => "MeanBackward0",
        "mean_dim" => "MeanBackward1",
        "std" => "StdBackward0",
        "softmax" => "SoftmaxBackward0",
        "log_softmax" => "LogSoftmaxBackward0",
        "nll_loss" => "NllLossBackward0",
        "mse_loss" => "MseLossBackward0",
        "logsumexp" => "LogsumexpBackward0",
        "amax" => "AmaxBackward0",
        "amin" => "AminBackward0",
        "median" => "MedianBackward0",
        "median_dim" => "MedianBackward1",
        "kthvalue" => "KthvalueBackward0",
        "log2" => "Log2Backward0",
        "log10" => "Log10Backward0",
        "exp2" => "Exp2Backward0",
        "trunc" => "TruncBackward0",
        "frac" => "FracBackward0",
        "lerp" => "LerpBackward0",
        "addmm" => "AddmmBackward0",
        "nan_to_num" => "NanToNumBackward0",
        "logaddexp" => "LogaddexpBackward0",
        "logaddexp2" => "Logaddexp2Backward0",
        "xlogy" => "XlogyBackward0",
        "logit" => "LogitBackward0",
        "cdist" => "CdistBackward0",
        "dist" => "DistBackward0",
        "cross" => "LinalgCrossBackward0",
        "unbind" => "UnbindBackward0",
        "cummax" => "CummaxBackward0",
        "cummin" => "CumminBackward0",
        "im2col" => "Im2ColBackward0",
        "hardsigmoid" => "HardsigmoidBackward0",
        "hardswish" => "HardswishBackward0",
        "log_sigmoid" => "LogSigmoidBackward0",
        "softshrink" => "SoftshrinkBackward0",
        "hardshrink" => "HardshrinkBackward0",
        "celu" => "CeluBackward0",
        "col2im" => "Col2ImBackward0",
        "linalg_cholesky" => "LinalgCholeskyExBackward0",
        "linalg_solve" => "LinalgSolveExBackward0",
        "linalg_inv" => "LinalgInvExBackward0",
        "linalg_det" => "LinalgDetBackward0",
        "linalg_slogdet" => "LinalgSlogdetBackward0",
        other => other,
    }
}

// A tensor stays unwind-safe, as it was before autograd (user code and tests catch panics
// around tensor operators): the closures in a node only read what they captured, and the
// gradient slot is behind a Mutex, so a panic can at worst leave a gradient half accumulated,
// which the next zero_grad clears.
impl std::panic::RefUnwindSafe for Meta {}
impl std::panic::UnwindSafe for Meta {}

impl Drop for Meta {
    /// Frees the graph behind this tensor iteratively: the default recursive drop of a long
    /// chain of nodes (a loop of 20,000 ops) would overflow the stack.
    fn drop(&mut self) {
        let Some(node) = self.node.as_mut() else {
            return;
        };
        let mut stack: Vec<Arc<Meta>> = node.inputs.drain(..).flatten().map(|i| i.meta).collect();
        while let Some(m) = stack.pop() {
            // Only the last owner takes the inputs out; dropping `inner` then recurses no further.
            if let Ok(mut inner) = Arc::try_unwrap(m) {
                if let Some(n) = inner.node.as_mut() {
                    stack.extend(n.inputs.drain(..).flatten().map(|i| i.meta));
                }
            }
        }
    }
}

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// Whether operations are being recorded for `backward` on this thread (torch's
/// `torch.is_grad_enabled()`).
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}

/// Turns recording on or off for this thread; returns the previous setting.
pub fn set_grad_enabled(on: bool) -> bool {
    GRAD_ENABLED.with(|g| g.replace(on))
}

/// Runs `f` without recording operations for `backward` (torch's `with torch.no_grad():`):
/// what `f` computes does not require grad. For evaluation and for optimiser updates.
/// The setting is per thread and restored when `f` returns or panics.
pub fn no_grad<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            set_grad_enabled(self.0);
        }
    }
    let _restore = Restore(set_grad_enabled(false));
    f()
}

/// Runs `f` with operations recorded for `backward` even inside [`no_grad`] (torch's
/// `with torch.enable_grad():`); the setting is restored afterwards, also on a panic.
pub fn enable_grad<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            set_grad_enabled(self.0);
        }
    }
    let _restore = Restore(set_grad_enabled(true));
    f()
}

/// A tensor a backward rule keeps, with its storage's version at the time (torch's saved
/// tensors): an in-place write into it before `backward` would make the rule compute the
/// gradient of values the forward pass never used, so `get` refuses instead, naming the shape
/// and the versions, as torch does.
pub(crate) struct Saved {
    t: Tensor,
    version: u64,
}

impl Saved {
    pub(crate) fn new(t: &Tensor) -> Saved {
        Saved {
            t: t.detach(),
            version: t.version(),
        }
    }

    pub(crate) fn get(&self) -> Result<&Tensor> {
        let now = self.t.version();
        if now == self.version {
            return Ok(&self.t);
        }
        Err(Error::Invalid(format!(
            "one of the tensors this gradient needs (shape {:?}, {}) was modified by an \
             in-place operation after the forward pass used it: it is at version {now}, \
             expected {}. Compute the forward pass again after the write, or write into a \
             .deep_clone() (torch's clone)",
            self.t.shape(),
            self.t.dtype(),
            self.version
        )))
    }
}

/// Whether an op over `inputs` is recorded: grad mode is on and one input requires grad.
pub(crate) fn needs_grad(inputs: &[&Tensor]) -> bool {
    is_grad_enabled() && inputs.iter().any(|t| t.grad_meta().is_some())
}

/// `t` as the result of the op `name`: for a function composed of several recorded ops
/// (softmax, the losses, mean), one pass-through node on top, so that `grad_fn` names the
/// function as torch does (`NllLossBackward0`, not the last step's `MulBackward0`).
pub(crate) fn relabel(name: &'static str, t: Tensor) -> Tensor {
    if !t.requires_grad() {
        return t;
    }
    let out = t.detach();
    record(out, name, &[&t], |g| Ok(vec![Some(g.clone())]))
}

/// Attaches a node to `out`, computed by the op `name` from `inputs`, when it needs one;
/// `backward` receives the gradient of `out` and returns one gradient (or `None`) per input,
/// in any shape that broadcasts to the input's (the engine sums it back).
pub(crate) fn record(
    out: Tensor,
    name: &'static str,
    inputs: &[&Tensor],
    backward: impl Fn(&Tensor) -> Result<Vec<Option<Tensor>>> + Send + Sync + 'static,
) -> Tensor {
    if !needs_grad(inputs) || !out.dtype().is_float() {
        return out;
    }
    let inputs = inputs
        .iter()
        .map(|t| {
            t.grad_meta().map(|m| Input {
                meta: m.clone(),
                dims: t.shape().to_vec(),
                dtype: t.dtype(),
                device: t.device(),
            })
        })
        .collect();
    let meta = Arc::new(Meta {
        grad: Mutex::new(None),
        node: Some(Node {
            name,
            inputs,
            backward: Mutex::new(Some(Box::new(backward))),
        }),
        retains: AtomicBool::new(false),
    });
    out.with_grad_meta(Some(meta))
}

fn key(m: &Arc<Meta>) -> *const Meta {
    Arc::as_ptr(m)
}

/// Every meta reachable from `root`, each after all metas that feed into it.
fn topo_order(root: &Arc<Meta>) -> Vec<Arc<Meta>> {
    let mut order = Vec::new();
    let mut seen = HashSet::new();
    // (meta, inputs already pushed): a meta is emitted after its inputs, without recursion,
    // so a long chain of ops cannot overflow the stack.
    let mut stack = vec![(root.clone(), false)];
    while let Some((m, expanded)) = stack.pop() {
        if expanded {
            order.push(m);
            continue;
        }
        // Marked when expanded, not when pushed: a meta reached again later must still be
        // emitted before every meta that uses it.
        if !seen.insert(key(&m)) {
            continue;
        }
        stack.push((m.clone(), true));
        if let Some(node) = &m.node {
            for inp in node.inputs.iter().flatten() {
                if !seen.contains(&key(&inp.meta)) {
                    stack.push((inp.meta.clone(), false));
                }
            }
        }
    }
    order
}

/// Sums `g` over the dimensions that broadcasting added or stretched, so it has `dims`.
pub(crate) fn sum_to(g: &Tensor, dims: &[usize]) -> Result<Tensor> {
    if g.shape() == dims {
        return Ok(g.clone());
    }
    let mut g = g.clone();
    while g.rank() > dims.len() {
        g = g.sum_dim(0)?;
    }
    for (i, &d) in dims.iter().enumerate() {
        if d == 1 && g.shape()[i] != 1 {
            g = g.sum_keepdim(i as isize)?;
        }
    }
    g.reshape(dims)
}

fn fit(g: Tensor, inp: &Input) -> Result<Tensor> {
    let mut g = if g.shape() == inp.dims.as_slice() {
        g
    } else if g.numel() == 1 && inp.dims.iter().product::<usize>() != 1 {
        g.expand_to(&inp.dims)?
    } else {
        sum_to(&g, &inp.dims)?
    };
    if g.dtype() != inp.dtype {
        g = g.to_dtype(inp.dtype)?;
    }
    if g.device() != inp.device {
        g = g.to(inp.device)?;
    }
    Ok(g)
}

/// The backward pass from `root`, whose gradient is `seed`; each node's saved tensors are
/// freed once it has run unless `retain_graph`.
pub(crate) fn backward(root: &Tensor, seed: Tensor, retain_graph: bool) -> Result<()> {
    // The rules run in the dtypes the forward pass chose, not autocast again (a backward
    // called inside an `amp::autocast` region, as torch's gradients are).
    crate::tensor::autocast::suspended(|| backward_from(root, seed, retain_graph, None)).map(|_| ())
}

/// The gradients of `output` with respect to each of `inputs`, returned instead of added to
/// their `.grad()` (torch's `torch.autograd.grad(output, inputs)`); no leaf's `.grad()`
/// changes. `output` has one element (a loss); see [`grad_with`] for the rest. Inputs may be
/// leaves or tensors computed on the way (the gradient that reaches them). Each input must
/// require grad and be used in computing `output`. As `backward`, it frees the graph.
pub fn grad(output: &Tensor, inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
    let gs = grad_with(output, inputs, None, false, false)?;
    Ok(gs
        .into_iter()
        .map(|g| g.expect("allow_unused is off"))
        .collect())
}

/// [`grad`] with torch's arguments: `grad_output`, the gradient of a non-scalar `output`
/// (None: ones, for one element); `retain_graph`, keep what the graph saved for another pass;
/// `allow_unused`, None for an input `output` does not depend on instead of an error. (torch's
/// `create_graph=True`, gradients that are themselves differentiable, is not supported: the
/// backward pass is not recorded.)
pub fn grad_with(
    output: &Tensor,
    inputs: &[&Tensor],
    grad_output: Option<&Tensor>,
    retain_graph: bool,
    allow_unused: bool,
) -> Result<Vec<Option<Tensor>>> {
    let mut targets = Vec::with_capacity(inputs.len());
    for (i, t) in inputs.iter().enumerate() {
        let Some(m) = t.grad_meta() else {
            return Err(Error::Invalid(format!(
                "autograd.grad: input {i} (shape {:?}) does not require grad, so it has no \
                 gradient; call .requires_grad_(true) on it before computing the output",
                t.shape()
            )));
        };
        targets.push(m.clone());
    }
    let seed = match grad_output {
        Some(g) => {
            if g.device() != output.device() {
                return Err(Error::Invalid(format!(
                    "autograd.grad: grad_output is on {} but the output is on {}",
                    g.device(),
                    output.device()
                )));
            }
            g.detach().to_dtype(output.dtype())?
        }
        None if output.numel() == 1 => Tensor::full_dtype(
            output.shape().to_vec(),
            1.0,
            output.dtype(),
            output.device(),
        )?,
        None => {
            return Err(Error::Invalid(format!(
                "autograd.grad: grad can be implicitly created only for an output with one \
                 element, this one has shape {:?}; pass grad_output",
                output.shape()
            )))
        }
    };
    let found = crate::tensor::autocast::suspended(|| {
        backward_from(output, seed, retain_graph, Some(&targets))
    })?;
    found
        .into_iter()
        .enumerate()
        .map(|(i, g)| match g {
            None if !allow_unused => Err(Error::Invalid(format!(
                "autograd.grad: input {i} (shape {:?}) was not used in computing the output, \
                 so it has no gradient; pass allow_unused = true to get None for it",
                inputs[i].shape()
            ))),
            g => Ok(g),
        })
        .collect()
}

/// The backward pass from `root`. With `targets`, the gradient reaching each of those tensors
/// is returned (in their order) and no leaf's `.grad()` changes; without, leaves accumulate.
fn backward_from(
    root: &Tensor,
    seed: Tensor,
    retain_graph: bool,
    targets: Option<&[Arc<Meta>]>,
) -> Result<Vec<Option<Tensor>>> {
    let mut found: Vec<Option<Tensor>> = vec![None; targets.map_or(0, <[_]>::len)];
    let Some(root_meta) = root.grad_meta() else {
        return Err(Error::Invalid(format!(
            "backward(): this tensor (shape {:?}) does not require grad and has no grad_fn: \
             call .requires_grad_(true) on the leaf tensors you want gradients for \
             (or on a model's parameters), and compute it outside no_grad",
            root.shape()
        )));
    };
    if seed.shape() != root.shape() {
        return Err(Error::BadShape(format!(
            "backward_with: the gradient has shape {:?} but the tensor has shape {:?}",
            seed.shape(),
            root.shape()
        )));
    }
    let order = topo_order(root_meta);
    let mut grads: HashMap<*const Meta, Tensor> = HashMap::new();
    grads.insert(key(root_meta), seed);
    no_grad(|| {
        for m in order.iter().rev() {
            let Some(g) = grads.remove(&key(m)) else {
                continue;
            };
            if let Some(targets) = targets {
                for (t, slot) in targets.iter().zip(found.iter_mut()) {
                    if Arc::ptr_eq(t, m) {
                        *slot = Some(g.clone());
                    }
                }
                if m.node.is_none() {
                    continue;
                }
            } else if m.node.is_some() && m.retains_grad() {
                // A retained gradient accumulates across passes, as a leaf's does.
                let mut slot = m.grad.lock().unwrap();
                *slot = Some(match slot.take() {
                    Some(old) => old.add(&g)?,
                    None => g.clone(),
                });
            }
            let Some(node) = &m.node else {
                let mut slot = m.grad.lock().unwrap();
                *slot = Some(match slot.take() {
                    Some(old) => old.add(&g)?,
                    None => g,
                });
                continue;
            };
            let gs = {
                let mut rule = node.backward.lock().unwrap_or_else(|e| e.into_inner());
                let Some(f) = rule.as_ref() else {
                    return Err(Error::Invalid(format!(
                        "backward of {}: trying to backward through the graph a second time: \
                         the first backward freed the tensors this step saved. Compute the \
                         forward pass again, or call backward_retain_graph() (torch's \
                         retain_graph=True) the first time",
                        node.describe()
                    )));
                };
                let gs = f(&g)
                    .map_err(|e| Error::Invalid(format!("backward of {}: {e}", node.describe())))?;
                if !retain_graph {
                    *rule = None;
                }
                gs
            };
            for (inp, gi) in node.inputs.iter().zip(gs) {
                let (Some(inp), Some(gi)) = (inp, gi) else {
                    continue;
                };
                let gi = fit(gi, inp)?;
                let k = key(&inp.meta);
                let sum = match grads.remove(&k) {
                    Some(old) => old.add(&gi)?,
                    None => gi,
                };
                grads.insert(k, sum);
            }
        }
        Ok(())
    })?;
    Ok(found)
}
