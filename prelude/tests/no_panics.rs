//! Random calls into the tensor API, with odd shapes (empty, 0-d, broadcast views), every dtype,
//! special values and out-of-range arguments: each call must return `Ok` or an `Err`, never
//! panic (a panic in a cell is a lost variable or worse). A seeded sweep, so a failure names a
//! reproducible call; `GPULAB_FUZZ_SEED` / `GPULAB_FUZZ_CALLS` widen it by hand.

use gpulab::nn::functional as F;
use gpulab::*;
mod common;
use std::ops::Range;

type Result<T> = std::result::Result<T, Error>;
type Unary = fn(&Tensor) -> Result<Tensor>;
type WithDim = fn(&Tensor, isize) -> Result<Tensor>;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// SplitMix64: a seeded generator small enough to live here (the prelude's own is private).
#[derive(Clone)]
struct StdRng(u64);

impl StdRng {
    fn seed_from_u64(seed: u64) -> StdRng {
        StdRng(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn gen_bool(&mut self, p: f64) -> bool {
        self.unit() < p
    }
    fn gen_range<T: Draw>(&mut self, r: Range<T>) -> T {
        T::draw(self, r)
    }
}

trait Draw: Sized {
    fn draw(rng: &mut StdRng, r: Range<Self>) -> Self;
}

macro_rules! draw_int {
    ($($t:ty),*) => {$(
        impl Draw for $t {
            fn draw(rng: &mut StdRng, r: Range<$t>) -> $t {
                assert!(r.start < r.end);
                let span = (r.end as i128 - r.start as i128) as u128;
                (r.start as i128 + (rng.next() as u128 % span) as i128) as $t
            }
        }
    )*};
}
draw_int!(usize, isize, i32, i64, u64);

impl Draw for f64 {
    fn draw(rng: &mut StdRng, r: Range<f64>) -> f64 {
        r.start + rng.unit() * (r.end - r.start)
    }
}

const DTYPES: [DType; 8] = [
    DType::F32,
    DType::F64,
    DType::F16,
    DType::BF16,
    DType::I32,
    DType::I64,
    DType::U8,
    DType::Bool,
];

const VALUES: [f64; 12] = [
    0.0,
    1.0,
    -1.0,
    2.5,
    -3.0,
    255.0,
    1e-8,
    -0.0,
    70000.0,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
];

fn describe(t: &Tensor) -> String {
    format!(
        "{:?}{:?}{}",
        t.dtype(),
        t.shape(),
        if t.is_contiguous() { "" } else { " (strided)" }
    )
}

fn random_tensor(rng: &mut StdRng, dev: Device) -> Tensor {
    let rank = rng.gen_range(0..5usize);
    let dims: Vec<usize> = (0..rank)
        .map(|_| [0, 1, 1, 2, 2, 3, 4][rng.gen_range(0..7)])
        .collect();
    let n: usize = dims.iter().product();
    let values: Vec<f64> = (0..n)
        .map(|_| {
            if rng.gen_bool(0.3) {
                VALUES[rng.gen_range(0..VALUES.len())]
            } else {
                rng.gen_range(-4.0..4.0)
            }
        })
        .collect();
    let dtype = DTYPES[rng.gen_range(0..DTYPES.len())];
    // Built on the CPU and moved, so both devices start from the same bits.
    let mut t = Tensor::from_vec(values, dims.clone(), Device::Cpu)
        .and_then(|t| t.to_dtype(dtype)?.to(dev))
        .expect("building a random tensor");
    if rank >= 2 && rng.gen_bool(0.3) {
        t = t.transpose(0, 1).unwrap();
    }
    if rank >= 1 && rng.gen_bool(0.1) {
        // A broadcast view: stride 0 along a new leading axis.
        let mut big = vec![2];
        big.extend_from_slice(t.shape());
        t = t.unsqueeze(0).unwrap().expand(big).unwrap();
    }
    if dtype.is_float() && rng.gen_bool(0.3) {
        t = t.requires_grad_(true).unwrap();
    }
    t
}

fn dim(rng: &mut StdRng) -> isize {
    rng.gen_range(-5..5)
}

fn scalar(rng: &mut StdRng) -> f64 {
    VALUES[rng.gen_range(0..VALUES.len())]
}

/// One random call, described in `what` before it runs: a tensor, or nothing for in-place and
/// backward calls.
fn call(
    rng: &mut StdRng,
    pool: &[Tensor],
    dev: Device,
    what: &mut String,
    used: &mut [usize; 2],
) -> Result<Option<Tensor>> {
    *used = [rng.gen_range(0..pool.len()), rng.gen_range(0..pool.len())];
    let a = pool[used[0]].clone();
    let b = pool[used[1]].clone();
    let (da, db) = (describe(&a), describe(&b));
    let d = dim(rng);
    let s = scalar(rng);
    let i = rng.gen_range(-3..6) as i64;
    let some = |r: Result<Tensor>| r.map(Some);
    let none = |r: Result<()>| r.map(|_| None);
    let case = rng.gen_range(0..95);
    if std::env::var("FUZZ_TRACE").is_ok() {
        eprintln!("case {case} a {da} b {db} d {d} s {s} i {i}");
    }
    match case {
        0 => {
            *what = format!("{da} + {db}");
            some(a.add(&b))
        }
        1 => {
            *what = format!("{da} - {db}");
            some(a.sub(&b))
        }
        2 => {
            *what = format!("{da} * {db}");
            some(a.mul(&b))
        }
        3 => {
            *what = format!("{da} / {db}");
            some(a.div(&b))
        }
        4 => {
            *what = format!("{da}.pow({db})");
            some(a.pow(&b))
        }
        5 => {
            *what = format!("{da}.maximum({db})");
            some(a.maximum(&b))
        }
        6 => {
            *what = format!("{da}.pow({s})");
            some(a.pow(s))
        }
        7 => {
            *what = format!("{da}.div({i})");
            some(a.div(i))
        }
        8 => {
            *what = format!("{da}.lt({s})");
            some(a.lt(s))
        }
        9 => {
            *what = format!("{da}.eq({db})");
            some(a.eq(&b))
        }
        10 => {
            *what = format!("{da}.clamp({s}, {i})");
            some(a.clamp(s, i))
        }
        11 => {
            let c = pool[rng.gen_range(0..pool.len())].clone();
            {
                *what = format!("{da}.where_({}, {db})", describe(&c));
                some(a.where_(&c, &b))
            }
        }
        12 => {
            type Binary = fn(&Tensor, &Tensor) -> gpulab::error::Result<Tensor>;
            let ops: [(&str, Binary); 10] = [
                ("logical_and", Tensor::logical_and),
                ("zeta", |x, y| x.zeta(y)),
                ("logical_xor", Tensor::logical_xor),
                ("atan2", Tensor::atan2),
                ("fmod", |x, y| x.fmod(y)),
                ("remainder", |x, y| x.remainder(y)),
                ("floor_divide", |x, y| x.floor_divide(y)),
                ("logaddexp", Tensor::logaddexp),
                ("xlogy", Tensor::xlogy),
                ("cdist", |x, y| x.cdist(y, 2.0)),
            ];
            let (name, f) = ops[rng.gen_range(0..ops.len())];
            *what = format!("{da}.{name}({db})");
            some(f(&a, &b))
        }
        13 => {
            let ops: [(&str, Unary); 34] = [
                ("neg", Tensor::neg),
                ("abs", Tensor::abs),
                ("exp", Tensor::exp),
                ("sqrt", Tensor::sqrt),
                ("relu", Tensor::relu),
                ("log", Tensor::log),
                ("tanh", Tensor::tanh),
                ("sigmoid", Tensor::sigmoid),
                ("sin", Tensor::sin),
                ("cos", Tensor::cos),
                ("floor", Tensor::floor),
                ("ceil", Tensor::ceil),
                ("round", Tensor::round),
                ("sign", Tensor::sign),
                ("log1p", Tensor::log1p),
                ("expm1", Tensor::expm1),
                ("erf", Tensor::erf),
                ("tan", Tensor::tan),
                ("asin", Tensor::asin),
                ("acos", Tensor::acos),
                ("atan", Tensor::atan),
                ("sinh", Tensor::sinh),
                ("cosh", Tensor::cosh),
                ("asinh", Tensor::asinh),
                ("acosh", Tensor::acosh),
                ("atanh", Tensor::atanh),
                ("lgamma", Tensor::lgamma),
                ("digamma", Tensor::digamma),
                ("polygamma(1)", |x| x.polygamma(1)),
                ("polygamma(3)", |x| x.polygamma(3)),
                ("mvlgamma(2)", |x| x.mvlgamma(2)),
                ("erfc", Tensor::erfc),
                ("erfinv", Tensor::erfinv),
                ("logical_not", Tensor::logical_not),
            ];
            let (name, f) = ops[rng.gen_range(0..ops.len())];
            {
                *what = format!("{da}.{name}()");
                some(f(&a))
            }
        }
        14 => {
            let ops: [(&str, Unary); 9] = [
                ("sum", Tensor::sum),
                ("prod", Tensor::prod),
                ("mean", Tensor::mean),
                ("max", Tensor::max),
                ("min", Tensor::min),
                ("argmax", Tensor::argmax),
                ("argmin", Tensor::argmin),
                ("var", Tensor::var),
                ("std", Tensor::std),
            ];
            let (name, f) = ops[rng.gen_range(0..ops.len())];
            {
                *what = format!("{da}.{name}()");
                some(f(&a))
            }
        }
        15 => {
            let ops: [(&str, WithDim); 16] = [
                ("sum_dim", Tensor::sum_dim),
                ("prod_dim", Tensor::prod_dim),
                ("prod_keepdim", Tensor::prod_keepdim),
                ("cumsum", Tensor::cumsum),
                ("cumprod", Tensor::cumprod),
                ("sum_keepdim", Tensor::sum_keepdim),
                ("mean_dim", Tensor::mean_dim),
                ("max_dim", Tensor::max_dim),
                ("min_dim", Tensor::min_dim),
                ("argmax_dim", Tensor::argmax_dim),
                ("argmin_dim", Tensor::argmin_dim),
                ("var_dim", Tensor::var_dim),
                ("std_dim", Tensor::std_dim),
                ("softmax", Tensor::softmax),
                ("log_softmax", Tensor::log_softmax),
                ("unsqueeze", Tensor::unsqueeze),
            ];
            let (name, f) = ops[rng.gen_range(0..ops.len())];
            {
                *what = format!("{da}.{name}({d})");
                some(f(&a, d))
            }
        }
        16 => {
            *what = format!("{da}.matmul({db})");
            some(a.matmul(&b))
        }
        17 => {
            let d1 = dim(rng);
            {
                *what = format!("{da}.transpose({d}, {d1})");
                some(a.transpose(d, d1))
            }
        }
        18 => {
            *what = format!("{da}.t()");
            some(a.t())
        }
        19 => {
            let dims: Vec<isize> = (0..rng.gen_range(0..5)).map(|_| dim(rng)).collect();
            {
                *what = format!("{da}.permute({dims:?})");
                some(a.permute(&dims))
            }
        }
        20 => {
            let (start, len) = (rng.gen_range(0..5), rng.gen_range(0..5));
            {
                *what = format!("{da}.narrow({d}, {start}, {len})");
                some(a.narrow(d, start, len))
            }
        }
        21 => {
            let (lo, hi) = (rng.gen_range(0..5usize), rng.gen_range(0..5usize));
            {
                *what = format!("{da}.slice({d}, {lo}..{hi})");
                some(a.slice(d, lo..hi))
            }
        }
        22 => {
            let index = rng.gen_range(-5..5);
            {
                *what = format!("{da}.select({d}, {index})");
                some(a.select(d, index))
            }
        }
        23 => {
            let shape: Vec<usize> = (0..rng.gen_range(0..5))
                .map(|_| rng.gen_range(0..4))
                .collect();
            {
                *what = format!("{da}.expand({shape:?})");
                some(a.expand(shape))
            }
        }
        24 => {
            *what = format!("{da}.squeeze({d})");
            some(a.squeeze(d))
        }
        25 => {
            let shape: Vec<isize> = (0..rng.gen_range(0..4))
                .map(|_| rng.gen_range(-2..5))
                .collect();
            {
                *what = format!("{da}.reshape({shape:?})");
                some(a.reshape(shape))
            }
        }
        26 => {
            let shape: Vec<isize> = (0..rng.gen_range(0..4))
                .map(|_| rng.gen_range(-2..5))
                .collect();
            {
                *what = format!("{da}.view({shape:?})");
                some(a.view(shape))
            }
        }
        27 => {
            *what = format!("{da}.flatten()");
            some(a.flatten())
        }
        28 => {
            *what = format!("{da}.contiguous()");
            some(a.contiguous())
        }
        29 => {
            *what = format!("{da}.copy_({db})");
            none(a.copy_(&b))
        }
        30 => {
            *what = format!("{da}.fill_({s})");
            none(a.fill_(s))
        }
        31 => {
            *what = format!("{da}.add_({db})");
            none(a.add_(&b))
        }
        32 => {
            *what = format!("{da}.mul_({s})");
            none(a.mul_(s))
        }
        33 => {
            *what = format!("{da}.div_({i})");
            none(a.div_(i))
        }
        34 => {
            *what = format!("{da}.index_select({d}, {db})");
            some(a.index_select(d, &b))
        }
        35 => {
            *what = format!("{da}.gather({d}, {db})");
            some(a.gather(d, &b))
        }
        36 => {
            let dims: Vec<isize> = (0..rng.gen_range(0..4)).map(|_| dim(rng)).collect();
            {
                *what = format!("{da}.flip({dims:?})");
                some(a.flip(&dims))
            }
        }
        37 => {
            *what = format!("cat([{da}, {db}], {d})");
            some(Tensor::cat(&[&a, &b], d))
        }
        38 => {
            *what = format!("stack([{da}, {db}], {d})");
            some(Tensor::stack(&[&a, &b], d))
        }
        39 => {
            *what = "cat([], 0)".to_string();
            some(Tensor::cat::<Tensor>(&[], 0))
        }
        40 => {
            let dtype = DTYPES[rng.gen_range(0..DTYPES.len())];
            {
                *what = format!("{da}.to_dtype({dtype:?})");
                some(a.to_dtype(dtype))
            }
        }
        41 => {
            *what = format!("{da}.sum().backward()");
            none(a.sum().and_then(|s| s.backward()))
        }
        42 => {
            *what = format!("{da}.backward()");
            none(a.backward())
        }
        43 => {
            *what = format!("{da}.backward_with({db})");
            none(a.backward_with(&b))
        }
        44 => {
            *what = format!("{da}.item::<f32>()");
            none(a.item::<f32>().map(|_| ()))
        }
        45 => {
            *what = format!("{da}.item::<i64>()");
            none(a.item::<i64>().map(|_| ()))
        }
        46 => {
            *what = format!("{da}.to_vec::<u8>()");
            none(a.to_vec::<u8>().map(|_| ()))
        }
        47 => {
            *what = format!("{da}.to_vec2::<f64>()");
            none(a.to_vec2::<f64>().map(|_| ()))
        }
        48 => {
            *what = format!("cross_entropy({da}, {db})");
            some(F::cross_entropy(&a, &b))
        }
        49 => {
            *what = format!("mse_loss({da}, {db})");
            some(F::mse_loss(&a, &b))
        }
        50 => {
            *what = format!("bce_with_logits({da}, {db})");
            some(F::binary_cross_entropy_with_logits(&a, &b))
        }
        51 => {
            let p = [0.0, 0.5, 1.0, -0.5, 2.0, f64::NAN][rng.gen_range(0..6)];
            {
                *what = format!("dropout({da}, {p})");
                some(F::dropout(&a, p, true))
            }
        }
        52 => {
            let (stride, pad) = (rng.gen_range(0..3), rng.gen_range(0..3));
            let (dilation, groups) = (rng.gen_range(0..3), rng.gen_range(0..3));
            let pad = match rng.gen_range(0..6) {
                0 => nn::Padding::Same,
                1 => nn::Padding::from("valid"),
                2 => nn::Padding::from("full"),
                _ => nn::Padding::from(pad),
            };
            {
                *what = format!(
                    "conv2d({da}, {db}, stride {stride}, padding {pad:?}, dilation {dilation}, \
                     groups {groups})"
                );
                some(F::conv2d(&a, &b, None, stride, pad, dilation, groups))
            }
        }
        53 => {
            let (k, stride, pad) = (
                rng.gen_range(0..4),
                rng.gen_range(0..3),
                rng.gen_range(0..3),
            );
            let (dilation, ceil) = (rng.gen_range(0..3), rng.gen_bool(0.5));
            if rng.gen_bool(0.5) {
                *what = format!(
                    "max_pool2d({da}, {k}, {stride}, padding {pad}, dilation {dilation}, \
                     ceil_mode {ceil})"
                );
                some(F::max_pool2d(&a, k, stride, pad, dilation, ceil))
            } else {
                let include = rng.gen_bool(0.5);
                *what = format!(
                    "avg_pool2d({da}, {k}, {stride}, padding {pad}, ceil_mode {ceil}, \
                     count_include_pad {include})"
                );
                some(F::avg_pool2d(&a, k, stride, pad, ceil, include))
            }
        }
        54 => {
            let (lo, hi) = (rng.gen_range(-3..4i64), rng.gen_range(-3..4i64));
            {
                *what = format!("arange({lo}, {hi})");
                some(Tensor::arange(lo, hi, dev))
            }
        }
        55 => {
            // Steps of 1e-8 over a range of a few units are 10^8 values: real work, too slow
            // to draw again and again (the huge counts are in the test below).
            let step = [
                1.0,
                -1.0,
                2.5,
                -3.0,
                0.0,
                -0.0,
                70000.0,
                f64::NAN,
                f64::INFINITY,
            ][rng.gen_range(0..9usize)];
            let (lo, hi) = (scalar(rng), scalar(rng));
            {
                *what = format!("arange_step({lo}, {hi}, {step})");
                some(Tensor::arange_step(lo, hi, step, dev))
            }
        }
        56 => {
            let dtype = DTYPES[rng.gen_range(0..DTYPES.len())];
            {
                *what = format!("full_dtype([2, 0], {s}, {dtype:?})");
                some(Tensor::full_dtype([2, 0], s, dtype, dev))
            }
        }
        57 => {
            *what = format!("{da}.detach()");
            some(Ok(a.detach()))
        }
        58 => {
            *what = format!("{da}.squeeze_all()");
            some(Ok(a.squeeze_all()))
        }
        59 => {
            *what = format!("{da}.expand_to(shape of {db})");
            some(a.expand_to(b.shape()))
        }
        60 => {
            *what = format!("{da} to the CPU and back");
            some(a.to(Device::Cpu).and_then(|c| c.to(dev)))
        }
        61 => {
            let desc = rng.gen_bool(0.5);
            *what = format!("{da}.sort({d}, {desc})");
            some(a.sort(d, desc).map(|(v, _)| v))
        }
        62 => {
            let k = rng.gen_range(0..4usize);
            *what = format!("{da}.topk({k}, {d})");
            some(a.topk(k, d, true).map(|(_, i)| i))
        }
        63 => {
            let reps: Vec<usize> = (0..rng.gen_range(0..5usize))
                .map(|_| rng.gen_range(0..3usize))
                .collect();
            *what = format!("{da}.repeat({reps:?})");
            some(a.repeat(&reps))
        }
        64 => {
            let n = rng.gen_range(0..4usize);
            *what = format!("{da}.chunk({n}, {d})");
            some(a.chunk(n, d).and_then(|parts| {
                let parts = parts
                    .iter()
                    .map(Tensor::flatten)
                    .collect::<Result<Vec<_>>>()?;
                Tensor::cat(&parts, 0)
            }))
        }
        65 => {
            *what = format!("{da}.masked_fill({db}, {s})");
            some(a.masked_fill(&b, s))
        }
        66 => {
            *what = format!("{da}.tril({i})");
            some(a.tril(i))
        }
        67 => {
            *what = format!("{da}.isclose({db})");
            some(a.isclose(&b, 1e-3, 1e-5))
        }
        68 => {
            *what = format!("{da}.norm()");
            some(a.norm())
        }
        69 => {
            let n = rng.gen_range(0..5usize);
            *what = format!("linspace({s}, {i}, {n})");
            some(Tensor::linspace(s, i as f64, n, dev))
        }
        70 => {
            *what = format!("{da}.isfinite()");
            some(a.isfinite())
        }
        71 => {
            *what = format!("{da}.outer({db})");
            some(a.outer(&b))
        }
        72 => {
            *what = format!("{da}.leaky_relu(0.1)");
            some(a.leaky_relu(0.1))
        }
        73 => {
            let train = rng.gen_bool(0.7);
            *what = format!("batch_norm({da}, training {train})");
            let (rm, rv) = (b.clone(), b.clone());
            some(F::batch_norm(
                &a,
                Some(&rm),
                Some(&rv),
                None,
                Some(&b),
                train,
                0.1,
                1e-5,
            ))
        }
        74 => {
            let shape: Vec<usize> = a
                .shape()
                .iter()
                .rev()
                .take(rng.gen_range(0..3usize))
                .rev()
                .copied()
                .collect();
            *what = format!("layer_norm({da}, {shape:?})");
            some(F::layer_norm(&a, &shape, None, None, 1e-5))
        }
        75 => {
            *what = format!("{da}.gelu()");
            some(a.gelu())
        }
        76 => {
            const MODES: [&str; 8] = [
                "nearest",
                "nearest-exact",
                "linear",
                "bilinear",
                "bicubic",
                "trilinear",
                "area",
                "cubic",
            ];
            let mode = MODES[rng.gen_range(0..MODES.len())];
            let align = rng.gen_bool(0.3);
            let size: nn::Resize = match rng.gen_range(0..5) {
                0 => (rng.gen_range(0..6), rng.gen_range(0..6)).into(),
                1 => [0.0, 0.5, 1.0, 1.7, 2.0, -1.0, f64::NAN][rng.gen_range(0..7)].into(),
                2 => rng.gen_range(0..6usize).into(),
                3 => (
                    rng.gen_range(0..4),
                    rng.gen_range(0..4),
                    rng.gen_range(0..4),
                )
                    .into(),
                _ => (rng.gen_range(0.0..3.0), rng.gen_range(0.0..3.0)).into(),
            };
            // Sequences and volumes too: the pool's tensors with a leading axis added.
            let x = if rng.gen_bool(0.3) {
                a.unsqueeze(0)?
            } else {
                a.clone()
            };
            *what = format!(
                "interpolate({da} as {:?}, {size:?}, {mode}, align_corners {align})",
                x.shape()
            );
            some(F::interpolate(&x, size, mode, align))
        }
        77 => {
            let (stride, pad, opad) = (
                rng.gen_range(0..3),
                rng.gen_range(0..3),
                rng.gen_range(0..2),
            );
            let (groups, dilation) = (rng.gen_range(0..3), rng.gen_range(0..3));
            *what = format!(
                "conv_transpose2d({da}, {db}, stride {stride}, padding {pad}, output_padding \
                 {opad}, groups {groups}, dilation {dilation})"
            );
            some(F::conv_transpose2d(
                &a, &b, None, stride, pad, opad, groups, dilation,
            ))
        }
        78 => {
            let ops: [(&str, Unary); 10] = [
                ("any", Tensor::any),
                ("all", Tensor::all),
                ("count_nonzero", Tensor::count_nonzero),
                ("median", Tensor::median),
                ("trace", Tensor::trace),
                ("nonzero", Tensor::nonzero),
                ("unique", Tensor::unique),
                ("log2", Tensor::log2),
                ("trunc", Tensor::trunc),
                ("frac", Tensor::frac),
            ];
            let (name, f) = ops[rng.gen_range(0..ops.len())];
            *what = format!("{da}.{name}()");
            some(f(&a))
        }
        79 => {
            let keep = rng.gen_bool(0.5);
            match rng.gen_range(0..6) {
                0 => {
                    *what = format!("{da}.logsumexp({d}, {keep})");
                    some(a.logsumexp(d, keep))
                }
                1 => {
                    let dims: Vec<isize> = (0..rng.gen_range(0..3)).map(|_| dim(rng)).collect();
                    *what = format!("{da}.amax({dims:?}, {keep})");
                    some(a.amax(&dims, keep))
                }
                2 => {
                    *what = format!("{da}.median_dim({d})");
                    some(a.median_dim(d).map(|(v, _)| v))
                }
                3 => {
                    let k = rng.gen_range(0..4usize);
                    *what = format!("{da}.kthvalue({k}, {d})");
                    some(a.kthvalue(k, d).map(|(_, i)| i))
                }
                4 => {
                    *what = format!("{da}.any_dim({d})");
                    some(a.any_dim(d))
                }
                _ => {
                    *what = format!("{da}.var_mean({d})");
                    some(a.var_mean(d).map(|(v, _)| v))
                }
            }
        }
        80 => {
            let shifts: Vec<isize> = (0..rng.gen_range(0..3)).map(|_| dim(rng)).collect();
            let dims: Vec<isize> = (0..rng.gen_range(0..3)).map(|_| dim(rng)).collect();
            *what = format!("{da}.roll({shifts:?}, {dims:?})");
            some(a.roll(&shifts, &dims))
        }
        81 => match rng.gen_range(0..4) {
            0 => {
                *what = format!("{da}.diag({i})");
                some(a.diag(i))
            }
            1 => {
                let d1 = dim(rng);
                *what = format!("{da}.movedim({d}, {d1})");
                some(a.movedim(d, d1))
            }
            2 => {
                let sizes: Vec<usize> = (0..rng.gen_range(0..3))
                    .map(|_| rng.gen_range(0..4))
                    .collect();
                *what = format!("{da}.unflatten({d}, {sizes:?})");
                some(a.unflatten(d, &sizes))
            }
            _ => {
                let reps: Vec<usize> = (0..rng.gen_range(0..4))
                    .map(|_| rng.gen_range(0..3))
                    .collect();
                *what = format!("{da}.tile({reps:?})");
                some(a.tile(&reps))
            }
        },
        82 => match rng.gen_range(0..4) {
            0 => {
                *what = format!("{da}.masked_select({db})");
                some(a.masked_select(&b))
            }
            1 => {
                let n = rng.gen_range(0..4usize);
                *what = format!("{da}.bincount({n})");
                some(a.bincount(n))
            }
            2 => {
                let bins = rng.gen_range(0..4usize);
                *what = format!("{da}.histc({bins}, {s}, 1)");
                some(a.histc(bins, s, 1.0))
            }
            _ => {
                *what = format!("{da}.unique_counts()");
                some(a.unique_counts().map(|(_, c)| c))
            }
        },
        83 => match rng.gen_range(0..3) {
            0 => {
                *what = format!("{da}.lerp({db}, {s})");
                some(a.lerp(&b, s))
            }
            1 => {
                *what = format!("{da}.addmm({da}, {db}, {s}, 1)");
                some(a.addmm(&a, &b, s, 1.0))
            }
            _ => {
                *what = format!("{da}.equal({db})");
                some(a.equal(&b).map(|_| a.clone()))
            }
        },
        84 => {
            // An index made from b's values (clamped to a small range), over a's shape.
            let index = b
                .to_dtype(DType::I64)
                .and_then(|t| t.clamp(-1, 3))
                .unwrap_or_else(|_| a.clone());
            let dix = describe(&index);
            match rng.gen_range(0..4) {
                0 => {
                    *what = format!("{da}.scatter_add({d}, {dix}, {da})");
                    some(a.scatter_add(d, &index, &a))
                }
                1 => {
                    *what = format!("{da}.scatter({d}, {dix}, {da})");
                    some(a.scatter(d, &index, &a))
                }
                2 => {
                    *what = format!("{da}.scatter_value({d}, {dix}, {s})");
                    some(a.scatter_value(d, &index, s))
                }
                _ => {
                    *what = format!("{da}.index_add({d}, {dix}, {da}, {s})");
                    some(a.index_add(d, &index, &a, s))
                }
            }
        }
        85 => {
            let eqs = [
                "ij,jk->ik",
                "i,i->",
                "ii->i",
                "ij->",
                "bij,bjk->bik",
                "ij,j",
                "i,j->ij",
                "->",
                "iij->ij",
                "ij,jk->il",
                "i..j",
                "a,b,c->abc",
            ];
            let eq = eqs[rng.gen_range(0..eqs.len())];
            *what = format!("einsum({eq:?}, {da}, {db})");
            some(Tensor::einsum(eq, &[&a, &b]))
        }
        86 => {
            // Python-style indexing with random (often out-of-range) positions and steps.
            let (i, j) = (rng.gen_range(-5..5i64), rng.gen_range(-5..5i64));
            let step = rng.gen_range(1..4usize);
            let mask = pool[rng.gen_range(0..pool.len())].clone();
            let acc = rng.gen_range(0..2) == 1;
            let v = rng.gen_range(-300.0..300.0f64).round() / 2.0;
            match rng.gen_range(0..8) {
                5 => {
                    *what = format!("{da}.i(({db}, {}))", describe(&mask));
                    some(a.i((&b, &mask)))
                }
                6 => {
                    *what = format!("{da}.index_put(({}, ..), {db}, {acc})", describe(&mask));
                    some(a.index_put((&mask, ..), &b, acc))
                }
                7 => {
                    *what = format!("{da}.deep_clone().i_set(({db}, {i}), {v})");
                    let c = a.detach().deep_clone();
                    some(c.and_then(|c| c.i_set((&b, i), v).map(|_| c)))
                }
                0 => {
                    *what = format!("{da}.i(({i}, {j}))");
                    some(a.i((i, j)))
                }
                1 => {
                    *what = format!("{da}.i((.., {i}..{j}))");
                    some(a.i((.., i..j)))
                }
                2 => {
                    *what = format!("{da}.i((Ellipsis, ({i}..).step_by({step})))");
                    some(a.i((gpulab::Ellipsis, (i..).step_by(step))))
                }
                3 => {
                    *what = format!("{da}.i((NewAxis, {i}))");
                    some(a.i((gpulab::NewAxis, i)))
                }
                _ => {
                    *what = format!("{da}.i(&{})", describe(&mask));
                    some(a.i(&mask))
                }
            }
        }
        87 => {
            // torch's named products, pointwise functions and joins (products.rs,
            // pointwise.rs, stacking.rs) and linalg, with a third pool tensor where one is taken.
            let c = pool[rng.gen_range(0..pool.len())].clone();
            let dc = describe(&c);
            let n = rng.gen_range(0..4usize);
            const NAMES: [&str; 64] = [
                "fmax",
                "fmin",
                "hypot",
                "copysign",
                "heaviside",
                "kron",
                "inner",
                "mm",
                "bmm",
                "mv",
                "take_along_dim",
                "float_power",
                "signbit",
                "sinc",
                "atleast_3d",
                "msort",
                "hsplit",
                "tensor_split",
                "block_diag",
                "hstack",
                "dstack",
                "cartesian_prod",
                "addcmul",
                "addcdiv",
                "addmv",
                "addr",
                "baddbmm",
                "det",
                "inv",
                "solve",
                "vector_norm",
                "matrix_norm",
                "matrix_power",
                "cholesky",
                "qr",
                "eigh",
                "svd",
                "pinv",
                "matrix_rank",
                "cond",
                "solve_triangular",
                "lstsq",
                "multi_dot",
                "vander",
                "vecdot",
                "lu",
                "lu_solve",
                "matrix_exp",
                "norm",
                "logdet",
                "cholesky_solve",
                "cholesky_inverse",
                "tensordot",
                "tensordot_dims",
                "tensorinv",
                "tensorsolve",
                "householder_product",
                "geqrf",
                "linalg.cross",
                "linalg.diagonal",
                "inv_ex",
                "solve_ex",
                "cholesky_ex",
                "lu_factor_ex",
            ];
            let pick = rng.gen_range(0..NAMES.len());
            let parts = [a.clone(), b.clone()];
            *what = format!(
                "{} of {da}, {db} ({dc}, n {n}, dim {d}, scalar {s})",
                NAMES[pick]
            );
            some(match pick {
                0 => a.fmax(&b),
                1 => a.fmin(&b),
                2 => a.hypot(&b),
                3 => a.copysign(&b),
                4 => a.heaviside(&b),
                5 => a.kron(&b),
                6 => a.inner(&b),
                7 => a.mm(&b),
                8 => a.bmm(&b),
                9 => a.mv(&b),
                10 => a.take_along_dim(&b, Some(d)),
                11 => a.float_power(&b),
                12 => a.signbit(),
                13 => a.sinc(),
                14 => a.atleast_3d(),
                15 => a.msort(),
                16 => a.hsplit(n).and_then(|p| Tensor::cat(&p, 0)),
                17 => a.tensor_split(n, d).and_then(|p| Tensor::cat(&p, d)),
                18 => Tensor::block_diag(&parts),
                19 => Tensor::hstack(&parts),
                20 => Tensor::column_stack(&parts).and(Tensor::dstack(&parts)),
                21 => Tensor::cartesian_prod(&parts),
                22 => a.addcmul(&b, &c, s),
                23 => a.addcdiv(&b, &c, s),
                24 => a.addmv(&b, &c, s, 1.0),
                25 => a.addr(&b, &c, s, 1.0),
                26 => a.baddbmm(&b, &c, s, 1.0),
                27 => linalg::det(&a),
                28 => linalg::inv(&a),
                29 => linalg::solve(&a, &b),
                30 => linalg::vector_norm(&a, s, Some(&[d]), n.is_multiple_of(2)),
                31 => linalg::matrix_norm(&a, ["fro", "1", "-inf", "nuc", "bad"][n % 5], false),
                32 => linalg::matrix_power(&a, n as i64 - 2),
                33 => linalg::cholesky(&a, n % 2 == 1),
                34 => linalg::qr(&a, ["reduced", "complete", "r", "bad"][n % 4])
                    .and_then(|(q, r)| Tensor::cat(&[q.flatten()?, r.flatten()?], 0)),
                35 => linalg::eigh(&a, ["L", "U"][n % 2]).map(|(l, _)| l),
                36 => linalg::svd(&a, n.is_multiple_of(2)).map(|(_, s, _)| s),
                37 => linalg::pinv(&a, None, Some(s)),
                38 => linalg::matrix_rank(&a, Some(s), None),
                39 => linalg::cond(&a, ["2", "-2", "fro", "nuc", "x"][n % 5]),
                40 => linalg::solve_triangular(
                    &a,
                    &b,
                    n.is_multiple_of(2),
                    n.is_multiple_of(3),
                    n.is_multiple_of(5),
                ),
                41 => linalg::lstsq(
                    &a,
                    &b,
                    Some(s),
                    [None, Some("gelsd"), Some("gels"), Some("x")][n % 4],
                )
                .map(|(x, _, _, _)| x),
                42 => linalg::multi_dot(&[&a, &b, &c]),
                43 => linalg::vander(&a, Some(n)),
                44 => linalg::vecdot(&a, &b, d),
                45 => linalg::lu(&a).map(|(p, _, _)| p),
                46 => linalg::lu_factor(&a).and_then(|(lu, piv)| {
                    linalg::lu_solve(&lu, &piv, &b, n.is_multiple_of(2), n.is_multiple_of(3))
                }),
                47 => linalg::matrix_exp(&a),
                48 => linalg::norm(
                    &a,
                    [None, Some("fro"), Some("2"), Some("inf"), Some("x")][n % 5],
                    [None, Some(&[d][..]), Some(&[0, d][..])][n % 3],
                    n.is_multiple_of(2),
                ),
                49 => a.logdet(),
                50 => b.cholesky_solve(&a, n.is_multiple_of(2)),
                51 => a.cholesky_inverse(n.is_multiple_of(2)),
                52 => a.tensordot(&b, n),
                53 => a.tensordot_dims(&b, &[d, n as isize - 2][..n % 3], &[0, d][..n % 3]),
                54 => linalg::tensorinv(&a, n),
                55 => linalg::tensorsolve(&a, &b, [None, Some(&[d][..])][n % 2]),
                56 => linalg::householder_product(&a, &b),
                57 => linalg::geqrf(&a).map(|(r, _)| r),
                58 => linalg::cross(&a, &b, d),
                59 => linalg::diagonal(&a, n as i64 - 2, d, -1),
                60 => linalg::inv_ex(&a).map(|(x, _)| x),
                61 => linalg::solve_ex(&a, &b).map(|(_, info)| info),
                62 => linalg::cholesky_ex(&a, n.is_multiple_of(2)).map(|(l, _)| l),
                _ => linalg::lu_factor_ex(&a).map(|(_, _, info)| info),
            })
        }
        88 => {
            // torch's losses (loss.rs, margin_loss.rs, likelihood_loss.rs) and their modules'
            // reductions, with a third pool tensor as the pair, negative, variance or weight.
            let c = pool[rng.gen_range(0..pool.len())].clone();
            let dc = describe(&c);
            let n = rng.gen_range(0..4usize);
            let r = [nn::Reduction::None, nn::Reduction::Mean, nn::Reduction::Sum][n % 3];
            const NAMES: [&str; 22] = [
                "l1_loss",
                "smooth_l1_loss",
                "huber_loss",
                "binary_cross_entropy",
                "binary_cross_entropy_with_logits",
                "kl_div",
                "cross_entropy",
                "nll_loss",
                "margin_ranking_loss",
                "hinge_embedding_loss",
                "soft_margin_loss",
                "cosine_embedding_loss",
                "triplet_margin_loss",
                "multi_margin_loss",
                "multilabel_margin_loss",
                "multilabel_soft_margin_loss",
                "poisson_nll_loss",
                "gaussian_nll_loss",
                "MultiMarginLoss",
                "TripletMarginLoss",
                "GaussianNLLLoss",
                "CrossEntropyLoss",
            ];
            let pick = rng.gen_range(0..NAMES.len());
            *what = format!("{} of {da}, {db} ({dc}, n {n}, scalar {s})", NAMES[pick]);
            let odd = n % 2 == 1;
            some(match pick {
                0 => F::l1_loss(&a, &b),
                1 => F::smooth_l1_loss(&a, &b, s),
                2 => F::huber_loss(&a, &b, s),
                3 => F::binary_cross_entropy(&a, &b),
                4 => F::binary_cross_entropy_with_logits(&a, &b),
                5 => F::kl_div(&a, &b, ["batchmean", "mean", "sum", "x"][n], odd),
                6 => F::cross_entropy(&a, &b),
                7 => F::nll_loss(&a, &b),
                8 => F::margin_ranking_loss(&a, &b, &c, s),
                9 => F::hinge_embedding_loss(&a, &b, s),
                10 => F::soft_margin_loss(&a, &b),
                11 => F::cosine_embedding_loss(&a, &b, &c, s),
                12 => {
                    let how = F::TripletMargin {
                        margin: s,
                        p: [2.0, 1.0, s, 0.0][n],
                        swap: odd,
                        ..Default::default()
                    };
                    F::triplet_margin_loss(&a, &b, &c, how)
                }
                13 => F::multi_margin_loss(&a, &b, n as u32, s, odd.then_some(&c)),
                14 => F::multilabel_margin_loss(&a, &b),
                15 => F::multilabel_soft_margin_loss(&a, &b, odd.then_some(&c)),
                16 => {
                    let how = F::PoissonNll {
                        log_input: odd,
                        full: n >= 2,
                        eps: s,
                    };
                    F::poisson_nll_loss(&a, &b, how)
                }
                17 => F::gaussian_nll_loss(&a, &b, &c, odd, s),
                18 => nn::MultiMarginLoss::new()
                    .reduction(r)
                    .p(n as u32)
                    .weight(c.clone())
                    .forward(&a, &b),
                19 => nn::TripletMarginLoss::new()
                    .reduction(r)
                    .margin(s)
                    .forward(&a, &b, &c),
                20 => nn::GaussianNLLLoss::new()
                    .reduction(r)
                    .eps(s)
                    .forward(&a, &b, &c),
                _ => nn::CrossEntropyLoss::new()
                    .reduction(r)
                    .label_smoothing(s)
                    .weight(c.clone())
                    .forward(&a, &b),
            })
        }
        89 => {
            // Rearranging layers, the scale-only norms, power-average and adaptive pools, pdist
            // (rearrange.rs, scale_norm.rs, lp_pool.rs, adaptive_pool.rs, distance.rs).
            let n = rng.gen_range(0..4usize);
            let shape: Vec<usize> = b.shape().iter().take(2).copied().collect();
            const NAMES: [&str; 17] = [
                "max_pool2d_with_indices",
                "max_unpool2d",
                "max_unpool1d",
                "pixel_shuffle",
                "pixel_unshuffle",
                "channel_shuffle",
                "rms_norm",
                "local_response_norm",
                "lp_pool1d",
                "lp_pool2d",
                "adaptive_max_pool2d",
                "adaptive_max_pool2d_with_indices",
                "adaptive_avg_pool1d",
                "adaptive_max_pool1d",
                "pdist",
                "RMSNorm",
                "LPPool2d",
            ];
            let pick = rng.gen_range(0..NAMES.len());
            *what = format!(
                "{} of {da} (n {n}, shape {shape:?}, weight {db}, scalar {s})",
                NAMES[pick]
            );
            let unpool_size = [None, Some((n, n + 1))][n % 2];
            some(match pick {
                0 => F::max_pool2d_with_indices(&a, n.max(1), 1, n / 2, 1, n == 3).map(|(_, i)| i),
                1 => F::max_pool2d_with_indices(&a, 2, 2, 0, 1, false)
                    .and_then(|(v, i)| F::max_unpool2d(&v, &i, 2, None, 0, unpool_size))
                    .or_else(|_| F::max_unpool2d(&a, &b, n, None, n / 2, unpool_size)),
                2 => F::max_unpool1d(&a, &b, n, Some(n / 2 + 1), 0, [None, Some(n)][n % 2]),
                3 => F::pixel_shuffle(&a, n),
                4 => F::pixel_unshuffle(&a, n),
                5 => F::channel_shuffle(&a, n),
                6 => F::rms_norm(
                    &a,
                    &shape,
                    (n % 2 == 1).then_some(&b),
                    [None, Some(s)][n / 2],
                ),
                7 => F::local_response_norm(&a, n, s, 0.75, 1.0),
                8 => F::lp_pool1d(&a, s, n, [None, Some(n)][n % 2], n >= 2),
                9 => F::lp_pool2d(&a, s, n, None, n % 2 == 1),
                10 => F::adaptive_max_pool2d(&a, (n, 2)),
                11 => F::adaptive_max_pool2d_with_indices(&a, (1, n)).map(|(_, i)| i),
                12 => F::adaptive_avg_pool1d(&a, n),
                13 => F::adaptive_max_pool1d(&a, n),
                14 => F::pdist(&a, s),
                15 => nn::RMSNorm::new(shape).eps(s).forward(&a),
                _ => nn::LPPool2d::new(s, (n, 1)).ceil_mode(true).forward(&a),
            })
        }
        90 => {
            // The 3-D layers (conv3d.rs, pool3d.rs), on the tensor as it is or with a batch
            // dimension added, and the channel dropouts.
            let n = rng.gen_range(0..4usize);
            let v = if rng.gen_bool(0.5) {
                a.unsqueeze(0)?
            } else {
                a.clone()
            };
            let w = if rng.gen_bool(0.5) {
                b.unsqueeze(0)?
            } else {
                b.clone()
            };
            const NAMES: [&str; 10] = [
                "conv3d",
                "conv3d same",
                "max_pool3d",
                "max_pool3d_with_indices",
                "avg_pool3d",
                "dropout3d",
                "dropout1d",
                "Conv3d",
                "conv_transpose3d or an adaptive 3-D pool",
                "BatchNorm3d",
            ];
            let pick = rng.gen_range(0..NAMES.len());
            *what = format!(
                "{} of {da} (n {n}, shape {:?}, weight {db} as {:?})",
                NAMES[pick],
                v.shape(),
                w.shape()
            );
            some(match pick {
                0 => F::conv3d(&v, &w, None, n.max(1), n / 2, (1, 1, n.max(1)), n.max(1)),
                1 => F::conv3d(&v, &w, Some(&b), 1, "same", n + 1, 1),
                2 => F::max_pool3d(&v, n, 1, n / 2, (1, n, 1), n == 3),
                3 => F::max_pool3d_with_indices(&v, (n, 1, 2), n, 0, 1, true).map(|(_, i)| i),
                4 => F::avg_pool3d(&v, n, 1, n / 2, n % 2 == 1, n < 2, [None, Some(n)][n % 2]),
                5 => F::dropout3d(&v, s, true),
                6 => F::dropout1d(&v, s, true),
                7 => nn::Conv3d::new(n, 2, (n, 1, 1)).padding(n / 2).forward(&v),
                8 if n.is_multiple_of(2) => {
                    F::conv_transpose3d(&v, &w, None, n.max(1), n / 2, n / 3, 1, 1)
                }
                8 => F::adaptive_max_pool3d(&v, (n, 1, n + 1))
                    .or_else(|_| F::adaptive_avg_pool3d(&v, (1, n, 2))),
                _ => nn::BatchNorm3d::new(n).forward(&v),
            })
        }
        91 => {
            // Threshold .. the triplet loss with a distance (pointwise.rs, stochastic.rs,
            // pairwise.rs, margin_loss.rs).
            let n = rng.gen_range(0..4usize);
            const NAMES: [&str; 10] = [
                "threshold",
                "softmax2d",
                "rrelu",
                "alpha_dropout",
                "feature_alpha_dropout",
                "gumbel_softmax",
                "bilinear",
                "Bilinear",
                "cosine_similarity_eps (n 0: grid_sample, affine_grid; n 1: embedding_bag)",
                "triplet_margin_with_distance_loss",
            ];
            let pick = rng.gen_range(0..NAMES.len());
            *what = format!("{} of {da} and {db} (n {n}, scalar {s})", NAMES[pick]);
            some(match pick {
                0 => F::threshold(&a, s, -s),
                1 => F::softmax2d(&a),
                2 => F::rrelu(&a, s, s.abs() + 0.5, n.is_multiple_of(2)),
                3 => F::alpha_dropout(&a, s, true),
                4 => F::feature_alpha_dropout(&a, s, n > 1),
                5 => F::gumbel_softmax(&a, s, n % 2 == 1, n as isize - 2),
                6 => F::bilinear(&a, &b, &b.unsqueeze(0)?, None),
                7 => nn::Bilinear::new(n, n + 1, 2).forward_with(&a, &b),
                8 if n == 0 => {
                    let modes = ["bilinear", "nearest", "bicubic", "area"];
                    let pads = ["zeros", "border", "reflection"];
                    F::grid_sample(&a, &b, modes[(s.abs() as usize) % 4], pads[n % 3], s > 0.0)
                        .or_else(|_| F::affine_grid(&a, [n, 1, 2, 3], s > 0.0))
                }
                8 if n == 1 => {
                    let modes = ["sum", "mean", "max", "min"];
                    let pad = [None, Some(0), Some(-1)][(s.abs() as usize) % 3];
                    F::embedding_bag(
                        &a,
                        &b,
                        None,
                        modes[(s.abs() as usize) % 4],
                        None,
                        false,
                        pad,
                    )
                    .or_else(|_| {
                        F::embedding_bag(
                            &a.reshape([a.numel()])?,
                            &b,
                            Some(&a),
                            "sum",
                            Some(&b),
                            true,
                            pad,
                        )
                    })
                }
                8 => F::cosine_similarity_eps(&a, &b, n as isize - 1, s),
                _ => F::triplet_margin_with_distance_loss(&a, &b, &a, None, s, n == 1),
            })
        }
        92 => {
            // The generic layers (conv_layers.rs, pool_layers.rs), conv_transpose1d and the
            // 2-D ops on an unbatched image (windows.rs's per_image).
            let n = rng.gen_range(0..4usize);
            const NAMES: [&str; 11] = [
                "ctc_loss",
                "conv_transpose1d",
                "ConvTranspose1d",
                "conv2d unbatched",
                "conv_transpose2d unbatched",
                "max_pool2d_with_indices unbatched",
                "AvgPool2d divisor_override",
                "MaxPool1d forward_with_indices",
                "max_unpool2d unbatched",
                "Conv1d",
                "AvgPool3d divisor_override (n 1: adaptive_max_pool3d_with_indices, max_unpool3d; n 2: grid_sample on volumes, affine_grid 3-D; n 3: fractional max pooling; n 0: lazy layers)",
            ];
            let pick = rng.gen_range(0..NAMES.len());
            *what = format!("{} of {da} and {db} (n {n})", NAMES[pick]);
            some(match pick {
                0 => {
                    let lens = [n, n + 1, 3];
                    let red = [nn::Reduction::Mean, nn::Reduction::None][n % 2];
                    let (il, tl) = (&lens[..n.min(2)], &lens[1..(n + 1).min(3)]);
                    F::ctc_loss(&a, &b, il, tl, n, red, n == 2)
                }
                1 => F::conv_transpose1d(&a, &b, None, n.max(1), n / 2, n / 3, 1, 1 + n % 2),
                2 => nn::ConvTranspose1d::new(n, 2, n + 1)
                    .stride(n)
                    .output_padding(n / 2)
                    .forward(&a),
                3 => F::conv2d(&a, &b, None, n.max(1), n, 1, 1),
                4 => F::conv_transpose2d(&a, &b, None, n, 0, n / 2, 1, 1),
                5 => F::max_pool2d_with_indices(&a, n, 1, n / 2, 1, n == 3).map(|(_, i)| i),
                6 => nn::AvgPool2d::new(n.max(1))
                    .ceil_mode(n == 2)
                    .divisor_override(n)
                    .forward(&a),
                7 => nn::MaxPool1d::new(n)
                    .forward_with_indices(&a)
                    .map(|(_, i)| i),
                8 => {
                    let (v, i) = F::max_pool2d_with_indices(&a, 2, 2, 0, 1, false)?;
                    F::max_unpool2d(&v, &i, 2, None, 0, Some((n, n + 1)))
                }
                9 => nn::Conv1d::new(n, 2, n)
                    .padding("same")
                    .groups(n)
                    .forward(&a),
                _ if n == 1 => F::adaptive_max_pool3d_with_indices(&a, (1, n, 2))
                    .and_then(|(v, i)| F::max_unpool3d(&v, &i, (1, 2, 1), None, 0, None)),
                _ if n == 0 => nn::LazyConv2d::new(2, 1)
                    .padding("same")
                    .forward(&a)
                    .or_else(|_| nn::LazyLinear::new(3).forward(&b)),
                _ if n == 3 => F::fractional_max_pool2d(&a, (1, 2), 0.5, None)
                    .or_else(|_| F::fractional_max_pool3d(&a, 1, (1, 2, 1), Some(&b)))
                    .or_else(|_| F::fractional_max_pool2d(&a, 2, (n, 2), Some(&b))),
                _ if n == 2 => {
                    let (v, g) = (a.unsqueeze(0)?, b.unsqueeze(0)?);
                    F::grid_sample(&v, &g, "bilinear", "reflection", true)
                        .or_else(|_| F::grid_sample(&v, &g, "nearest", "border", false))
                        .or_else(|_| F::affine_grid(&a, [1, 1, n, 2, 3], false))
                }
                _ => nn::AvgPool3d::new(n).divisor_override(n).forward(&a),
            })
        }
        93 => {
            // The norm layers' options and the lazy norms (running_norm.rs, lazy.rs), 3-D
            // power-average pooling, adaptive_max_pool1d's indices, the old upsampling layers.
            let n = rng.gen_range(0..4usize);
            const NAMES: [&str; 24] = [
                "BatchNorm1d affine(false) momentum(None)",
                "BatchNorm2d track_running_stats(false) eval",
                "InstanceNorm1d tracked",
                "InstanceNorm2d tracked eval",
                "instance_norm with running statistics",
                "LazyBatchNorm1d / LazyInstanceNorm2d",
                "lp_pool3d",
                "LPPool3d",
                "adaptive_max_pool1d_with_indices",
                "UpsamplingNearest2d / UpsamplingBilinear2d",
                "pad_sequence",
                "pack_padded_sequence, pad_packed_sequence",
                "LSTM forward_packed",
                "fuse_conv_bn_weights",
                "fuse_linear_bn_weights",
                "get_total_norm, vector_to_parameters",
                "AdaptiveLogSoftmaxWithLoss",
                "the in-place activations",
                "weight_norm",
                "spectral_norm",
                "orthogonal, register_parametrization",
                "functional_call",
                "autograd::grad",
                "prune",
            ];
            let pick = rng.gen_range(0..NAMES.len());
            *what = format!("{} of {da} and {db} (n {n}, scalar {s})", NAMES[pick]);
            some(match pick {
                0 => nn::BatchNorm1d::new(n)
                    .affine(false)
                    .momentum(None)
                    .forward(&a),
                1 => {
                    let mut m = nn::BatchNorm2d::new(n).track_running_stats(false);
                    m.eval();
                    m.forward(&a)
                }
                2 => nn::InstanceNorm::new_1d(n)
                    .track_running_stats(true)
                    .momentum(s)
                    .forward(&a),
                3 => {
                    let mut m = nn::InstanceNorm::new_2d(n)
                        .affine(true)
                        .track_running_stats(true);
                    m.eval();
                    m.forward(&a)
                }
                4 => F::instance_norm(&a, Some(&b), Some(&b), None, Some(&b), n != 0, s, 1e-5),
                5 => nn::LazyBatchNorm1d::new()
                    .forward(&a)
                    .or_else(|_| nn::LazyInstanceNorm2d::new().forward(&b)),
                6 => F::lp_pool3d(
                    &a,
                    s,
                    (n, 1, n),
                    [None, Some(nn::Size3(n, 1, 1))][n % 2],
                    n == 2,
                ),
                7 => nn::LPPool3d::new(s, n).ceil_mode(true).forward(&a),
                8 => F::adaptive_max_pool1d_with_indices(&a, n).map(|(_, i)| i),
                10 => nn::utils::rnn::pad_sequence(
                    &[a.clone(), b.clone()],
                    n == 1,
                    s,
                    ["right", "left", "up", "right"][n],
                ),
                11 => {
                    let lens = [n, n + 1, 2, 1];
                    let lens = &lens[..a.shape().get(1).copied().unwrap_or(0).min(4)];
                    nn::utils::rnn::pack_padded_sequence(&a, lens, n == 2, n == 3)
                        .and_then(|p| nn::utils::rnn::pad_packed_sequence(&p, n == 1, s, Some(n)))
                        .map(|(t, _)| t)
                }
                12 => {
                    let lens = [n + 1, 1, n, 2];
                    let lens = &lens[..b.shape().get(1).copied().unwrap_or(0).min(4)];
                    nn::utils::rnn::pack_padded_sequence(&b, lens, false, false).and_then(|p| {
                        nn::LSTM::new(b.shape().last().copied().unwrap_or(1), 2)
                            .bidirectional(n % 2 == 1)
                            .forward_packed(&p, Some(&a), None)
                            .or_else(|_| nn::GRU::new(n, 2).forward_packed(&p, None, None))
                            .map(|r| r.output.data)
                    })
                }
                13 => nn::utils::fuse_conv_bn_weights(
                    &a,
                    [None, Some(&b)][n % 2],
                    &b,
                    &b,
                    s,
                    (n > 1).then_some(&b),
                    None,
                    n == 3,
                )
                .map(|(w, _)| w.tensor()),
                14 => nn::utils::fuse_linear_bn_weights(&a, Some(&b), &b, &b, s, &b, &b)
                    .map(|(_, b)| b.tensor()),
                17 => {
                    let t = a.detach().deep_clone()?;
                    match n {
                        0 => F::elu_(&t, s),
                        1 => F::leaky_relu_(&t, s),
                        2 => F::hardtanh_(&t, -s, s),
                        _ => F::rrelu_(&b, s, -s, true).or_else(|_| F::celu_(&t, s)),
                    }
                }
                16 => {
                    let width = a.shape().last().copied().unwrap_or(1);
                    nn::AdaptiveLogSoftmaxWithLoss::new(width, n + 3, &[1, n + 1][..1 + n % 2])
                        .and_then(|m| {
                            m.forward_target(&a, &b)
                                .map(|r| r.loss)
                                .or_else(|_| m.predict(&a))
                                .or_else(|_| m.log_prob(&b))
                        })
                }
                15 => nn::utils::get_total_norm(&[a.clone(), b.clone()], s, n == 1).or_else(|_| {
                    let p = nn::Parameter::new(b.to_dtype(DType::F32)?)?;
                    nn::utils::vector_to_parameters(&a, std::slice::from_ref(&p))
                        .map(|_| p.tensor())
                }),
                18 => nn::utils::parametrizations::weight_norm_with(
                    nn::Linear::new(n, 2),
                    ["weight", "bias", "nope"][n % 3],
                    [None, Some(n)][n % 2],
                )
                .and_then(|m| m.forward(&a)),
                19 => {
                    let options = nn::SpectralOptions {
                        name: ["weight", "bias"][n % 2],
                        n_power_iterations: n,
                        eps: s,
                        dim: [None, Some(n)][n / 2],
                    };
                    if n == 3 {
                        nn::utils::spectral_norm_with(nn::Conv1d::new(2, 3, 2), options)
                            .and_then(|m| m.forward(&a))
                    } else {
                        nn::utils::parametrizations::spectral_norm_with(
                            nn::Linear::new(n.max(1), 2),
                            options,
                        )
                        .and_then(|m| m.forward(&a))
                    }
                }
                20 => {
                    let map = [None, Some("cayley"), Some("householder"), Some("nope")][n];
                    let lin = nn::Linear::new(n, 1 + n % 3);
                    if n == 2 {
                        let reg = nn::utils::parametrize::register_parametrization(
                            lin,
                            ["weight", "bias"][usize::from(s > 0.0)],
                            nn::Flatten,
                        );
                        reg.and_then(|m| m.forward(&a))
                    } else {
                        nn::utils::parametrizations::orthogonal_with(lin, "weight", map, n != 1)
                            .and_then(|m| m.forward(&a))
                    }
                }
                21 => {
                    let lin = nn::Linear::new(n, 2);
                    let names = ["weight", "bias", "weight", "nope"];
                    gpulab::func::functional_call_with(
                        &lin,
                        &[(names[n], b.clone()), (names[(n + 1) % 4], a.clone())][..1 + n % 2],
                        &a,
                        s > 0.0,
                    )
                }
                22 => {
                    let x = a.detach().requires_grad_(true)?;
                    let y = x.mul(&b)?;
                    let seed = [None, Some(&b), Some(&a)][n % 3];
                    gpulab::autograd::grad_with(&y, &[&x, &b], seed, n == 3, s > 0.0)
                        .map(|g| g.into_iter().flatten().next().unwrap_or(y))
                }
                23 => {
                    let lin = nn::Linear::new(n, 1 + n % 3);
                    let amount = [
                        nn::utils::prune::Amount::Fraction(s),
                        nn::utils::prune::Amount::Count(n),
                    ][n % 2];
                    let name = ["weight", "bias"][usize::from(s > 0.5)];
                    let made = match n {
                        0 => nn::utils::prune::l1_unstructured(lin, name, amount),
                        1 => nn::utils::prune::ln_structured(lin, name, amount, s, i as isize),
                        2 => nn::utils::prune::random_structured(lin, name, amount, i as isize),
                        _ => nn::utils::prune::custom_from_mask(lin, name, &b),
                    };
                    made.and_then(|mut p| {
                        p.random_unstructured(amount)?;
                        nn::utils::prune::global_unstructured(
                            &mut [&mut p],
                            nn::utils::prune::GlobalMethod::L1Unstructured,
                            amount,
                        )?;
                        p.forward(&a)
                    })
                }
                _ => nn::UpsamplingNearest2d::new((n, n + 1))
                    .forward(&a)
                    .or_else(|_| nn::UpsamplingBilinear2d::new(s).forward(&b)),
            })
        }
        _ => {
            *what = format!("format {da}");
            some(Ok(format!("{a}")).map(|_| a))
        }
    }
}

/// What one call gave: a tensor, nothing (in-place ops, backward), an error, or a panic.
enum Outcome {
    Value(Option<Tensor>),
    Failed(String),
    Panicked(String),
}

fn guarded(
    rng: &StdRng,
    pool: &[Tensor],
    dev: Device,
    what: &mut String,
    used: &mut [usize; 2],
) -> Outcome {
    let mut rng = rng.clone();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let result = call(&mut rng, pool, dev, what, used)?;
        // A result must also be readable: its element count matches its shape. A huge one
        // (bincount of a large value is torch's max + 1 bins) is not read back: the copy
        // would only test the machine's memory.
        if let Some(t) = result.as_ref().filter(|t| t.numel() <= 1 << 22) {
            let values = t.to_f64_vec()?;
            assert_eq!(values.len(), t.shape().iter().product::<usize>());
            let _ = format!("{t}");
        }
        Ok::<_, Error>(result)
    }));
    match outcome {
        Ok(Ok(t)) => Outcome::Value(t),
        Ok(Err(e)) => {
            let msg = e.to_string();
            assert!(!msg.is_empty(), "{what}: an empty error message");
            Outcome::Failed(msg)
        }
        Err(p) => Outcome::Panicked(
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default(),
        ),
    }
}

