//! Every differentiable op and layer against central finite differences, in f64 on the CPU.
//!
//! `check` turns the function under test into a scalar `sum(f(inputs) * w)` with fixed,
//! irregular weights `w` (so a wrong gradient cannot hide behind a uniform upstream
//! gradient), runs `backward`, and compares each input's gradient with
//! `(L(x + h) - L(x - h)) / 2h`, h = 1e-6, within 1e-6 + 1e-5 * |numeric|.
//! Inputs stay away from the kinks of relu/abs/max so the derivative exists.

use gpulab::nn::{self, Module};
use gpulab::{fork_rng, no_grad, DType, Device, Tensor, F};

mod common;

const CPU: Device = Device::Cpu;
type R<T> = gpulab::error::Result<T>;

/// Deterministic values in ±(0.1 .. 1.1): never near 0, rarely tied.
fn vals(n: usize, salt: u64) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let h = (i as u64 + 1)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(salt.wrapping_mul(0xBF58_476D_1CE4_E5B9));
            let h = (h ^ (h >> 29)).wrapping_mul(0x94D0_49BB_1331_11EB);
            let u = (h >> 11) as f64 / (1u64 << 53) as f64; // [0, 1)
            let mag = 0.1 + u;
            if (h >> 7) & 1 == 0 {
                mag
            } else {
                -mag
            }
        })
        .collect()
}

