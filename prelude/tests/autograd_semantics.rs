//! Autograd's torch semantics and its errors: accumulation, zero_grad, detach, no_grad,
//! leaves, backward on non-scalars, and the messages for misuse.

use gpulab::nn::{self, Module};
use gpulab::{fork_rng, no_grad, DType, Device, Tensor, F};

const CPU: Device = Device::Cpu;

fn leaf(v: Vec<f32>) -> Tensor {
    let n = v.len();
    Tensor::from_vec(v, n, CPU)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

#[test]
fn gradients_accumulate_until_zero_grad() {
    let x = leaf(vec![1.0, 2.0, 3.0]);
    for _ in 0..2 {
        x.mul(&x).unwrap().sum().unwrap().backward().unwrap();
    }
    assert_eq!(
        x.grad().unwrap().to_vec::<f32>().unwrap(),
        vec![4.0, 8.0, 12.0]
    );
    x.zero_grad();
    assert!(x.grad().is_none());
    x.sum().unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![1.0; 3]);
}

/// As in torch, backward frees what the graph saved: a second backward through it says so
/// and names the way out; with retain_graph the second run adds its gradient once more.
#[test]
fn a_second_backward_needs_retain_graph() {
    let x = leaf(vec![1.0, 2.0, 3.0]);
    let loss = x.mul(&x).unwrap().sum().unwrap();
    loss.backward().unwrap();
    let err = loss.backward().unwrap_err().to_string();
    assert!(
        err.contains("second time") && err.contains("backward_retain_graph"),
        "{err}"
    );
    // The gradient of the first pass is intact.
    assert_eq!(
        x.grad().unwrap().to_vec::<f32>().unwrap(),
        vec![2.0, 4.0, 6.0]
    );

    let y = leaf(vec![1.0, 2.0, 3.0]);
    let loss = y.mul(&y).unwrap().sum().unwrap();
    loss.backward_retain_graph().unwrap();
    loss.backward_retain_graph().unwrap();
    loss.backward().unwrap();
    assert_eq!(
        y.grad().unwrap().to_vec::<f32>().unwrap(),
        vec![6.0, 12.0, 18.0]
    );
    assert!(loss.backward().is_err());
}

#[test]
fn clones_share_the_gradient_and_detach_cuts_the_graph() {
    let x = leaf(vec![1.0, 2.0]);
    let alias = x.clone();
    let d = x.detach();
    assert!(!d.requires_grad());
    // Only the first term carries a gradient: the detached copy is a constant.
    x.mul(&d).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(
        alias.grad().unwrap().to_vec::<f32>().unwrap(),
        vec![1.0, 2.0]
    );
}

#[test]
fn no_grad_records_nothing_and_restores_the_mode() {
    let x = leaf(vec![1.0, 2.0]);
    let y = no_grad(|| x.mul(2.0).unwrap());
    assert!(!y.requires_grad());
    assert!(gpulab::is_grad_enabled());
    let z = x.mul(2.0).unwrap();
    assert!(z.requires_grad());
    assert!(!z.is_leaf());
    assert_eq!(z.grad_fn(), Some("MulBackward0"));
    assert_eq!(format!("{z:?}"), "tensor([2., 4.], grad_fn=<MulBackward0>)");
    assert_eq!(format!("{x:?}"), "tensor([1., 2.], requires_grad=True)");
    assert!(x.is_leaf());
    // A panic inside no_grad still restores grad mode.
    let _ = std::panic::catch_unwind(|| no_grad(|| panic!("inside")));
    assert!(gpulab::is_grad_enabled());
}

