//! ctc_loss against a brute force over every alignment, its reductions and options, its
//! errors, and a tiny recogniser that learns a label sequence. (Its values and the gradients
//! through log_softmax are checked against torch by tests/test_torch_parity.py, its
//! gradient against finite differences by autograd_gradcheck.rs.)

use gpulab::nn::{self, Parameter, Reduction};
use gpulab::optim::Adam;
use gpulab::{DType, Device, Tensor, F};

const CPU: Device = Device::Cpu;

fn logits(shape: &[usize], salt: usize) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n)
        .map(|i| (((i * 7 + salt * 3) % 11) as f64 - 5.0) * 0.3)
        .collect();
    Tensor::from_vec(v, shape.to_vec(), CPU).unwrap()
}

/// A path's labels with repeats merged and blanks dropped, CTC's collapse.
fn collapse(path: &[usize], blank: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut prev = None;
    for &c in path {
        if Some(c) != prev && c != blank {
            out.push(c);
        }
        prev = Some(c);
    }
    out
}

/// -log of the summed probability of every path of `t` frames over `c` classes that
/// collapses to `target`: CTC's definition, enumerated.
fn brute_force(lp: &[f64], t: usize, c: usize, target: &[usize], blank: usize) -> f64 {
    let mut total = 0.0;
    let mut path = vec![0usize; t];
    for code in 0..c.pow(t as u32) {
        let mut k = code;
        for p in path.iter_mut() {
            *p = k % c;
            k /= c;
        }
        if collapse(&path, blank) == target {
            total += path
                .iter()
                .enumerate()
                .map(|(i, &cl)| lp[i * c + cl])
                .sum::<f64>()
                .exp();
        }
    }
    -total.ln()
}

/// Frames, classes, targets per sample, frames per sample, blank.
type Case = (usize, usize, Vec<Vec<usize>>, Vec<usize>, usize);

#[test]
fn ctc_loss_equals_the_sum_over_alignments() {
    let cases: Vec<Case> = vec![
        (4, 3, vec![vec![1, 2], vec![1, 1]], vec![4, 4], 0),
        (5, 3, vec![vec![2], vec![]], vec![5, 3], 0),
        (5, 4, vec![vec![1, 2, 1], vec![3, 3]], vec![5, 5], 0),
        (4, 3, vec![vec![0, 1], vec![1]], vec![4, 2], 2),
    ];
    for (t, c, targets, frames, blank) in cases {
        let n = targets.len();
        let lp = F::log_softmax(&logits(&[t, n, c], t + c), -1).unwrap();
        let s = targets.iter().map(Vec::len).max().unwrap();
        let mut padded = vec![0i64; n * s.max(1)];
        for (i, row) in targets.iter().enumerate() {
            for (j, &l) in row.iter().enumerate() {
                padded[i * s.max(1) + j] = l as i64;
            }
        }
        let tg = Tensor::from_vec(padded, vec![n, s.max(1)], CPU).unwrap();
        let lens: Vec<usize> = targets.iter().map(Vec::len).collect();
        let got = F::ctc_loss(&lp, &tg, &frames, &lens, blank, Reduction::None, false)
            .unwrap()
            .to_vec::<f64>()
            .unwrap();
        let all = lp.to_vec::<f64>().unwrap();
        for i in 0..n {
            // Sample i's frames, [frames[i], c].
            let mine: Vec<f64> = (0..frames[i])
                .flat_map(|f| (0..c).map(move |k| (f, k)))
                .map(|(f, k)| all[(f * n + i) * c + k])
                .collect();
            let want = brute_force(&mine, frames[i], c, &targets[i], blank);
            assert!(
                (got[i] - want).abs() < 1e-10 * want.abs().max(1.0),
                "case t {t} c {c} sample {i}: {} vs brute force {want}",
                got[i]
            );
        }
    }
}

