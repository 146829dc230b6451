//! Every tensor operation on the CPU against plain Rust loops, and every bad input against
//! its error message.

mod common;

use common::{data, within};
use gpulab::{fork_rng, manual_seed, DType, Device, Error, Tensor};

const CPU: Device = Device::Cpu;

fn t(data: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_slice(data, shape, CPU).unwrap()
}

/// Equality with the first differing element in the message, not two huge vectors.
#[track_caller]
fn same(a: &[f32], b: &[f32]) {
    close(a, b, 0.0)
}

#[track_caller]
fn close(a: &[f32], b: &[f32], tol: f32) {
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(within(*x, *y, tol), "element {i}: {x} vs {y}");
    }
}

#[test]
fn constructors() {
    assert_eq!(
        Tensor::zeros((2, 3), CPU).unwrap().to_vec::<f32>().unwrap(),
        vec![0.0; 6]
    );
    assert_eq!(
        Tensor::ones([4], CPU).unwrap().to_vec::<f32>().unwrap(),
        vec![1.0; 4]
    );
    assert_eq!(
        Tensor::full(vec![2, 2], 7.5, CPU)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![7.5; 4]
    );
    assert_eq!(
        Tensor::arange(0.0, 5.0, CPU)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![0., 1., 2., 3., 4.]
    );
    assert_eq!(
        Tensor::arange_step(1.0, 2.0, 0.25, CPU)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![1., 1.25, 1.5, 1.75]
    );
    let x = Tensor::from_vec(vec![1f32, 2., 3., 4., 5., 6.], (2, 3), CPU).unwrap();
    assert_eq!(x.dtype(), DType::F32);
    assert_eq!(x.shape(), &[2, 3]);
    assert_eq!(x.rank(), 2);
    assert_eq!(x.numel(), 6);
    assert_eq!(x.device(), Device::Cpu);
    assert_eq!(
        x.to_vec2::<f32>().unwrap(),
        vec![vec![1., 2., 3.], vec![4., 5., 6.]]
    );
    assert_eq!(Tensor::from(vec![1.0, 2.0]).shape(), &[2]);
    assert_eq!(Tensor::zeros((), CPU).unwrap().shape(), &[] as &[usize]);
    assert!(Tensor::arange_step(0.0, 1.0, 0.0, CPU).is_err());
}

#[test]
fn random_is_seeded_and_shaped() {
    fork_rng(42, || {
        let a = Tensor::rand((100, 10), CPU)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        manual_seed(42);
        let b = Tensor::rand((100, 10), CPU)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        assert_eq!(a, b);
        let c = Tensor::rand((100, 10), CPU)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        assert_ne!(a, c, "the generator advances between calls");
        assert!(a.iter().all(|&v| (0.0..1.0).contains(&v)));
        let mean = a.iter().sum::<f32>() / a.len() as f32;
        assert!((mean - 0.5).abs() < 0.05, "uniform mean {mean}");

        manual_seed(7);
        let n = Tensor::randn(20001, CPU).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(n.len(), 20001);
        let mean = n.iter().sum::<f32>() / n.len() as f32;
        let var = n.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n.len() as f32;
        assert!(
            mean.abs() < 0.03 && (var - 1.0).abs() < 0.05,
            "normal mean {mean} var {var}"
        );
    })
}

/// A fork's draws are its own: the same seed gives the same numbers while other threads draw
/// from the global generator, forks nest, `manual_seed` inside one reseeds the fork, and a
/// fork that panics is left (this thread draws from the global generator again).
#[test]
fn fork_rng_is_private_nested_and_restored() {
    let draw = |n: usize| Tensor::rand(n, CPU).unwrap().to_vec::<f32>().unwrap();
    let alone = fork_rng(9, || draw(2000));
    let noise: Vec<_> = (0..3)
        .map(|_| std::thread::spawn(move || (0..200).for_each(|_| drop(draw(64)))))
        .collect();
    let crowded: Vec<Vec<f32>> = (0..20).map(|_| fork_rng(9, || draw(2000))).collect();
    noise.into_iter().for_each(|t| t.join().unwrap());
    assert!(crowded.iter().all(|c| *c == alone));

    let (outer, inner) = fork_rng(9, || {
        let first = draw(1000);
        let inner = fork_rng(1, || draw(3));
        let rest = draw(1000);
        ([first, rest].concat(), inner)
    });
    assert_eq!(outer, alone, "an inner fork does not advance the outer one");
    assert_eq!(inner, fork_rng(1, || draw(3)));
    let reseeded = fork_rng(5, || {
        draw(10);
        manual_seed(9);
        draw(2000)
    });
    assert_eq!(
        reseeded, alone,
        "manual_seed inside a fork reseeds the fork"
    );

    let caught = std::panic::catch_unwind(|| fork_rng(3, || panic!("inside")));
    assert!(caught.is_err());
    assert_ne!(
        draw(4),
        fork_rng(3, || draw(4)),
        "the panicking fork was left"
    );
}