/// `grad_fn` names each node as torch 2.9.1 does: the names on the right are what
/// `type(t.grad_fn).__name__` printed for the same expressions in torch.
#[test]
fn grad_fn_names_are_torchs() {
    let x = Tensor::from_vec(vec![0.5f32, 1.0, 1.5, 2.0, 2.5, 3.0], (2, 3), CPU)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let v = leaf(vec![1.0, 2.0, 3.0]);
    let labels = Tensor::from_vec(vec![0i64, 2], 2, CPU).unwrap();
    let m = Tensor::ones((3, 4), CPU)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let cases: Vec<(&str, Tensor, &str)> = vec![
        ("x + x", (&x + &x), "AddBackward0"),
        ("x - 1", (&x - 1.0), "SubBackward0"),
        ("1 - x", (1.0 - &x), "RsubBackward1"),
        ("x * x", (&x * &x), "MulBackward0"),
        ("x / 2", (&x / 2.0), "DivBackward0"),
        ("2 / x", (2.0 / &x), "MulBackward0"),
        ("x ** x", x.pow(&x).unwrap(), "PowBackward1"),
        ("x ** 2", x.pow(2.0).unwrap(), "PowBackward0"),
        ("maximum", x.maximum(&x).unwrap(), "MaximumBackward0"),
        ("exp", x.exp().unwrap(), "ExpBackward0"),
        ("log1p", x.log1p().unwrap(), "Log1PBackward0"),
        ("relu", x.relu().unwrap(), "ReluBackward0"),
        ("sum", x.sum().unwrap(), "SumBackward0"),
        ("sum(0)", x.sum_dim(0).unwrap(), "SumBackward1"),
        ("max", x.max().unwrap(), "MaxBackward1"),
        ("max(0)", x.max_dim(0).unwrap(), "MaxBackward0"),
        ("prod(0)", x.prod_dim(0).unwrap(), "ProdBackward1"),
        ("var", x.var().unwrap(), "VarBackward0"),
        ("cumsum", x.cumsum(0).unwrap(), "CumsumBackward0"),
        ("reshape", x.reshape(6).unwrap(), "ViewBackward0"),
        ("t", x.transpose(0, 1).unwrap(), "TransposeBackward0"),
        ("permute", x.permute(&[1, 0]).unwrap(), "PermuteBackward0"),
        ("narrow", x.narrow(1, 0, 2).unwrap(), "SliceBackward0"),
        ("select", x.select(0, 1).unwrap(), "SelectBackward0"),
        ("expand", v.expand([2, 3]).unwrap(), "ExpandBackward0"),
        ("to", x.to_dtype(DType::F64).unwrap(), "ToCopyBackward0"),
        ("x @ m", x.matmul(&m).unwrap(), "MmBackward0"),
        ("x @ v", x.matmul(&v).unwrap(), "MvBackward0"),
        ("v @ v", v.matmul(&v).unwrap(), "DotBackward0"),
        ("v @ m", v.matmul(&m).unwrap(), "SqueezeBackward4"),
        ("cat", Tensor::cat(&[&x, &x], 0).unwrap(), "CatBackward0"),
        ("flip", x.flip(&[0]).unwrap(), "FlipBackward0"),
        // Composed here, one op in torch.
        ("mean", x.mean().unwrap(), "MeanBackward0"),
        ("mean(0)", x.mean_dim(0).unwrap(), "MeanBackward1"),
        ("std", x.std().unwrap(), "StdBackward0"),
        ("softmax", x.softmax(1).unwrap(), "SoftmaxBackward0"),
        (
            "log_softmax",
            x.log_softmax(1).unwrap(),
            "LogSoftmaxBackward0",
        ),
        (
            "cross_entropy",
            F::cross_entropy(&x, &labels).unwrap(),
            "NllLossBackward0",
        ),
        (
            "mse_loss",
            F::mse_loss(&x, &x.detach()).unwrap(),
            "MseLossBackward0",
        ),
        (
            "logsumexp",
            x.logsumexp(1, false).unwrap(),
            "LogsumexpBackward0",
        ),
        ("amax", x.amax(&[1], false).unwrap(), "AmaxBackward0"),
        ("median", x.median().unwrap(), "MedianBackward0"),
        ("median(1)", x.median_dim(1).unwrap().0, "MedianBackward1"),
        ("lerp", x.lerp(&x.detach(), 0.3).unwrap(), "LerpBackward0"),
        (
            "addmm",
            v.narrow(0, 0, 2)
                .unwrap()
                .addmm(&x, &x.t().unwrap(), 1.0, 1.0)
                .unwrap(),
            "AddmmBackward0",
        ),
        ("log2", x.log2().unwrap(), "Log2Backward0"),
    ];
    for (what, t, torch) in cases {
        assert_eq!(t.grad_fn(), Some(torch), "{what}");
    }
    assert_eq!(x.grad_fn(), None, "a leaf has no grad_fn");
}

#[test]
fn non_leaves_keep_no_grad_and_only_leaves_switch_off() {
    let x = leaf(vec![1.0, 2.0]);
    let y = x.exp().unwrap();
    y.sum().unwrap().backward().unwrap();
    assert!(y.grad().is_none(), "torch keeps grads of leaves only");
    let err = y.requires_grad_(false).unwrap_err().to_string();
    assert!(err.contains("detach"), "{err}");
    let x2 = x.requires_grad_(false).unwrap();
    assert!(!x2.requires_grad());
}