/// Sum and largest of the finite magnitudes in `t`: the scale its rounding errors grow with.
fn magnitude(t: &Tensor) -> (f64, f64) {
    let v = t.to_f64_vec().unwrap_or_default();
    let finite = v.iter().filter(|x| x.is_finite()).map(|x| x.abs());
    finite.fold((0.0, 0.0), |(s, m), x| (s + x, f64::max(m, x)))
}

/// Where the CPU's `x` and the GPU's `y` differ beyond rounding, described; None if they agree.
/// `scale` bounds the rounding of sums and products of the inputs (loose on purpose: this
/// looks for wrong elements, garbage and lost writes, not for the last bits, which the parity
/// and dtype tests check).
fn differs(x: &Tensor, y: &Tensor, scale: f64) -> Option<String> {
    if x.dtype() != y.dtype() || x.shape() != y.shape() {
        return Some(format!(
            "CPU gave {:?}{:?}, CUDA {:?}{:?}",
            x.dtype(),
            x.shape(),
            y.dtype(),
            y.shape()
        ));
    }
    let tol = match x.dtype() {
        DType::F16 => 2e-3,
        DType::BF16 => 1.6e-2,
        DType::F32 => 1e-5,
        DType::F64 => 1e-12,
        _ => 0.0,
    };
    let (a, b) = (x.to_f64_vec().ok()?, y.to_f64_vec().ok()?);
    for (i, (p, q)) in a.iter().zip(&b).enumerate() {
        let same = p == q
            || (p.is_nan() && q.is_nan())
            || (p.is_finite() && q.is_finite() && (p - q).abs() <= tol * (1.0 + p.abs() + scale));
        if !same {
            return Some(format!("element {i}: CPU {p}, CUDA {q}"));
        }
    }
    None
}