#[test]
fn elementwise_same_shape_against_loops() {
    // Large enough to take the multi-threaded path too.
    for n in [7usize, 100_003] {
        let (a, b) = (
            data(n, 1),
            data(n, 2).iter().map(|v| v + 10.5).collect::<Vec<_>>(),
        );
        let (ta, tb) = (t(&a, &[n]), t(&b, &[n]));
        let r =
            |f: fn(f32, f32) -> f32| a.iter().zip(&b).map(|(&x, &y)| f(x, y)).collect::<Vec<_>>();
        same(&(&ta + &tb).to_vec::<f32>().unwrap(), &r(|x, y| x + y));
        same(&(&ta - &tb).to_vec::<f32>().unwrap(), &r(|x, y| x - y));
        same(&(&ta * &tb).to_vec::<f32>().unwrap(), &r(|x, y| x * y));
        same(&(&ta / &tb).to_vec::<f32>().unwrap(), &r(|x, y| x / y));
        same(
            &ta.add(&tb).unwrap().to_vec::<f32>().unwrap(),
            &r(|x, y| x + y),
        );
        same(
            &ta.div(&tb).unwrap().to_vec::<f32>().unwrap(),
            &r(|x, y| x / y),
        );
        same(
            &ta.maximum(&tb).unwrap().to_vec::<f32>().unwrap(),
            &r(f32::max),
        );
        same(
            &ta.minimum(&tb).unwrap().to_vec::<f32>().unwrap(),
            &r(f32::min),
        );
        // Owned forms.
        same(
            &(ta.clone() + tb.clone()).to_vec::<f32>().unwrap(),
            &r(|x, y| x + y),
        );
        same(
            &(ta.clone() * &tb).to_vec::<f32>().unwrap(),
            &r(|x, y| x * y),
        );
    }
}

#[test]
fn scalars_on_either_side() {
    let a = data(50, 3);
    let ta = t(&a, &[5, 10]);
    let m = |f: &dyn Fn(f32) -> f32| a.iter().map(|&x| f(x)).collect::<Vec<_>>();
    same(&(&ta * 2.0).to_vec::<f32>().unwrap(), &m(&|x| x * 2.0));
    same(&(&ta + 1.5).to_vec::<f32>().unwrap(), &m(&|x| x + 1.5));
    same(&(&ta - 1.5).to_vec::<f32>().unwrap(), &m(&|x| x - 1.5));
    same(&(&ta / 4.0).to_vec::<f32>().unwrap(), &m(&|x| x / 4.0));
    same(&(2.0 - &ta).to_vec::<f32>().unwrap(), &m(&|x| 2.0 - x));
    same(&(1.0 / &ta).to_vec::<f32>().unwrap(), &m(&|x| 1.0 / x));
    same(
        &(3.0 * ta.clone()).to_vec::<f32>().unwrap(),
        &m(&|x| 3.0 * x),
    );
    same(
        &ta.mul(2.0).unwrap().to_vec::<f32>().unwrap(),
        &m(&|x| x * 2.0),
    );
    same(
        &ta.pow(2.0).unwrap().to_vec::<f32>().unwrap(),
        &m(&|x| x.powf(2.0)),
    );
    assert_eq!((&ta * 2.0).shape(), &[5, 10]);
}

