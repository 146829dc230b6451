//! The losses, `one_hot`, `normalize`, `cosine_similarity` and gradient clipping beyond what
//! the parity harness compares with torch value by value: edge cases and every error.
use gpulab::nn::utils::{clip_grad_norm_, clip_grad_value_};
use gpulab::nn::{self, Module, Parameter};
use gpulab::{DType, Device, Tensor, F};

const CPU: Device = Device::Cpu;

fn t(v: Vec<f32>, shape: &[usize]) -> Tensor {
    Tensor::from_vec(v, shape, CPU).unwrap()
}

#[test]
fn losses_agree_with_their_definitions_and_refuse_bad_input() {
    let x = t(vec![0.0, 2.0, -1.0, 0.5], &[4]);
    let y = t(vec![0.5, 0.0, -1.0, 3.0], &[4]);
    // |d| = 0.5, 2, 0, 2.5
    let l1 = F::l1_loss(&x, &y).unwrap().item::<f32>().unwrap();
    assert_eq!(l1, 5.0 / 4.0);
    let s = F::smooth_l1_loss(&x, &y, 1.0)
        .unwrap()
        .item::<f32>()
        .unwrap();
    assert_eq!(s, (0.125 + 1.5 + 0.0 + 2.0) / 4.0);
    let h = F::huber_loss(&x, &y, 1.0).unwrap().item::<f32>().unwrap();
    assert_eq!(h, s, "huber with delta 1 is smooth_l1 with beta 1");
    assert_eq!(
        F::smooth_l1_loss(&x, &y, 0.0)
            .unwrap()
            .item::<f32>()
            .unwrap(),
        l1
    );
    let e = F::huber_loss(&x, &y, 0.0).unwrap_err().to_string();
    assert!(
        e.contains("huber_loss: delta must be positive, got 0"),
        "{e}"
    );
    let e = F::smooth_l1_loss(&x, &y, -1.0).unwrap_err().to_string();
    assert!(e.contains("beta must be 0 or more"), "{e}");
    let e = F::l1_loss(&x, &t(vec![1.0; 3], &[3]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("l1_loss") && e.contains("[4]") && e.contains("[3]"),
        "{e}"
    );

    // nll_loss of log_softmax is cross_entropy.
    let logits = t(vec![1.0, 2.0, 0.5, -1.0, 0.0, 3.0], &[2, 3]);
    let labels = Tensor::from_vec(vec![1i64, 2], 2, CPU).unwrap();
    let ce = F::cross_entropy(&logits, &labels)
        .unwrap()
        .item::<f32>()
        .unwrap();
    let nll = F::nll_loss(&logits.log_softmax(1).unwrap(), &labels)
        .unwrap()
        .item::<f32>()
        .unwrap();
    assert_eq!(ce, nll);
    let e = F::nll_loss(&logits, &Tensor::from_vec(vec![1i64, 3], 2, CPU).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("nll_loss: target 3") && e.contains("3 classes"),
        "{e}"
    );
    // A [C] input is one unbatched sample, as in torch: its target is one 0-d label.
    let e = F::nll_loss(&x, &labels).unwrap_err().to_string();
    assert!(e.contains("nll_loss: expected targets of shape []"), "{e}");
    let scalar = Tensor::from_vec(vec![1.0f32], (), CPU).unwrap();
    let e = F::nll_loss(&scalar, &labels).unwrap_err().to_string();
    assert!(
        e.contains("nll_loss: expected an input of shape [C], [N, C] or [N, C, d1, ...]"),
        "{e}"
    );

    // Probabilities at 0 and 1 give a finite loss (the logs are clamped at -100).
    let p = t(vec![0.0, 1.0, 0.5], &[3]);
    let l = F::binary_cross_entropy(&p, &t(vec![1.0, 0.0, 1.0], &[3]))
        .unwrap()
        .item::<f32>()
        .unwrap();
    assert!(
        (l - (100.0 + 100.0 + std::f32::consts::LN_2) / 3.0).abs() < 1e-4,
        "{l}"
    );
    let e = F::binary_cross_entropy(&t(vec![0.5, 1.5, f32::NAN], &[3]), &p)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("2 of 3 are not") && e.contains("binary_cross_entropy_with_logits"),
        "{e}"
    );
}

