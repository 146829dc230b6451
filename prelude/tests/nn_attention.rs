//! Attention: what a causal or padding mask hides really does not reach the output, weights
//! are distributions, a query that may see nothing gets zeros (torch's safe softmax), torch's
//! parameter names, and errors that name the mismatch. Values and gradients against torch:
//! `bench/torch_parity.py`'s `attn` cases.

use gpulab::nn::{Module, MultiheadAttention};
use gpulab::{fork_rng, DType, Device, Tensor, F};

const CPU: Device = Device::Cpu;

fn close(a: &Tensor, b: &Tensor) -> bool {
    let (a, b) = (a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
    a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-6)
}

#[test]
fn masks_hide_what_they_say() {
    fork_rng(1, || {
        let (q, k, v) = (
            Tensor::randn((2, 4, 8), CPU).unwrap(),
            Tensor::randn((2, 4, 8), CPU).unwrap(),
            Tensor::randn((2, 4, 8), CPU).unwrap(),
        );
        let causal = |v: &Tensor| F::scaled_dot_product_attention(&q, &k, v, None, 0.0, true, None);
        // Changing the last step's value changes only the last step's output.
        let v2 = Tensor::cat(
            &[
                v.narrow(1, 0, 3).unwrap(),
                Tensor::ones((2, 1, 8), CPU).unwrap(),
            ],
            1,
        )
        .unwrap();
        let (a, b) = (causal(&v).unwrap(), causal(&v2).unwrap());
        assert!(close(
            &a.narrow(1, 0, 3).unwrap(),
            &b.narrow(1, 0, 3).unwrap()
        ));
        assert!(!close(
            &a.narrow(1, 3, 1).unwrap(),
            &b.narrow(1, 3, 1).unwrap()
        ));
        // The same with an explicit bool mask (true = may attend).
        let tril = Tensor::ones_dtype((4, 4), DType::Bool, CPU)
            .unwrap()
            .tril(0)
            .unwrap();
        let masked = F::scaled_dot_product_attention(&q, &k, &v, Some(&tril), 0.0, false, None);
        assert!(close(&masked.unwrap(), &a));
        // A query that may attend to nothing gets zeros, not NaN.
        let none = Tensor::zeros_dtype((4, 4), DType::Bool, CPU).unwrap();
        let z = F::scaled_dot_product_attention(&q, &k, &v, Some(&none), 0.0, false, None).unwrap();
        assert!(z.to_vec::<f32>().unwrap().iter().all(|x| *x == 0.0));
    })
}

#[test]
fn multi_head_attention_has_torchs_parameters_and_respects_padding() {
    fork_rng(2, || {
        let mha = MultiheadAttention::new(8, 2).batch_first(true);
        assert_eq!(
            mha.describe(),
            "MultiheadAttention(embed_dim=8, num_heads=2, batch_first=True)"
        );
        let named: Vec<(String, Vec<usize>)> = mha
            .named_parameters()
            .into_iter()
            .map(|(n, p)| (n, p.shape()))
            .collect();
        assert_eq!(
            named,
            [
                ("in_proj_weight", vec![24, 8]),
                ("in_proj_bias", vec![24]),
                ("out_proj.weight", vec![8, 8]),
                ("out_proj.bias", vec![8]),
            ]
            .map(|(n, s)| (n.to_string(), s))
        );
        // torch's init: Xavier-uniform packed projection, zero biases.
        let bound = (6.0f32 / 32.0).sqrt();
        let w = mha.in_proj_weight.tensor().to_vec::<f32>().unwrap();
        assert!(w.iter().all(|v| v.abs() <= bound) && w.iter().any(|v| v.abs() > bound / 2.0));
        assert!(mha
            .in_proj_bias
            .as_ref()
            .unwrap()
            .tensor()
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .all(|v| *v == 0.0));

        let x = Tensor::randn((3, 5, 8), CPU).unwrap();
        assert_eq!(mha.forward(&x).unwrap().shape(), &[3, 5, 8]);
        // The last two keys of every sequence are padding: what they hold does not matter.
        let pad: Vec<bool> = (0..15).map(|i| i % 5 >= 3).collect();
        let pad = Tensor::from_vec(pad, (3, 5), CPU).unwrap();
        let other = Tensor::cat(
            &[
                x.narrow(1, 0, 3).unwrap(),
                Tensor::randn((3, 2, 8), CPU).unwrap(),
            ],
            1,
        )
        .unwrap();
        let a = mha.attend(&x, &x, &x, Some(&pad), true, None).unwrap();
        let b = mha
            .attend(&x, &other, &other, Some(&pad), true, None)
            .unwrap();
        assert!(close(&a.output, &b.output));
        let weights = a.weights.unwrap();
        assert_eq!(weights.shape(), &[3, 5, 5]);
        let w = weights.to_vec::<f32>().unwrap();
        for row in w.chunks(5) {
            assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5);
            assert!(
                row[3] == 0.0 && row[4] == 0.0,
                "padding got weight: {row:?}"
            );
        }
        // Unbatched [L, E] input works too.
        let single = MultiheadAttention::new(8, 4);
        assert_eq!(
            single
                .forward(&Tensor::ones((6, 8), CPU).unwrap())
                .unwrap()
                .shape(),
            &[6, 8]
        );
    })
}