#[test]
fn reductions_concatenated_targets_and_unbatched_input() {
    let lp = F::log_softmax(&logits(&[6, 2, 4], 1), -1).unwrap();
    let padded = Tensor::from_vec(vec![1i64, 2, 3, 0], vec![2, 2], CPU).unwrap();
    let flat = Tensor::from_vec(vec![1i64, 2, 3], vec![3], CPU).unwrap();
    let (il, tl) = ([6, 5], [2, 1]);
    let per = F::ctc_loss(&lp, &padded, &il, &tl, 0, Reduction::None, false).unwrap();
    let per_flat = F::ctc_loss(&lp, &flat, &il, &tl, 0, Reduction::None, false).unwrap();
    assert!(per.equal(&per_flat).unwrap());
    let v = per.to_vec::<f64>().unwrap();
    let sum = F::ctc_loss(&lp, &flat, &il, &tl, 0, Reduction::Sum, false).unwrap();
    assert!((sum.item::<f64>().unwrap() - (v[0] + v[1])).abs() < 1e-12);
    // Mean: each loss over its target length, then averaged (torch's rule).
    let mean = nn::CTCLoss::new().forward(&lp, &flat, &il, &tl).unwrap();
    let want = (v[0] / 2.0 + v[1] / 1.0) / 2.0;
    assert!((mean.item::<f64>().unwrap() - want).abs() < 1e-12);
    // Unbatched [T, C] with [S] targets is the batch of one.
    let one = lp.select(1, 0).unwrap();
    let tg = Tensor::from_vec(vec![1i64, 2], vec![2], CPU).unwrap();
    let alone = F::ctc_loss(&one, &tg, &[6], &[2], 0, Reduction::Sum, false).unwrap();
    assert_eq!(alone.rank(), 0);
    assert!((alone.item::<f64>().unwrap() - v[0]).abs() < 1e-12);
}

#[test]
fn unreachable_targets_are_infinite_or_zeroed() {
    let lp = F::log_softmax(&logits(&[4, 2, 3], 2), -1)
        .unwrap()
        .detach()
        .requires_grad_(true)
        .unwrap();
    // Two frames cannot hold the labels 1, 1 (a blank must come between them).
    let tg = Tensor::from_vec(vec![1i64, 1, 2, 0], vec![2, 2], CPU).unwrap();
    let per = F::ctc_loss(&lp, &tg, &[2, 4], &[2, 1], 0, Reduction::None, false).unwrap();
    let v = per.to_vec::<f64>().unwrap();
    assert!(v[0].is_infinite() && v[1].is_finite(), "{v:?}");
    let zeroed = nn::CTCLoss::new()
        .zero_infinity(true)
        .reduction(Reduction::Sum)
        .forward(&lp, &tg, &[2, 4], &[2, 1])
        .unwrap();
    assert!((zeroed.item::<f64>().unwrap() - v[1]).abs() < 1e-12);
    zeroed.backward().unwrap();
    let g = lp.grad().unwrap().to_vec::<f64>().unwrap();
    assert!(g.iter().all(|x| x.is_finite()), "{g:?}");
    // Sample 0's frames get no gradient from its zeroed loss.
    assert!((0..4).all(|f| (0..3).all(|k| g[(f * 2) * 3 + k] == 0.0)));
    // No frames: an empty target costs 0, any other is unreachable.
    let per = F::ctc_loss(&lp, &tg, &[0, 0], &[0, 1], 0, Reduction::None, false).unwrap();
    assert_eq!(per.to_vec::<f64>().unwrap(), [0.0, f64::INFINITY]);
}

#[test]
fn halves_are_computed_in_float32() {
    let lp = F::log_softmax(&logits(&[5, 1, 3], 3), -1).unwrap();
    let tg = Tensor::from_vec(vec![1i64, 2], vec![1, 2], CPU).unwrap();
    let exact = F::ctc_loss(&lp, &tg, &[5], &[2], 0, Reduction::Sum, false)
        .unwrap()
        .item::<f64>()
        .unwrap();
    for dt in [DType::F16, DType::BF16, DType::F32] {
        let got = F::ctc_loss(
            &lp.to_dtype(dt).unwrap(),
            &tg,
            &[5],
            &[2],
            0,
            Reduction::Sum,
            false,
        )
        .unwrap();
        assert_eq!(got.dtype(), dt);
        let tol = if dt == DType::F32 { 1e-5 } else { 2e-2 };
        let g = got.to_dtype(DType::F64).unwrap().item::<f64>().unwrap();
        assert!((g - exact).abs() < tol * exact, "{dt:?}: {g} vs {exact}");
    }
}