#[test]
fn one_hot_normalize_and_cosine_similarity() {
    let labels = Tensor::from_vec(vec![2i64, 0, 1, 2], (2, 2), CPU).unwrap();
    let h = F::one_hot(&labels, None).unwrap();
    assert_eq!((h.shape(), h.dtype()), (&[2, 2, 3][..], DType::I64));
    assert_eq!(
        h.to_vec::<i64>().unwrap(),
        [0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1]
    );
    assert_eq!(F::one_hot(&labels, Some(5)).unwrap().shape(), [2, 2, 5]);
    for (bad, want) in [
        (
            F::one_hot(&labels, Some(2)),
            "label 2 is out of range for 2 classes",
        ),
        (
            F::one_hot(&Tensor::from_vec(vec![-1i64], 1, CPU).unwrap(), None),
            "must not be negative, got -1",
        ),
        (
            F::one_hot(&labels.to_dtype(DType::I32).unwrap(), None),
            "must be an int64 tensor",
        ),
        (
            F::one_hot(&Tensor::zeros_dtype([0], DType::I64, CPU).unwrap(), None),
            "cannot infer the number of classes",
        ),
    ] {
        let e = bad.unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    }

    // A zero row stays zero, and its gradient is finite (torch's norm gradient is 0 there).
    let x = t(vec![3.0, 4.0, 0.0, 0.0], &[2, 2])
        .requires_grad_(true)
        .unwrap();
    let n = F::normalize(&x, 1).unwrap();
    assert_eq!(n.to_vec::<f32>().unwrap(), [0.6, 0.8, 0.0, 0.0]);
    n.sum().unwrap().backward().unwrap();
    assert!(x
        .grad()
        .unwrap()
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .all(|g| g.is_finite()));

    // Every pair of rows, by broadcasting; a vector with itself is 1, opposite -1.
    let a = t(vec![1.0, 0.0, 0.0, 2.0], &[2, 2]);
    let b = t(vec![-3.0, 0.0, 1.0, 1.0, 0.0, 5.0], &[3, 2]);
    let c = F::cosine_similarity(&a.unsqueeze(1).unwrap(), &b.unsqueeze(0).unwrap(), 2).unwrap();
    assert_eq!(c.shape(), [2, 3]);
    let c = c.to_vec::<f32>().unwrap();
    let r = std::f32::consts::FRAC_1_SQRT_2;
    for (got, want) in c.iter().zip([-1.0, r, 0.0, 0.0, r, 1.0]) {
        assert!((got - want).abs() < 1e-6, "{c:?}");
    }
    let e = F::cosine_similarity(&a, &b, 1).unwrap_err().to_string();
    assert!(
        e.contains("cosine_similarity") && e.contains("[2, 2]") && e.contains("[3, 2]"),
        "{e}"
    );
}