#[test]
fn mismatches_are_named() {
    let err = |r: Result<Tensor, gpulab::Error>| r.unwrap_err().to_string();
    let q = Tensor::ones((2, 3, 4), CPU).unwrap();
    let k = Tensor::ones((2, 5, 6), CPU).unwrap();
    let e = err(F::scaled_dot_product_attention(
        &q, &k, &k, None, 0.0, false, None,
    ));
    assert!(e.contains("[2, 3, 4]") && e.contains("[2, 5, 6]"), "{e}");
    let m = Tensor::ones_dtype((3, 3), DType::Bool, CPU).unwrap();
    let e = err(F::scaled_dot_product_attention(
        &q,
        &q,
        &q,
        Some(&m),
        0.0,
        true,
        None,
    ));
    assert!(e.contains("either attn_mask or is_causal"), "{e}");
    let e = err(MultiheadAttention::new(6, 4).forward(&Tensor::ones((2, 3, 6), CPU).unwrap()));
    assert!(
        e.contains("embed_dim (6) must be divisible by num_heads (4)"),
        "{e}"
    );
    let e = err(MultiheadAttention::new(8, 2).forward(&Tensor::ones((2, 3, 6), CPU).unwrap()));
    assert!(e.contains("E = 8") && e.contains("[2, 3, 6]"), "{e}");
}

/// An encoder layer: torch's parameter names and shapes, padding that does not reach the
/// other positions, dropout only while training, and it learns (a task that needs looking
/// at every position: is the largest value of the sequence in its first half?).
#[test]
fn an_encoder_layer_is_torchs_and_learns() {
    use gpulab::nn::{self, TransformerEncoderLayer};
    fork_rng(4, || {
        let layer = TransformerEncoderLayer::new(8, 2)
            .dim_feedforward(16)
            .batch_first(true);
        let names: Vec<String> = layer
            .named_parameters()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(
            names,
            [
                "self_attn.in_proj_weight",
                "self_attn.in_proj_bias",
                "self_attn.out_proj.weight",
                "self_attn.out_proj.bias",
                "linear1.weight",
                "linear1.bias",
                "linear2.weight",
                "linear2.bias",
                "norm1.weight",
                "norm1.bias",
                "norm2.weight",
                "norm2.bias",
            ]
        );
        assert_eq!(
            layer.describe(),
            "TransformerEncoderLayer(d_model=8, dim_feedforward=16, dropout=0.1, activation=relu)"
        );
        let mut layer = layer;
        let x = Tensor::randn((3, 5, 8), CPU).unwrap();
        // Training: dropout makes two passes differ; eval: the same.
        let (a, b) = (layer.forward(&x).unwrap(), layer.forward(&x).unwrap());
        assert!(!close(&a, &b));
        layer.eval();
        assert!(close(
            &layer.forward(&x).unwrap(),
            &layer.forward(&x).unwrap()
        ));
        // Padding at the last position does not reach the others.
        let pad: Vec<bool> = (0..15).map(|i| i % 5 == 4).collect();
        let pad = Tensor::from_vec(pad, (3, 5), CPU).unwrap();
        let other = Tensor::cat(
            &[
                x.narrow(1, 0, 4).unwrap(),
                Tensor::randn((3, 1, 8), CPU).unwrap(),
            ],
            1,
        )
        .unwrap();
        let (p, q) = (
            layer.forward_masked(&x, Some(&pad)).unwrap(),
            layer.forward_masked(&other, Some(&pad)).unwrap(),
        );
        assert!(close(
            &p.narrow(1, 0, 4).unwrap(),
            &q.narrow(1, 0, 4).unwrap()
        ));

        // Learning: 64 sequences of 6 values (as 8 features: the value, then zeros).
        let (n, len) = (64, 6);
        let vals = Tensor::randn((n, len), CPU).unwrap();
        let feats = Tensor::cat(
            &[
                vals.unsqueeze(2).unwrap(),
                Tensor::zeros((n, len, 7), CPU).unwrap(),
            ],
            2,
        )
        .unwrap();
        let y = vals
            .narrow(1, 0, 3)
            .unwrap()
            .max_dim(1)
            .unwrap()
            .gt(&vals.narrow(1, 3, 3).unwrap().max_dim(1).unwrap())
            .unwrap()
            .to_dtype(DType::I64)
            .unwrap();
        let enc = TransformerEncoderLayer::new(8, 2)
            .dim_feedforward(32)
            .dropout(0.0)
            .batch_first(true);
        let head = nn::Linear::new(8 * len, 2);
        let mut params = enc.parameters();
        params.extend(head.parameters());
        let mut opt = gpulab::optim::Adam::new(params, 0.01);
        let logits = || {
            head.forward(&nn::Flatten.forward(&enc.forward(&feats).unwrap()).unwrap())
                .unwrap()
        };
        for _ in 0..120 {
            opt.zero_grad();
            F::cross_entropy(&logits(), &y).unwrap().backward().unwrap();
            opt.step().unwrap();
        }
        let right: i64 = logits()
            .argmax_dim(1)
            .unwrap()
            .eq(&y)
            .unwrap()
            .to_dtype(DType::I64)
            .unwrap()
            .sum()
            .unwrap()
            .item()
            .unwrap();
        assert!(right >= 58, "{right}/64");
    })
}