#[test]
fn unary_against_loops() {
    let a = data(1000, 4);
    let ta = t(&a, &[10, 100]);
    let m = |f: &dyn Fn(f32) -> f32| a.iter().map(|&x| f(x)).collect::<Vec<_>>();
    same(&ta.neg().unwrap().to_vec::<f32>().unwrap(), &m(&|x| -x));
    same(&(-&ta).to_vec::<f32>().unwrap(), &m(&|x| -x));
    same(&ta.abs().unwrap().to_vec::<f32>().unwrap(), &m(&f32::abs));
    same(&ta.exp().unwrap().to_vec::<f32>().unwrap(), &m(&f32::exp));
    same(
        &ta.relu().unwrap().to_vec::<f32>().unwrap(),
        &m(&|x| x.max(0.0)),
    );
    same(&ta.tanh().unwrap().to_vec::<f32>().unwrap(), &m(&f32::tanh));
    let pos = ta.abs().unwrap();
    same(
        &pos.sqrt().unwrap().to_vec::<f32>().unwrap(),
        &m(&|x| x.abs().sqrt()),
    );
    same(
        &pos.log().unwrap().to_vec::<f32>().unwrap(),
        &m(&|x| x.abs().ln()),
    );
    close(
        &ta.sigmoid().unwrap().to_vec::<f32>().unwrap(),
        &m(&|x| 1.0 / (1.0 + (-x).exp())),
        1e-6,
    );
}

#[test]
fn broadcasting_rows_and_columns() {
    let (r, c) = (4, 5);
    let a = data(r * c, 5);
    let row = data(c, 6);
    let col = data(r, 7);
    let ta = t(&a, &[r, c]);
    let got = (&ta + &t(&row, &[c])).to_vec::<f32>().unwrap();
    let want: Vec<f32> = (0..r * c).map(|i| a[i] + row[i % c]).collect();
    assert_eq!(got, want);
    let got = (&ta * &t(&col, &[r, 1])).to_vec::<f32>().unwrap();
    let want: Vec<f32> = (0..r * c).map(|i| a[i] * col[i / c]).collect();
    assert_eq!(got, want);
    // Both sides stretch: [r,1] - [1,c] -> [r,c].
    let outer = t(&col, &[r, 1]).sub(&t(&row, &[1, c])).unwrap();
    assert_eq!(outer.shape(), &[r, c]);
    let want: Vec<f32> = (0..r * c).map(|i| col[i / c] - row[i % c]).collect();
    same(&outer.to_vec::<f32>().unwrap(), &want);
    // 3-D against a 2-D plane, large enough for the parallel path.
    let (d0, d1, d2) = (8, 64, 100);
    let big = data(d0 * d1 * d2, 8);
    let plane = data(d1 * d2, 9);
    let got = t(&big, &[d0, d1, d2])
        .div(&t(&plane, &[d1, d2]))
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let want: Vec<f32> = (0..big.len())
        .map(|i| big[i] / plane[i % (d1 * d2)])
        .collect();
    assert_eq!(got, want);
}

#[test]
fn shape_mismatch_names_both_shapes() {
    let a = Tensor::zeros((2, 3), CPU).unwrap();
    let b = Tensor::zeros((4, 5), CPU).unwrap();
    let e = a.add(&b).unwrap_err();
    assert_eq!(
        e,
        Error::ShapeMismatch {
            op: "add",
            lhs: vec![2, 3],
            rhs: vec![4, 5]
        }
    );
    assert_eq!(
        e.to_string(),
        "shape mismatch in add: [2, 3] and [4, 5] are not compatible"
    );
    let e = a.matmul(&b).unwrap_err().to_string();
    assert_eq!(
        e,
        "shape mismatch in matmul: [2, 3] and [4, 5] are not compatible (the left operand's \
         last size, 3, must equal the right operand's second-to-last size, 4)"
    );
    let v = Tensor::zeros(4, CPU).unwrap();
    assert!(
        a.matmul(&v)
            .unwrap_err()
            .to_string()
            .ends_with("(the left operand's last size, 3, must equal the right operand's size, 4)"),
        "a vector on the right"
    );
    let batched = Tensor::zeros((5, 2, 3), CPU).unwrap();
    assert!(
        batched
            .matmul(&b)
            .unwrap_err()
            .to_string()
            .contains("last size, 3, must equal the right operand's second-to-last size, 4"),
        "a stack of matrices"
    );
    let e = Tensor::from_vec(vec![1.0; 5], (2, 3), CPU)
        .unwrap_err()
        .to_string();
    assert!(e.contains("5 values") && e.contains("[2, 3]"), "{e}");
    let e = a.reshape((4, 2)).unwrap_err().to_string();
    assert!(e.contains("[2, 3]") && e.contains("[4, 2]"), "{e}");
    assert!(a
        .sum_dim(2)
        .unwrap_err()
        .to_string()
        .contains("dimension 2 is out of range"));
    assert!(a
        .item::<f32>()
        .unwrap_err()
        .to_string()
        .contains("one element"));
}