#[test]
fn clipping_scales_or_clamps_the_gradients_it_finds() {
    let p1 = Parameter::new(t(vec![1.0, 2.0], &[2])).unwrap();
    let p2 = Parameter::new(t(vec![0.0; 3], &[3])).unwrap();
    let p3 = Parameter::new(t(vec![5.0], &[1])).unwrap(); // never gets a gradient
                                                          // Gradients (3, 4) and (0, 0, 12): joint norm 13.
    p1.tensor()
        .mul(&t(vec![3.0, 4.0], &[2]))
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    p2.tensor()
        .mul(&t(vec![0.0, 0.0, 12.0], &[3]))
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    let params = [p1.clone(), p2.clone(), p3.clone()];
    let norm = clip_grad_norm_(&params, 100.0)
        .unwrap()
        .item::<f32>()
        .unwrap();
    assert_eq!(norm, 13.0);
    assert_eq!(
        p1.grad().unwrap().to_vec::<f32>().unwrap(),
        [3.0, 4.0],
        "under the cap: kept"
    );
    let norm = clip_grad_norm_(&params, 6.5)
        .unwrap()
        .item::<f32>()
        .unwrap();
    assert_eq!(norm, 13.0, "the norm before clipping is returned");
    let g: Vec<f32> = [&p1, &p2]
        .iter()
        .flat_map(|p| p.grad().unwrap().to_vec::<f32>().unwrap())
        .collect();
    for (got, want) in g.iter().zip([1.5, 2.0, 0.0, 0.0, 6.0]) {
        assert!((got - want).abs() < 1e-5, "{g:?}");
    }
    assert!(p3.grad().is_none());
    clip_grad_value_(&params, 1.75).unwrap();
    assert_eq!(
        p2.grad().unwrap().to_vec::<f32>().unwrap(),
        [0.0, 0.0, 1.75]
    );
    // 1.5 was 6.5 / (13 + 1e-6) * 3, a hair under 1.5 (torch's 1e-6 too); 2.0 is clamped.
    let g1 = p1.grad().unwrap().to_vec::<f32>().unwrap();
    assert!((g1[0] - 1.5).abs() < 1e-5 && g1[1] == 1.75, "{g1:?}");
    // No gradients at all: a zero norm, nothing to do.
    let fresh = nn::Linear::new(2, 2);
    let n = clip_grad_norm_(&fresh.parameters(), 1.0).unwrap();
    assert_eq!(n.item::<f32>().unwrap(), 0.0);
}

