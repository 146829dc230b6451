//! Every dtype on CUDA against the CPU backend at sizes that reach every kernel path (grid
//! strides, split reductions, block-per-row argmax), every cast pair bit for bit, and matmul
//! in f64, f32 (with and without TF32), f16 and bf16. The GPU tests are `#[ignore]`d: run
//! them on a GPU machine with `-- --ignored` (tests/test_gpu.py); without a device they print
//! "skipped: no CUDA device". The CPU half/bfloat16 matmul test runs everywhere.

use gpulab::tensor::{bf16, f16};
use gpulab::{DType, Device, Tensor};
use DType::*;

mod common;
use common::have_gpu;

const CPU: Device = Device::Cpu;
const GPU: Device = Device::Cuda(0);
const FLOATS: [DType; 4] = [F32, F64, F16, BF16];

/// `n` irregular values of dtype `d` on the CPU: floats in [-4, 4) with fractions, signed
/// integers in [-50, 50), u8 in [0, 200), bools in an irregular pattern.
fn values(d: DType, n: usize, salt: u64) -> Tensor {
    let v: Vec<f64> = (0..n as u64)
        .map(|i| {
            let h = (i ^ salt.wrapping_mul(0x9E37_79B9)).wrapping_mul(2654435761) >> 7;
            match d {
                Bool => h.is_multiple_of(3) as u8 as f64,
                U8 => (h % 200) as f64,
                I32 | I64 => (h % 100) as f64 - 50.0,
                _ => (h % 800) as f64 / 100.0 - 4.0,
            }
        })
        .collect();
    Tensor::from_vec(v, n, CPU).unwrap().to_dtype(d).unwrap()
}

/// Allowed difference between the backends for one element of dtype `d`: one rounding of
/// the stored type for the half types (both compute in f32, with CUDA's and Rust's libm
/// differing by a few f32 ulps, which can flip the last half-precision bit), a few ulps
/// for f32 and f64, nothing for integers and bools.
fn tol(d: DType) -> f64 {
    match d {
        F16 => 2e-3,
        BF16 => 1.6e-2,
        F32 => 1e-5,
        F64 => 1e-12,
        _ => 0.0,
    }
}

/// The first `rows` values of `t` as a `(rows, 1)` column of the same dtype (on the CPU).
fn column(t: &Tensor, rows: usize) -> Tensor {
    let v = t.to_f64_vec().unwrap()[..rows].to_vec();
    Tensor::from_vec(v, (rows, 1), CPU)
        .unwrap()
        .to_dtype(t.dtype())
        .unwrap()
}