fn input(shape: &[usize], salt: u64) -> Tensor {
    let n = shape.iter().product();
    Tensor::from_vec(vals(n, salt), shape, CPU)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn positive(shape: &[usize], salt: u64) -> Tensor {
    let n = shape.iter().product();
    let v: Vec<f64> = vals(n, salt).iter().map(|x| x.abs() + 0.2).collect();
    Tensor::from_vec(v, shape, CPU)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn loss_of(f: &dyn Fn(&[Tensor]) -> R<Tensor>, xs: &[Tensor]) -> R<Tensor> {
    let y = f(xs)?;
    let w = Tensor::from_vec(vals(y.numel(), 999), y.shape(), CPU)?;
    y.mul(&w)?.sum()
}

#[track_caller]
fn check(name: &str, inputs: Vec<Tensor>, f: impl Fn(&[Tensor]) -> R<Tensor>) {
    for x in &inputs {
        x.zero_grad();
    }
    let loss = loss_of(&f, &inputs).unwrap_or_else(|e| panic!("{name}: forward: {e}"));
    assert_eq!(loss.dtype(), DType::F64, "{name}: the check runs in f64");
    loss.backward()
        .unwrap_or_else(|e| panic!("{name}: backward: {e}"));
    let h = 1e-6;
    for (k, x) in inputs.iter().enumerate() {
        let analytic = x
            .grad()
            .unwrap_or_else(|| panic!("{name}: input {k} got no gradient"));
        assert_eq!(
            analytic.shape(),
            x.shape(),
            "{name}: grad shape of input {k}"
        );
        let analytic = analytic.to_vec::<f64>().unwrap();
        let base = x.to_vec::<f64>().unwrap();
        for j in 0..base.len() {
            let at = |delta: f64| -> f64 {
                let mut v = base.clone();
                v[j] += delta;
                let mut xs = inputs.clone();
                xs[k] = Tensor::from_vec(v, x.shape(), CPU).unwrap();
                no_grad(|| loss_of(&f, &xs).unwrap().item::<f64>().unwrap())
            };
            let numeric = (at(h) - at(-h)) / (2.0 * h);
            let a = analytic[j];
            assert!(
                (a - numeric).abs() <= 1e-6 + 1e-5 * numeric.abs(),
                "{name}: d/d input{k}[{j}]: autograd {a}, finite differences {numeric}"
            );
        }
    }
}

#[test]
fn elementwise_binary_ops_with_broadcasting() {
    check("add", vec![input(&[2, 3], 1), input(&[3], 2)], |x| {
        x[0].add(&x[1])
    });
    check("sub", vec![input(&[2, 3], 3), input(&[2, 1], 4)], |x| {
        x[0].sub(&x[1])
    });
    check("mul", vec![input(&[2, 1, 3], 5), input(&[4, 1], 6)], |x| {
        x[0].mul(&x[1])
    });
    check("div", vec![input(&[2, 3], 7), positive(&[3], 8)], |x| {
        x[0].div(&x[1])
    });
    check(
        "maximum",
        vec![input(&[2, 3], 9), input(&[2, 3], 10)],
        |x| x[0].maximum(&x[1]),
    );
    check(
        "minimum",
        vec![input(&[2, 3], 11), input(&[1, 3], 12)],
        |x| x[0].minimum(&x[1]),
    );
    check(
        "pow",
        vec![positive(&[2, 3], 13), input(&[2, 3], 14)],
        |x| x[0].pow(&x[1]),
    );
    check("atan2", vec![input(&[2, 3], 17), input(&[3], 18)], |x| {
        x[0].atan2(&x[1])
    });
    check(
        "fmod",
        vec![input(&[2, 3], 11), positive(&[2, 3], 12)],
        |x| x[0].fmod(&x[1].mul(0.3)?),
    );
    check(
        "remainder",
        vec![input(&[2, 3], 9), positive(&[2, 3], 10)],
        |x| x[0].remainder(&x[1].mul(-0.3)?),
    );
    check("operators", vec![input(&[3], 15), input(&[3], 16)], |x| {
        Ok(&(&x[0] * &x[1]) - &(&x[0] / 2.0))
    });
}

#[test]
fn scalar_ops() {
    check("add scalar", vec![input(&[4], 20)], |x| x[0].add(1.5));
    check("sub scalar", vec![input(&[4], 21)], |x| x[0].sub(0.5));
    check("scalar - x", vec![input(&[4], 22)], |x| Ok(2.0f32 - &x[0]));
    check("mul scalar", vec![input(&[4], 23)], |x| x[0].mul(-3.0));
    check("div scalar", vec![input(&[4], 24)], |x| x[0].div(4.0));
    check("scalar / x", vec![positive(&[4], 25)], |x| {
        Ok(2.0f32 / &x[0])
    });
    check("pow scalar", vec![positive(&[4], 26)], |x| x[0].pow(2.5));
    check("maximum scalar", vec![input(&[6], 27)], |x| {
        x[0].maximum(0.0)
    });
    check("minimum scalar", vec![input(&[6], 28)], |x| {
        x[0].minimum(0.05)
    });
    check("fmod scalar", vec![input(&[6], 29)], |x| x[0].fmod(0.3));
    check("remainder scalar", vec![input(&[6], 19)], |x| {
        x[0].remainder(-0.3)
    });
}

#[test]
fn unary_ops() {
    check("neg", vec![input(&[5], 30)], |x| x[0].neg());
    check("abs", vec![input(&[5], 31)], |x| x[0].abs());
    check("exp", vec![input(&[5], 32)], |x| x[0].exp());
    check("log", vec![positive(&[5], 33)], |x| x[0].log());
    check("sqrt", vec![positive(&[5], 34)], |x| x[0].sqrt());
    check("tanh", vec![input(&[5], 35)], |x| x[0].tanh());
    check("sigmoid", vec![input(&[5], 36)], |x| x[0].sigmoid());
    check("sin", vec![input(&[5], 37)], |x| x[0].sin());
    check("cos", vec![input(&[5], 38)], |x| x[0].cos());
    check("relu", vec![input(&[8], 37)], |x| x[0].relu());
    check("log1p", vec![positive(&[5], 39)], |x| x[0].log1p());
    check("expm1", vec![input(&[5], 30)], |x| x[0].expm1());
    // The composed conveniences, through their parts' rules.
    check("softplus", vec![input(&[5], 31)], |x| x[0].softplus());
    check("erf", vec![input(&[5], 43)], |x| x[0].erf());
    check("erfc", vec![input(&[5], 54)], |x| x[0].erfc());
    check("erfinv", vec![input(&[5], 55)], |x| x[0].mul(0.8)?.erfinv());
    // The gamma family, on both sides of 0 (away from the poles) and above 1.
    check("lgamma", vec![input(&[5], 56)], |x| x[0].lgamma());
    check("digamma", vec![input(&[5], 57)], |x| x[0].digamma());
    check("polygamma(1)", vec![positive(&[5], 58)], |x| {
        x[0].polygamma(1)
    });
    check("polygamma(2)", vec![input(&[5], 59)], |x| x[0].polygamma(2));
    check("polygamma(3)", vec![positive(&[5], 60)], |x| {
        x[0].polygamma(3)
    });
    check("mvlgamma", vec![positive(&[5], 61)], |x| {
        x[0].add(1.0)?.mvlgamma(3)
    });
    // zeta's q: the tensor-tensor rule and the number-first one (its x has no gradient).
    check("zeta q", vec![positive(&[5], 62)], |x| {
        Tensor::from_vec(vec![2.0, 2.5, 3.0, 4.5, 6.0], [5], CPU)?.zeta(&x[0])
    });
    check("zeta(number, q)", vec![positive(&[5], 63)], |x| {
        gpulab::special::zeta(3.5, &x[0])
    });
    check("special.ndtr", vec![input(&[5], 64)], |x| {
        gpulab::special::ndtr(&x[0].mul(3.0)?)
    });
    check("logcumsumexp", vec![input(&[3, 5], 68)], |x| {
        x[0].mul(4.0)?.logcumsumexp(1)
    });
    check("special.entr", vec![positive(&[5], 65)], |x| {
        gpulab::special::entr(&x[0])
    });
    check(
        "special.xlog1py",
        vec![input(&[2, 3], 66), positive(&[3], 67)],
        |x| gpulab::special::xlog1py(&x[0], &x[1]),
    );
    check("tan", vec![input(&[5], 45)], |x| x[0].tan());
    check("atan", vec![input(&[5], 46)], |x| x[0].atan());
    check("sinh", vec![input(&[5], 47)], |x| x[0].sinh());
    check("cosh", vec![input(&[5], 48)], |x| x[0].cosh());
    check("asinh", vec![input(&[5], 49)], |x| x[0].asinh());
    // Inside their domains: (-1, 1), and above 1 for acosh.
    check("asin", vec![input(&[5], 50)], |x| x[0].mul(0.4)?.asin());
    check("acos", vec![input(&[5], 51)], |x| x[0].mul(0.4)?.acos());
    check("atanh", vec![input(&[5], 52)], |x| x[0].mul(0.4)?.atanh());
    check("acosh", vec![positive(&[5], 53)], |x| {
        x[0].add(1.0)?.acosh()
    });
    check("gelu", vec![input(&[5], 44)], |x| x[0].gelu());
    check("silu", vec![input(&[5], 32)], |x| x[0].silu());
    check("leaky_relu", vec![input(&[5], 33)], |x| {
        x[0].leaky_relu(0.1)
    });
    check("norm", vec![input(&[5], 34)], |x| x[0].norm());
    check("square", vec![input(&[5], 35)], |x| x[0].square());
    check("rsqrt", vec![positive(&[5], 36)], |x| x[0].rsqrt());
    check("repeat", vec![input(&[2, 3], 37)], |x| {
        x[0].repeat(&[2, 1, 2])
    });
    check("tril", vec![input(&[3, 3], 38)], |x| x[0].tril(0));
    check("sort", vec![input(&[2, 4], 39)], |x| {
        Ok(x[0].sort(1, true)?.0)
    });
    check("topk", vec![input(&[2, 4], 40)], |x| {
        Ok(x[0].topk(2, 1, true)?.0)
    });
    check("outer", vec![input(&[3], 41), input(&[2], 42)], |x| {
        x[0].outer(&x[1])
    });
}

#[test]
fn normalisation() {
    let (x, w, b) = (input(&[3, 2, 2], 50), input(&[2], 51), input(&[2], 52));
    check("batch_norm", vec![x, w, b], |t| {
        F::batch_norm(&t[0], None, None, Some(&t[1]), Some(&t[2]), true, 0.1, 1e-5)
    });
    let (x, w, b) = (input(&[2, 3], 53), input(&[3], 54), input(&[3], 55));
    check("layer_norm", vec![x, w, b], |t| {
        F::layer_norm(&t[0], &[3], Some(&t[1]), Some(&t[2]), 1e-5)
    });
}

#[test]
fn reductions() {
    check("sum", vec![input(&[2, 3], 40)], |x| x[0].sum());
    check("sum_dim", vec![input(&[2, 3, 2], 41)], |x| x[0].sum_dim(1));
    check("sum_keepdim", vec![input(&[2, 3], 42)], |x| {
        x[0].sum_keepdim(-1)
    });
    check("mean", vec![input(&[2, 3], 43)], |x| x[0].mean());
    check("mean_dim", vec![input(&[2, 3], 44)], |x| x[0].mean_dim(0));
    check("var", vec![input(&[2, 3], 45)], |x| x[0].var());
    check("var_dim", vec![input(&[2, 3], 46)], |x| x[0].var_dim(1));
    check("std", vec![input(&[2, 3], 47)], |x| x[0].std());
    check("std_dim", vec![input(&[3, 2], 48)], |x| x[0].std_dim(0));
    check("clamp", vec![input(&[6], 49)], |x| x[0].clamp(-0.5, 0.5));
    check("max", vec![input(&[2, 3], 45)], |x| x[0].max());
    check("max_dim", vec![input(&[3, 4], 46)], |x| x[0].max_dim(1));
    check("min", vec![input(&[2, 3], 47)], |x| x[0].min());
    check("min_dim", vec![input(&[3, 4], 48)], |x| x[0].min_dim(0));
}

#[test]
fn scans_and_products() {
    for d in [0isize, 1, -1] {
        check(
            &format!("cumsum({d})"),
            vec![input(&[2, 3, 4], 71)],
            move |x| x[0].cumsum(d),
        );
        check(
            &format!("cumprod({d})"),
            vec![input(&[2, 3, 4], 72)],
            move |x| x[0].cumprod(d),
        );
        check(
            &format!("prod_dim({d})"),
            vec![input(&[2, 3, 4], 73)],
            move |x| x[0].prod_dim(d),
        );
    }
    check("prod", vec![input(&[2, 3], 74)], |x| x[0].prod());
    check("prod_keepdim", vec![input(&[3, 2], 75)], |x| {
        x[0].prod_keepdim(0)
    });
    check(
        "cumsum of a transposed view",
        vec![input(&[3, 4], 76)],
        |x| x[0].t()?.cumsum(1),
    );
    // Lines with one zero, two zeros, a zero first and zeros last. cumprod and prod are
    // polynomials of degree one in each element, so the central difference is exact at a
    // zero too: a gradient computed by dividing by the element would be NaN or wrong there.
    let zeros = || {
        let v = vec![
            0.5, 0.0, -1.5, 2.0, 0.0, 0.75, 0.0, 1.25, -0.5, 3.0, 0.0, 0.0,
        ];
        Tensor::from_vec(v, [3, 4], CPU)
            .unwrap()
            .requires_grad_(true)
            .unwrap()
    };
    for d in [0isize, 1] {
        check(
            &format!("cumprod({d}) with zeros"),
            vec![zeros()],
            move |x| x[0].cumprod(d),
        );
        check(
            &format!("prod_dim({d}) with zeros"),
            vec![zeros()],
            move |x| x[0].prod_dim(d),
        );
    }
    let one_zero = Tensor::from_vec(vec![0.5, -1.25, 0.0, 2.0, 0.75, -1.5], [2, 3], CPU)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    check("prod with one zero", vec![one_zero], |x| x[0].prod());
}

#[test]
fn shape_ops_and_matmul() {
    check("reshape", vec![input(&[2, 3], 50)], |x| {
        x[0].reshape((3, 2))?
            .mul(&Tensor::from_vec(vals(6, 5), (3, 2), CPU)?)
    });
    check("flatten", vec![input(&[2, 3], 51)], |x| x[0].flatten());
    check("transpose", vec![input(&[2, 3, 4], 52)], |x| {
        x[0].transpose(0, 2)
    });
    check("t", vec![input(&[2, 3], 53)], |x| x[0].t());
    check("expand_to", vec![input(&[3, 1], 54)], |x| {
        x[0].expand_to(&[2, 3, 4])
    });
    check(
        "matmul 2x2",
        vec![input(&[2, 3], 55), input(&[3, 4], 56)],
        |x| x[0].matmul(&x[1]),
    );
    check(
        "matmul 1x2",
        vec![input(&[3], 57), input(&[3, 2], 58)],
        |x| x[0].matmul(&x[1]),
    );
    check(
        "matmul 2x1",
        vec![input(&[2, 3], 59), input(&[3], 60)],
        |x| x[0].matmul(&x[1]),
    );
    // Transposed views as operands, small and big enough (33 x 40 x 30) for the CPU's
    // packed product, which reads the views through their strides; their gradients come
    // back as transposes of dense products.
    check(
        "matmul of transposed views",
        vec![input(&[3, 2], 94), input(&[4, 3], 95)],
        |x| x[0].t()?.matmul(&x[1].t()?),
    );
    check(
        "matmul of transposed views, packed",
        vec![input(&[40, 33], 96), input(&[30, 40], 97)],
        |x| x[0].t()?.matmul(&x[1].t()?),
    );
    check("matmul 1x1", vec![input(&[3], 61), input(&[3], 62)], |x| {
        x[0].matmul(&x[1])
    });
    check("where", vec![input(&[4], 63), input(&[4], 64)], |x| {
        let c = Tensor::from_vec(vec![true, false, false, true], 4, CPU)?;
        x[0].where_(&c, &x[1])
    });
    check("one input used twice", vec![input(&[3], 66)], |x| {
        x[0].mul(&x[0])?.add(&x[0].exp()?)
    });
}

/// A cast's gradient is the identity, converted back to the input's dtype (finite
/// differences through f32 would only measure rounding).
#[test]
fn casts_send_the_gradient_back_in_the_input_dtype() {
    let x = input(&[3], 65);
    let y = x
        .to_dtype(DType::F32)
        .unwrap()
        .mul(2.0)
        .unwrap()
        .sum()
        .unwrap();
    y.backward().unwrap();
    let g = x.grad().unwrap();
    assert_eq!(g.dtype(), DType::F64);
    assert_eq!(g.to_vec::<f64>().unwrap(), vec![2.0; 3]);
}

#[test]
fn softmax_and_losses() {
    check("softmax", vec![input(&[2, 4], 70)], |x| x[0].softmax(1));
    check("log_softmax", vec![input(&[3, 4], 71)], |x| {
        x[0].log_softmax(-1)
    });
    check("log_softmax dim 0", vec![input(&[3, 2], 72)], |x| {
        x[0].log_softmax(0)
    });
    let labels = Tensor::from_vec(vec![2i64, 0, 3], 3, CPU).unwrap();
    check("cross_entropy", vec![input(&[3, 4], 73)], move |x| {
        F::cross_entropy(&x[0], &labels)
    });
    let target = Tensor::from_vec(vals(6, 74), (2, 3), CPU).unwrap();
    check("mse_loss", vec![input(&[2, 3], 75)], move |x| {
        F::mse_loss(&x[0], &target)
    });
    let y = Tensor::from_vec(vec![1.0, 0.0, 0.3, 1.0, 0.0, 0.7], (2, 3), CPU).unwrap();
    check("bce_with_logits", vec![input(&[2, 3], 76)], move |x| {
        F::binary_cross_entropy_with_logits(&x[0], &y)
    });
    // Both inputs of the element-wise losses (the kinks at |d| = beta, delta and 0 are
    // avoided by the inputs' spread).
    check(
        "l1_loss",
        vec![input(&[2, 3], 78), input(&[2, 3], 79)],
        |x| F::l1_loss(&x[0], &x[1]),
    );
    check(
        "smooth_l1_loss",
        vec![input(&[3, 4], 80), input(&[3, 4], 81)],
        |x| F::smooth_l1_loss(&x[0], &x[1], 0.7),
    );
    check(
        "huber_loss",
        vec![input(&[3, 4], 82), input(&[3, 4], 83)],
        |x| F::huber_loss(&x[0], &x[1], 0.7),
    );
    let labels2 = Tensor::from_vec(vec![1i64, 3, 0], 3, CPU).unwrap();
    check("nll_loss", vec![input(&[3, 4], 84)], move |x| {
        F::nll_loss(&x[0], &labels2)
    });
    let p: Vec<f64> = vals(6, 85).iter().map(|v| 0.5 + 0.4 * v).collect();
    let p = Tensor::from_vec(p, (2, 3), CPU)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let y = Tensor::from_vec(vec![1.0, 0.0, 0.3, 1.0, 0.25, 0.7], (2, 3), CPU).unwrap();
    let y = y.requires_grad_(true).unwrap();
    check("binary_cross_entropy", vec![p, y], |x| {
        F::binary_cross_entropy(&x[0], &x[1])
    });
    check("norm_dim", vec![input(&[3, 4], 86)], |x| x[0].norm_dim(1));
    check("normalize", vec![input(&[3, 4], 87)], |x| {
        F::normalize(&x[0], 0)
    });
    check(
        "cosine_similarity",
        vec![input(&[3, 4], 88), input(&[1, 4], 89)],
        |x| F::cosine_similarity(&x[0], &x[1], 1),
    );
    check("dropout", vec![input(&[4, 5], 77)], |x| {
        // A generator of its own, seeded alike on each evaluation, so every call draws the
        // same mask whatever the tests on other threads draw meanwhile.
        fork_rng(5, || F::dropout(&x[0], 0.4, true))
    });
}

#[test]
fn margin_and_likelihood_losses() {
    // Every input that takes a gradient in torch; the hinges' kinks are avoided by the
    // inputs' spread (no term lands within h of zero).
    let sign = Tensor::from_vec(vec![1.0, -1.0, -1.0, 1.0, 1.0, -1.0], (2, 3), CPU).unwrap();
    let s = sign.clone();
    check(
        "margin_ranking_loss",
        vec![input(&[2, 3], 600), input(&[2, 3], 601)],
        move |x| F::margin_ranking_loss(&x[0], &x[1], &s, 0.3),
    );
    let s = sign.clone();
    check(
        "hinge_embedding_loss",
        vec![input(&[2, 3], 602)],
        move |x| F::hinge_embedding_loss(&x[0], &s, 0.8),
    );
    let s = sign.clone();
    check("soft_margin_loss", vec![input(&[2, 3], 603)], move |x| {
        F::soft_margin_loss(&x[0], &s)
    });
    let pairs = Tensor::from_vec(vec![1.0, -1.0, -1.0], 3, CPU).unwrap();
    check(
        "cosine_embedding_loss",
        vec![input(&[3, 4], 604), input(&[3, 4], 605)],
        move |x| F::cosine_embedding_loss(&x[0], &x[1], &pairs, -0.2),
    );
    for (p, swap) in [(2.0, false), (1.0, true)] {
        let how = F::TripletMargin {
            margin: 1.5,
            p,
            swap,
            ..Default::default()
        };
        check(
            &format!("triplet_margin_loss p {p} swap {swap}"),
            vec![
                input(&[3, 4], 606),
                input(&[3, 4], 607),
                input(&[3, 4], 608),
            ],
            move |x| F::triplet_margin_loss(&x[0], &x[1], &x[2], how),
        );
    }
    let classes = Tensor::from_vec(vec![2i64, 0, 3], 3, CPU).unwrap();
    let weight = Tensor::from_vec(vec![0.5, 1.5, 1.0, 2.0], 4, CPU).unwrap();
    for p in [1, 2] {
        let (c, w) = (classes.clone(), weight.clone());
        check(
            &format!("multi_margin_loss p {p}"),
            vec![input(&[3, 4], 609)],
            move |x| F::multi_margin_loss(&x[0], &c, p, 0.9, Some(&w)),
        );
    }
    let labels = Tensor::from_vec(vec![3i64, 0, -1, 1, 1, 2, 2, -1, 1, -1, 0, 0], (3, 4), CPU);
    let labels = labels.unwrap();
    check(
        "multilabel_margin_loss",
        vec![input(&[3, 4], 610)],
        move |x| F::multilabel_margin_loss(&x[0], &labels),
    );
    let on = Tensor::from_vec(vec![1i64, 0, 0, 1, 1, 1, 0, 0], (2, 4), CPU).unwrap();
    let w = weight.clone();
    check(
        "multilabel_soft_margin_loss",
        vec![input(&[2, 4], 611)],
        move |x| F::multilabel_soft_margin_loss(&x[0], &on, Some(&w)),
    );
    check(
        "poisson_nll_loss log input",
        vec![input(&[2, 3], 612), positive(&[2, 3], 613)],
        |x| F::poisson_nll_loss(&x[0], &x[1], F::PoissonNll::default()),
    );
    // Rates and counts above 1, so Stirling's term is taken for every target.
    let how = F::PoissonNll {
        log_input: false,
        full: true,
        ..Default::default()
    };
    check(
        "poisson_nll_loss rate, full",
        vec![positive(&[2, 3], 614), positive(&[2, 3], 615)],
        move |x| F::poisson_nll_loss(&x[0], &x[1].add(1.0)?, how),
    );
    for (vshape, full) in [(&[3, 4][..], true), (&[3, 1][..], false), (&[3][..], false)] {
        check(
            &format!("gaussian_nll_loss var {vshape:?} full {full}"),
            vec![
                input(&[3, 4], 616),
                input(&[3, 4], 617),
                positive(vshape, 618),
            ],
            move |x| F::gaussian_nll_loss(&x[0], &x[1], &x[2], full, 1e-6),
        );
    }
}

#[test]
fn rearranging_scale_norms_and_adaptive_pools() {
    check("pixel_shuffle", vec![input(&[1, 8, 2, 3], 620)], |x| {
        F::pixel_shuffle(&x[0], 2)
    });
    check("pixel_unshuffle", vec![input(&[2, 1, 4, 6], 621)], |x| {
        F::pixel_unshuffle(&x[0], 2)
    });
    check("channel_shuffle", vec![input(&[2, 6, 3], 622)], |x| {
        F::channel_shuffle(&x[0], 3)
    });
    check(
        "rms_norm with weight",
        vec![input(&[3, 4], 623), input(&[4], 624)],
        |x| F::rms_norm(&x[0], &[4], Some(&x[1]), None),
    );
    check(
        "rms_norm over two dims",
        vec![input(&[2, 2, 3], 625)],
        |x| F::rms_norm(&x[0], &[2, 3], None, Some(0.1)),
    );
    check(
        "local_response_norm 3-D",
        vec![input(&[2, 5, 3], 626)],
        |x| F::local_response_norm(&x[0], 3, 0.5, 0.75, 1.0),
    );
    check(
        "local_response_norm 4-D",
        vec![input(&[1, 6, 2, 2], 627)],
        |x| F::local_response_norm(&x[0], 4, 0.3, 0.5, 2.0),
    );
    check("lp_pool2d p 2", vec![input(&[1, 2, 4, 5], 628)], |x| {
        F::lp_pool2d(&x[0], 2.0, 2, None, false)
    });
    check("lp_pool2d p 3", vec![positive(&[1, 2, 5, 5], 629)], |x| {
        F::lp_pool2d(&x[0], 3.0, 3, Some(nn::Size2(2, 2)), true)
    });
    check("lp_pool1d p 1.5", vec![positive(&[2, 3, 7], 630)], |x| {
        F::lp_pool1d(&x[0], 1.5, 2, Some(1), false)
    });
    check(
        "instance_norm with running statistics",
        vec![
            input(&[2, 3, 4], 6302),
            input(&[3], 6303),
            input(&[3], 6304),
        ],
        |x| {
            let f64z = |v: f64| Tensor::full_dtype([3], v, DType::F64, Device::Cpu);
            let (rm, rv) = (f64z(0.0)?, f64z(1.0)?);
            let (w, b) = (Some(&x[1]), Some(&x[2]));
            let train = F::instance_norm(&x[0], Some(&rm), Some(&rv), w, b, true, 0.1, 1e-5)?;
            // And eval mode, normalised by running statistics that do not depend on x (those
            // training moved do, outside autograd, as in torch).
            let (m, v) = (f64z(0.5)?, f64z(2.0)?);
            let eval = F::instance_norm(&x[0], Some(&m), Some(&v), w, b, false, 0.1, 1e-5)?;
            train.add(&eval)
        },
    );
    check("lp_pool3d p 2", vec![input(&[1, 2, 3, 4, 4], 6301)], |x| {
        F::lp_pool3d(&x[0], 2.0, (1, 2, 2), None, true)
    });
    check(
        "adaptive_max_pool2d",
        vec![input(&[1, 2, 5, 5], 631)],
        |x| F::adaptive_max_pool2d(&x[0], (3, 2)),
    );
    check("adaptive_max_pool1d", vec![input(&[2, 3, 7], 632)], |x| {
        F::adaptive_max_pool1d(&x[0], 3)
    });
    check("adaptive_avg_pool1d", vec![input(&[3, 7], 633)], |x| {
        F::adaptive_avg_pool1d(&x[0], 4)
    });
    // Windows that do not overlap: with overlapping ones an element that wins two windows
    // is written once but, by torch's gather rule, gets its gradient twice (the parity
    // cases hold gpulab to torch there).
    check("max_unpool2d", vec![input(&[1, 2, 5, 6], 635)], |x| {
        let (v, i) = F::max_pool2d_with_indices(&x[0], 2, 2, 0, 1, false)?;
        F::max_unpool2d(&v, &i, 2, None, 0, Some((5, 6)))
    });
    check("max_unpool1d", vec![input(&[2, 3, 7], 636)], |x| {
        let (v, i) = F::max_pool1d_with_indices(&x[0], 2, 2, 0, 1, false)?;
        F::max_unpool1d(&v, &i, 2, None, 0, Some(7))
    });
    for p in [2.0, 1.0, 3.0, f64::INFINITY] {
        check(
            &format!("pdist p {p}"),
            vec![input(&[4, 3], 634)],
            move |x| F::pdist(&x[0], p),
        );
    }
}

#[test]
fn recurrent_cells() {
    // The input and both states of each cell, in float64 (the weights' gradients are the
    // parity cases').
    let lstm = nn::LSTMCell::new(3, 4);
    lstm.to_dtype(DType::F64).unwrap();
    check(
        "LSTMCell",
        vec![
            input(&[2, 3], 640),
            input(&[2, 4], 641),
            input(&[2, 4], 642),
        ],
        move |x| {
            let (h, c) = lstm.forward_lstm(&x[0], Some((&x[1], &x[2])))?;
            h.add(&c.mul(0.5)?)
        },
    );
    for (name, cell) in [
        ("GRUCell", nn::GRUCell::new(3, 4)),
        ("RNNCell", nn::RNNCell::new(3, 4)),
    ] {
        cell.to_dtype(DType::F64).unwrap();
        check(
            name,
            vec![input(&[2, 3], 643), input(&[2, 4], 644)],
            move |x| cell.forward_with(&x[0], Some(&x[1])),
        );
    }
}

#[test]
fn extra_activations() {
    // Away from the kinks (finite differences there are meaningless).
    let away = |t: Tensor, kinks: &[f64]| {
        let v: Vec<f64> = t
            .to_vec::<f64>()
            .unwrap()
            .into_iter()
            .map(|v| {
                if kinks.iter().any(|k| (v - k).abs() < 1e-3) {
                    v + 0.01
                } else {
                    v
                }
            })
            .collect();
        Tensor::from_vec(v, t.shape().to_vec(), CPU)
            .unwrap()
            .requires_grad_(true)
            .unwrap()
    };
    check("elu", vec![away(input(&[3, 4], 120), &[0.0])], |x| {
        F::elu(&x[0], 0.7)
    });
    check(
        "hardtanh",
        vec![away(input(&[3, 4], 121).mul(2.0).unwrap(), &[-1.0, 1.0])],
        |x| F::hardtanh(&x[0], -1.0, 1.0),
    );
    check("mish", vec![input(&[3, 4], 122)], |x| F::mish(&x[0]));
}

#[test]
fn conv2d_and_max_pool2d() {
    check(
        "conv2d",
        vec![
            input(&[2, 2, 5, 5], 80),
            input(&[3, 2, 3, 3], 81),
            input(&[3], 82),
        ],
        |x| F::conv2d(&x[0], &x[1], Some(&x[2]), 1, 0, 1, 1),
    );
    check(
        "conv2d stride 2 padding 1",
        vec![input(&[1, 2, 5, 4], 83), input(&[2, 2, 3, 3], 84)],
        |x| F::conv2d(&x[0], &x[1], None, 2, 1, 1, 1),
    );
    // Big enough that the CPU's per-image products pack (o * ckk * oh*ow > 32^3), with
    // stride, padding, several channels and images, a bias, and a kernel column whose taps
    // fall partly in the padding.
    check(
        "conv2d packed stride 2 padding 2",
        vec![
            input(&[3, 4, 11, 9], 87),
            input(&[6, 4, 3, 5], 88),
            input(&[6], 89),
        ],
        |x| F::conv2d(&x[0], &x[1], Some(&x[2]), 2, 2, 1, 1),
    );
    check(
        "conv2d packed stride 1 padding 1",
        vec![input(&[2, 3, 12, 12], 90), input(&[8, 3, 3, 3], 91)],
        |x| F::conv2d(&x[0], &x[1], None, 1, 1, 1, 1),
    );
    // torch's other arguments: a rectangular kernel dilated per axis with a stride and
    // padding per axis; groups (two, and depthwise); "same" with an even kernel (the extra
    // zeros after).
    check(
        "conv2d dilation (2, 3) stride (2, 1) padding (1, 2)",
        vec![
            input(&[2, 2, 7, 8], 95),
            input(&[3, 2, 3, 2], 96),
            input(&[3], 97),
        ],
        |x| F::conv2d(&x[0], &x[1], Some(&x[2]), (2, 1), (1, 2), (2, 3), 1),
    );
    check(
        "conv2d groups 2",
        vec![
            input(&[2, 4, 5, 5], 98),
            input(&[6, 2, 3, 3], 99),
            input(&[6], 100),
        ],
        |x| F::conv2d(&x[0], &x[1], Some(&x[2]), 1, 1, 1, 2),
    );
    check(
        "conv2d depthwise stride 2",
        vec![input(&[1, 3, 6, 6], 101), input(&[3, 1, 3, 3], 102)],
        |x| F::conv2d(&x[0], &x[1], None, 2, 1, 1, 3),
    );
    check(
        "conv2d padding same, even kernel, dilation (1, 2)",
        vec![input(&[1, 2, 5, 6], 103), input(&[2, 2, 2, 4], 104)],
        |x| F::conv2d(&x[0], &x[1], None, 1, "same", (1, 2), 1),
    );
    check(
        "conv_transpose2d stride 2 padding 1 output padding 1",
        vec![
            input(&[2, 2, 3, 4], 105),
            input(&[2, 3, 3, 3], 106),
            input(&[3], 107),
        ],
        |x| F::conv_transpose2d(&x[0], &x[1], Some(&x[2]), 2, 1, 1, 1, 1),
    );
    check(
        "conv_transpose2d groups 2 dilation (1, 2) stride (2, 1)",
        vec![input(&[1, 4, 3, 3], 108), input(&[4, 1, 3, 2], 109)],
        |x| F::conv_transpose2d(&x[0], &x[1], None, (2, 1), (1, 0), (1, 0), 2, (1, 2)),
    );
    // The first layer of a network: the input needs no gradient, the weight and bias do.
    let image = Tensor::from_vec(vals(2 * 3 * 10 * 10, 92), [2, 3, 10, 10], CPU).unwrap();
    check(
        "conv2d without input gradient",
        vec![input(&[5, 3, 3, 3], 93), input(&[5], 94)],
        move |x| F::conv2d(&image, &x[0], Some(&x[1]), 1, 0, 1, 1),
    );
    check("max_pool2d", vec![input(&[2, 2, 4, 6], 85)], |x| {
        F::max_pool2d(&x[0], 2, 2, 0, 1, false)
    });
    check(
        "max_pool2d overlapping",
        vec![input(&[1, 1, 5, 5], 86)],
        |x| F::max_pool2d(&x[0], 3, 2, 0, 1, false),
    );
    check(
        "max_pool2d padded (a ResNet stem's 3, 2, 1)",
        vec![input(&[1, 2, 5, 6], 87)],
        |x| F::max_pool2d(&x[0], 3, 2, 1, 1, false),
    );
    check(
        "max_pool2d dilation 2 ceil_mode, (2, 3) kernel",
        vec![input(&[1, 2, 7, 8], 110)],
        |x| F::max_pool2d(&x[0], (2, 3), (2, 2), (1, 1), 2, true),
    );
    check(
        "avg_pool2d ceil_mode without the padding in the divisor",
        vec![input(&[1, 2, 5, 6], 111)],
        |x| F::avg_pool2d(&x[0], 3, 2, 1, true, false),
    );
    check(
        "avg_pool2d ceil_mode with the padding in the divisor, (2, 3) kernel",
        vec![input(&[2, 1, 5, 7], 112)],
        |x| F::avg_pool2d(&x[0], (2, 3), (2, 2), 1, true, true),
    );
}

/// The numeric derivative of `loss` at each element of `base`, evaluated by `at(values)`.
fn numeric_grad(base: &[f64], at: &dyn Fn(Vec<f64>) -> f64) -> Vec<f64> {
    let h = 1e-6;
    (0..base.len())
        .map(|j| {
            let mut up = base.to_vec();
            up[j] += h;
            let mut down = base.to_vec();
            down[j] -= h;
            (at(up) - at(down)) / (2.0 * h)
        })
        .collect()
}

#[track_caller]
fn close(name: &str, what: &str, analytic: &[f64], numeric: &[f64]) {
    assert_eq!(analytic.len(), numeric.len());
    for (j, (a, n)) in analytic.iter().zip(numeric).enumerate() {
        assert!(
            (a - n).abs() <= 1e-6 + 1e-5 * n.abs(),
            "{name}: d/d {what}[{j}]: autograd {a}, finite differences {n}"
        );
    }
}

/// A layer in f64: the gradients of its input and of every parameter against finite
/// differences (parameters perturbed through `set_data`, as an optimiser changes them).
fn layer_check(name: &str, layer: &dyn Module, x: Tensor) {
    layer.to_dtype(DType::F64).unwrap();
    let x = x
        .to_dtype(DType::F64)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let fwd = |x: &Tensor| -> f64 {
        no_grad(|| {
            loss_of(&|xs| layer.forward(&xs[0]), std::slice::from_ref(x))
                .unwrap()
                .item::<f64>()
                .unwrap()
        })
    };
    layer.zero_grad();
    loss_of(&|xs| layer.forward(&xs[0]), std::slice::from_ref(&x))
        .unwrap()
        .backward()
        .unwrap();
    let xv = x.to_vec::<f64>().unwrap();
    let num = numeric_grad(&xv, &|v| fwd(&Tensor::from_vec(v, x.shape(), CPU).unwrap()));
    close(
        name,
        "input",
        &x.grad().unwrap().to_vec::<f64>().unwrap(),
        &num,
    );
    for (k, p) in layer.parameters().iter().enumerate() {
        let original = p.tensor().detach();
        let pv = original.to_vec::<f64>().unwrap();
        let num = numeric_grad(&pv, &|v| {
            p.set_data(Tensor::from_vec(v, original.shape(), CPU).unwrap())
                .unwrap();
            let l = fwd(&x);
            p.set_data(original.clone()).unwrap();
            l
        });
        let g = p
            .grad()
            .unwrap_or_else(|| panic!("{name}: parameter {k} got no gradient"));
        close(
            name,
            &format!("parameter {k}"),
            &g.to_vec::<f64>().unwrap(),
            &num,
        );
    }
}

fn x_of(shape: &[usize], salt: u64) -> Tensor {
    let n = shape.iter().product();
    Tensor::from_vec(vals(n, salt), shape, CPU).unwrap()
}

#[test]
fn layers() {
    fork_rng(1, || {
        layer_check("Linear", &nn::Linear::new(3, 2), x_of(&[4, 3], 90));
        layer_check(
            "Linear 3-D input",
            &nn::Linear::new(3, 2),
            x_of(&[2, 2, 3], 91),
        );
        layer_check("Linear no bias", &nn::Linear::no_bias(3, 2), x_of(&[3], 92));
        layer_check(
            "Conv2d",
            &nn::Conv2d::new(2, 3, 3).padding(1),
            x_of(&[2, 2, 4, 4], 93),
        );
        layer_check(
            "Conv2d stride 2",
            &nn::Conv2d::new(1, 2, 2).stride(2),
            x_of(&[1, 1, 5, 5], 94),
        );
        layer_check("MaxPool2d", &nn::MaxPool2d::new(2), x_of(&[1, 2, 4, 4], 95));
        layer_check(
            "AvgPool2d padded",
            &nn::AvgPool2d::new(3).stride(2).padding(1),
            x_of(&[2, 2, 5, 5], 103),
        );
        layer_check(
            "AdaptiveAvgPool2d overlapping",
            &nn::AdaptiveAvgPool2d::new((3, 2)),
            x_of(&[1, 2, 5, 5], 104),
        );
        layer_check(
            "AdaptiveAvgPool2d global",
            &nn::AdaptiveAvgPool2d::new((1, 1)),
            x_of(&[2, 3, 3, 2], 105),
        );
        // Embedding's input is indices (no gradient); its weight's gradient is checked.
        let emb = nn::Embedding::new(5, 3);
        emb.to_dtype(DType::F64).unwrap();
        let idx = Tensor::from_vec(vec![1i64, 4, 1, 0], [2, 2], CPU).unwrap();
        let w = emb.weight.tensor();
        check("Embedding weight", vec![w], |x| F::embedding(&idx, &x[0]));
        layer_check("ReLU", &nn::ReLU, x_of(&[3, 3], 96));
        layer_check("Sigmoid", &nn::Sigmoid, x_of(&[3, 3], 97));
        layer_check("Tanh", &nn::Tanh, x_of(&[3, 3], 98));
        layer_check("Softmax", &nn::Softmax::new(1), x_of(&[2, 5], 99));
        layer_check("Flatten", &nn::Flatten, x_of(&[2, 2, 3], 100));
        let mut dropout = nn::Dropout::new(0.5);
        dropout.eval();
        layer_check("Dropout (eval)", &dropout, x_of(&[2, 3], 101));
        let cnn = nn::Sequential::new()
            .add(nn::Conv2d::new(1, 2, 3))
            .add(nn::ReLU)
            .add(nn::MaxPool2d::new(2))
            .add(nn::Flatten)
            .add(nn::Linear::new(2 * 2 * 2, 3))
            .add(nn::Softmax::new(1));
        layer_check("Sequential CNN", &cnn, x_of(&[2, 1, 6, 6], 102));
    })
}

/// The views (and the copying index ops) pass gradients back to the elements they picked.
#[test]
fn views_and_index_ops() {
    check("permute", vec![input(&[2, 3, 4], 80)], |x| {
        x[0].permute(&[2, 0, 1])
    });
    check("narrow", vec![input(&[4, 3], 81)], |x| x[0].narrow(0, 1, 2));
    check("slice", vec![input(&[3, 5], 82)], |x| x[0].slice(1, 1..4));
    check("select", vec![input(&[3, 4], 83)], |x| x[0].select(1, -1));
    check("expand", vec![input(&[3, 1], 84)], |x| {
        x[0].expand((2, 3, 4))
    });
    check("unsqueeze+squeeze", vec![input(&[3, 4], 85)], |x| {
        x[0].unsqueeze(1)?.mul(2.0)?.squeeze(1)
    });
    check(
        "view of a narrowed transpose",
        vec![input(&[4, 3], 86)],
        |x| x[0].t()?.narrow(1, 1, 3)?.contiguous()?.view((9,)),
    );
    check("flip", vec![input(&[2, 3, 4], 94)], |x| x[0].flip(&[0, -1]));
    check("flip of a transpose", vec![input(&[3, 4], 95)], |x| {
        x[0].t()?.flip(&[1])
    });
    check(
        "reshape with an inferred size",
        vec![input(&[2, 6], 96)],
        |x| x[0].t()?.reshape((-1, 3)),
    );
    check("cat", vec![input(&[2, 3], 87), input(&[1, 3], 88)], |x| {
        Tensor::cat(&[&x[0], &x[1]], 0)
    });
    check("stack", vec![input(&[2, 3], 89), input(&[2, 3], 90)], |x| {
        Tensor::stack(&[&x[0], &x[1]], 1)
    });
    check(
        "index_select with a repeated index",
        vec![input(&[4, 3], 91)],
        |x| {
            let idx = Tensor::from_vec(vec![2i64, 0, 2], (3,), CPU)?;
            x[0].index_select(0, &idx)
        },
    );
    check(
        "index_select along a middle dimension of a transposed source",
        vec![input(&[3, 4, 2], 93)],
        |x| {
            let idx = Tensor::from_vec(vec![1i64, 3, 1, 0], (4,), CPU)?;
            x[0].transpose(0, 2)?.index_select(1, &idx)
        },
    );
    check(
        "gather with repeated indices and a smaller index",
        vec![input(&[3, 4], 92)],
        |x| {
            let idx = Tensor::from_vec(vec![3i64, 0, 3, 1, 1, 2], (2, 3), CPU)?;
            x[0].gather(1, &idx)
        },
    );
    check(
        "gather along dimension 0 of a transpose",
        vec![input(&[4, 3], 97)],
        |x| {
            let idx = Tensor::from_vec(vec![2i32, 2, 0, 1, 0, 2], (2, 3), CPU)?;
            x[0].t()?.gather(0, &idx)
        },
    );
}

/// torch's `gather` backward adds each gradient at the element it was read from: the
/// values torch 2.9.1 gives for `x.gather(1, idx).sum().backward()`.
#[test]
fn gather_gradient_matches_torch() {
    for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        let x = Tensor::zeros_dtype((2, 3), dtype, CPU)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let idx = Tensor::from_vec(vec![2i64, 2, 0, 1], (2, 2), CPU).unwrap();
        x.gather(1, &idx)
            .unwrap()
            .sum()
            .unwrap()
            .backward()
            .unwrap();
        let g = x.grad().unwrap();
        assert_eq!(g.dtype(), dtype);
        let g = g.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
        assert_eq!(g, vec![0.0, 0.0, 2.0, 1.0, 1.0, 0.0], "{dtype:?}");
    }
}

/// torch's max_pool2d rules on the CPU: the gradient of a window goes to its first maximum
/// (row-major), a NaN is the maximum of its window, and overlapping windows add up.
#[test]
fn max_pool2d_ties_nan_and_overlap_follow_torch() {
    for dtype in [DType::F32, DType::F64] {
        // One 1x1x2x4 plane, two 2x2 windows: the first all ties, the second with a NaN.
        let x = Tensor::from_vec(
            vec![3.0, 3.0, 1.0, f64::NAN, 3.0, 3.0, 5.0, 2.0],
            [1, 1, 2, 4],
            CPU,
        )
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
        let y = F::max_pool2d(&x, 2, 2, 0, 1, false).unwrap();
        let v = y.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
        assert_eq!(v[0], 3.0, "{dtype:?}");
        assert!(
            v[1].is_nan(),
            "{dtype:?}: a NaN is its window's maximum, got {}",
            v[1]
        );
        y.sum().unwrap().backward().unwrap();
        let g = x
            .grad()
            .unwrap()
            .to_dtype(DType::F64)
            .unwrap()
            .to_vec::<f64>()
            .unwrap();
        assert_eq!(g, vec![1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0], "{dtype:?}");
    }
    // Overlapping 2x2 windows with stride 1 over a 3x3 plane whose centre is the maximum:
    // every window picks it, so it gets all four gradients.
    let x = Tensor::from_vec(
        vec![1.0, 2.0, 3.0, 4.0, 9.0, 5.0, 6.0, 7.0, 8.0],
        [1, 1, 3, 3],
        CPU,
    )
    .unwrap()
    .requires_grad_(true)
    .unwrap();
    let y = F::max_pool2d(&x, 2, 1, 0, 1, false).unwrap();
    assert_eq!(y.to_vec::<f64>().unwrap(), vec![9.0; 4]);
    y.sum().unwrap().backward().unwrap();
    let g = x.grad().unwrap().to_vec::<f64>().unwrap();
    assert_eq!(g, vec![0.0, 0.0, 0.0, 0.0, 4.0, 0.0, 0.0, 0.0, 0.0]);
}

/// conv2d and max_pool2d in every float dtype: f64 passes the finite-difference check
/// above; f16 and bf16 (computed through f32, as the CPU does for halves) give the f32
/// result and gradients to the halves' precision.
#[test]
fn conv2d_and_max_pool2d_run_in_every_float_dtype() {
    let run = |dtype: DType| {
        let x = input(&[2, 2, 6, 6], 120)
            .detach()
            .to_dtype(dtype)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let w = input(&[3, 2, 3, 3], 121)
            .detach()
            .to_dtype(dtype)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let b = input(&[3], 122)
            .detach()
            .to_dtype(dtype)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let y = F::max_pool2d(
            &F::conv2d(&x, &w, Some(&b), 1, 1, 1, 1).unwrap(),
            2,
            2,
            0,
            1,
            false,
        )
        .unwrap();
        assert_eq!(y.dtype(), dtype);
        assert_eq!(y.shape(), &[2, 3, 3, 3]);
        y.sum().unwrap().backward().unwrap();
        let f = |t: &Tensor| t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
        [
            f(&y),
            f(&x.grad().unwrap()),
            f(&w.grad().unwrap()),
            f(&b.grad().unwrap()),
        ]
    };
    let want = run(DType::F32);
    for (dtype, tol) in [(DType::F64, 1e-5), (DType::F16, 2e-2), (DType::BF16, 1e-1)] {
        let names = ["output", "x grad", "w grad", "b grad"];
        let what = format!("{dtype:?} against f32");
        common::parts_close(&what, &names, &run(dtype), &want, tol);
    }
}

/// A well-conditioned `[.., n, n]` input: values from `input` plus 3 on the diagonal.
fn regular(batch: &[usize], n: usize, salt: u64) -> Tensor {
    let mut shape = batch.to_vec();
    shape.extend([n, n]);
    let x = input(&shape, salt).detach();
    let eye = Tensor::eye(n, CPU).unwrap().to_dtype(DType::F64).unwrap();
    x.add(&eye.mul(3.0).unwrap())
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

#[test]
fn linalg_and_torch_named_ops() {
    use gpulab::linalg;
    // solve: both A and B, matrix and vector right-hand sides, broadcast batches.
    check("solve", vec![regular(&[], 3, 1), input(&[3, 2], 2)], |t| {
        linalg::solve(&t[0], &t[1])
    });
    check(
        "solve vec",
        vec![regular(&[2], 3, 3), input(&[2, 3], 4)],
        |t| linalg::solve(&t[0], &t[1]),
    );
    check(
        "solve bcast",
        vec![regular(&[2], 3, 5), input(&[3, 1], 6)],
        |t| linalg::solve(&t[0], &t[1]),
    );
    check("inv", vec![regular(&[2], 3, 7)], |t| linalg::inv(&t[0]));
    check("det", vec![regular(&[2], 3, 8)], |t| linalg::det(&t[0]));
    check("slogdet", vec![regular(&[], 4, 9)], |t| {
        Ok(linalg::slogdet(&t[0])?.1)
    });
    // Norms of every order torch's rule distinguishes, over some or all dimensions.
    for (ord, salt) in [
        (2.0, 70),
        (1.0, 71),
        (3.0, 72),
        (1.5, 73),
        (0.5, 74),
        (-1.0, 75),
    ] {
        check(
            &format!("vector_norm {ord}"),
            vec![input(&[2, 3, 2], salt)],
            move |t| linalg::vector_norm(&t[0], ord, Some(&[0, 2]), false),
        );
    }
    for ord in [f64::INFINITY, f64::NEG_INFINITY] {
        check(
            &format!("vector_norm {ord}"),
            vec![input(&[4, 3], 76)],
            move |t| linalg::vector_norm(&t[0], ord, Some(&[-1]), true),
        );
    }
    check("vector_norm all", vec![input(&[2, 3], 77)], |t| {
        linalg::vector_norm(&t[0], 2.0, None, false)
    });
    for ord in ["fro", "1", "-1", "inf", "-inf"] {
        check(
            &format!("matrix_norm {ord}"),
            vec![input(&[2, 3, 3], 78)],
            move |t| linalg::matrix_norm(&t[0], ord, false),
        );
    }
    for n in [2, 5, -1, -2] {
        check(
            &format!("matrix_power {n}"),
            vec![regular(&[2], 3, 79)],
            move |t| linalg::matrix_power(&t[0], n),
        );
    }
    // cholesky of the symmetric positive-definite x xᵀ + 3 I, lower and upper.
    for upper in [false, true] {
        check(
            &format!("cholesky upper={upper}"),
            vec![input(&[2, 3, 3], 80)],
            move |t| {
                let eye = Tensor::eye(3, CPU)?.to_dtype(DType::F64)?.mul(3.0)?;
                let a = t[0].matmul(&t[0].transpose(-2, -1)?)?.add(&eye)?;
                linalg::cholesky(&a, upper)
            },
        );
    }
    // Products and scaled sums, with every input's gradient.
    check("kron", vec![input(&[2, 3], 10), input(&[2, 2], 11)], |t| {
        t[0].kron(&t[1])
    });
    check("inner", vec![input(&[2, 3], 12), input(&[4, 3], 13)], |t| {
        t[0].inner(&t[1])
    });
    check(
        "baddbmm",
        vec![
            input(&[2, 1, 2], 14),
            input(&[2, 2, 3], 15),
            input(&[2, 3, 2], 16),
        ],
        |t| t[0].baddbmm(&t[1], &t[2], 0.5, 1.5),
    );
    check(
        "addcdiv",
        vec![input(&[2, 3], 17), input(&[3], 18), positive(&[2, 1], 19)],
        |t| t[0].addcdiv(&t[1], &t[2], 0.7),
    );
    check("hypot", vec![input(&[2, 3], 20), input(&[2, 3], 21)], |t| {
        t[0].hypot(&t[1])
    });
    check("sinc", vec![input(&[2, 3], 22)], |t| t[0].sinc());
    check(
        "block_diag",
        vec![input(&[2, 3], 23), input(&[1, 2], 24)],
        |t| Tensor::block_diag(&[&t[0], &t[1]]),
    );
    check("take_along_dim", vec![input(&[2, 3], 25)], |t| {
        let i = Tensor::from_vec(vec![1i64, 0, 1], [1, 3], CPU)?;
        t[0].take_along_dim(&i, Some(0))
    });
}

#[test]
fn linalg_factorisations() {
    use gpulab::linalg;
    let flat = |parts: &[Tensor]| -> R<Tensor> {
        let flats = parts.iter().map(|p| p.flatten()).collect::<R<Vec<_>>>()?;
        Tensor::cat(&flats, 0)
    };
    // QR: tall, square and wide, reduced; square complete. Both factors enter the loss.
    for (shape, mode, salt) in [
        (&[4, 3][..], "reduced", 81),
        (&[2, 3, 3][..], "reduced", 82),
        (&[3, 5][..], "reduced", 83),
        (&[3, 3][..], "complete", 84),
        (&[2, 4][..], "complete", 85),
    ] {
        check(
            &format!("qr {shape:?} {mode}"),
            vec![input(shape, salt)],
            move |t| {
                let (q, r) = linalg::qr(&t[0], mode)?;
                flat(&[q, r])
            },
        );
    }
    // eigh of a symmetric x + xᵀ: eigenvalues, and eigenvectors through V², which a sign
    // flip leaves alone (a loss on V itself would depend on LAPACK's sign choice).
    for uplo in ["L", "U"] {
        check(
            &format!("eigh {uplo}"),
            vec![input(&[2, 3, 3], 86)],
            move |t| {
                let a = t[0].add(&t[0].transpose(-2, -1)?)?;
                let (l, v) = linalg::eigh(&a, uplo)?;
                flat(&[l, v.mul(&v)?])
            },
        );
    }
    check("eigvalsh", vec![input(&[4, 4], 87)], |t| {
        linalg::eigvalsh(&t[0].add(&t[0].t()?)?, "L")
    });
    // SVD: tall, wide and square; U² and Vh² for the same reason as V² above. With
    // full_matrices the extra columns are ignored by the gradient, so the loss takes the
    // first k only.
    for (shape, full, salt) in [
        (&[4, 3][..], false, 88),
        (&[3, 5][..], false, 89),
        (&[2, 3, 3][..], false, 90),
        (&[4, 2][..], true, 91),
    ] {
        check(
            &format!("svd {shape:?} full={full}"),
            vec![input(shape, salt)],
            move |t| {
                let (u, s, vh) = linalg::svd(&t[0], full)?;
                let k = s.shape()[s.rank() - 1];
                let (u, vh) = (u.narrow(-1, 0, k)?, vh.narrow(-2, 0, k)?);
                flat(&[u.mul(&u)?, s, vh.mul(&vh)?])
            },
        );
    }
    check("svdvals", vec![input(&[3, 4], 92)], |t| {
        linalg::svdvals(&t[0])
    });
    check("pinv", vec![input(&[4, 3], 93)], |t| {
        linalg::pinv(&t[0], None, None)
    });
    check("pinv wide", vec![input(&[2, 3], 94)], |t| {
        linalg::pinv(&t[0], None, None)
    });
    // Rank one (an outer product): the rank does not change under the product's own
    // perturbations, so the derivative exists, where the SVD's would divide 0 by 0.
    check(
        "pinv rank one",
        vec![input(&[3], 97), input(&[2], 98)],
        |t| linalg::pinv(&t[0].outer(&t[1])?, None, None),
    );
    for ord in ["2", "-2", "nuc"] {
        check(
            &format!("matrix_norm {ord}"),
            vec![input(&[2, 3, 4], 95)],
            move |t| linalg::matrix_norm(&t[0], ord, false),
        );
    }
    for p in ["2", "fro", "1"] {
        check(&format!("cond {p}"), vec![regular(&[2], 3, 96)], move |t| {
            linalg::cond(&t[0], p)
        });
    }
}

#[test]
fn linalg_systems_and_products() {
    use gpulab::linalg;
    for (upper, left, unit, salt) in [
        (true, true, false, 100),
        (false, false, false, 101),
        (false, true, true, 102),
    ] {
        let b = if left {
            input(&[3, 2], salt + 10)
        } else {
            input(&[2, 3], salt + 10)
        };
        check(
            &format!("solve_triangular upper={upper} left={left} unit={unit}"),
            vec![regular(&[], 3, salt), b],
            move |t| linalg::solve_triangular(&t[0], &t[1], upper, left, unit),
        );
    }
    // A tall full-rank A: the solution and the residuals, both inputs.
    check(
        "lstsq solution",
        vec![input(&[4, 2], 103), input(&[4, 3], 104)],
        |t| Ok(linalg::lstsq(&t[0], &t[1], None, None)?.0),
    );
    check(
        "lstsq residuals",
        vec![input(&[4, 2], 105), input(&[4], 106)],
        |t| Ok(linalg::lstsq(&t[0], &t[1], None, Some("gelsd"))?.1),
    );
    check(
        "multi_dot",
        vec![
            input(&[3], 107),
            input(&[3, 4], 108),
            input(&[4, 2], 109),
            input(&[2, 5], 110),
        ],
        |t| linalg::multi_dot(&[&t[0], &t[1], &t[2], &t[3]]),
    );
    check("vander", vec![input(&[2, 3], 111)], |t| {
        linalg::vander(&t[0], Some(4))
    });
}

#[test]
fn linalg_lu() {
    use gpulab::linalg;
    // P L U for square, tall and wide A; L and U both enter the loss.
    for (shape, salt) in [
        (&[3, 3][..], 120),
        (&[2, 4, 3][..], 121),
        (&[3, 5][..], 122),
    ] {
        check(&format!("lu {shape:?}"), vec![input(shape, salt)], |t| {
            let (_, l, u) = linalg::lu(&t[0])?;
            Tensor::cat(&[l.flatten()?, u.flatten()?], 0)
        });
    }
    check("lu_factor", vec![regular(&[2], 3, 123)], |t| {
        Ok(linalg::lu_factor(&t[0])?.0)
    });
    // lu_solve in its four forms, differentiated through the factor and the right side.
    for (left, adjoint, salt) in [
        (true, false, 124),
        (true, true, 125),
        (false, false, 126),
        (false, true, 127),
    ] {
        let b = if left {
            input(&[3, 2], salt + 10)
        } else {
            input(&[2, 3], salt + 10)
        };
        check(
            &format!("lu_solve left={left} adjoint={adjoint}"),
            vec![regular(&[], 3, salt), b],
            move |t| {
                let (lu, piv) = linalg::lu_factor(&t[0])?;
                linalg::lu_solve(&lu, &piv, &t[1], left, adjoint)
            },
        );
    }
}

#[test]
fn linalg_functions_of_matrices() {
    use gpulab::linalg;
    check("matrix_exp", vec![input(&[2, 3, 3], 130)], |t| {
        linalg::matrix_exp(&t[0].mul(2.0)?)
    });
    check("norm over two dims", vec![input(&[3, 2, 4], 131)], |t| {
        linalg::norm(&t[0], Some("inf"), Some(&[2, 0]), true)
    });
    check("logdet", vec![regular(&[2], 3, 132)], |t| t[0].logdet());
    // The factor of a positive-definite x xᵀ + 3 I, lower and upper; B enters too.
    for upper in [false, true] {
        check(
            &format!("cholesky_solve upper={upper}"),
            vec![input(&[3, 3], 133), input(&[3, 2], 134)],
            move |t| {
                let eye = Tensor::eye(3, CPU)?.to_dtype(DType::F64)?.mul(3.0)?;
                let a = t[0].matmul(&t[0].transpose(-2, -1)?)?.add(&eye)?;
                t[1].cholesky_solve(&linalg::cholesky(&a, upper)?, upper)
            },
        );
        check(
            &format!("cholesky_inverse upper={upper}"),
            vec![input(&[3, 3], 135)],
            move |t| {
                let eye = Tensor::eye(3, CPU)?.to_dtype(DType::F64)?.mul(3.0)?;
                let a = t[0].matmul(&t[0].transpose(-2, -1)?)?.add(&eye)?;
                linalg::cholesky(&a, upper)?.cholesky_inverse(upper)
            },
        );
    }
    check("pinverse", vec![input(&[2, 4], 136)], |t| {
        t[0].pinverse(1e-15)
    });
}

#[test]
fn linalg_tensor_forms_and_reflections() {
    use gpulab::linalg;
    check(
        "tensordot n=1",
        vec![input(&[2, 3], 140), input(&[3, 4], 141)],
        |t| t[0].tensordot(&t[1], 1),
    );
    check(
        "tensordot over two pairs, one of size 1",
        vec![input(&[2, 1, 3], 142), input(&[3, 4, 2], 143)],
        |t| t[0].tensordot_dims(&t[1], &[2, 1], &[0, 2]),
    );
    // A well-conditioned 4 x 4 read as [2, 2, 2, 2].
    check("tensorinv", vec![regular(&[], 4, 144)], |t| {
        linalg::tensorinv(&t[0].reshape([2, 2, 2, 2])?, 2)
    });
    check(
        "tensorsolve with dims",
        vec![regular(&[], 4, 145), input(&[2, 2], 146)],
        |t| linalg::tensorsolve(&t[0].reshape([2, 2, 2, 2])?, &t[1], Some(&[0])),
    );
    // Both the reflectors' vectors and their scales get gradients.
    check(
        "householder_product",
        vec![input(&[2, 4, 3], 147), input(&[2, 2], 148)],
        |t| linalg::householder_product(&t[0], &t[1]),
    );
    check(
        "linalg.cross",
        vec![input(&[2, 3], 149), input(&[2, 3], 150)],
        |t| linalg::cross(&t[0], &t[1], -1),
    );
}

#[test]
fn three_d_convolution_and_pooling() {
    check(
        "conv3d stride (1, 2, 1) padding (1, 0, 1) dilation (2, 1, 1) groups 2",
        vec![
            input(&[1, 4, 5, 4, 4], 90),
            input(&[2, 2, 2, 2, 3], 91),
            input(&[2], 92),
        ],
        |x| {
            F::conv3d(
                &x[0],
                &x[1],
                Some(&x[2]),
                (1, 2, 1),
                (1, 0, 1),
                (2, 1, 1),
                2,
            )
        },
    );
    check(
        "conv3d padding same, unbatched",
        vec![input(&[2, 3, 3, 4], 93), input(&[2, 2, 2, 3, 2], 94)],
        |x| F::conv3d(&x[0], &x[1], None, 1, "same", 1, 1),
    );
    // Distinct values, so no window has a tie for finite differences to straddle.
    check(
        "max_pool3d kernel 3 stride 2 padding 1 ceil",
        vec![input(&[1, 2, 5, 5, 4], 95)],
        |x| F::max_pool3d(&x[0], 3, 2, 1, 1, true),
    );
    check(
        "avg_pool3d ceil, count_include_pad false",
        vec![input(&[1, 2, 5, 4, 5], 96)],
        |x| F::avg_pool3d(&x[0], 3, 2, 1, true, false, None),
    );
    check(
        "avg_pool3d divisor_override",
        vec![input(&[2, 3, 3, 3], 97)],
        |x| F::avg_pool3d(&x[0], (2, 1, 2), 1, 0, false, true, Some(3)),
    );
}

#[test]
fn bilinear_threshold_and_the_triplet_loss_with_a_distance() {
    check(
        "bilinear with leading dimensions",
        vec![
            input(&[2, 3, 4], 100),
            input(&[2, 3, 2], 101),
            input(&[3, 4, 2], 102),
            input(&[3], 103),
        ],
        |x| F::bilinear(&x[0], &x[1], &x[2], Some(&x[3])),
    );
    // Inputs are at least 0.1 from 0.05, so no element straddles the threshold.
    check("threshold", vec![input(&[3, 4], 104)], |x| {
        F::threshold(&x[0], 0.05, -2.0)
    });
    check("softmax2d", vec![input(&[2, 3, 2, 2], 105)], |x| {
        F::softmax2d(&x[0])
    });
    check(
        "triplet_margin_with_distance_loss, an L1 distance, swap",
        vec![
            input(&[4, 3], 106),
            input(&[4, 3], 107),
            input(&[4, 3], 108),
        ],
        |x| {
            let l1 = |u: &Tensor, v: &Tensor| u.sub(v)?.abs()?.sum_dim(1);
            F::triplet_margin_with_distance_loss(&x[0], &x[1], &x[2], Some(&l1), 3.0, true)
        },
    );
}

#[test]
fn interpolate_modes() {
    check("interpolate linear", vec![input(&[1, 2, 5], 110)], |x| {
        F::interpolate(&x[0], 1.7, "linear", false)
    });
    check(
        "interpolate bicubic align_corners",
        vec![input(&[1, 2, 3, 4], 111)],
        |x| F::interpolate(&x[0], (5, 7), "bicubic", true),
    );
    check(
        "interpolate trilinear",
        vec![input(&[1, 1, 2, 3, 3], 112)],
        |x| F::interpolate(&x[0], (3, 4, 2), "trilinear", false),
    );
    check("interpolate area", vec![input(&[1, 2, 5, 7], 113)], |x| {
        F::interpolate(&x[0], (2, 3), "area", false)
    });
}

#[test]
fn adaptive_3d_pools() {
    check(
        "adaptive_avg_pool3d",
        vec![input(&[1, 2, 3, 5, 4], 120)],
        |x| F::adaptive_avg_pool3d(&x[0], (2, 3, 3)),
    );
    check(
        "adaptive_max_pool3d",
        vec![input(&[1, 2, 3, 5, 4], 121)],
        |x| F::adaptive_max_pool3d(&x[0], (2, 3, 3)),
    );
}

#[test]
fn conv_transpose3d() {
    check(
        "conv_transpose3d stride (2, 1, 2) padding (1, 0, 0) output_padding (1, 0, 0) groups 2",
        vec![
            input(&[1, 4, 2, 3, 2], 130),
            input(&[4, 1, 3, 2, 2], 131),
            input(&[2], 132),
        ],
        |x| {
            F::conv_transpose3d(
                &x[0],
                &x[1],
                Some(&x[2]),
                (2, 1, 2),
                (1, 0, 0),
                (1, 0, 0),
                2,
                1,
            )
        },
    );
}

#[test]
fn conv_transpose1d_and_unbatched_images() {
    check(
        "conv_transpose1d stride 2 padding 1 output_padding 1 groups 2 dilation 2",
        vec![
            input(&[2, 4, 3], 140),
            input(&[4, 1, 2], 141),
            input(&[2], 142),
        ],
        |x| F::conv_transpose1d(&x[0], &x[1], Some(&x[2]), 2, 1, 1, 2, 2),
    );
    check(
        "conv2d on an unbatched image",
        vec![input(&[2, 4, 5], 143), input(&[3, 2, 2, 3], 144)],
        |x| F::conv2d(&x[0], &x[1], None, (1, 2), 1, 1, 1),
    );
    check(
        "avg_pool2d with divisor_override, unbatched",
        vec![input(&[2, 4, 5], 145)],
        |x| {
            nn::AvgPool2d::new(3)
                .stride(2)
                .padding(1)
                .ceil_mode(true)
                .divisor_override(4)
                .forward(&x[0])
        },
    );
}

#[test]
fn grid_sample_volumes_and_affine_grid_3d() {
    for pad in ["zeros", "reflection"] {
        check(
            &format!("grid_sample trilinear, {pad}"),
            vec![input(&[1, 2, 3, 3, 4], 170), input(&[1, 2, 2, 2, 3], 171)],
            |x| F::grid_sample(&x[0], &x[1], "bilinear", pad, false),
        );
    }
    check("affine_grid 3-D", vec![input(&[2, 3, 4], 172)], |x| {
        F::affine_grid(&x[0], [2, 1, 2, 3, 2], true)
    });
}

#[test]
fn fractional_max_pool() {
    let u2 = Tensor::from_vec(vec![0.3f64, 0.8, 0.6, 0.1], vec![1, 2, 2], CPU).unwrap();
    check(
        "fractional_max_pool2d",
        vec![input(&[1, 2, 6, 7], 180)],
        |x| F::fractional_max_pool2d(&x[0], (2, 3), (3, 4), Some(&u2)),
    );
    let u3 = Tensor::from_vec(vec![0.3f64, 0.8, 0.6], vec![1, 1, 3], CPU).unwrap();
    check(
        "fractional_max_pool3d",
        vec![input(&[1, 1, 5, 5, 6], 181)],
        |x| F::fractional_max_pool3d(&x[0], 2, (3, 3, 4), Some(&u3)),
    );
}

#[test]
fn max_unpool3d() {
    // Windows that do not overlap: each element wins at most once (torch's gradient rule
    // differs from finite differences only where one wins twice).
    check("max_unpool3d", vec![input(&[1, 2, 4, 4, 4], 160)], |x| {
        let (v, i) = F::max_pool3d_with_indices(&x[0], 2, 2, 0, 1, false)?;
        F::max_unpool3d(&v, &i, 2, None, 0, None)
    });
}

#[test]
fn ctc_loss() {
    // Through log_softmax (as it is used), and straight on the log-probabilities (the loss's
    // own derivative; torch's backward there is exp(log_probs) minus it, see ctc_loss's doc).
    let targets = Tensor::from_vec(vec![1i64, 2, 1, 3, 3, 0], vec![2, 3], CPU).unwrap();
    for (name, red) in [
        ("ctc_loss mean", nn::Reduction::Mean),
        ("ctc_loss none", nn::Reduction::None),
    ] {
        check(name, vec![input(&[6, 2, 4], 150)], |x| {
            let lp = F::log_softmax(&x[0], -1)?;
            F::ctc_loss(&lp, &targets, &[6, 5], &[3, 2], 0, red, false)
        });
    }
    check(
        "ctc_loss on raw log-probabilities, blank 3",
        vec![input(&[5, 2, 4], 151)],
        |x| {
            F::ctc_loss(
                &x[0],
                &targets,
                &[5, 4],
                &[3, 1],
                3,
                nn::Reduction::Sum,
                false,
            )
        },
    );
}

#[test]
fn grid_sample_and_affine_grid() {
    for (mode, pad, align) in [
        ("bilinear", "zeros", false),
        ("bilinear", "reflection", true),
        ("bicubic", "border", false),
    ] {
        check(
            &format!("grid_sample {mode} {pad} align {align}"),
            vec![input(&[1, 2, 3, 4], 140), input(&[1, 2, 3, 2], 141)],
            |x| F::grid_sample(&x[0], &x[1], mode, pad, align),
        );
    }
    check("affine_grid", vec![input(&[2, 2, 3], 142)], |x| {
        F::affine_grid(&x[0], [2, 1, 3, 4], false)
    });
}

#[test]
fn embedding_bag_modes() {
    let idx = Tensor::from_vec(vec![1i64, 2, 4, 0, 3, 4, 1], vec![7], CPU).unwrap();
    let off = Tensor::from_vec(vec![0i64, 3, 3, 5], vec![4], CPU).unwrap();
    for mode in ["sum", "mean", "max"] {
        check(
            &format!("embedding_bag {mode}"),
            vec![input(&[5, 3], 150)],
            |x| F::embedding_bag(&idx, &x[0], Some(&off), mode, None, false, Some(3)),
        );
    }
    check(
        "embedding_bag per_sample_weights",
        vec![input(&[5, 3], 151), input(&[7], 152)],
        |x| F::embedding_bag(&idx, &x[0], Some(&off), "sum", Some(&x[1]), false, None),
    );
}