#[test]
fn in_place_writes_follow_torchs_autograd_rules() {
    let w = leaf(vec![1.0, 2.0]);
    // Into a leaf that requires grad: an error while grad mode is on, as torch.
    let e = w.add_(1.0).unwrap_err().to_string();
    assert!(
        e.contains("leaf tensor that requires grad") && e.contains("no_grad"),
        "{e}"
    );
    for r in [
        w.fill_(0.0),
        w.copy_(&Tensor::zeros(2, CPU).unwrap()),
        w.mul_(2.0),
    ] {
        assert!(r.is_err());
    }
    assert_eq!(
        w.to_vec::<f32>().unwrap(),
        vec![1.0, 2.0],
        "a refused write changed nothing"
    );
    // Under no_grad it is an update, as an optimiser's step; the gradient slot is kept.
    (&w * 3.0).sum().unwrap().backward().unwrap();
    no_grad(|| w.sub_(&(w.grad().unwrap() * 0.5))).unwrap();
    assert_eq!(w.to_vec::<f32>().unwrap(), vec![-0.5, 0.5]);
    assert_eq!(w.grad().unwrap().to_vec::<f32>().unwrap(), vec![3.0, 3.0]);
    // Into a tensor computed by a recorded op: refused, naming the op.
    let y = w.exp().unwrap();
    let e = y.add_(1.0).unwrap_err().to_string();
    assert!(
        e.contains("computed by exp") && e.contains("out-of-place"),
        "{e}"
    );
    // A detached tensor, or one that does not require grad, is written as before.
    let d = y.detach();
    d.add_(1.0).unwrap();
    let plain = Tensor::ones(2, CPU).unwrap();
    plain.add_(1.0).unwrap();
    assert_eq!(plain.to_vec::<f32>().unwrap(), vec![2.0, 2.0]);
}

#[test]
fn a_kept_tensor_written_in_place_before_backward_is_an_error() {
    // mul keeps both operands: x changed after the forward pass would give w the gradient of
    // values the forward never used. torch refuses with its version counter; so do we.
    let w = leaf(vec![1.0, 2.0]);
    let x = Tensor::from_vec(vec![3.0f32, 4.0], 2, CPU).unwrap();
    let y = w.mul(&x).unwrap().sum().unwrap();
    x.add_(1.0).unwrap();
    let e = y.backward().unwrap_err().to_string();
    assert!(e.contains("backward of mul"), "{e}");
    assert!(
        e.contains("modified by an in-place operation") && e.contains("version 1, expected 0"),
        "{e}"
    );
    assert!(w.grad().is_none(), "no gradient from a refused backward");
    // add keeps nothing, so the same write is harmless there (as in torch).
    let z = w.add(&x).unwrap().sum().unwrap();
    x.add_(1.0).unwrap();
    z.backward().unwrap();
    assert_eq!(w.grad().unwrap().to_vec::<f32>().unwrap(), vec![1.0, 1.0]);
    // exp keeps its output: a write into it (possible under no_grad) is caught too.
    let e_out = w.exp().unwrap();
    let loss = e_out.sum().unwrap();
    no_grad(|| e_out.mul_(2.0)).unwrap();
    let e = loss.backward().unwrap_err().to_string();
    assert!(e.contains("backward of exp"), "{e}");
    // A 1-D operand of matmul is kept as a reshaped view: still the same storage's version.
    let m = Tensor::ones((2, 3), CPU)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let v = Tensor::from_vec(vec![1.0f32, 2.0], 2, CPU).unwrap();
    let p = v.matmul(&m).unwrap().sum().unwrap();
    v.fill_(0.0).unwrap();
    let e = p.backward().unwrap_err().to_string();
    assert!(e.contains("backward of matmul"), "{e}");
    // Written before the forward pass, nothing is wrong.
    let v2 = Tensor::from_vec(vec![1.0f32, 2.0], 2, CPU).unwrap();
    v2.add_(1.0).unwrap();
    v2.matmul(&m).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(
        m.grad().unwrap().to_vec::<f32>().unwrap(),
        vec![2.0, 2.0, 2.0, 3.0, 3.0, 3.0]
    );
}

