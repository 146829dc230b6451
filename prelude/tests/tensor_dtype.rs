//! Dtypes: torch's promotion table, every op for every dtype against plain f64 loops,
//! conversions, generic `to_vec`/`item`, printing, and the errors. The op tests run on the
//! CPU and, as `#[ignore]`d tests in `mod gpu` (a CUDA device needed), on cuda:0 against
//! the same f64 loops; tests/tensor_gpu_dtype.rs compares the two backends at larger sizes.

use gpulab::tensor::{bf16, f16};
use gpulab::tensor::{promote, promote_dims};
use gpulab::{DType, Device, Tensor};

const GPU: Device = Device::Cuda(0);

const CPU: Device = Device::Cpu;
use DType::*;

/// torch.result_type for two tensors, written out from torch's documented rules (category
/// bool < integer < float; within a category the smallest type holding both; f16 with bf16
/// is float32). Rows and columns in the order of `COLS`.
const COLS: [DType; 8] = [F32, F64, F16, BF16, I32, I64, U8, Bool];
const TABLE: [[DType; 8]; 8] = [
    //  f32  f64  f16   bf16  i32   i64   u8    bool
    [F32, F64, F32, F32, F32, F32, F32, F32],      // f32
    [F64, F64, F64, F64, F64, F64, F64, F64],      // f64
    [F32, F64, F16, F32, F16, F16, F16, F16],      // f16
    [F32, F64, F32, BF16, BF16, BF16, BF16, BF16], // bf16
    [F32, F64, F16, BF16, I32, I64, I32, I32],     // i32
    [F32, F64, F16, BF16, I64, I64, I64, I64],     // i64
    [F32, F64, F16, BF16, I32, I64, U8, U8],       // u8
    [F32, F64, F16, BF16, I32, I64, U8, Bool],     // bool
];

#[test]
fn promotion_follows_torch_result_type() {
    for (i, &a) in COLS.iter().enumerate() {
        for (j, &b) in COLS.iter().enumerate() {
            assert_eq!(promote(a, b), TABLE[i][j], "promote({a}, {b})");
        }
    }
    // And the tensors' ops apply it.
    for (i, &a) in COLS.iter().enumerate() {
        for (j, &b) in COLS.iter().enumerate() {
            let x = Tensor::ones_dtype(3, a, CPU).unwrap();
            let y = Tensor::ones_dtype(3, b, CPU).unwrap();
            assert_eq!(x.mul(&y).unwrap().dtype(), TABLE[i][j], "{a} * {b}");
            assert_eq!(x.maximum(&y).unwrap().dtype(), TABLE[i][j], "max({a}, {b})");
            assert_eq!(x.lt(&y).unwrap().dtype(), Bool, "{a} < {b}");
        }
    }
}

/// torch.result_type(tensor with dimensions of the row's dtype, zero-dimensional tensor of the
/// column's dtype), printed by torch 2.9.1: the zero-dimensional one decides only when its
/// category is higher.
const ZERO_DIM_TABLE: [[DType; 8]; 8] = [
    //  f32  f64  f16  bf16  i32  i64  u8  bool (zero-dimensional)
    [F32, F32, F32, F32, F32, F32, F32, F32],
    [F64, F64, F64, F64, F64, F64, F64, F64],
    [F16, F16, F16, F16, F16, F16, F16, F16],
    [BF16, BF16, BF16, BF16, BF16, BF16, BF16, BF16],
    [F32, F64, F16, BF16, I32, I32, I32, I32],
    [F32, F64, F16, BF16, I64, I64, I64, I64],
    [F32, F64, F16, BF16, U8, U8, U8, U8],
    [F32, F64, F16, BF16, I32, I64, U8, Bool],
];

#[test]
fn zero_dim_tensors_promote_like_torch() {
    for (i, &a) in COLS.iter().enumerate() {
        for (j, &b) in COLS.iter().enumerate() {
            let want = ZERO_DIM_TABLE[i][j];
            assert_eq!(promote_dims(a, false, b, true), want, "{a}[3] with {b}[]");
            assert_eq!(promote_dims(b, true, a, false), want, "{b}[] with {a}[3]");
            let x = Tensor::ones_dtype(3, a, CPU).unwrap();
            let y = Tensor::ones_dtype((), b, CPU).unwrap();
            assert_eq!(x.result_type(&y), want, "result_type({a}[3], {b}[])");
            assert_eq!(x.mul(&y).unwrap().dtype(), want, "{a}[3] * {b}[]");
            assert_eq!(y.mul(&x).unwrap().dtype(), want, "{b}[] * {a}[3]");
            assert_eq!(x.maximum(&y).unwrap().dtype(), want, "max({a}[3], {b}[])");
            let c = Tensor::from_vec(vec![true, false, true], 3, CPU).unwrap();
            assert_eq!(
                x.where_(&c, &y).unwrap().dtype(),
                want,
                "where {a}[3], {b}[]"
            );
            // Two zero-dimensional tensors, or two with dimensions, follow the plain table.
            let x0 = Tensor::ones_dtype((), a, CPU).unwrap();
            assert_eq!(x0.mul(&y).unwrap().dtype(), TABLE[i][j], "{a}[] * {b}[]");
        }
    }
    // The values follow the dtype: 300 compared as a uint8 is 44 (torch wraps), and a
    // float16 tensor scaled by a float32 zero-dimensional one stays float16.
    let u = Tensor::from_vec(vec![50u8], 1, CPU).unwrap();
    let big = Tensor::from_vec(vec![300i64], (), CPU).unwrap();
    assert_eq!(u.lt(&big).unwrap().to_vec::<bool>().unwrap(), vec![false]);
    assert_eq!(u.add(&big).unwrap().to_vec::<u8>().unwrap(), vec![94]);
    let h = Tensor::from_vec(vec![f16::from_f32(1.0), f16::from_f32(2.0)], 2, CPU).unwrap();
    let three = Tensor::full((), 3.0, CPU).unwrap();
    let q = h.div(&three).unwrap();
    assert_eq!(q.dtype(), F16);
    assert_eq!(
        q.to_vec::<f16>().unwrap(),
        vec![f16::from_f32(1.0 / 3.0), f16::from_f32(2.0 / 3.0)]
    );
    // An integer tensor over a zero-dimensional integer one is still true division.
    let i = Tensor::from_vec(vec![1i32, 3], 2, CPU).unwrap();
    let two = Tensor::from_vec(vec![2i64], (), CPU).unwrap();
    assert_eq!(
        i.div(&two).unwrap().to_vec::<f32>().unwrap(),
        vec![0.5, 1.5]
    );
}