#[test]
fn operators_panic_with_the_same_message() {
    let a = Tensor::zeros((2, 3), CPU).unwrap();
    let b = Tensor::zeros(4, CPU).unwrap();
    let want = a.mul(&b).unwrap_err().to_string();
    let got = std::panic::catch_unwind(|| &a * &b).unwrap_err();
    assert_eq!(got.downcast_ref::<String>().unwrap(), &want);
}

#[test]
fn reductions_against_loops() {
    let (d0, d1, d2) = (3, 4, 5);
    let a = data(d0 * d1 * d2, 10);
    let ta = t(&a, &[d0, d1, d2]);
    let total: f32 = a.iter().map(|&v| v as f64).sum::<f64>() as f32;
    close(&[ta.sum().unwrap().item::<f32>().unwrap()], &[total], 1e-6);
    assert_eq!(ta.sum().unwrap().shape(), &[] as &[usize]);
    close(
        &[ta.mean().unwrap().item::<f32>().unwrap()],
        &[total / a.len() as f32],
        1e-6,
    );
    let mx = a.iter().copied().fold(f32::MIN, f32::max);
    let mn = a.iter().copied().fold(f32::MAX, f32::min);
    assert_eq!(ta.max().unwrap().item::<f32>().unwrap(), mx);
    assert_eq!(ta.min().unwrap().item::<f32>().unwrap(), mn);

    let at = |i: usize, j: usize, k: usize| a[(i * d1 + j) * d2 + k];
    // Along each dimension, against an explicit triple loop.
    for dim in 0..3 {
        let (keep_a, keep_b) = match dim {
            0 => (d1, d2),
            1 => (d0, d2),
            _ => (d0, d1),
        };
        let mut want_sum = vec![0f32; keep_a * keep_b];
        let mut want_max = vec![f32::MIN; keep_a * keep_b];
        for i in 0..d0 {
            for j in 0..d1 {
                for k in 0..d2 {
                    let o = match dim {
                        0 => j * d2 + k,
                        1 => i * d2 + k,
                        _ => i * d1 + j,
                    };
                    want_sum[o] += at(i, j, k);
                    want_max[o] = want_max[o].max(at(i, j, k));
                }
            }
        }
        let s = ta.sum_dim(dim as isize).unwrap();
        assert_eq!(s.shape(), &[keep_a, keep_b]);
        close(&s.to_vec::<f32>().unwrap(), &want_sum, 1e-5);
        same(
            &ta.max_dim(dim as isize).unwrap().to_vec::<f32>().unwrap(),
            &want_max,
        );
        let mean = ta.mean_dim(dim as isize).unwrap().to_vec::<f32>().unwrap();
        let len = [d0, d1, d2][dim] as f32;
        close(
            &mean,
            &want_sum.iter().map(|v| v / len).collect::<Vec<_>>(),
            1e-5,
        );
        assert_eq!(ta.sum_keepdim(dim as isize).unwrap().shape()[dim], 1);
    }
    // Negative dims count from the end.
    same(
        &ta.sum_dim(-1).unwrap().to_vec::<f32>().unwrap(),
        &ta.sum_dim(2).unwrap().to_vec::<f32>().unwrap(),
    );
    // A long sum keeps its precision (1e6 values of 0.1).
    let long = Tensor::full(1_000_000, 0.1, CPU).unwrap();
    close(
        &[long.sum().unwrap().item::<f32>().unwrap()],
        &[100_000.0],
        1e-5,
    );
    // NaN propagates through max.
    assert!(t(&[1.0, f32::NAN, 3.0], &[3])
        .max()
        .unwrap()
        .item::<f32>()
        .unwrap()
        .is_nan());
    assert!(Tensor::zeros(0, CPU).unwrap().max().is_err());
    assert_eq!(
        Tensor::zeros(0, CPU)
            .unwrap()
            .sum()
            .unwrap()
            .item::<f32>()
            .unwrap(),
        0.0
    );
}