#[test]
fn backward_with_a_gradient_for_non_scalars() {
    let x = leaf(vec![1.0, 2.0, 3.0]);
    let y = x.mul(3.0).unwrap();
    let err = y.backward().unwrap_err().to_string();
    assert!(
        err.contains("shape [3]") && err.contains("backward_with"),
        "{err}"
    );
    let g = Tensor::from_vec(vec![1.0f32, 0.5, 0.0], 3, CPU).unwrap();
    y.backward_with(&g).unwrap();
    assert_eq!(
        x.grad().unwrap().to_vec::<f32>().unwrap(),
        vec![3.0, 1.5, 0.0]
    );
    let bad = Tensor::from_vec(vec![1.0f32, 2.0], 2, CPU).unwrap();
    let err = y.backward_with(&bad).unwrap_err().to_string();
    assert!(err.contains("[2]") && err.contains("[3]"), "{err}");
}

#[test]
fn backward_without_requires_grad_says_what_to_do() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0], 2, CPU).unwrap();
    let err = x.sum().unwrap().backward().unwrap_err().to_string();
    assert!(
        err.contains("does not require grad") && err.contains("requires_grad_(true)"),
        "{err}"
    );
}

#[test]
fn integer_tensors_cannot_require_grad() {
    let x = Tensor::from_vec(vec![1i64, 2], 2, CPU).unwrap();
    let err = x.requires_grad_(true).unwrap_err().to_string();
    assert!(
        err.contains("floating-point") && err.contains("int64"),
        "{err}"
    );
}

#[test]
fn a_long_chain_does_not_overflow_the_stack() {
    let x = leaf(vec![1.0]);
    let mut y = x.clone();
    for _ in 0..20_000 {
        y = y.add(1.0).unwrap();
    }
    y.sum().unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![1.0]);
    // Dropping a long graph must not overflow either (it is freed node by node).
    drop(y);
}