#[test]
fn scalars_promote_like_python_numbers() {
    let i = Tensor::from_vec(vec![1i32, 2, 3], 3, CPU).unwrap();
    assert_eq!(i.mul(2.5).unwrap().dtype(), F32);
    assert_eq!(
        i.mul(2.5).unwrap().to_vec::<f32>().unwrap(),
        vec![2.5, 5.0, 7.5]
    );
    assert_eq!(i.add(1).unwrap().dtype(), I32);
    assert_eq!(i.add(1).unwrap().to_vec::<i32>().unwrap(), vec![2, 3, 4]);
    let h = Tensor::from_vec(vec![f16::from_f32(1.0)], 1, CPU).unwrap();
    assert_eq!(h.mul(2.5).unwrap().dtype(), F16);
    let b = Tensor::from_vec(vec![true, false], 2, CPU).unwrap();
    assert_eq!(b.add(1).unwrap().dtype(), I64);
    assert_eq!(b.add(1).unwrap().to_vec::<i64>().unwrap(), vec![2, 1]);
    let u = Tensor::from_vec(vec![250u8], 1, CPU).unwrap();
    assert_eq!(
        u.add(10).unwrap().to_vec::<u8>().unwrap(),
        vec![4],
        "u8 wraps"
    );
    // True division of integers gives float32, as torch's `/`.
    let q = i
        .div(&Tensor::from_vec(vec![2i64, 2, 2], 3, CPU).unwrap())
        .unwrap();
    assert_eq!(q.dtype(), F32);
    assert_eq!(q.to_vec::<f32>().unwrap(), vec![0.5, 1.0, 1.5]);
    assert_eq!(i.div(2).unwrap().dtype(), F32);
}

#[test]
fn operators_take_integer_and_float_numbers_like_python() {
    let i = Tensor::from_vec(vec![1i32, 2, 3], 3, CPU).unwrap();
    // An integer keeps the integer dtype, on either side; `/` is true division.
    assert_eq!((&i + 1).dtype(), I32);
    assert_eq!((&i + 1).to_vec::<i32>().unwrap(), vec![2, 3, 4]);
    assert_eq!((10 - &i).to_vec::<i32>().unwrap(), vec![9, 8, 7]);
    assert_eq!((2 * i.clone()).to_vec::<i32>().unwrap(), vec![2, 4, 6]);
    assert_eq!((&i / 2).to_vec::<f32>().unwrap(), vec![0.5, 1.0, 1.5]);
    assert_eq!((&i * 0.5).dtype(), F32);
    // A chained method compiles with an unsuffixed literal of either kind.
    assert_eq!((&i + 1).sum().unwrap().item::<i64>().unwrap(), 9);
    let x = Tensor::from_vec(vec![1.0f32, 2.0], 2, CPU).unwrap();
    assert_eq!((&x * 3.0).sum().unwrap().item::<f32>().unwrap(), 9.0);
    assert_eq!((&x - 1).to_vec::<f32>().unwrap(), vec![0.0, 1.0]);
    let h = x.to_dtype(F16).unwrap();
    assert_eq!(
        (&h + 1).dtype(),
        F16,
        "an integer leaves a float16 tensor float16"
    );
    let b = Tensor::from_vec(vec![true, false], 2, CPU).unwrap();
    assert_eq!(
        (&b + 1).to_vec::<i64>().unwrap(),
        vec![2, 1],
        "bool + int is int64"
    );
}

#[test]
fn torchs_shortcut_names_work() {
    let x = Tensor::from_vec(vec![1.5f32, -2.0, 0.0, 3.0, 4.0, 5.0], (2, 3), CPU).unwrap();
    assert_eq!((x.dim(), x.ndim(), x.size()), (2, 2, &[2usize, 3][..]));
    let cases = [
        (x.float().unwrap(), F32),
        (x.double().unwrap(), F64),
        (x.half().unwrap(), F16),
        (x.bfloat16().unwrap(), BF16),
        (x.int().unwrap(), I32),
        (x.long().unwrap(), I64),
        (x.byte().unwrap(), U8),
        (x.bool().unwrap(), Bool),
    ];
    for (t, want) in cases {
        assert_eq!(t.dtype(), want);
        assert_eq!(t.shape(), &[2, 3]);
    }
    assert_eq!(
        x.long().unwrap().to_vec::<i64>().unwrap(),
        vec![1, -2, 0, 3, 4, 5],
        "toward zero"
    );
    assert_eq!(
        x.bool().unwrap().to_vec::<bool>().unwrap(),
        vec![true, true, false, true, true, true]
    );
}

/// Sample data of each dtype: 6 values, shaped (2, 3) by the tests.
fn sample(d: DType, seed: usize, dev: Device) -> Tensor {
    let base: [f64; 6] = match (d, seed) {
        (U8, 0) => [0., 1., 2., 3., 5., 7.],
        (U8, _) => [1., 0., 3., 2., 2., 1.],
        (Bool, 0) => [1., 0., 1., 1., 0., 0.],
        (Bool, _) => [1., 1., 0., 1., 0., 1.],
        (I32 | I64, 0) => [-3., -1., 0., 1., 2., 7.],
        (I32 | I64, _) => [2., -1., 0., 3., 1., -2.],
        (_, 0) => [-3., -1.5, 0., 0.5, 2., 7.25],
        (_, _) => [2., -1.25, 0.5, 3., 1., -2.],
    };
    // Made as f64 on `dev` and converted there (the device's cast kernels on a GPU).
    Tensor::from_vec(base.to_vec(), (2, 3), dev)
        .unwrap()
        .to_dtype(d)
        .unwrap()
}