struct Sweep {
    ok: usize,
    failed: usize,
    problems: Vec<String>,
    /// Calls the CPU runs and CUDA refuses by design (integer matmul, as torch), with a
    /// sample of what they were: counted, not problems.
    device_limits: Vec<String>,
}

/// `calls` random calls on the CPU; with `gpu`, each also on that device from the same
/// tensors and arguments, and the two compared: both errors, or both values that agree
/// (dtype, shape, elements), and in-place writes and gradients that agree after each call
/// that returns nothing.
fn sweep(seed: u64, calls: usize, gpu: Option<Device>) -> Sweep {
    // One sweep at a time: the panic hook and the dropout generator are process-wide.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut rng = StdRng::seed_from_u64(seed);
    let mut pool = Vec::new();
    let mut gpool = Vec::new();
    for _ in 0..16 {
        let recipe = StdRng::seed_from_u64(rng.next());
        pool.push(random_tensor(&mut recipe.clone(), Device::Cpu));
        if let Some(g) = gpu {
            gpool.push(random_tensor(&mut recipe.clone(), g));
        }
    }
    // Silence the default hook's backtraces; the panics are collected and reported below.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut out = Sweep {
        ok: 0,
        failed: 0,
        problems: Vec::new(),
        device_limits: Vec::new(),
    };
    for n in 0..calls {
        if n % 50 == 0 {
            let k = rng.gen_range(0..pool.len());
            let recipe = StdRng::seed_from_u64(rng.next());
            pool[k] = random_tensor(&mut recipe.clone(), Device::Cpu);
            if let Some(g) = gpu {
                gpool[k] = random_tensor(&mut recipe.clone(), g);
            }
        }
        let args = StdRng::seed_from_u64(rng.next());
        let (mut what, mut used) = (String::new(), [0; 2]);
        let scales: Vec<(f64, f64)> = pool.iter().map(magnitude).collect();
        // dropout draws its mask from the seeded generator: the same mask on both devices (a
        // fork, so that no other test's draws come between).
        let cpu = fork_rng(n as u64, || {
            guarded(&args, &pool, Device::Cpu, &mut what, &mut used)
        });
        let mut keep =
            matches!(&cpu, Outcome::Value(Some(t)) if t.numel() <= 64) && rng.gen_bool(0.2);
        match &cpu {
            Outcome::Value(_) => out.ok += 1,
            Outcome::Failed(_) => out.failed += 1,
            Outcome::Panicked(msg) => out.problems.push(format!("call {n}: {what}: {msg}")),
        }
        if let Some(g) = gpu {
            let mut gwhat = String::new();
            let on_gpu = fork_rng(n as u64, || {
                guarded(&args, &gpool, g, &mut gwhat, &mut used)
            });
            let ((sa, ma), (sb, mb)) = (scales[used[0]], scales[used[1]]);
            let scale = sa + sb + sa * mb + sb * ma;
            let problem = match (&cpu, &on_gpu) {
                (_, Outcome::Panicked(msg)) => Some(format!("panicked on CUDA: {msg}")),
                (Outcome::Value(Some(x)), Outcome::Value(Some(y))) => differs(x, y, scale),
                (Outcome::Value(None), Outcome::Value(None)) => {
                    pool.iter().zip(&gpool).enumerate().find_map(|(k, (x, y))| {
                        let grads = match (x.grad(), y.grad()) {
                            (None, None) => None,
                            (Some(gx), Some(gy)) => differs(&gx, &gy, scale),
                            (gx, gy) => Some(format!(
                                "a gradient on one device only (CPU {}, CUDA {})",
                                gx.is_some(),
                                gy.is_some()
                            )),
                        };
                        differs(x, y, scale)
                            .or(grads)
                            .map(|d| format!("afterwards, pool tensor {k}: {d}"))
                    })
                }
                (Outcome::Failed(_), Outcome::Failed(_)) | (Outcome::Panicked(_), _) => None,
                (Outcome::Failed(e), _) => Some(format!("CPU error ({e}), CUDA no error")),
                (_, Outcome::Failed(e)) if e.contains("is not supported for dtype") => {
                    out.device_limits.push(format!("{what}: {e}"));
                    None
                }
                (_, Outcome::Failed(e)) => Some(format!("CUDA error ({e}), CPU no error")),
                _ => Some("one result on one device only".into()),
            };
            if let Some(p) = problem {
                out.problems.push(format!("call {n}: {what}: {p}"));
                // Keep the pools apart no longer than this call.
                keep = false;
            }
            if keep {
                if let Outcome::Value(Some(t)) = on_gpu {
                    let k = rng.gen_range(0..pool.len());
                    gpool[k] = t;
                    if let Outcome::Value(Some(t)) = cpu {
                        pool[k] = t;
                    }
                }
            } else if problems_left_pools_apart(&out) {
                // An in-place op that differed leaves the pools apart: rebuild them alike.
                for k in 0..pool.len() {
                    if let Ok(t) = pool[k].detach().to(g) {
                        gpool[k] = t;
                    }
                }
            }
        } else if keep {
            if let Outcome::Value(Some(t)) = cpu {
                let k = rng.gen_range(0..pool.len());
                pool[k] = t;
            }
        }
    }
    std::panic::set_hook(hook);
    out
}