#[test]
fn linear_names_expected_and_got_shapes() {
    let l = nn::Linear::new(3, 2);
    let err = l
        .forward(&Tensor::zeros((4, 5), CPU).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Linear(in_features=3, out_features=2")
            && err.contains("[..., 3]")
            && err.contains("[4, 5]"),
        "{err}"
    );
}

#[test]
fn conv2d_names_expected_and_got_shapes() {
    let c = nn::Conv2d::new(3, 8, 3);
    let err = c
        .forward(&Tensor::zeros((2, 1, 8, 8), CPU).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Conv2d(3, 8") && err.contains("[N, 3, H, W]") && err.contains("[2, 1, 8, 8]"),
        "{err}"
    );
    // An unbatched image [3, 8, 8] is torch's [C, H, W]; a plane alone is not.
    let err = c
        .forward(&Tensor::zeros((8, 8), CPU).unwrap())
        .unwrap_err()
        .to_string();
    assert!(err.contains("[8, 8]"), "{err}");
    assert_eq!(
        c.forward(&Tensor::zeros((3, 8, 8), CPU).unwrap())
            .unwrap()
            .shape(),
        [8, 6, 6]
    );
    let small = Tensor::zeros((1, 3, 2, 2), CPU).unwrap();
    let err = c.forward(&small).unwrap_err().to_string();
    assert!(err.contains("smaller than the kernel"), "{err}");
}

#[test]
fn cross_entropy_names_the_bad_label_and_the_class_count() {
    let logits = Tensor::zeros((3, 4), CPU).unwrap();
    let labels = Tensor::from_vec(vec![0i64, 7, 1], 3, CPU).unwrap();
    let err = F::cross_entropy(&logits, &labels).unwrap_err().to_string();
    assert!(
        err.contains("target 7") && err.contains("position 1") && err.contains("4 classes"),
        "{err}"
    );
    let neg = Tensor::from_vec(vec![0i64, -1, 1], 3, CPU).unwrap();
    let err = F::cross_entropy(&logits, &neg).unwrap_err().to_string();
    assert!(err.contains("target -1"), "{err}");
    let float = Tensor::from_vec(vec![0.0f32, 1.0, 1.0], 3, CPU).unwrap();
    let err = F::cross_entropy(&logits, &float).unwrap_err().to_string();
    assert!(
        err.contains("class indices") && err.contains("float32"),
        "{err}"
    );
    let short = Tensor::from_vec(vec![0i64, 1], 2, CPU).unwrap();
    let err = F::cross_entropy(&logits, &short).unwrap_err().to_string();
    assert!(err.contains("[3]") && err.contains("[2]"), "{err}");
}

#[test]
fn cross_entropy_is_stable_for_huge_logits() {
    let logits = Tensor::from_vec(vec![1000.0f32, 0.0, -1000.0, 0.0], (2, 2), CPU).unwrap();
    let labels = Tensor::from_vec(vec![0i64, 0], 2, CPU).unwrap();
    let l = F::cross_entropy(&logits, &labels)
        .unwrap()
        .item::<f32>()
        .unwrap();
    // Row 0 is certain and right (loss 0); row 1 is certain and wrong (loss 1000).
    assert!((l - 500.0).abs() < 1e-3, "{l}");
    let p = logits.softmax(1).unwrap().to_vec::<f32>().unwrap();
    assert!(p.iter().all(|v| v.is_finite()), "{p:?}");
}

#[test]
fn losses_check_shapes_and_dropout_its_probability() {
    let a = Tensor::zeros((2, 3), CPU).unwrap();
    let b = Tensor::zeros((3, 2), CPU).unwrap();
    let err = F::mse_loss(&a, &b).unwrap_err().to_string();
    assert!(err.contains("mse_loss") && err.contains("[2, 3]"), "{err}");
    let err = F::dropout(&a, 1.5, true).unwrap_err().to_string();
    assert!(err.contains("1.5"), "{err}");
}

#[test]
fn dropout_keeps_the_expectation_and_is_identity_in_eval() {
    fork_rng(3, || {
        let x = Tensor::ones(10_000, CPU).unwrap();
        let y = F::dropout(&x, 0.25, true).unwrap().to_vec::<f32>().unwrap();
        let zeros = y.iter().filter(|v| **v == 0.0).count();
        assert!(
            (2200..2800).contains(&zeros),
            "{zeros} of 10000 dropped at p = 0.25"
        );
        assert!(y.iter().all(|v| *v == 0.0 || (*v - 4.0 / 3.0).abs() < 1e-6));
        let mut d = nn::Dropout::new(0.25);
        d.eval();
        assert_eq!(
            d.forward(&x).unwrap().to_vec::<f32>().unwrap(),
            vec![1.0; 10_000]
        );
    })
}

#[test]
fn module_to_dtype_and_the_summary() {
    let model = nn::Sequential::new()
        .add(nn::Conv2d::new(1, 4, 3))
        .add(nn::ReLU)
        .add(nn::MaxPool2d::new(2))
        .add(nn::Flatten)
        .add(nn::Linear::new(4 * 3 * 3, 10));
    assert_eq!(model.num_parameters(), 4 * 9 + 4 + 36 * 10 + 10);
    let s = model.summary_for((1, 1, 8, 8)).to_string();
    assert!(
        s.contains("[1, 4, 6, 6]") && s.contains("[1, 4, 3, 3]") && s.contains("[1, 36]"),
        "{s}"
    );
    assert!(
        s.contains("[1, 10]") && s.contains("Total params: 410"),
        "{s}"
    );
    let plain = model.summary().to_string();
    assert!(
        plain.contains("Linear(in_features=36, out_features=10, bias=True)"),
        "{plain}"
    );
    let text = format!("{model:?}");
    assert!(
        text.starts_with("Sequential(\n  (0): Conv2d(1, 4, kernel_size=(3, 3)"),
        "{text}"
    );
    model.to_dtype(DType::F64).unwrap();
    assert!(model
        .parameters()
        .iter()
        .all(|p| p.tensor().dtype() == DType::F64));
}

#[test]
fn init_follows_torch_bounds() {
    fork_rng(0, || {
        let l = nn::Linear::new(100, 50);
        let w = l.weight.tensor().to_vec::<f32>().unwrap();
        let bound = 0.1f32; // 1/sqrt(100)
        assert!(w.iter().all(|v| v.abs() <= bound));
        // Spread over the whole interval, not a constant.
        let max = w.iter().cloned().fold(0.0f32, |a, b| a.max(b.abs()));
        assert!(max > 0.09, "{max}");
        let b = l.bias.as_ref().unwrap().tensor().to_vec::<f32>().unwrap();
        assert!(b.iter().all(|v| v.abs() <= bound));
        // Seeded: the same seed gives the same weights.
        gpulab::manual_seed(0);
        let again = nn::Linear::new(100, 50)
            .weight
            .tensor()
            .to_vec::<f32>()
            .unwrap();
        assert_eq!(w, again);
    })
}

mod common;

/// maximum / minimum split ties, clamp passes the bound, max() shares, max(dim) picks the
/// first extreme, NaNs as torch: the table in `common/ties.rs`.
#[test]
fn element_picking_gradients_follow_torch_at_ties_and_nans() {
    common::ties::check_on(CPU);
}