/// The f64 value `v` as the dtype stores it (rounded, wrapped or truncated like a cast).
fn round_to(d: DType, v: f64) -> f64 {
    match d {
        F32 => v as f32 as f64,
        F64 => v,
        F16 => f16::from_f64(v).to_f64(),
        BF16 => bf16::from_f64(v).to_f64(),
        I32 => v as i64 as i32 as f64,
        I64 => v as i64 as f64,
        U8 => v as i64 as u8 as f64,
        Bool => (v != 0.0) as u8 as f64,
    }
}

/// Tolerance relative to the magnitude: the half types compute in f32 and round once more.
fn tol(d: DType) -> f64 {
    match d {
        F16 => 2e-3,
        BF16 => 1.6e-2,
        F32 => 1e-6,
        _ => 1e-12,
    }
}

fn check(what: &str, got: &Tensor, want_dtype: DType, want: &[f64]) {
    assert_eq!(got.dtype(), want_dtype, "{what}: dtype");
    let g = got.to_f64_vec().unwrap();
    assert_eq!(g.len(), want.len(), "{what}: length");
    for (i, (&x, &w)) in g.iter().zip(want).enumerate() {
        let w = round_to(want_dtype, w);
        let ok = (x.is_nan() && w.is_nan())
            || x == w
            || (x - w).abs() <= tol(want_dtype) * w.abs().max(1.0);
        assert!(ok, "{what}: element {i} is {x}, expected {w} (all: {g:?})");
    }
}

#[test]
fn binary_ops_for_every_dtype_match_f64_loops() {
    binary_ops_for_every_dtype_match_f64_loops_on(CPU);
}

fn binary_ops_for_every_dtype_match_f64_loops_on(dev: Device) {
    type F = fn(f64, f64) -> f64;
    let ops: [(&str, F); 6] = [
        ("add", |x, y| x + y),
        ("sub", |x, y| x - y),
        ("mul", |x, y| x * y),
        ("div", |x, y| x / y),
        ("maximum", f64::max),
        ("minimum", f64::min),
    ];
    for d in DType::ALL {
        let (a, b) = (sample(d, 0, dev), sample(d, 1, dev));
        let (av, bv) = (a.to_f64_vec().unwrap(), b.to_f64_vec().unwrap());
        // A broadcast row: the last 3 values of b, shape (3,).
        let row = Tensor::from_vec(bv[3..].to_vec(), 3, dev)
            .unwrap()
            .to_dtype(d)
            .unwrap();
        for (name, f) in ops {
            let run = |x: &Tensor, y: &Tensor| match name {
                "add" => x.add(y),
                "sub" => x.sub(y),
                "mul" => x.mul(y),
                "div" => x.div(y),
                "maximum" => x.maximum(y),
                _ => x.minimum(y),
            };
            let out_dtype = if name == "div" && !d.is_float() {
                F32
            } else {
                d
            };
            let r = run(&a, &b);
            if d == Bool && name == "sub" {
                let e = r.unwrap_err().to_string();
                assert!(
                    e.contains("sub") && e.contains("bool") && e.contains(&dev.to_string()),
                    "{e}"
                );
                continue;
            }
            let want: Vec<f64> = if d == Bool && name != "div" {
                // torch: + is "or", * is "and" on bool.
                let f = |x: f64, y: f64| match name {
                    "add" | "maximum" => x.max(y),
                    _ => x.min(y),
                };
                av.iter().zip(&bv).map(|(&x, &y)| f(x, y)).collect()
            } else {
                av.iter().zip(&bv).map(|(&x, &y)| f(x, y)).collect()
            };
            check(&format!("{name} {d}"), &r.unwrap(), out_dtype, &want);
            let wantb: Vec<f64> = (0..6)
                .map(|i| {
                    let y = bv[3 + i % 3];
                    if d == Bool && name != "div" {
                        want_bool(name, av[i], y)
                    } else {
                        f(av[i], y)
                    }
                })
                .collect();
            check(
                &format!("{name} {d} broadcast"),
                &run(&a, &row).unwrap(),
                out_dtype,
                &wantb,
            );
        }
        // pow with small non-negative exponents (integers reject negative ones).
        if d != Bool {
            let e = Tensor::from_vec(vec![0.0, 1.0, 2.0, 3.0, 1.0, 2.0], (2, 3), dev)
                .unwrap()
                .to_dtype(d)
                .unwrap();
            let want: Vec<f64> = av
                .iter()
                .zip([0., 1., 2., 3., 1., 2.])
                .map(|(&x, y)| x.powf(y))
                .collect();
            check(&format!("pow {d}"), &a.pow(&e).unwrap(), d, &want);
        }
    }
}

fn want_bool(name: &str, x: f64, y: f64) -> f64 {
    match name {
        "add" | "maximum" => x.max(y),
        _ => x.min(y),
    }
}

/// ψ(x) by its textbook definition, independent of the prelude's series: the reflection
/// formula below 0, the recurrence up to 30 and the asymptotic series to 1/x⁸ there.
fn digamma_ref(x: f64) -> f64 {
    use std::f64::consts::PI;
    if x == 0.0 {
        return f64::INFINITY.copysign(-x);
    }
    if x < 0.0 {
        if x == x.floor() {
            return f64::NAN;
        }
        return digamma_ref(1.0 - x) - PI / (PI * x).tan();
    }
    let (mut x, mut acc) = (x, 0.0);
    while x < 30.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    let z = 1.0 / (x * x);
    acc + x.ln() - 0.5 / x - z * (1.0 / 12.0 - z * (1.0 / 120.0 - z * (1.0 / 252.0 - z / 240.0)))
}

