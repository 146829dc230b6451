//! nn::utils::rnn: padding and packing batches of sequences of different lengths, and the
//! recurrent layers on a packed batch: each sequence's final state is the one it reaches
//! alone (values against torch: bench/torch_parity.py's packpad, padseq and *_packed cases).

use gpulab::nn::utils::rnn;
use gpulab::nn::{self, Module};
use gpulab::{fork_rng, DType, Device, Tensor};

const CPU: Device = Device::Cpu;

fn ramp(shape: &[usize], k: usize) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| ((i * k) % 13) as f32 / 5.0 - 1.2).collect();
    Tensor::from_vec(v, shape.to_vec(), CPU).unwrap()
}

fn values(t: &Tensor) -> Vec<f32> {
    t.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap()
}

fn close(a: &[f32], b: &[f32], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < 1e-5, "{what}: {a:?} vs {b:?}");
    }
}

fn err<T>(r: gpulab::error::Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn pad_sequence_pads_to_the_longest() {
    let a = Tensor::from_vec(vec![1.0f32, 2.0], (2, 1), CPU).unwrap();
    let b = Tensor::from_vec(vec![3.0f32, 4.0, 5.0], (3, 1), CPU).unwrap();
    let p = rnn::pad_sequence(&[a.clone(), b.clone()], false, 0.0, "right").unwrap();
    assert_eq!(p.shape(), [3, 2, 1]);
    assert_eq!(values(&p), [1.0, 3.0, 2.0, 4.0, 0.0, 5.0]);
    let p = rnn::pad_sequence(&[a.clone(), b.clone()], true, -1.0, "left").unwrap();
    assert_eq!(p.shape(), [2, 3, 1]);
    assert_eq!(values(&p), [-1.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    let back = rnn::unpad_sequence(&p.narrow(1, 0, 3).unwrap(), &[3, 3], true).unwrap();
    assert_eq!(values(&back[1]), [3.0, 4.0, 5.0]);
    assert!(err(rnn::pad_sequence(&[], false, 0.0, "right")).contains("empty list"));
    let e = err(rnn::pad_sequence(
        &[a, ramp(&[2, 2], 3)],
        false,
        0.0,
        "right",
    ));
    assert!(e.contains("sequence 1 has shape [2, 2]"), "{e}");
    let e = err(rnn::pad_sequence(
        &[b.to_dtype(DType::U8).unwrap()],
        false,
        -2.0,
        "right",
    ));
    assert!(e.contains("-2.0 cannot be converted to uint8"), "{e}");
}

#[test]
fn packing_keeps_each_step_of_each_sequence_once() {
    // Three sequences of lengths 2, 4, 3 in a padded [4, 3, 1] batch: x[t, b] = 10 b + t.
    let v: Vec<f32> = (0..4)
        .flat_map(|t| (0..3).map(move |b| (10 * b + t) as f32))
        .collect();
    let x = Tensor::from_vec(v, (4, 3, 1), CPU).unwrap();
    let p = rnn::pack_padded_sequence(&x, &[2, 4, 3], false, false).unwrap();
    // Longest first: sequences 1, 2, 0.
    assert_eq!(p.sizes().unwrap(), [3, 3, 2, 1]);
    assert_eq!(
        p.sorted_indices.as_ref().unwrap().to_vec::<i64>().unwrap(),
        [1, 2, 0]
    );
    assert_eq!(
        p.unsorted_indices
            .as_ref()
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        [2, 0, 1]
    );
    assert_eq!(
        values(&p.data),
        [10.0, 20.0, 0.0, 11.0, 21.0, 1.0, 12.0, 22.0, 13.0]
    );
    assert_eq!(p.lengths().unwrap(), [2, 4, 3]);
    let (padded, lengths) = rnn::pad_packed_sequence(&p, true, -1.0, Some(5)).unwrap();
    assert_eq!(padded.shape(), [3, 5, 1]);
    assert_eq!(lengths, [2, 4, 3]);
    assert_eq!(
        values(&padded),
        [0.0, 1.0, -1.0, -1.0, -1.0, 10.0, 11.0, 12.0, 13.0, -1.0, 20.0, 21.0, 22.0, -1.0, -1.0]
    );
    let seqs = rnn::unpack_sequence(&p).unwrap();
    assert_eq!(values(&seqs[2]), [20.0, 21.0, 22.0]);
    let again = rnn::pack_sequence(&seqs, false).unwrap();
    assert_eq!(values(&again.data), values(&p.data));
    // The errors name what is wrong.
    let e = err(rnn::pack_padded_sequence(&x, &[2, 4, 3], false, true));
    assert!(
        e.contains("decreasing order") && e.contains("enforce_sorted=false"),
        "{e}"
    );
    let e = err(rnn::pack_padded_sequence(&x, &[4, 0, 3], false, false));
    assert!(
        e.contains("between 1 and the padded length 4, got 0"),
        "{e}"
    );
    let e = err(rnn::pack_padded_sequence(&x, &[4, 3], false, false));
    assert!(e.contains("2 lengths for a batch of 3 sequences"), "{e}");
    let e = err(rnn::pad_packed_sequence(&p, false, 0.0, Some(3)));
    assert!(e.contains("total_length must be at least"), "{e}");
    // A hand-built PackedSequence is checked before use.
    let mut bad = p.clone();
    bad.sorted_indices = Some(Tensor::from_vec(vec![0i64, 0, 2], vec![3], CPU).unwrap());
    let e = err(rnn::pad_packed_sequence(&bad, false, 0.0, None));
    assert!(
        e.contains("sorted_indices must hold each of 0..3 once"),
        "{e}"
    );
    bad.batch_sizes = Tensor::from_vec(vec![2i64, 3], vec![2], CPU).unwrap();
    let e = err(rnn::unpack_sequence(&bad));
    assert!(e.contains("must not increase"), "{e}");
}

#[test]
fn gradients_pass_through_packing() {
    let x = ramp(&[4, 3, 2], 7).requires_grad_(true).unwrap();
    let p = rnn::pack_padded_sequence(&x, &[4, 1, 2], false, false).unwrap();
    let (padded, _) = rnn::pad_packed_sequence(&p, false, 0.0, None).unwrap();
    padded.sum().unwrap().backward().unwrap();
    let g = values(&x.grad().unwrap());
    // 1 at every real step, 0 at the padding.
    for t in 0..4 {
        for (b, len) in [4, 1, 2].into_iter().enumerate() {
            let want = if t < len { 1.0 } else { 0.0 };
            assert_eq!(g[(t * 3 + b) * 2], want, "t {t} b {b}");
        }
    }
}

#[test]
fn a_packed_batch_gives_each_sequence_its_own_final_state() {
    fork_rng(11, || {
        for bidirectional in [false, true] {
            let lstm = nn::LSTM::new(2, 3)
                .num_layers(2)
                .bidirectional(bidirectional);
            let lengths = [3, 5, 1];
            let x = ramp(&[5, 3, 2], 7);
            let p = rnn::pack_padded_sequence(&x, &lengths, false, false).unwrap();
            let r = lstm.forward_packed(&p, None, None).unwrap();
            let (out, _) = rnn::pad_packed_sequence(&r.output, false, 0.0, None).unwrap();
            let dirs = if bidirectional { 2 } else { 1 };
            assert_eq!(r.h_n.shape(), [2 * dirs, 3, 3]);
            assert_eq!(out.shape(), [5, 3, 3 * dirs]);
            for (b, &len) in lengths.iter().enumerate() {
                // Sequence b alone, unbatched, cut to its length.
                let alone = x.select(1, b as isize).unwrap().narrow(0, 0, len).unwrap();
                let want = lstm.forward_with(&alone, None, None).unwrap();
                let got_h = r.h_n.select(1, b as isize).unwrap();
                close(&values(&got_h), &values(&want.h_n), "h_n");
                let got_c = r.c_n.as_ref().unwrap().select(1, b as isize).unwrap();
                close(&values(&got_c), &values(want.c_n.as_ref().unwrap()), "c_n");
                let got_out = out
                    .select(1, b as isize)
                    .unwrap()
                    .narrow(0, 0, len)
                    .unwrap();
                close(&values(&got_out), &values(&want.output), "output");
                // Past its end the padded output is zeros.
                if len < 5 {
                    let rest = out
                        .select(1, b as isize)
                        .unwrap()
                        .narrow(0, len, 5 - len)
                        .unwrap();
                    assert!(values(&rest).iter().all(|&v| v == 0.0));
                }
            }
        }
        let gru = nn::GRU::new(2, 3);
        let x = ramp(&[4, 2, 2], 5);
        let p = rnn::pack_padded_sequence(&x, &[4, 2], false, true).unwrap();
        let e = err(gru.forward_packed(&p, Some(&ramp(&[1, 3, 3], 3)), None));
        assert!(e.contains("h_0 must have shape [1, 2, 3]"), "{e}");
    });
}

#[test]
fn a_packed_batch_trains_a_sequence_classifier() {
    fork_rng(5, || {
        // Whether a sequence's steps sum above zero, for sequences of lengths 2 to 6: the
        // padding must not count.
        let lstm = nn::LSTM::new(1, 8);
        let head = nn::Linear::new(8, 1);
        let mut params = lstm.parameters();
        params.extend(head.parameters());
        let mut opt = gpulab::optim::Adam::new(params, 0.05);
        let lengths = [6, 2, 5, 3, 4, 2, 6, 3];
        let x = ramp(&[6, 8, 1], 7);
        let target: Vec<f32> = lengths
            .iter()
            .enumerate()
            .map(|(b, &l)| {
                let s: f32 = (0..l).map(|t| values(&x)[t * 8 + b]).sum();
                (s > 0.0) as u8 as f32
            })
            .collect();
        let target = Tensor::from_vec(target, (8, 1), CPU).unwrap();
        let p = rnn::pack_padded_sequence(&x, &lengths, false, false).unwrap();
        let mut last = f32::MAX;
        let mut first = None;
        for _ in 0..150 {
            opt.zero_grad();
            let r = lstm.forward_packed(&p, None, None).unwrap();
            let logits = head.forward(&r.h_n.select(0, 0).unwrap()).unwrap();
            let loss = gpulab::F::binary_cross_entropy_with_logits(&logits, &target).unwrap();
            loss.backward().unwrap();
            opt.step().unwrap();
            last = loss.item::<f32>().unwrap();
            first.get_or_insert(last);
        }
        assert!(
            last < 0.1 && last < first.unwrap() / 4.0,
            "loss {first:?} -> {last}"
        );
    });
}
