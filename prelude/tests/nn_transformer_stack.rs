//! TransformerDecoderLayer, TransformerEncoder/Decoder and Transformer: torch's parameter
//! names, layers that start as copies of the first, the causal mask, and bad input named.
//! Values and gradients against torch itself: `bench/torch_parity.py`'s `tfm` cases.

use gpulab::nn::{
    LayerNorm, Module, Transformer, TransformerConfig, TransformerDecoder, TransformerDecoderLayer,
    TransformerEncoder, TransformerEncoderLayer, TransformerMasks,
};
use gpulab::{Device, Tensor};

const CPU: Device = Device::Cpu;

fn small() -> TransformerConfig {
    TransformerConfig {
        d_model: 8,
        nhead: 2,
        num_encoder_layers: 2,
        num_decoder_layers: 1,
        dim_feedforward: 16,
        dropout: 0.0,
        ..Default::default()
    }
}

#[test]
fn names_are_torchs_and_layers_start_alike() {
    let dec = TransformerDecoderLayer::new(8, 2).dim_feedforward(16);
    let names: Vec<String> = dec.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names.len(), 18);
    assert_eq!(names[4], "multihead_attn.in_proj_weight");
    assert_eq!(names[17], "norm3.bias");
    let enc = TransformerEncoder::new(|| TransformerEncoderLayer::new(8, 2).dim_feedforward(16), 2)
        .norm(LayerNorm::new([8]));
    let named = enc.named_parameters();
    assert_eq!(named[0].0, "layers.0.self_attn.in_proj_weight");
    assert_eq!(named.last().unwrap().0, "norm.bias");
    // torch deep-copies the one layer it is given: both layers start from the same weights,
    // in storage of their own.
    let w = |i: usize| {
        named
            .iter()
            .find(|(n, _)| *n == format!("layers.{i}.linear1.weight"))
            .unwrap()
            .1
            .tensor()
    };
    assert_eq!(w(0).to_vec::<f32>().unwrap(), w(1).to_vec::<f32>().unwrap());
    gpulab::no_grad(|| w(1).fill_(0.0)).unwrap();
    assert_ne!(w(0).to_vec::<f32>().unwrap(), w(1).to_vec::<f32>().unwrap());
    let t = Transformer::new(small());
    let names: Vec<String> = t.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert!(names.contains(&"encoder.layers.1.norm2.weight".to_string()));
    assert!(names.contains(&"decoder.layers.0.multihead_attn.out_proj.bias".to_string()));
    assert_eq!(names.last().unwrap(), "decoder.norm.bias");
    assert!(t
        .describe()
        .starts_with("Transformer(\n  (encoder): TransformerEncoder("));
}

#[test]
fn the_causal_mask_hides_the_future() {
    let m = Transformer::generate_square_subsequent_mask(3, CPU).unwrap();
    let v = m.to_vec::<f32>().unwrap();
    let inf = f32::NEG_INFINITY;
    assert_eq!(v, [0.0, inf, inf, 0.0, 0.0, inf, 0.0, 0.0, 0.0]);
    // With the mask, the first target position's output does not depend on the later ones.
    let t = Transformer::new(small());
    let src = Tensor::randn([4, 1, 8], CPU).unwrap();
    let tgt = Tensor::randn([3, 1, 8], CPU).unwrap();
    let masks = TransformerMasks {
        tgt_mask: Some(&m),
        ..Default::default()
    };
    let a = t.forward_with(&src, &tgt, &masks).unwrap();
    let changed = Tensor::cat(
        &[
            tgt.narrow(0, 0, 1).unwrap(),
            Tensor::randn([2, 1, 8], CPU).unwrap(),
        ],
        0,
    )
    .unwrap();
    let b = t.forward_with(&src, &changed, &masks).unwrap();
    assert_eq!(a.shape(), [3, 1, 8]);
    let first = |x: &Tensor| x.narrow(0, 0, 1).unwrap().to_vec::<f32>().unwrap();
    let (fa, fb) = (first(&a), first(&b));
    assert!(
        fa.iter().zip(&fb).all(|(p, q)| (p - q).abs() < 1e-5),
        "{fa:?} vs {fb:?}"
    );
    assert_ne!(
        a.narrow(0, 2, 1).unwrap().to_vec::<f32>().unwrap(),
        b.narrow(0, 2, 1).unwrap().to_vec::<f32>().unwrap()
    );
}

#[test]
fn bad_input_is_named() {
    let t = Transformer::new(small());
    let none = TransformerMasks::default();
    let src = Tensor::zeros([4, 2, 8], CPU).unwrap();
    let e = t
        .forward_with(&src, &Tensor::zeros([3, 3, 8], CPU).unwrap(), &none)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the batch number of src and tgt must be equal"),
        "{e}"
    );
    let e = t
        .forward_with(&src, &Tensor::zeros([3, 2, 6], CPU).unwrap(), &none)
        .unwrap_err()
        .to_string();
    assert!(e.contains("must be d_model (8)"), "{e}");
    let e = t.forward(&src).unwrap_err().to_string();
    assert!(e.contains("use forward_with(src, tgt, masks)"), "{e}");
    let dec = TransformerDecoder::new(|| TransformerDecoderLayer::new(8, 2), 1);
    let e = dec.forward(&src).unwrap_err().to_string();
    assert!(e.contains("use forward_with(tgt, memory, masks)"), "{e}");
    let e = TransformerDecoderLayer::new(8, 2)
        .activation("tanh")
        .forward_with(&src, &src, &none)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the activation must be \"relu\" or \"gelu\", got \"tanh\""),
        "{e}"
    );
}