/// Threaded products with row blocks split evenly between the cores. With k in the hundreds
/// and signed inputs the sums cancel heavily, so each element is held to the classic f32 bound
/// for a k-term dot product, k * eps * sum |a_ip * b_pj| (a misplaced block would be off by
/// about the size of the result, thousands of times more).
#[test]
fn threaded_matmul_within_the_dot_product_error_bound() {
    for &(m, k, n) in &[(256, 256, 256), (301, 100, 203)] {
        let (a, b) = (data(m * k, 13), data(k * n, 14));
        let got = t(&a, &[m, k])
            .matmul(&t(&b, &[k, n]))
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        let want = matmul_ref(&a, &b, m, k, n);
        for i in 0..m {
            for j in 0..n {
                let mag: f64 = (0..k)
                    .map(|p| (a[i * k + p] as f64 * b[p * n + j] as f64).abs())
                    .sum();
                let bound = k as f64 * f32::EPSILON as f64 * mag;
                let (x, y) = (got[i * n + j] as f64, want[i * n + j] as f64);
                assert!(
                    (x - y).abs() <= bound,
                    "{m}x{k}x{n} element ({i}, {j}): {x} vs {y}, bound {bound}"
                );
            }
        }
    }
}

fn matmul_ref(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut c = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k)
                .map(|p| a[i * k + p] as f64 * b[p * n + j] as f64)
                .sum::<f64>() as f32;
        }
    }
    c
}

/// Strided 2-D operands large enough for the packed path (`matmul_cpu_views`: packed from
/// their storage, not copied) give the product of their contiguous copies, in f32 and f64:
/// a transposed narrow (offset and a row stride past its width) times a transpose.
#[test]
fn strided_views_multiply_as_their_contiguous_copies() {
    let (m, k, n) = (40, 50, 60);
    for dtype in [DType::F32, DType::F64] {
        let abase = t(&data(k * (m + 4), 21), &[k, m + 4])
            .to_dtype(dtype)
            .unwrap();
        let a = abase.narrow(1, 2, m).unwrap().t().unwrap();
        let b = t(&data(n * k, 22), &[n, k])
            .to_dtype(dtype)
            .unwrap()
            .t()
            .unwrap();
        assert!(!a.is_contiguous() && !b.is_contiguous());
        let (ac, bc) = (a.contiguous().unwrap(), b.contiguous().unwrap());
        for (what, x, y) in [
            ("a @ b", &a, &b),
            ("a @ b dense", &a, &bc),
            ("dense @ b", &ac, &b),
        ] {
            let got = x.matmul(y).unwrap().to_dtype(DType::F64).unwrap();
            let want = ac.matmul(&bc).unwrap().to_dtype(DType::F64).unwrap();
            assert_eq!(got.shape(), &[m, n]);
            let (g, w) = (got.to_vec::<f64>().unwrap(), want.to_vec::<f64>().unwrap());
            for (i, (x, y)) in g.iter().zip(&w).enumerate() {
                assert!(
                    (x - y).abs() <= 1e-4 * (1.0 + y.abs()),
                    "{dtype} {what} [{i}]: {x} vs {y}"
                );
            }
        }
    }
}

#[test]
fn matmul_against_triple_loop() {
    // Tiny (direct loop), odd edges in every dimension, a K past one block, wide N.
    for &(m, k, n) in &[
        (2, 3, 4),
        (1, 1, 1),
        (13, 7, 33),
        (37, 300, 45),
        (150, 64, 70),
        (5, 513, 3),
        (64, 64, 4100),
        // The register-tiled small path: whole 4 x 16 tiles, and leftover rows and columns.
        (4, 8, 16),
        (32, 32, 32),
        (9, 5, 35),
        (17, 3, 20),
    ] {
        let (a, b) = (data(m * k, 11), data(k * n, 12));
        let got = t(&a, &[m, k]).matmul(&t(&b, &[k, n])).unwrap();
        assert_eq!(got.shape(), &[m, n]);
        let got = got.to_vec::<f32>().unwrap();
        let want = matmul_ref(&a, &b, m, k, n);
        // Any order of the k additions in f32 is within Higham's bound of the exact sum,
        // gamma_k * sum |a_ip b_pj| with gamma_k = k u / (1 - k u): the products here
        // (|values| <= 10) cancel to results near 0 whose rounding no fixed tolerance bounds.
        // A term lost or counted twice is off by up to 100, far outside it.
        let u = f32::EPSILON as f64 / 2.0;
        let gamma = k as f64 * u / (1.0 - k as f64 * u);
        for i in 0..m {
            for j in 0..n {
                let mag: f64 = (0..k)
                    .map(|p| (a[i * k + p] as f64 * b[p * n + j] as f64).abs())
                    .sum();
                let (g, w) = (got[i * n + j] as f64, want[i * n + j] as f64);
                // The reference itself is rounded once to f32.
                let bound = gamma * mag + w.abs() * u + 1e-30;
                assert!(
                    (g - w).abs() <= bound,
                    "{m}x{k}x{n}, element ({i}, {j}): {g} vs {w} (bound {bound:e})"
                );
            }
        }
    }
    // 1-D operands follow torch: vector-matrix, matrix-vector, dot.
    let (a, b) = (data(6, 13), data(6, 14));
    let m = t(&a, &[2, 3]);
    assert_eq!(m.matmul(&t(&b[..3], &[3])).unwrap().shape(), &[2]);
    assert_eq!(t(&b[..2], &[2]).matmul(&m).unwrap().shape(), &[3]);
    let dot = t(&a, &[6]).matmul(&t(&b, &[6])).unwrap();
    assert_eq!(dot.shape(), &[] as &[usize]);
    close(
        &[dot.item::<f32>().unwrap()],
        &[a.iter().zip(&b).map(|(x, y)| x * y).sum()],
        1e-5,
    );
}