#[test]
fn loss_modules_reduce_as_torch_says_and_keep_the_functions_errors() {
    use nn::Reduction;
    let x = t(vec![0.0, 2.0, -1.0, 0.5, 1.5, -0.5], &[2, 3]);
    let y = t(vec![0.5, 0.0, -1.0, 3.0, 1.0, 0.0], &[2, 3]);
    let labels = Tensor::from_vec(vec![2i64, 0], 2, CPU).unwrap();
    let probs = x.sigmoid().unwrap();
    let targets01 = t(vec![1.0, 0.0, 1.0, 0.0, 0.5, 1.0], &[2, 3]);
    // (module forward at a reduction, the number of values it reduces, their shape unreduced)
    type Forward<'a> = Box<dyn Fn(Reduction) -> Tensor + 'a>;
    let cases: Vec<(&str, Forward, usize, Vec<usize>)> = vec![
        (
            "MSELoss",
            Box::new(|r| nn::MSELoss::new().reduction(r).forward(&x, &y).unwrap()),
            6,
            vec![2, 3],
        ),
        (
            "L1Loss",
            Box::new(|r| nn::L1Loss::new().reduction(r).forward(&x, &y).unwrap()),
            6,
            vec![2, 3],
        ),
        (
            "SmoothL1Loss",
            Box::new(|r| {
                nn::SmoothL1Loss::new()
                    .beta(0.5)
                    .reduction(r)
                    .forward(&x, &y)
                    .unwrap()
            }),
            6,
            vec![2, 3],
        ),
        (
            "HuberLoss",
            Box::new(|r| {
                nn::HuberLoss::new()
                    .delta(0.5)
                    .reduction(r)
                    .forward(&x, &y)
                    .unwrap()
            }),
            6,
            vec![2, 3],
        ),
        (
            "BCEWithLogitsLoss",
            Box::new(|r| {
                nn::BCEWithLogitsLoss::new()
                    .reduction(r)
                    .forward(&x, &targets01)
                    .unwrap()
            }),
            6,
            vec![2, 3],
        ),
        (
            "BCELoss",
            Box::new(|r| {
                nn::BCELoss::new()
                    .reduction(r)
                    .forward(&probs, &targets01)
                    .unwrap()
            }),
            6,
            vec![2, 3],
        ),
        (
            "CrossEntropyLoss",
            Box::new(|r| {
                nn::CrossEntropyLoss::new()
                    .reduction(r)
                    .forward(&x, &labels)
                    .unwrap()
            }),
            2,
            vec![2],
        ),
        (
            "NLLLoss",
            Box::new(|r| {
                nn::NLLLoss::new()
                    .reduction(r)
                    .forward(&x, &labels)
                    .unwrap()
            }),
            2,
            vec![2],
        ),
    ];
    for (name, forward, n, shape) in &cases {
        let none = forward(Reduction::None);
        assert_eq!(none.shape(), &shape[..], "{name}");
        let each = none.to_vec::<f32>().unwrap();
        let sum = forward(Reduction::Sum).item::<f32>().unwrap();
        let mean = forward(Reduction::Mean).item::<f32>().unwrap();
        let total: f32 = each.iter().sum();
        assert!((sum - total).abs() < 1e-5, "{name}: sum {sum} vs {total}");
        assert!(
            (mean - total / *n as f32).abs() < 1e-6,
            "{name}: mean {mean}"
        );
        // The default reduction is the mean, and it is what F's function gives.
        assert_eq!(Reduction::default(), Reduction::Mean);
    }
    assert_eq!(
        nn::CrossEntropyLoss::new()
            .forward(&x, &labels)
            .unwrap()
            .item::<f32>()
            .unwrap(),
        F::cross_entropy(&x, &labels)
            .unwrap()
            .item::<f32>()
            .unwrap()
    );
    // NLLLoss unreduced is minus the picked log-probabilities.
    let picked = nn::NLLLoss::new()
        .reduction(Reduction::None)
        .forward(&x, &labels)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(picked, vec![1.0, -0.5]);

    // Gradients: a sum's is n times a mean's (closed-form rules included), and an unreduced
    // loss takes a gradient per element.
    type Make<'a> = Box<dyn Fn(&Tensor, Reduction) -> Tensor + 'a>;
    let rules: Vec<(&str, Make, Tensor)> = vec![
        (
            "BCEWithLogitsLoss",
            Box::new(|p, r| {
                nn::BCEWithLogitsLoss::new()
                    .reduction(r)
                    .forward(p, &targets01)
                    .unwrap()
            }),
            x.clone(),
        ),
        (
            "BCELoss",
            Box::new(|p, r| {
                nn::BCELoss::new()
                    .reduction(r)
                    .forward(p, &targets01)
                    .unwrap()
            }),
            probs.detach(),
        ),
        (
            "MSELoss",
            Box::new(|p, r| nn::MSELoss::new().reduction(r).forward(p, &y).unwrap()),
            x.clone(),
        ),
    ];
    for (name, make, at) in &rules {
        let grad = |r: Reduction| {
            let p = at.detach().requires_grad_(true).unwrap();
            let out = make(&p, r);
            let out = if r == Reduction::None {
                out.sum().unwrap()
            } else {
                out
            };
            out.backward().unwrap();
            p.grad().unwrap().to_vec::<f32>().unwrap()
        };
        let (gm, gs, gn) = (
            grad(Reduction::Mean),
            grad(Reduction::Sum),
            grad(Reduction::None),
        );
        for i in 0..6 {
            assert!(
                (gs[i] - 6.0 * gm[i]).abs() < 1e-5,
                "{name} {i}: {} vs {}",
                gs[i],
                6.0 * gm[i]
            );
            assert!((gs[i] - gn[i]).abs() < 1e-6, "{name} {i}");
        }
    }

    // The functions' checks still apply, with their names.
    let e = nn::MSELoss::new()
        .reduction(Reduction::Sum)
        .forward(&x, &t(vec![0.0; 4], &[4]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("mse_loss") && e.contains("[2, 3]") && e.contains("[4]"),
        "{e}"
    );
    let e = nn::CrossEntropyLoss::new()
        .reduction(Reduction::None)
        .forward(&x, &Tensor::from_vec(vec![3i64, 0], 2, CPU).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("cross_entropy") && e.contains('3'), "{e}");
    let e = nn::HuberLoss::new()
        .delta(0.0)
        .forward(&x, &y)
        .unwrap_err()
        .to_string();
    assert!(e.contains("delta must be positive"), "{e}");
}

/// The class-loss modules carry torch's options to the functions: label smoothing, class
/// weights and the ignored index (values against torch are in bench/torch_parity.py).
#[test]
fn class_loss_modules_take_torchs_options() {
    let logits = Tensor::from_vec(vec![1.0f32, -0.5, 2.0, 0.25, 0.0, -1.0], (2, 3), CPU).unwrap();
    let weight = Tensor::from_vec(vec![0.5f32, 2.0, 1.0], 3, CPU).unwrap();
    let labels = Tensor::from_vec(vec![2i64, -100], 2, CPU).unwrap();
    let module = nn::CrossEntropyLoss::new()
        .weight(weight.clone())
        .label_smoothing(0.1);
    let opts = F::ClassLossOptions {
        weight: Some(weight),
        label_smoothing: 0.1,
        ..Default::default()
    };
    let a = module
        .forward(&logits, &labels)
        .unwrap()
        .item::<f32>()
        .unwrap();
    let b = F::cross_entropy_with(&logits, &labels, &opts)
        .unwrap()
        .item::<f32>()
        .unwrap();
    assert_eq!(a, b);
    // Only the first row counts: its weighted, smoothed loss divided by its weight.
    let logp = logits.log_softmax(1).unwrap().to_vec2::<f32>().unwrap();
    let w = [0.5f32, 2.0, 1.0];
    let smooth: f32 = -(0..3).map(|c| w[c] * logp[0][c]).sum::<f32>();
    let want = (0.9 * -logp[0][2] * 1.0 + 0.1 / 3.0 * smooth) / 1.0;
    assert!((a - want).abs() < 1e-6, "{a} vs {want}");
    // Another ignored index makes -100 an out-of-range label again.
    let e = nn::NLLLoss::new()
        .ignore_index(0)
        .forward(&logits, &labels)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("target -100") && e.contains("ignore_index, 0"),
        "{e}"
    );
}