fn problems_left_pools_apart(out: &Sweep) -> bool {
    out.problems
        .last()
        .is_some_and(|p| p.contains("afterwards"))
}

fn calls_and_seed() -> (usize, u64) {
    let var = |k: &str| std::env::var(k).ok().and_then(|s| s.parse::<u64>().ok());
    let calls = var("GPULAB_FUZZ_CALLS").unwrap_or(20_000) as usize;
    (calls, var("GPULAB_FUZZ_SEED").unwrap_or(20261122))
}

#[test]
fn random_calls_return_errors_not_panics() {
    let (calls, seed) = calls_and_seed();
    let s = sweep(seed, calls, None);
    println!(
        "{calls} calls on the CPU (seed {seed}): {} ok, {} errors, {} panics",
        s.ok,
        s.failed,
        s.problems.len()
    );
    assert!(
        s.ok > calls / 10,
        "too few calls succeeded to mean anything: {}",
        s.ok
    );
    assert!(s.problems.is_empty(), "panics:\n{}", s.problems.join("\n"));
}

/// The same sweep on cuda:0, each call compared with the CPU's: odd shapes, strided and
/// broadcast views, empty tensors and in-place writes through every GPU path.
#[test]
#[ignore = "needs a CUDA device"]
fn random_calls_agree_between_cpu_and_cuda() {
    if !common::have_gpu() {
        return;
    }
    let (calls, seed) = calls_and_seed();
    let s = sweep(seed, calls, Some(Device::Cuda(0)));
    println!(
        "{calls} calls on the CPU and cuda:0 (seed {seed}): {} ok, {} errors, {} problems, {} \
         refused on CUDA by design (first: {:?})",
        s.ok,
        s.failed,
        s.problems.len(),
        s.device_limits.len(),
        s.device_limits.first()
    );
    assert!(
        s.ok > calls / 10,
        "too few calls succeeded to mean anything: {}",
        s.ok
    );
    let shown: Vec<_> = s.problems.iter().take(40).cloned().collect();
    assert!(
        s.problems.is_empty(),
        "{} problems, the first {}:\n{}",
        s.problems.len(),
        shown.len(),
        shown.join("\n")
    );
}