/// erf's inverse by bisection on libm's erf (monotonic), to the last bit.
fn erfinv_ref(y: f64) -> f64 {
    if y.is_nan() || y.abs() > 1.0 {
        return f64::NAN;
    }
    if y.abs() == 1.0 {
        return f64::INFINITY.copysign(y);
    }
    let (mut lo, mut hi) = (-7.0f64, 7.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if libm::erf(mid) < y {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

#[test]
fn unary_ops_for_every_dtype_match_f64_loops() {
    unary_ops_for_every_dtype_match_f64_loops_on(CPU);
}

fn unary_ops_for_every_dtype_match_f64_loops_on(dev: Device) {
    type F = fn(f64) -> f64;
    let ops: [(&str, F); 30] = [
        ("neg", |x| -x),
        ("abs", f64::abs),
        ("relu", |x| x.max(0.0)),
        ("exp", f64::exp),
        ("sqrt", f64::sqrt),
        ("log", f64::ln),
        ("tanh", f64::tanh),
        ("sigmoid", |x| 1.0 / (1.0 + (-x).exp())),
        ("sin", f64::sin),
        ("cos", f64::cos),
        ("floor", f64::floor),
        ("ceil", f64::ceil),
        ("round", f64::round_ties_even),
        ("sign", |x| ((0.0 < x) as i8 - (x < 0.0) as i8) as f64),
        ("log1p", f64::ln_1p),
        ("expm1", f64::exp_m1),
        ("erf", libm::erf),
        ("tan", f64::tan),
        ("asin", f64::asin),
        ("acos", f64::acos),
        ("atan", f64::atan),
        ("sinh", f64::sinh),
        ("cosh", f64::cosh),
        ("asinh", f64::asinh),
        ("acosh", f64::acosh),
        ("atanh", f64::atanh),
        ("lgamma", libm::lgamma),
        ("digamma", digamma_ref),
        ("erfc", libm::erfc),
        ("erfinv", erfinv_ref),
    ];
    for d in DType::ALL {
        let a = sample(d, 0, dev);
        let av = a.to_f64_vec().unwrap();
        for (name, f) in ops {
            let r = match name {
                "neg" => a.neg(),
                "abs" => a.abs(),
                "relu" => a.relu(),
                "exp" => a.exp(),
                "sqrt" => a.sqrt(),
                "log" => a.log(),
                "tanh" => a.tanh(),
                "sin" => a.sin(),
                "cos" => a.cos(),
                "floor" => a.floor(),
                "ceil" => a.ceil(),
                "round" => a.round(),
                "sign" => a.sign(),
                "log1p" => a.log1p(),
                "expm1" => a.expm1(),
                "erf" => a.erf(),
                "tan" => a.tan(),
                "asin" => a.asin(),
                "acos" => a.acos(),
                "atan" => a.atan(),
                "sinh" => a.sinh(),
                "cosh" => a.cosh(),
                "asinh" => a.asinh(),
                "acosh" => a.acosh(),
                "atanh" => a.atanh(),
                "lgamma" => a.lgamma(),
                "digamma" => a.digamma(),
                "erfc" => a.erfc(),
                "erfinv" => a.erfinv(),
                _ => a.sigmoid(),
            };
            let float_only = !matches!(
                name,
                "neg" | "abs" | "relu" | "floor" | "ceil" | "round" | "sign"
            );
            if d == Bool && name == "sign" {
                check("sign bool", &r.unwrap(), Bool, &av);
                continue;
            }
            if d == Bool && !float_only {
                let e = r.unwrap_err().to_string();
                assert!(e.contains(name) && e.contains("bool"), "{e}");
                continue;
            }
            // Float-only functions of integers give float32, as in torch.
            let out = if float_only && !d.is_float() { F32 } else { d };
            let want: Vec<f64> = av.iter().map(|&x| f(x)).collect();
            check(&format!("{name} {d}"), &r.unwrap(), out, &want);
        }
    }
}

#[test]
fn reductions_for_every_dtype_match_f64_loops() {
    reductions_for_every_dtype_match_f64_loops_on(CPU);
}

fn reductions_for_every_dtype_match_f64_loops_on(dev: Device) {
    for d in DType::ALL {
        let a = sample(d, 0, dev);
        let av = a.to_f64_vec().unwrap();
        // Sums of integers and bools are int64 (torch's rule).
        let sum_dtype = if d.is_float() { d } else { I64 };
        check(
            &format!("sum {d}"),
            &a.sum().unwrap(),
            sum_dtype,
            &[av.iter().sum()],
        );
        let rows: Vec<f64> = (0..2).map(|r| av[r * 3..r * 3 + 3].iter().sum()).collect();
        check(
            &format!("sum_dim(1) {d}"),
            &a.sum_dim(1).unwrap(),
            sum_dtype,
            &rows,
        );
        let cols: Vec<f64> = (0..3).map(|c| av[c] + av[3 + c]).collect();
        check(
            &format!("sum_dim(0) {d}"),
            &a.sum_dim(0).unwrap(),
            sum_dtype,
            &cols,
        );
        let max = av.iter().copied().fold(f64::MIN, f64::max);
        let min = av.iter().copied().fold(f64::MAX, f64::min);
        check(&format!("max {d}"), &a.max().unwrap(), d, &[max]);
        check(&format!("min {d}"), &a.min().unwrap(), d, &[min]);
        let colmax: Vec<f64> = (0..3).map(|c| av[c].max(av[3 + c])).collect();
        check(&format!("max_dim {d}"), &a.max_dim(0).unwrap(), d, &colmax);
        // argmax/argmin: int64, the first index on ties; bool input is refused, as in torch.
        if d == Bool {
            for e in [a.argmax(), a.argmin_dim(0)] {
                let e = e.unwrap_err().to_string();
                assert!(
                    e.contains("does not support bool") && e.contains("[2, 3]"),
                    "{e}"
                );
            }
            let e = a.mean().unwrap_err().to_string();
            assert!(e.contains("mean") && e.contains("bool"), "{e}");
            continue;
        }
        let first = |v: f64| av.iter().position(|&x| x == v).unwrap() as f64;
        check(
            &format!("argmax {d}"),
            &a.argmax().unwrap(),
            I64,
            &[first(max)],
        );
        check(
            &format!("argmin {d}"),
            &a.argmin().unwrap(),
            I64,
            &[first(min)],
        );
        let rowarg: Vec<f64> = (0..2)
            .map(|r| {
                let row = &av[r * 3..r * 3 + 3];
                let m = row.iter().copied().fold(f64::MIN, f64::max);
                row.iter().position(|&x| x == m).unwrap() as f64
            })
            .collect();
        check(
            &format!("argmax_dim {d}"),
            &a.argmax_dim(-1).unwrap(),
            I64,
            &rowarg,
        );
        if d.is_float() {
            check(
                &format!("mean {d}"),
                &a.mean().unwrap(),
                d,
                &[av.iter().sum::<f64>() / 6.0],
            );
        } else {
            let e = a.mean().unwrap_err().to_string();
            assert!(e.contains("mean") && e.contains(d.name()), "{e}");
        }
    }
    // NaN counts as the largest for argmax, as in torch.
    let n = Tensor::from_vec(vec![1.0f32, f32::NAN, 5.0], 3, dev).unwrap();
    assert_eq!(n.argmax().unwrap().item::<i64>().unwrap(), 1);
}

#[test]
fn scans_and_products_for_every_dtype_match_f64_loops() {
    scans_and_products_for_every_dtype_match_f64_loops_on(CPU);
}

/// Running sums and products (`cumsum`, `cumprod`, inclusive) of `v` seen as `[outer, len,
/// inner]`, along the middle axis, in f64.
fn scan_f64(v: &[f64], outer: usize, len: usize, inner: usize, prod: bool) -> Vec<f64> {
    let mut out = v.to_vec();
    for o in 0..outer {
        for k in 1..len {
            for j in 0..inner {
                let (prev, at) = ((o * len + k - 1) * inner + j, (o * len + k) * inner + j);
                out[at] = if prod {
                    out[prev] * v[at]
                } else {
                    out[prev] + v[at]
                };
            }
        }
    }
    out
}

fn scans_and_products_for_every_dtype_match_f64_loops_on(dev: Device) {
    for d in DType::ALL {
        let a = sample(d, 1, dev);
        let av = a.to_f64_vec().unwrap();
        // Integers and bools give int64 sums and products, as in torch.
        let wide = if d.is_float() { d } else { I64 };
        for (dim, outer, len, inner) in [(1isize, 2, 3, 1), (0, 1, 2, 3), (-1, 2, 3, 1)] {
            for prod in [false, true] {
                let name = if prod { "cumprod" } else { "cumsum" };
                let got = if prod { a.cumprod(dim) } else { a.cumsum(dim) }.unwrap();
                assert_eq!(got.shape(), [2, 3], "{name}({dim}) {d}: shape");
                let want = scan_f64(&av, outer, len, inner, prod);
                check(&format!("{name}({dim}) {d}"), &got, wide, &want);
            }
        }
        // Through a transposed view: the scan reads the elements in the view's order.
        let t = a.t().unwrap();
        let tv = t.contiguous().unwrap().to_f64_vec().unwrap();
        check(
            &format!("cumsum of a.t() {d}"),
            &t.cumsum(1).unwrap(),
            wide,
            &scan_f64(&tv, 3, 2, 1, false),
        );
        check(
            &format!("prod {d}"),
            &a.prod().unwrap(),
            wide,
            &[av.iter().product()],
        );
        let rows: Vec<f64> = (0..2)
            .map(|r| av[r * 3..r * 3 + 3].iter().product())
            .collect();
        check(
            &format!("prod_dim(1) {d}"),
            &a.prod_dim(1).unwrap(),
            wide,
            &rows,
        );
        let cols: Vec<f64> = (0..3).map(|c| av[c] * av[3 + c]).collect();
        let kept = a.prod_keepdim(0).unwrap();
        assert_eq!(kept.shape(), [1, 3], "prod_keepdim {d}");
        check(&format!("prod_keepdim(0) {d}"), &kept, wide, &cols);
    }
    // A longer line along the middle of a 3-d tensor (the kernels' strided case), and empty
    // and 0-d inputs as torch gives them: an empty product is 1, a 0-d scan is itself.
    let v: Vec<f64> = (0..2 * 50 * 3)
        .map(|i| 1.0 + (i % 7) as f64 * 0.01)
        .collect();
    let x = Tensor::from_vec(v.clone(), (2, 50, 3), dev).unwrap();
    check(
        "cumprod(1) of [2, 50, 3]",
        &x.cumprod(1).unwrap(),
        F64,
        &scan_f64(&v, 2, 50, 3, true),
    );
    check(
        "cumsum(1) of [2, 50, 3]",
        &x.cumsum(1).unwrap(),
        F64,
        &scan_f64(&v, 2, 50, 3, false),
    );
    let empty = Tensor::zeros_dtype((2, 0), F32, dev).unwrap();
    check("prod of [2, 0]", &empty.prod().unwrap(), F32, &[1.0]);
    check(
        "prod_dim(1) of [2, 0]",
        &empty.prod_dim(1).unwrap(),
        F32,
        &[1.0, 1.0],
    );
    assert_eq!(empty.cumsum(1).unwrap().shape(), [2, 0]);
    assert_eq!(empty.prod_dim(0).unwrap().shape(), [0]);
    let s = Tensor::from_vec(vec![3i32], (), dev).unwrap();
    let c = s.cumsum(0).unwrap();
    assert_eq!((c.shape(), c.dtype()), (&[][..], I64));
    assert_eq!(c.item::<i64>().unwrap(), 3);
    // int64 products wrap as torch's (2^62 * 4 = 2^64 = 0).
    let big = Tensor::from_vec(vec![1i64 << 62, 4], 2, dev).unwrap();
    assert_eq!(big.prod().unwrap().item::<i64>().unwrap(), 0);
    assert_eq!(
        big.cumprod(0).unwrap().to_vec::<i64>().unwrap(),
        [1 << 62, 0]
    );
    let e = a_dim_error(dev);
    assert!(e.contains("dimension") && e.contains('5'), "{e}");
}

fn a_dim_error(dev: Device) -> String {
    sample(F32, 0, dev).cumsum(5).unwrap_err().to_string()
}

#[test]
fn comparisons_give_bool_and_where_picks() {
    comparisons_give_bool_and_where_picks_on(CPU);
}

fn comparisons_give_bool_and_where_picks_on(dev: Device) {
    type F = fn(&f64, &f64) -> bool;
    let ops: [(&str, F); 6] = [
        ("eq", |x, y| x == y),
        ("ne", |x, y| x != y),
        ("lt", |x, y| x < y),
        ("le", |x, y| x <= y),
        ("gt", |x, y| x > y),
        ("ge", |x, y| x >= y),
    ];
    for d in DType::ALL {
        let (a, b) = (sample(d, 0, dev), sample(d, 1, dev));
        let (av, bv) = (a.to_f64_vec().unwrap(), b.to_f64_vec().unwrap());
        for (name, f) in ops {
            let r = match name {
                "eq" => a.eq(&b),
                "ne" => a.ne(&b),
                "lt" => a.lt(&b),
                "le" => a.le(&b),
                "gt" => a.gt(&b),
                _ => a.ge(&b),
            }
            .unwrap();
            let want: Vec<f64> = av
                .iter()
                .zip(&bv)
                .map(|(x, y)| f(x, y) as u8 as f64)
                .collect();
            check(&format!("{name} {d}"), &r, Bool, &want);
        }
        let cond = a.gt(&b).unwrap();
        let w = a.where_(&cond, &b).unwrap();
        let want: Vec<f64> = av
            .iter()
            .zip(&bv)
            .map(|(&x, &y)| if x > y { x } else { y })
            .collect();
        check(&format!("where {d}"), &w, d, &want);
        // matmul (2x3 @ 3x2) for every dtype but bool.
        let bt = b.transpose(0, 1).unwrap();
        assert_eq!(bt.dtype(), d);
        // As torch: no bool matmul anywhere, and no integer matmul on CUDA (cuBLAS has none).
        if d == Bool || (dev.is_cuda() && !d.is_float()) {
            let e = a.matmul(&bt).unwrap_err().to_string();
            assert!(
                e.contains("matmul") && e.contains(d.name()) && e.contains(&dev.to_string()),
                "{e}"
            );
            continue;
        }
        let mut want = vec![0.0; 4];
        for i in 0..2 {
            for j in 0..2 {
                want[i * 2 + j] = (0..3).map(|p| av[i * 3 + p] * bv[j * 3 + p]).sum();
            }
        }
        check(&format!("matmul {d}"), &a.matmul(&bt).unwrap(), d, &want);
    }
    // Scalars and broadcasting in comparisons; where_ broadcasts all three.
    let x = Tensor::from_vec(vec![1i64, 5, 3], 3, dev).unwrap();
    assert_eq!(
        x.gt(2).unwrap().to_vec::<bool>().unwrap(),
        vec![false, true, true]
    );
    assert_eq!(
        x.lt(2.5).unwrap().to_vec::<bool>().unwrap(),
        vec![true, false, false]
    );
    let cond = Tensor::from_vec(vec![true, false], (2, 1), dev).unwrap();
    let zero = Tensor::zeros((), dev).unwrap();
    let w = x.where_(&cond, &zero).unwrap();
    assert_eq!(w.shape(), &[2, 3]);
    assert_eq!(w.dtype(), F32, "int64 with float32 gives float32");
    assert_eq!(w.to_vec::<f32>().unwrap(), vec![1., 5., 3., 0., 0., 0.]);
}

#[test]
fn conversions_and_generic_access() {
    conversions_and_generic_access_on(CPU);
}

fn conversions_and_generic_access_on(dev: Device) {
    let t = Tensor::from_vec(vec![1i64, 2, 3], 3, dev).unwrap();
    assert_eq!(t.dtype(), I64);
    assert_eq!(t.to_vec::<i64>().unwrap(), vec![1, 2, 3]);
    let e = t.to_vec::<f32>().unwrap_err().to_string();
    assert!(e.contains("f32") || e.contains("float32"), "{e}");
    assert!(e.contains("int64"), "{e}");
    let s = t.sum().unwrap();
    assert_eq!(s.item::<i64>().unwrap(), 6);
    assert!(s.item::<i32>().unwrap_err().to_string().contains("int32"));
    // to(DType), to(Device), to((Device, DType)), to_dtype; float -> int truncates.
    let f = Tensor::from_vec(vec![1.7f32, -2.7, 0.0], 3, dev).unwrap();
    assert_eq!(f.to(I32).unwrap().to_vec::<i32>().unwrap(), vec![1, -2, 0]);
    assert_eq!(
        f.to(Bool).unwrap().to_vec::<bool>().unwrap(),
        vec![true, true, false]
    );
    assert_eq!(f.to((dev, F64)).unwrap().dtype(), F64);
    assert_eq!(f.to(dev).unwrap().dtype(), F32);
    let h = f.to_dtype(F16).unwrap();
    assert_eq!(h.to_vec::<f16>().unwrap()[0], f16::from_f32(1.7));
    let bf = f.to_dtype(BF16).unwrap().to_dtype(F32).unwrap();
    assert!((bf.to_vec::<f32>().unwrap()[0] - 1.7).abs() < 0.01);
    // i64 beyond 2^53 survives int conversions exactly.
    let big = Tensor::from_vec(vec![(1i64 << 60) + 1], 1, dev).unwrap();
    assert_eq!(
        big.to_dtype(I64).unwrap().item::<i64>().unwrap(),
        (1 << 60) + 1
    );
    assert_eq!(Tensor::from(vec![1u8, 2]).dtype(), U8);
    assert_eq!(Tensor::zeros_dtype((2, 2), I32, dev).unwrap().dtype(), I32);
    // An unsuffixed Rust float literal is f64, as Rust infers it.
    assert_eq!(
        Tensor::from_slice(&[1.0, 2.0], 2, dev).unwrap().dtype(),
        F64
    );
}

#[test]
fn printing_follows_torch() {
    let i = Tensor::from_vec(vec![1i64, 2, 3], 3, CPU).unwrap();
    assert_eq!(format!("{i}"), "tensor([1, 2, 3])");
    let i = Tensor::from_vec(vec![1i32, -20, 3], 3, CPU).unwrap();
    assert_eq!(format!("{i}"), "tensor([  1, -20,   3], dtype=torch.int32)");
    let b = Tensor::from_vec(vec![true, false], 2, CPU).unwrap();
    assert_eq!(format!("{b}"), "tensor([ True, False])");
    let f = Tensor::from_vec(vec![1.0f64, 2.5], 2, CPU).unwrap();
    assert_eq!(
        format!("{f}"),
        "tensor([1.0000, 2.5000], dtype=torch.float64)"
    );
    let h = Tensor::from_vec(vec![1.0f32, 2.0], 2, CPU)
        .unwrap()
        .to_dtype(F16)
        .unwrap();
    assert_eq!(format!("{h}"), "tensor([1., 2.], dtype=torch.float16)");
    let u = Tensor::from_vec(vec![7u8], (), CPU).unwrap();
    assert_eq!(format!("{u}"), "tensor(7, dtype=torch.uint8)");
    let s = Tensor::from_vec(vec![1.5f32, 2.0], 2, CPU).unwrap();
    assert_eq!(format!("{s}"), "tensor([1.5000, 2.0000])");
}

#[test]
fn errors_name_the_op_dtypes_shapes_and_device() {
    errors_name_the_op_dtypes_shapes_and_device_on(CPU);
}

fn errors_name_the_op_dtypes_shapes_and_device_on(dev: Device) {
    let a = Tensor::from_vec(vec![1i64, 2, 3, 4], (2, 2), dev).unwrap();
    let b = Tensor::from_vec(vec![1.0f32; 6], (2, 3), dev).unwrap();
    let e = a.matmul(&b).unwrap_err().to_string();
    for part in ["matmul", "int64", "float32", "[2, 2]", "[2, 3]", "cpu"] {
        assert!(e.contains(part), "{part:?} missing from {e:?}");
    }
    let e = a.add(&b).unwrap_err().to_string();
    assert!(
        e.contains("add") && e.contains("[2, 2]") && e.contains("[2, 3]"),
        "{e}"
    );
    let e = a.where_(&a, &a).unwrap_err().to_string();
    assert!(
        e.contains("where") && e.contains("bool") && e.contains("int64"),
        "{e}"
    );
    let e = a.pow(-1).unwrap_err().to_string();
    assert!(e.contains("pow") && e.contains("negative"), "{e}");
    let bools = Tensor::from_vec(vec![true], 1, dev).unwrap();
    let e = bools.neg().unwrap_err().to_string();
    assert!(
        e.contains("neg") && e.contains("bool") && e.contains(&dev.to_string()),
        "{e}"
    );
}

/// Cases where a differential run against torch 2.9.1 (every op x dtype pair, CPU) found
/// gpulab doing something else; the expected values are torch's, printed for the same inputs.
#[test]
fn edge_cases_follow_torch() {
    edge_cases_follow_torch_on(CPU);
}

fn edge_cases_follow_torch_on(dev: Device) {
    // Integer powers with a negative tensor exponent: 1 and -1 keep their powers, every other
    // base gives 0 (a negative scalar exponent stays an error, as in torch).
    for d in [I32, I64] {
        let b = Tensor::from_vec(vec![1i64, -1, -1, 2, 0, -3], 6, dev)
            .unwrap()
            .to_dtype(d)
            .unwrap();
        let e = Tensor::from_vec(vec![-5i64, -3, -2, -1, -1, -2], 6, dev)
            .unwrap()
            .to_dtype(d)
            .unwrap();
        let p = b.pow(&e).unwrap();
        assert_eq!(p.dtype(), d);
        assert_eq!(
            p.to_f64_vec().unwrap(),
            [1., -1., 1., 0., 0., 0.],
            "pow {d}"
        );
        assert!(b.pow(-1).is_err(), "pow {d} with a negative scalar");
    }
    // Subtraction with a bool operand is refused, with what to use instead.
    let mask = Tensor::from_vec(vec![true, false, true], 3, dev).unwrap();
    let x = Tensor::from_vec(vec![1.5f32, 2.0, 3.0], 3, dev).unwrap();
    for (e, hint) in [
        (x.sub(&mask), "logical_not"),
        (mask.sub(&x), "logical_not"),
        (mask.sub(1), "logical_not"),
        (mask.sub(&mask), "exclusive or"),
        (x.sub_(&mask).map(|_| x.clone()), "logical_not"),
    ] {
        let e = e.unwrap_err().to_string();
        assert!(
            e.contains("sub") && e.contains("bool") && e.contains(hint),
            "{e}"
        );
    }
    assert_eq!(
        x.to_vec::<f32>().unwrap(),
        [1.5, 2.0, 3.0],
        "a refused sub_ writes nothing"
    );
    // logical_not (and `!`): true where the element is zero; NaN is not zero.
    assert_eq!(
        mask.logical_not().unwrap().to_vec::<bool>().unwrap(),
        [false, true, false]
    );
    assert_eq!((!&mask).dtype(), Bool);
    let f = Tensor::from_vec(vec![0.0f32, 1.5, f32::NAN], 3, dev).unwrap();
    assert_eq!(
        f.logical_not().unwrap().to_vec::<bool>().unwrap(),
        [true, false, false]
    );
    // An int scalar is cast to a uint8 tensor's dtype before comparing, wrapping as torch
    // does: -1 is 255 and -253 is 3.
    let u = Tensor::from_vec(vec![0u8, 3, 255], 3, dev).unwrap();
    let bools = |t: Tensor| t.to_vec::<bool>().unwrap();
    assert_eq!(bools(u.eq(-1).unwrap()), [false, false, true]);
    assert_eq!(bools(u.lt(-253).unwrap()), [true, false, false]);
    assert_eq!(bools(u.gt(-3).unwrap()), [false, false, true]);
    // cat and stack promote mixed dtypes; each part's gradient comes back in its own dtype.
    let a = Tensor::from_vec(vec![1.5f32, 2.0], 2, dev)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let i = Tensor::from_vec(vec![3i64, 4], 2, dev).unwrap();
    let c = Tensor::cat(&[&a, &i], 0).unwrap();
    assert_eq!(c.dtype(), F32);
    assert_eq!(c.to_vec::<f32>().unwrap(), [1.5, 2.0, 3.0, 4.0]);
    let w = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], 4, dev).unwrap();
    c.mul(&w).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(a.grad().unwrap().to_vec::<f32>().unwrap(), [1.0, 2.0]);
    let h = Tensor::from_vec(vec![0.5f64, 1.0], 2, dev).unwrap();
    let s = Tensor::stack(&[&a.detach(), &h], 1).unwrap();
    assert_eq!((s.dtype(), s.shape()), (F64, &[2usize, 2][..]));
    assert_eq!(s.to_vec::<f64>().unwrap(), [1.5, 0.5, 2.0, 1.0]);
    // Batched matmul with empty dimensions: torch's shapes, zeros where k is 0.
    let z = |dims: &[usize]| Tensor::zeros(dims.to_vec(), dev).unwrap();
    for (a, b, want) in [
        (&[2usize, 3, 0][..], &[0usize, 2][..], &[2usize, 3, 2][..]),
        (&[0, 2, 3], &[3, 4], &[0, 2, 4]),
        (&[0, 2, 3], &[0, 3, 4], &[0, 2, 4]),
        (&[2, 2, 0], &[2, 0, 3], &[2, 2, 3]),
    ] {
        let p = z(a).matmul(&z(b)).unwrap();
        assert_eq!(p.shape(), want, "{a:?} @ {b:?}");
        assert!(p.to_vec::<f32>().unwrap().iter().all(|&v| v == 0.0));
    }
}

/// f64 goes through the packed product of matmul.rs (its own micro-kernels): sizes with
/// ragged edges, several KC blocks and the threaded path, against a plain f64 loop.
#[test]
fn f64_matmul_packed_path_matches_a_plain_loop() {
    for (m, k, n) in [(97, 131, 75), (300, 600, 257), (1, 300, 300), (64, 64, 1)] {
        let a: Vec<f64> = (0..m * k)
            .map(|i| ((i * 37 % 101) as f64 - 50.0) / 7.0)
            .collect();
        let b: Vec<f64> = (0..k * n)
            .map(|i| ((i * 53 % 97) as f64 - 48.0) / 5.0)
            .collect();
        let got = Tensor::from_slice(&a, (m, k), CPU)
            .unwrap()
            .matmul(&Tensor::from_slice(&b, (k, n), CPU).unwrap())
            .unwrap();
        assert_eq!(got.dtype(), F64);
        let got = got.to_vec::<f64>().unwrap();
        for i in 0..m {
            for j in 0..n {
                let want: f64 = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
                let g = got[i * n + j];
                assert!(
                    (g - want).abs() <= 1e-9 * want.abs().max(1.0),
                    "{m}x{k}x{n} ({i}, {j}): {g} vs {want}"
                );
            }
        }
    }
}

/// The op tests above on cuda:0: `cargo test --release -p gpulab --test tensor_dtype --
/// --ignored` on a GPU machine (tests/test_gpu.py); without one they say so.
mod gpu {
    use super::*;

    fn have_gpu() -> bool {
        if gpulab::cuda::is_available() {
            return true;
        }
        let why = gpulab::cuda::unavailable_reason().unwrap_or_default();
        println!("skipped: no CUDA device ({why})");
        false
    }

    macro_rules! on_gpu {
        ($($name:ident => $body:ident),* $(,)?) => {$(
            #[test]
            #[ignore = "needs a CUDA device"]
            fn $name() {
                if have_gpu() {
                    $body(GPU);
                }
            }
        )*};
    }
    on_gpu!(
        binary_ops_for_every_dtype_match_f64_loops => binary_ops_for_every_dtype_match_f64_loops_on,
        unary_ops_for_every_dtype_match_f64_loops => unary_ops_for_every_dtype_match_f64_loops_on,
        reductions_for_every_dtype_match_f64_loops => reductions_for_every_dtype_match_f64_loops_on,
        scans_and_products_for_every_dtype_match_f64_loops => scans_and_products_for_every_dtype_match_f64_loops_on,
        comparisons_give_bool_and_where_picks => comparisons_give_bool_and_where_picks_on,
        conversions_and_generic_access => conversions_and_generic_access_on,
        errors_name_the_op_dtypes_shapes_and_device => errors_name_the_op_dtypes_shapes_and_device_on,
        edge_cases_follow_torch => edge_cases_follow_torch_on,
    );
}