#[test]
fn transpose_and_reshape() {
    let a = data(24, 15);
    let ta = t(&a, &[2, 3, 4]);
    let tr = ta.transpose(0, 2).unwrap();
    assert_eq!(tr.shape(), &[4, 3, 2]);
    let v = tr.to_vec::<f32>().unwrap();
    for i in 0..2 {
        for j in 0..3 {
            for k in 0..4 {
                assert_eq!(v[(k * 3 + j) * 2 + i], a[(i * 3 + j) * 4 + k]);
            }
        }
    }
    same(&ta.transpose(-1, 0).unwrap().to_vec::<f32>().unwrap(), &v);
    // 2-D takes the tiled path; check a size that is not a multiple of the tile.
    let (r, c) = (70, 45);
    let b = data(r * c, 16);
    let bt = t(&b, &[r, c]).t().unwrap();
    assert_eq!(bt.shape(), &[c, r]);
    let bv = bt.to_vec::<f32>().unwrap();
    for i in 0..r {
        for j in 0..c {
            assert_eq!(bv[j * r + i], b[i * c + j]);
        }
    }
    let big = data(300 * 200, 17);
    let bigt = t(&big, &[300, 200]).t().unwrap().t().unwrap();
    same(&bigt.to_vec::<f32>().unwrap(), &big);

    let re = ta.reshape((6, 4)).unwrap();
    assert_eq!(re.shape(), &[6, 4]);
    same(&re.to_vec::<f32>().unwrap(), &a);
    assert_eq!(ta.flatten().unwrap().shape(), &[24]);
}