#[test]
fn bad_arguments_are_named() {
    let lp = F::log_softmax(&logits(&[4, 2, 3], 4), -1).unwrap();
    let tg = Tensor::from_vec(vec![1i64, 2, 2, 0], vec![2, 2], CPU).unwrap();
    let err = |r: gpulab::error::Result<Tensor>| r.unwrap_err().to_string();
    let none = Reduction::None;
    let e = err(F::ctc_loss(&lp, &tg, &[5, 4], &[2, 1], 0, none, false));
    assert!(
        e.contains("input length of 5") && e.contains("4 frames"),
        "{e}"
    );
    let e = err(F::ctc_loss(&lp, &tg, &[4], &[2, 1], 0, none, false));
    assert!(e.contains("one length per sample"), "{e}");
    let e = err(F::ctc_loss(&lp, &tg, &[4, 4], &[3, 1], 0, none, false));
    assert!(e.contains("target length of 3"), "{e}");
    let e = err(F::ctc_loss(&lp, &tg, &[4, 4], &[2, 1], 3, none, false));
    assert!(e.contains("blank (3)"), "{e}");
    let bad = Tensor::from_vec(vec![1i64, 7, 2, 0], vec![2, 2], CPU).unwrap();
    let e = err(F::ctc_loss(&lp, &bad, &[4, 4], &[2, 1], 0, none, false));
    assert!(e.contains("target label 7") && e.contains("3"), "{e}");
    let flat = Tensor::from_vec(vec![1i64, 2], vec![2], CPU).unwrap();
    let e = err(F::ctc_loss(&lp, &flat, &[4, 4], &[2, 1], 0, none, false));
    assert!(e.contains("3 in all"), "{e}");
    let e = err(F::ctc_loss(
        &lp.flatten().unwrap(),
        &tg,
        &[4],
        &[2],
        0,
        none,
        false,
    ));
    assert!(e.contains("[T, N, C] or [T, C]"), "{e}");
    let ints = Tensor::from_vec(vec![0i64; 24], vec![4, 2, 3], CPU).unwrap();
    let e = err(F::ctc_loss(&ints, &tg, &[4, 4], &[2, 1], 0, none, false));
    assert!(e.contains("floating-point"), "{e}");
}

/// Per-frame scores trained with the CTC loss learn to spell the target: the best path,
/// collapsed, is the label sequence (the way a speech or handwriting recogniser decodes).
#[test]
fn a_tiny_recogniser_learns_to_spell() {
    let scores = Parameter::new(logits(&[8, 1, 4], 5).to_dtype(DType::F32).unwrap()).unwrap();
    let tg = Tensor::from_vec(vec![3i64, 1, 1, 2], vec![1, 4], CPU).unwrap();
    let mut opt = Adam::new(vec![scores.clone()], 0.1);
    let loss_fn = nn::CTCLoss::new();
    let mut first = None;
    let mut last = 0.0;
    for _ in 0..150 {
        opt.zero_grad();
        let lp = F::log_softmax(&scores.tensor(), -1).unwrap();
        let loss = loss_fn.forward(&lp, &tg, &[8], &[4]).unwrap();
        last = loss.item::<f32>().unwrap();
        first.get_or_insert(last);
        loss.backward().unwrap();
        opt.step().unwrap();
    }
    assert!(last < first.unwrap() / 10.0, "loss {first:?} -> {last}");
    let best: Vec<usize> = scores
        .tensor()
        .argmax_dim(2)
        .unwrap()
        .flatten()
        .unwrap()
        .to_vec::<i64>()
        .unwrap()
        .into_iter()
        .map(|v| v as usize)
        .collect();
    assert_eq!(collapse(&best, 0), [3, 1, 1, 2], "best path {best:?}");
}