/// KLDivLoss is `F::kl_div` with torch's defaults; an unknown reduction is an error naming
/// the ones there are. (Values and gradients against torch: torch_parity's `more kl_div*`.)
#[test]
fn kl_div_loss_is_the_function_with_torchs_defaults() {
    use gpulab::nn::{KLDivLoss, Reduction};
    let logp = Tensor::from_vec(vec![-1.0f64, -2.0, -0.5, -0.3], (2, 2), Device::Cpu).unwrap();
    let p = Tensor::from_vec(vec![0.0f64, 1.0, 0.25, 0.75], (2, 2), Device::Cpu).unwrap();
    let per = F::kl_div(&logp, &p, "none", false)
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    // 0 log 0 is 0; 1 (log 1 + 2) = 2; ...
    assert_eq!(per[0], 0.0);
    assert!((per[1] - 2.0).abs() < 1e-12);
    let total: f64 = per.iter().sum();
    let batchmean = KLDivLoss::new()
        .reduction("batchmean")
        .forward(&logp, &p)
        .unwrap();
    assert!((batchmean.item::<f64>().unwrap() - total / 2.0).abs() < 1e-12);
    let mean = KLDivLoss::new().forward(&logp, &p).unwrap();
    assert!((mean.item::<f64>().unwrap() - total / 4.0).abs() < 1e-12);
    let sum = KLDivLoss::new()
        .reduction(Reduction::Sum)
        .forward(&logp, &p)
        .unwrap();
    assert!((sum.item::<f64>().unwrap() - total).abs() < 1e-12);
    let e = KLDivLoss::new()
        .reduction("avg")
        .forward(&logp, &p)
        .unwrap_err();
    assert!(
        e.to_string().contains("\"avg\"") && e.to_string().contains("batchmean"),
        "{e}"
    );
}