#[test]
fn display_like_torch() {
    let x = t(&[1., 2., 3., 4.], &[2, 2]);
    assert_eq!(x.to_string(), "tensor([[1., 2.],\n        [3., 4.]])");
    assert_eq!(format!("{x:?}"), x.to_string());
    assert_eq!(
        t(&[1.5, -2.25], &[2]).to_string(),
        "tensor([ 1.5000, -2.2500])"
    );
    assert_eq!(
        Tensor::full((), 3.0, CPU).unwrap().to_string(),
        "tensor(3.)"
    );
    assert_eq!(
        t(&[1e-5, 1.0], &[2]).to_string(),
        "tensor([1.0000e-05, 1.0000e+00])"
    );
    assert_eq!(
        t(&[f32::NAN, 1.0, f32::NEG_INFINITY], &[3]).to_string(),
        "tensor([nan, 1., -inf])"
    );
    let three_d = Tensor::arange(0.0, 8.0, CPU)
        .unwrap()
        .reshape((2, 2, 2))
        .unwrap();
    assert_eq!(
        three_d.to_string(),
        "tensor([[[0., 1.],\n         [2., 3.]],\n\n        [[4., 5.],\n         [6., 7.]]])"
    );
    // Large tensors are cut with "..."; whole numbers spanning more than three orders of
    // magnitude print in scientific notation (torch 2.9.1 printed every string below).
    let big = Tensor::arange(0.0, 2000.0, CPU).unwrap();
    assert_eq!(
        big.to_string(),
        "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n        1.9990e+03])"
    );
    let big2 = Tensor::arange(0.0, 10000.0, CPU)
        .unwrap()
        .reshape((100, 100))
        .unwrap();
    let s = big2.to_string();
    assert!(
        s.starts_with(
            "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.7000e+01, 9.8000e+01,\n         9.9000e+01],\n        [1.0000e+02,"
        ),
        "{s}"
    );
    assert!(
        s.contains("        ...,\n") && s.ends_with(" 9.9980e+03,\n         9.9990e+03]])"),
        "{s}"
    );
    let small = Tensor::arange(0.0, 1001.0, CPU).unwrap();
    assert_eq!(
        small.to_string(),
        "tensor([   0.,    1.,    2.,  ...,  998.,  999., 1000.])"
    );
    // Rows inside a matrix wrap where torch wraps them: (80 - the row's indent) / (width + 2).
    let rows = Tensor::arange(0.0, 200.0, CPU)
        .unwrap()
        .reshape((2, 100))
        .unwrap()
        .to_string();
    assert!(
        rows.starts_with("tensor([[  0.,   1.,   2.,   3.,   4.,   5.,   6.,   7.,   8.,   9.,  10.,  11.,\n          12.,"),
        "{rows}"
    );
    for (values, torch) in [
        (vec![1.0, 2000.0], "tensor([1.0000e+00, 2.0000e+03])"),
        (vec![1.0, 200.0], "tensor([  1., 200.])"),
        (
            vec![0.0, 1.0, 5000.0],
            "tensor([0.0000e+00, 1.0000e+00, 5.0000e+03])",
        ),
        (vec![1e9, 1.0], "tensor([1.0000e+09, 1.0000e+00])"),
        (
            vec![1.0, f32::INFINITY, 2000.0],
            "tensor([1.0000e+00,        inf, 2.0000e+03])",
        ),
        (
            vec![1.5, f32::NAN, f32::INFINITY],
            "tensor([1.5000,    nan,    inf])",
        ),
        (vec![-0.0, 1.0], "tensor([-0., 1.])"),
        (vec![-3.0, 0.0], "tensor([-3.,  0.])"),
        (vec![1e-5, 0.0], "tensor([1.0000e-05, 0.0000e+00])"),
        (
            vec![-1.5, 2.25, -1000.125],
            "tensor([   -1.5000,     2.2500, -1000.1250])",
        ),
    ] {
        let n = values.len();
        assert_eq!(t(&values, &[n]).to_string(), torch);
    }
    // Empty tensors: the shape unless it is (0,), the dtype unless it is float32.
    assert_eq!(Tensor::zeros(0, CPU).unwrap().to_string(), "tensor([])");
    assert_eq!(
        Tensor::zeros((0, 3), CPU).unwrap().to_string(),
        "tensor([], size=(0, 3))"
    );
    assert_eq!(
        Tensor::from_vec(Vec::<i64>::new(), (0, 3), CPU)
            .unwrap()
            .to_string(),
        "tensor([], size=(0, 3), dtype=torch.int64)"
    );
    assert_eq!(
        Tensor::from_vec(Vec::<i32>::new(), 0, CPU)
            .unwrap()
            .to_string(),
        "tensor([], dtype=torch.int32)"
    );
    assert_eq!(
        Tensor::zeros(0, CPU)
            .unwrap()
            .requires_grad_(true)
            .unwrap()
            .to_string(),
        "tensor([], requires_grad=True)"
    );
    // Long rows wrap at 80 columns.
    let row = Tensor::arange(0.0, 30.0, CPU).unwrap().to_string();
    assert!(
        row.lines().count() > 1 && row.lines().all(|l| l.len() <= 80),
        "{row}"
    );
}

#[test]
fn cpu_events_time_host_work() {
    let start = gpulab::Event::new(CPU).unwrap();
    let end = gpulab::Event::new(CPU).unwrap();
    assert!(
        start.elapsed_ms(&end).is_err(),
        "unrecorded events have no time"
    );
    start.record().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    end.record().unwrap();
    end.synchronize().unwrap();
    let ms = start.elapsed_ms(&end).unwrap();
    assert!((19.0..500.0).contains(&ms), "{ms} ms");
}

#[test]
fn moving_within_the_cpu_copies_nothing() {
    let a = Tensor::ones(3, CPU).unwrap();
    let b = a.to(Device::Cpu).unwrap();
    assert_eq!(b.to_vec::<f32>().unwrap(), vec![1.0; 3]);
    assert_eq!(a.cpu().unwrap().device(), Device::Cpu);
}