/// Requests no memory can hold are errors, not an abort (Rust's allocation failure) or the
/// kernel killed mid-fill (Linux's OOM killer): the session and its variables live on.
#[test]
fn impossible_sizes_are_errors() {
    let cpu = Device::Cpu;
    let checks: Vec<(&str, Result<Tensor>)> = vec![
        // 2^80 elements: the product overflows a usize.
        ("zeros 2^40 x 2^40", Tensor::zeros([1 << 40, 1 << 40], cpu)),
        (
            "full_dtype 2^40 x 2^40",
            Tensor::full_dtype([1 << 40, 1 << 40], 1.0, DType::U8, cpu),
        ),
        ("rand 2^33 x 2^33", Tensor::rand([1 << 33, 1 << 33], cpu)),
        // Fits a usize, not any machine: 2^50 floats.
        ("zeros 2^50", Tensor::zeros([1 << 25, 1 << 25], cpu)),
        (
            "ones_dtype f64 2^50",
            Tensor::ones_dtype([1 << 50], DType::F64, cpu),
        ),
        ("randn 2^50", Tensor::randn([1 << 50], cpu)),
        (
            "arange 7e12 values",
            Tensor::arange_step(0.0, 70000.0, 1e-8, cpu),
        ),
        (
            "arange to infinity",
            Tensor::arange_step(0.0, f64::INFINITY, 1.0, cpu),
        ),
        (
            "from_vec into 2^40 x 2^40",
            Tensor::from_vec(vec![1f32], [1 << 40, 1 << 40], cpu),
        ),
    ];
    for (what, r) in checks {
        match r {
            Err(e) => {
                let msg = e.to_string();
                assert!(
                    msg.contains("out of memory on cpu")
                        || msg.contains("elements than any memory")
                        || msg.contains("arange: cannot go"),
                    "{what}: {msg}"
                );
            }
            Ok(t) => panic!("{what}: made a tensor of shape {:?}", t.shape()),
        }
    }
    // Views may be huge (stride 0 costs nothing), but not past a usize; their copies are
    // refused, as are broadcast results and matrix products of that size.
    let one = Tensor::ones([1, 1], cpu).unwrap();
    assert!(one.expand([1 << 40, 1 << 40]).is_err());
    let big = one.expand([1 << 30, 1 << 30]).unwrap();
    assert_eq!(big.shape(), [1 << 30, 1 << 30]);
    let e = big.contiguous().unwrap_err().to_string();
    assert!(e.contains("out of memory on cpu"), "{e}");
    // Reading one back is a new host buffer too: refused before any copy is made.
    let e = big.to_vec::<f32>().unwrap_err().to_string();
    assert!(e.contains("out of memory on cpu"), "{e}");
    let e = big.to_f64_vec().unwrap_err().to_string();
    assert!(e.contains("out of memory on cpu"), "{e}");
    let col = Tensor::ones([1 << 20, 1], cpu).unwrap();
    let row = Tensor::ones([1, 1 << 20], cpu).unwrap();
    let e = col.add(&row).unwrap_err().to_string();
    assert!(e.contains("out of memory on cpu"), "{e}");
    let e = col.lt(&row).unwrap_err().to_string();
    assert!(e.contains("out of memory on cpu"), "{e}");
    let e = col.matmul(&row).unwrap_err().to_string();
    assert!(e.contains("out of memory on cpu"), "{e}");
    // And the session goes on: ordinary work still runs.
    assert_eq!(col.sum().unwrap().item::<f32>().unwrap(), (1 << 20) as f32);
}

/// The GPU sweep's bookkeeping, checked where there is no GPU: comparing the CPU with itself
/// finds nothing (the pools stay alike, the arguments and dropout masks are the same), and
/// the comparison does see a wrong element, a wrong dtype and a NaN.
#[test]
fn the_comparison_finds_only_real_differences() {
    let s = sweep(7, 3000, Some(Device::Cpu));
    assert!(s.ok > 300, "{}", s.ok);
    assert!(s.problems.is_empty(), "{}", s.problems.join("\n"));
    let x = Tensor::from_vec(vec![1.0f32, 2.0, f32::NAN], 3, Device::Cpu).unwrap();
    assert!(differs(&x, &x.deep_clone().unwrap(), 0.0).is_none());
    let y = Tensor::from_vec(vec![1.0f32, 2.1, f32::NAN], 3, Device::Cpu).unwrap();
    assert!(differs(&x, &y, 0.0).unwrap().contains("element 1"));
    assert!(differs(&x, &x.to_dtype(DType::F64).unwrap(), 0.0).is_some());
    let z = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], 3, Device::Cpu).unwrap();
    assert!(differs(&x, &z, 0.0).unwrap().contains("element 2"));
}