#[track_caller]
fn same(what: &str, g: &Tensor, c: &Tensor, tol: f64) {
    assert_eq!(g.device(), GPU, "{what}: device");
    assert_eq!(g.dtype(), c.dtype(), "{what}: dtype");
    assert_eq!(g.shape(), c.shape(), "{what}: shape");
    let (gv, cv) = (g.to_f64_vec().unwrap(), c.to_f64_vec().unwrap());
    for (i, (&x, &y)) in gv.iter().zip(&cv).enumerate() {
        let ok = (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= tol * y.abs().max(1.0);
        assert!(ok, "{what}: element {i}: gpu {x} vs cpu {y}");
    }
}

macro_rules! gpu_tests {
    ($($name:ident),* $(,)?) => {$(
        #[test]
        #[ignore = "needs a CUDA device"]
        fn $name() {
            if have_gpu() {
                super::$name();
                println!("ok: {}", stringify!($name));
            }
        }
    )*};
}

mod gpu {
    use super::have_gpu;
    gpu_tests!(
        moves_every_dtype_both_ways,
        casts_every_pair_as_the_cpu,
        elementwise_every_op_and_dtype,
        comparisons_and_where_every_dtype,
        reductions_every_dtype_and_path,
        matmul_every_float_dtype,
        tf32_is_used_only_when_allowed,
    );
}

fn moves_every_dtype_both_ways() {
    for d in DType::ALL {
        for n in [0usize, 1, 1000, 1 << 20] {
            let c = values(d, n, 1);
            let g = c.to(GPU).unwrap();
            assert_eq!((g.dtype(), g.device()), (d, GPU));
            let back = g.cpu().unwrap();
            assert_eq!(
                back.to_f64_vec().unwrap(),
                c.to_f64_vec().unwrap(),
                "{d} x {n}"
            );
        }
        // Constructors of every dtype on the device: zeros by memset, others by fill.
        for v in [0.0, 1.0, -2.5, 300.0] {
            let g = Tensor::full_dtype((3, 5), v, d, GPU).unwrap();
            let c = Tensor::full_dtype((3, 5), v, d, CPU).unwrap();
            same(&format!("full({v}) {d}"), &g, &c, 0.0);
        }
        // (Device, DType) in one call, both directions, without a host detour on the GPU.
        for e in DType::ALL {
            let c = values(d, 257, 2);
            same(
                &format!("to((cuda, {e})) of {d}"),
                &c.to((GPU, e)).unwrap(),
                &c.to_dtype(e).unwrap(),
                0.0,
            );
            let back = c.to(GPU).unwrap().to((CPU, e)).unwrap();
            assert_eq!(
                back.to_f64_vec().unwrap(),
                c.to_dtype(e).unwrap().to_f64_vec().unwrap()
            );
        }
    }
}

/// Every dtype to every dtype, including the awkward values: NaN, infinities, -0, values
/// that saturate or wrap, halfway cases of the half types, i64 past 2^53.
fn casts_every_pair_as_the_cpu() {
    let floats = vec![
        0.0,
        -0.0,
        1.0,
        -1.5,
        2.5,
        -2.7,
        255.9,
        256.0,
        -129.0,
        65504.0,
        65520.0,
        1e10,
        -1e20,
        3.0e38,
        1.0e-8,
        1.0 + 2f64.powi(-8),
        1.0 + 3.0 * 2f64.powi(-9),
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ];
    let ints: Vec<i64> = vec![
        0,
        1,
        -1,
        255,
        256,
        -129,
        i32::MAX as i64 + 1,
        (1 << 53) + 1,
        i64::MAX,
        i64::MIN,
    ];
    let sources = [
        Tensor::from_vec(floats.clone(), floats.len(), CPU).unwrap(),
        Tensor::from_vec(ints.clone(), ints.len(), CPU).unwrap(),
    ];
    for src in &sources {
        for from in DType::ALL {
            let c = src.to_dtype(from).unwrap();
            let g = c.to(GPU).unwrap();
            for to in DType::ALL {
                let (gc, cc) = (g.to_dtype(to).unwrap(), c.to_dtype(to).unwrap());
                assert_eq!(gc.dtype(), to);
                // Bit for bit (NaN as NaN).
                let (gv, cv) = (gc.to_f64_vec().unwrap(), cc.to_f64_vec().unwrap());
                for (i, (x, y)) in gv.iter().zip(&cv).enumerate() {
                    assert!(
                        (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits(),
                        "{from} -> {to} of element {i} ({:?}): gpu {x} vs cpu {y}",
                        c.to_f64_vec().unwrap()[i]
                    );
                }
                if to == I64 {
                    assert_eq!(
                        gc.to_vec::<i64>().unwrap(),
                        cc.to_vec::<i64>().unwrap(),
                        "{from} -> i64 exactly"
                    );
                }
            }
        }
    }
    // The half types round like the `half` crate, from f32 and from f64.
    let x = Tensor::from_vec(
        vec![1.0f32 + 2f32.powi(-11), 1.0 + 3.0 * 2f32.powi(-11)],
        2,
        GPU,
    )
    .unwrap();
    assert_eq!(
        x.to_dtype(F16).unwrap().to_vec::<f16>().unwrap(),
        vec![
            f16::from_f32(1.0 + 2f32.powi(-11)),
            f16::from_f32(1.0 + 3.0 * 2f32.powi(-11))
        ]
    );
    assert_eq!(
        x.to_dtype(BF16).unwrap().to_vec::<bf16>().unwrap(),
        vec![
            bf16::from_f32(1.0 + 2f32.powi(-11)),
            bf16::from_f32(1.0 + 3.0 * 2f32.powi(-11))
        ]
    );
}

fn elementwise_every_op_and_dtype() {
    let n = 100_003; // not a multiple of the block: the tail of the grid stride
    for d in DType::ALL {
        let (a, b) = (values(d, n, 3), values(d, n, 4));
        let (ga, gb) = (a.to(GPU).unwrap(), b.to(GPU).unwrap());
        type Bin = fn(&Tensor, &Tensor) -> gpulab::error::Result<Tensor>;
        let ops: [(&str, Bin); 6] = [
            ("add", |x, y| x.add(y)),
            ("sub", |x, y| x.sub(y)),
            ("mul", |x, y| x.mul(y)),
            ("div", |x, y| x.div(y)),
            ("maximum", |x, y| x.maximum(y)),
            ("minimum", |x, y| x.minimum(y)),
        ];
        for (name, f) in ops {
            match (f(&a, &b), f(&ga, &gb)) {
                (Ok(c), Ok(g)) => {
                    let t = tol(c.dtype());
                    same(&format!("{name} {d}"), &g, &c, t);
                    // Broadcast: a (n,) row against a (3, 1) column.
                    let col = column(&b, 3);
                    let c2 = f(&col, &a).unwrap();
                    let g2 = f(&col.to(GPU).unwrap(), &ga).unwrap();
                    same(&format!("{name} {d} broadcast"), &g2, &c2, t);
                }
                (Err(c), Err(g)) => {
                    let (c, g) = (c.to_string(), g.to_string());
                    assert!(
                        g.contains(name) && g.contains(d.name()) && g.contains("cuda:0"),
                        "{g}"
                    );
                    assert!(c.contains(name), "{c}");
                }
                (c, g) => panic!("{name} {d}: cpu {:?} but gpu {:?}", c.err(), g.err()),
            }
            // With a scalar on either side (the tensor layer promotes as torch).
            for s in [2.0f64, -1.5] {
                let pair = |t: &Tensor| {
                    (
                        match name {
                            "add" => t.add(s),
                            "sub" => t.sub(s),
                            "mul" => t.mul(s),
                            "div" => t.div(s),
                            "maximum" => t.maximum(s),
                            _ => t.minimum(s),
                        },
                        t.neg().and_then(|x| x.add(s)),
                    )
                };
                let ((c1, c2), (g1, g2)) = (pair(&a), pair(&ga));
                match (c1, g1) {
                    (Ok(c), Ok(g)) => same(&format!("{name} {d} {s}"), &g, &c, tol(c.dtype())),
                    (Err(_), Err(_)) => {}
                    (c, g) => panic!("{name} {d} {s}: cpu {:?} gpu {:?}", c.err(), g.err()),
                }
                match (c2, g2) {
                    (Ok(c), Ok(g)) => same(&format!("{s} - x, {d}"), &g, &c, tol(c.dtype())),
                    (Err(_), Err(_)) => {}
                    (c, g) => panic!("{s} - x {d}: cpu {:?} gpu {:?}", c.err(), g.err()),
                }
            }
        }
        // The rounded divisions and atan2, against a divisor without zeros (an integer zero
        // is an error on both devices), and with a scalar divisor of either sign.
        let nz = b.masked_fill(&b.eq(0).unwrap(), 7.0).unwrap();
        let gnz = nz.to(GPU).unwrap();
        let divisions: [(&str, Bin); 5] = [
            ("atan2", |x, y| x.atan2(y)),
            // Hurwitz's zeta at x in (1.5, 2.5), q in (0.25, 1.25): the direct terms and
            // the Euler-Maclaurin tail, in double on both devices.
            ("zeta", |x, y| {
                x.sigmoid()?.add(1.5)?.zeta(&y.sigmoid()?.add(0.25)?)
            }),
            ("fmod", |x, y| x.fmod(y)),
            ("remainder", |x, y| x.remainder(y)),
            ("floor_divide", |x, y| x.floor_divide(y)),
        ];
        for (name, f) in divisions {
            match (f(&a, &nz), f(&ga, &gnz)) {
                (Ok(c), Ok(g)) => same(&format!("{name} {d}"), &g, &c, tol(c.dtype())),
                (Err(c), Err(g)) => {
                    let g = g.to_string();
                    assert!(g.contains(name) && g.contains("cuda:0"), "{g} (cpu: {c})");
                }
                (c, g) => panic!("{name} {d}: cpu {:?} but gpu {:?}", c.err(), g.err()),
            }
            if name == "atan2" || name == "zeta" {
                continue;
            }
            for s in [3.0f64, -1.5] {
                let run = |t: &Tensor| match name {
                    "fmod" => t.fmod(s),
                    "remainder" => t.remainder(s),
                    _ => t.floor_divide(s),
                };
                match (run(&a), run(&ga)) {
                    (Ok(c), Ok(g)) => same(&format!("{name} {d} {s}"), &g, &c, tol(c.dtype())),
                    (Err(_), Err(_)) => {}
                    (c, g) => panic!("{name} {d} {s}: cpu {:?} gpu {:?}", c.err(), g.err()),
                }
            }
        }
        // pow with exponents 0..3; negative integer exponents are in tensor_dtype.rs's
        // edge_cases_follow_torch, run on both devices.
        if d != Bool {
            let e: Vec<f64> = (0..n).map(|i| (i % 4) as f64).collect();
            let e = Tensor::from_vec(e, n, CPU).unwrap().to_dtype(d).unwrap();
            let (c, g) = (a.pow(&e).unwrap(), ga.pow(&e.to(GPU).unwrap()).unwrap());
            same(&format!("pow {d}"), &g, &c, tol(d).max(1e-6));
        }
        type Un = fn(&Tensor) -> gpulab::error::Result<Tensor>;
        let unary: [(&str, Un); 33] = [
            ("neg", |x| x.neg()),
            ("abs", |x| x.abs()),
            ("relu", |x| x.relu()),
            ("exp", |x| x.exp()),
            ("sqrt", |x| x.abs().and_then(|y| y.sqrt())),
            ("log", |x| {
                x.abs().and_then(|y| y.add(1)).and_then(|y| y.log())
            }),
            ("tanh", |x| x.tanh()),
            ("sigmoid", |x| x.sigmoid()),
            ("sin", |x| x.sin()),
            ("cos", |x| x.cos()),
            ("floor", |x| x.floor()),
            ("ceil", |x| x.ceil()),
            ("round", |x| x.round()),
            ("sign", |x| x.sign()),
            ("log1p", |x| x.abs().and_then(|y| y.log1p())),
            ("expm1", |x| x.expm1()),
            ("erf", |x| x.erf()),
            ("tan", |x| x.tan()),
            // Into their domains: (-1, 1) for asin, acos and atanh, above 1 for acosh.
            ("asin", |x| x.div(4.5).and_then(|y| y.asin())),
            ("acos", |x| x.div(4.5).and_then(|y| y.acos())),
            ("atan", |x| x.atan()),
            ("sinh", |x| x.sinh()),
            ("cosh", |x| x.cosh()),
            ("asinh", |x| x.asinh()),
            ("acosh", |x| {
                x.abs().and_then(|y| y.add(1)).and_then(|y| y.acosh())
            }),
            ("atanh", |x| x.div(4.5).and_then(|y| y.atanh())),
            // The gamma family on [-4, 4): near and at the poles too, where both devices
            // give the same infinities and NaNs.
            ("lgamma", |x| x.lgamma()),
            ("digamma", |x| x.digamma()),
            ("polygamma", |x| x.polygamma(1)),
            ("polygamma", |x| x.polygamma(2)),
            ("mvlgamma", |x| x.mul(x)?.add(1)?.mvlgamma(3)),
            ("erfc", |x| x.erfc()),
            ("erfinv", |x| x.div(4.5).and_then(|y| y.erfinv())),
        ];
        for (name, f) in unary {
            match (f(&a), f(&ga)) {
                (Ok(c), Ok(g)) => same(&format!("{name} {d}"), &g, &c, tol(c.dtype())),
                (Err(c), Err(g)) => {
                    let g = g.to_string();
                    assert!(g.contains(name) && g.contains("cuda:0"), "{g} (cpu: {c})");
                }
                (c, g) => panic!("{name} {d}: cpu {:?} but gpu {:?}", c.err(), g.err()),
            }
        }
    }
}

fn comparisons_and_where_every_dtype() {
    let n = 70_001;
    for d in DType::ALL {
        let (a, b) = (values(d, n, 6), values(d, n, 7));
        let (ga, gb) = (a.to(GPU).unwrap(), b.to(GPU).unwrap());
        type Cmp = fn(&Tensor, &Tensor) -> gpulab::error::Result<Tensor>;
        let ops: [(&str, Cmp); 6] = [
            ("eq", |x, y| x.eq(y)),
            ("ne", |x, y| x.ne(y)),
            ("lt", |x, y| x.lt(y)),
            ("le", |x, y| x.le(y)),
            ("gt", |x, y| x.gt(y)),
            ("ge", |x, y| x.ge(y)),
        ];
        for (name, f) in ops {
            let (c, g) = (f(&a, &b).unwrap(), f(&ga, &gb).unwrap());
            assert_eq!(g.dtype(), Bool);
            same(&format!("{name} {d}"), &g, &c, 0.0);
            let col = column(&b, 2);
            let (c, g) = (f(&col, &a).unwrap(), f(&col.to(GPU).unwrap(), &ga).unwrap());
            same(&format!("{name} {d} broadcast"), &g, &c, 0.0);
        }
        let (cc, gc) = (a.gt(&b).unwrap(), ga.gt(&gb).unwrap());
        same(
            &format!("where {d}"),
            &ga.where_(&gc, &gb).unwrap(),
            &a.where_(&cc, &b).unwrap(),
            0.0,
        );
    }
    // NaN compares false except for ne, on both.
    let x = Tensor::from_vec(vec![f32::NAN, 1.0], 2, GPU).unwrap();
    assert_eq!(
        x.ne(&x).unwrap().to_vec::<bool>().unwrap(),
        vec![true, false]
    );
    assert_eq!(
        x.eq(&x).unwrap().to_vec::<bool>().unwrap(),
        vec![false, true]
    );
}

fn reductions_every_dtype_and_path() {
    // (outer, len, inner) shapes: one block per row, a thread per output, and both split
    // plans (few long rows, few long columns), plus long rows for the block argmax.
    let shapes = [
        (64, 1000, 1),
        (7, 300, 129),
        (2, 1 << 21, 1),
        (1, 1 << 20, 3),
        (1000, 5, 1),
    ];
    for d in DType::ALL {
        for (outer, len, inner) in shapes {
            let a = values(d, outer * len * inner, 8)
                .reshape((outer, len, inner))
                .unwrap();
            let ga = a.to(GPU).unwrap();
            let sum_tol = match d {
                // Both accumulate in f32 in different orders over up to 2^21 values in
                // [-4, 4): a relative 1e-4 of the sum's scale covers it.
                F32 | F16 | BF16 => 1e-4 * (len as f64).sqrt(),
                F64 => 1e-10,
                _ => 0.0,
            };
            let what = format!("{d} [{outer}, {len}, {inner}]");
            same(
                &format!("sum_dim {what}"),
                &ga.sum_dim(1).unwrap(),
                &a.sum_dim(1).unwrap(),
                sum_tol.max(tol(d)),
            );
            same(
                &format!("max_dim {what}"),
                &ga.max_dim(1).unwrap(),
                &a.max_dim(1).unwrap(),
                0.0,
            );
            same(
                &format!("min_dim {what}"),
                &ga.min_dim(1).unwrap(),
                &a.min_dim(1).unwrap(),
                0.0,
            );
            same(
                &format!("argmax_dim {what}"),
                &ga.argmax_dim(1).unwrap(),
                &a.argmax_dim(1).unwrap(),
                0.0,
            );
            same(
                &format!("argmin_dim {what}"),
                &ga.argmin_dim(1).unwrap(),
                &a.argmin_dim(1).unwrap(),
                0.0,
            );
            same(
                &format!("sum {what}"),
                &ga.sum().unwrap(),
                &a.sum().unwrap(),
                sum_tol.max(tol(d)) * 10.0,
            );
            same(
                &format!("max {what}"),
                &ga.max().unwrap(),
                &a.max().unwrap(),
                0.0,
            );
            same(
                &format!("argmin {what}"),
                &ga.argmin().unwrap(),
                &a.argmin().unwrap(),
                0.0,
            );
            if d.is_float() {
                same(
                    &format!("mean {what}"),
                    &ga.mean().unwrap(),
                    &a.mean().unwrap(),
                    1e-3,
                );
            }
        }
    }
    // NaN wins max and argmax (the first NaN), as torch, on every path.
    for len in [5usize, 5000] {
        let mut v = vec![1.0f32; len];
        v[len / 2] = f32::NAN;
        v[len - 1] = f32::NAN;
        let g = Tensor::from_vec(v, (1, len), GPU).unwrap();
        assert!(g.max().unwrap().item::<f32>().unwrap().is_nan());
        assert_eq!(
            g.argmax_dim(1).unwrap().to_vec::<i64>().unwrap(),
            vec![len as i64 / 2]
        );
        assert_eq!(g.argmin().unwrap().item::<i64>().unwrap(), len as i64 / 2);
    }
    // An integer sum past i32 is int64 and exact.
    let big = Tensor::full_dtype(1 << 22, 1000.0, I32, GPU).unwrap();
    let s = big.sum().unwrap();
    assert_eq!(s.dtype(), I64);
    assert_eq!(s.item::<i64>().unwrap(), 1000 << 22);
}

/// `[m, k] x [k, n]` of `d` on both devices; the GPU within the bound of its accumulation
/// (f32 accumulation for the half types and TF32 inputs) plus the output's rounding.
fn matmul_case(d: DType, m: usize, k: usize, n: usize, input_eps: f64) {
    let a = values(d, m * k, 9).reshape((m, k)).unwrap();
    let b = values(d, k * n, 10).reshape((k, n)).unwrap();
    let (av, bv) = (a.to_f64_vec().unwrap(), b.to_f64_vec().unwrap());
    let g = a.to(GPU).unwrap().matmul(&b.to(GPU).unwrap()).unwrap();
    assert_eq!(g.dtype(), d);
    let gv = g.to_f64_vec().unwrap();
    let acc_eps = if d == F64 {
        f64::EPSILON
    } else {
        f32::EPSILON as f64
    };
    let mut worst = 0f64;
    for i in 0..m {
        for j in 0..n {
            let (mut want, mut mag) = (0.0, 0.0);
            for p in 0..k {
                want += av[i * k + p] * bv[p * n + j];
                mag += (av[i * k + p] * bv[p * n + j]).abs();
            }
            let bound = (k as f64 * acc_eps + 2.0 * input_eps) * mag + tol(d) * want.abs();
            let diff = (gv[i * n + j] - want).abs();
            worst = worst.max(diff / bound.max(1e-300));
            assert!(
                diff <= bound,
                "{d} {m}x{k}x{n} ({i}, {j}): {} vs {want}",
                gv[i * n + j]
            );
        }
    }
    println!("matmul {d} {m}x{k}x{n}: worst difference {worst:.3} of the bound");
}

fn matmul_every_float_dtype() {
    gpulab::set_float32_matmul_precision("highest").unwrap();
    for d in FLOATS {
        for (m, k, n) in [(1, 1, 1), (17, 300, 33), (256, 512, 128), (1, 1000, 1)] {
            matmul_case(d, m, k, n, 0.0);
        }
        let e = Tensor::zeros_dtype((0, 3), d, GPU)
            .unwrap()
            .matmul(&Tensor::zeros_dtype((3, 2), d, GPU).unwrap())
            .unwrap();
        assert_eq!((e.shape(), e.dtype()), (&[0usize, 2][..], d));
    }
    for d in [I32, I64, U8, Bool] {
        let a = values(d, 4, 1).reshape((2, 2)).unwrap().to(GPU).unwrap();
        let e = a.matmul(&a).unwrap_err().to_string();
        assert!(
            e.contains("matmul") && e.contains(d.name()) && e.contains("cuda:0"),
            "{e}"
        );
    }
}

/// TF32 keeps 10 mantissa bits of each input: allowed only after
/// `set_float32_matmul_precision("high")`, and then within the TF32 bound.
fn tf32_is_used_only_when_allowed() {
    // Inputs that TF32 cannot hold exactly: 1 + 2^-15 has bits below TF32's 10-bit
    // mantissa, so TF32 rounds it to 1. With k = 256 every f32 partial sum is exact, so
    // "highest" gives exactly 256 + 2^-7 and TF32 exactly 256, whatever the order.
    let (m, k, n) = (512, 256, 512);
    let a = Tensor::full_dtype((m, k), 1.0 + 2f64.powi(-15), F32, GPU).unwrap();
    let b = Tensor::full_dtype((k, n), 1.0, F32, GPU).unwrap();
    let exact = k as f64 * (1.0 + 2f64.powi(-15));
    gpulab::set_float32_matmul_precision("highest").unwrap();
    let full = a.matmul(&b).unwrap().max().unwrap().item::<f32>().unwrap() as f64;
    assert_eq!(full, exact, "highest");
    gpulab::backends::cuda::matmul::set_allow_tf32(true);
    assert_eq!(gpulab::get_float32_matmul_precision(), "high");
    let tf32 = a.matmul(&b).unwrap().max().unwrap().item::<f32>().unwrap() as f64;
    gpulab::set_float32_matmul_precision("highest").unwrap();
    println!("k={k}: highest {full}, TF32 {tf32}, exact {exact}");
    assert_eq!(tf32, k as f64, "TF32 drops the 2^-15 of every input");
    matmul_case(F32, 256, 512, 128, 2f64.powi(-11));
}

/// f16 and bf16 matmul on the CPU compute in f32 (through the f32 kernels) and round once:
/// within the f32 accumulation bound plus one rounding of the result.
#[test]
fn cpu_half_matmul_computes_in_f32() {
    for d in [F16, BF16] {
        let (m, k, n) = (33, 300, 17);
        let a = values(d, m * k, 11).reshape((m, k)).unwrap();
        let b = values(d, k * n, 12).reshape((k, n)).unwrap();
        let c = a.matmul(&b).unwrap();
        assert_eq!(c.dtype(), d);
        let (av, bv, cv) = (
            a.to_f64_vec().unwrap(),
            b.to_f64_vec().unwrap(),
            c.to_f64_vec().unwrap(),
        );
        let ulp = if d == F16 {
            2f64.powi(-10)
        } else {
            2f64.powi(-7)
        };
        for i in 0..m {
            for j in 0..n {
                let (mut want, mut mag) = (0.0, 0.0);
                for p in 0..k {
                    want += av[i * k + p] * bv[p * n + j];
                    mag += (av[i * k + p] * bv[p * n + j]).abs();
                }
                let bound = k as f64 * f32::EPSILON as f64 * mag + ulp * want.abs();
                assert!(
                    (cv[i * n + j] - want).abs() <= bound,
                    "{d} ({i}, {j}): {} vs {want}",
                    cv[i * n + j]
                );
            }
        }
    }
}
