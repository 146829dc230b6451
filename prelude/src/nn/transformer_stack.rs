//! torch's `nn.TransformerEncoder`, `nn.TransformerDecoder` and `nn.Transformer`: stacks of
//! the encoder and decoder layers, each layer a copy of the first (torch deep-copies the
//! layer it is given, so they all start from the same weights), with an optional final
//! `LayerNorm`, under torch's names (`layers.0.self_attn.in_proj_weight`, `norm.weight`,
//! `encoder.layers.1...`, `decoder.norm.bias`).

use super::init::xavier_uniform_;
use super::transformer::prefixed;
use super::transformer_decoder::{TransformerDecoderLayer, TransformerMasks};
use super::{LayerNorm, Module, Parameter, TransformerEncoderLayer};
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use crate::Device;

/// `layers` as copies of the first: torch's `_get_clones` deep-copies one layer.
fn same_start(layers: &[&dyn Module]) -> Result<()> {
    if let Some((first, rest)) = layers.split_first() {
        let from = first.named_parameters();
        for layer in rest {
            for ((_, dst), (_, src)) in layer.named_parameters().iter().zip(&from) {
                dst.set_data(src.tensor().detach().deep_clone()?)?;
            }
        }
    }
    Ok(())
}

/// The parameters of `layers` as `layers.{i}.*`, then the norm's as `norm.*`.
fn stack_names(layers: &[&dyn Module], norm: Option<&LayerNorm>) -> Vec<(String, Parameter)> {
    let names: Vec<String> = (0..layers.len()).map(|i| format!("layers.{i}")).collect();
    let mut parts: Vec<(&str, &dyn Module)> = names
        .iter()
        .map(String::as_str)
        .zip(layers.iter().copied())
        .collect();
    if let Some(n) = norm {
        parts.push(("norm", n));
    }
    prefixed(&parts)
}

fn stack_describe(name: &str, layers: &[&dyn Module], norm: Option<&LayerNorm>) -> String {
    let first = layers.first().map_or("none".into(), |l| l.describe());
    let mut s = format!("{name}(\n  (layers): {} x {first}\n", layers.len());
    if let Some(n) = norm {
        s += &format!("  (norm): {}\n", n.describe());
    }
    s + ")"
}

/// A layer a [`TransformerStack`] can hold: what the stack is called, and what
/// `Module::forward` on the stack does (the decoder's needs a memory, so it refuses).
pub trait StackedLayer: Module + Sized {
    const STACK: &'static str;
    fn forward_alone(stack: &TransformerStack<Self>, x: &Tensor) -> Result<Tensor>;
}

/// torch's `nn.TransformerEncoder` and `nn.TransformerDecoder` (`num_layers` copies of one
/// layer, an optional final norm): one type for both, named by the aliases below.
pub struct TransformerStack<L> {
    pub layers: Vec<L>,
    pub norm: Option<LayerNorm>,
}

/// torch's `nn.TransformerEncoder(encoder_layer, num_layers, norm)`: `make` builds one layer
/// (`|| TransformerEncoderLayer::new(8, 2).dim_feedforward(16)`), and every layer starts as
/// a copy of the first, as torch's.
pub type TransformerEncoder = TransformerStack<TransformerEncoderLayer>;

/// torch's `nn.TransformerDecoder(decoder_layer, num_layers, norm)`: as
/// [`TransformerEncoder`], of decoder layers.
pub type TransformerDecoder = TransformerStack<TransformerDecoderLayer>;

impl<L: StackedLayer> TransformerStack<L> {
    pub fn new(make: impl Fn() -> L, num_layers: usize) -> TransformerStack<L> {
        let stack = TransformerStack {
            layers: (0..num_layers).map(|_| make()).collect(),
            norm: None,
        };
        same_start(&stack.refs()).expect("CPU float32 parameters copy");
        stack
    }

    /// A `LayerNorm` after the last layer (torch's `norm=`).
    pub fn norm(mut self, norm: LayerNorm) -> TransformerStack<L> {
        self.norm = Some(norm);
        self
    }

    /// `step` through every layer, then the final norm.
    fn run(&self, x: &Tensor, step: impl Fn(&L, &Tensor) -> Result<Tensor>) -> Result<Tensor> {
        let mut x = x.clone();
        for layer in &self.layers {
            x = step(layer, &x)?;
        }
        match &self.norm {
            Some(n) => n.forward(&x),
            None => Ok(x),
        }
    }

    fn refs(&self) -> Vec<&dyn Module> {
        self.layers.iter().map(|l| l as &dyn Module).collect()
    }
}

impl TransformerStack<TransformerEncoderLayer> {
    /// torch's `encoder(src, mask, src_key_padding_mask)`.
    pub fn forward_with(
        &self,
        src: &Tensor,
        mask: Option<&Tensor>,
        src_key_padding_mask: Option<&Tensor>,
    ) -> Result<Tensor> {
        self.run(src, |l, x| {
            l.forward_with_masks(x, mask, src_key_padding_mask)
        })
    }
}

impl TransformerStack<TransformerDecoderLayer> {
    /// torch's `decoder(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
    /// memory_key_padding_mask)`.
    pub fn forward_with(
        &self,
        tgt: &Tensor,
        memory: &Tensor,
        masks: &TransformerMasks,
    ) -> Result<Tensor> {
        self.run(tgt, |l, x| l.forward_with(x, memory, masks))
    }
}

impl StackedLayer for TransformerEncoderLayer {
    const STACK: &'static str = "TransformerEncoder";
    fn forward_alone(stack: &TransformerEncoder, x: &Tensor) -> Result<Tensor> {
        stack.forward_with(x, None, None)
    }
}

impl StackedLayer for TransformerDecoderLayer {
    const STACK: &'static str = "TransformerDecoder";
    /// A decoder needs the encoder's output too: this refuses, naming `forward_with`.
    fn forward_alone(_stack: &TransformerDecoder, _x: &Tensor) -> Result<Tensor> {
        Err(Error::Invalid(
            "TransformerDecoder takes (tgt, memory): use forward_with(tgt, memory, masks)".into(),
        ))
    }
}

impl<L: StackedLayer> Module for TransformerStack<L> {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        L::forward_alone(self, x)
    }
    fn parameters(&self) -> Vec<Parameter> {
        self.named_parameters()
            .into_iter()
            .map(|(_, p)| p)
            .collect()
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        stack_names(&self.refs(), self.norm.as_ref())
    }
    fn set_training(&mut self, training: bool) {
        for l in &mut self.layers {
            l.set_training(training);
        }
    }
    fn describe(&self) -> String {
        stack_describe(L::STACK, &self.refs(), self.norm.as_ref())
    }
}

/// torch's `nn.Transformer` arguments, with its defaults (`..Default::default()`).
#[derive(Clone, Debug, PartialEq)]
pub struct TransformerConfig {
    pub d_model: usize,
    pub nhead: usize,
    pub num_encoder_layers: usize,
    pub num_decoder_layers: usize,
    pub dim_feedforward: usize,
    pub dropout: f64,
    /// `"relu"` or `"gelu"`.
    pub activation: String,
    pub batch_first: bool,
    pub norm_first: bool,
}

impl Default for TransformerConfig {
    fn default() -> Self {
        TransformerConfig {
            d_model: 512,
            nhead: 8,
            num_encoder_layers: 6,
            num_decoder_layers: 6,
            dim_feedforward: 2048,
            dropout: 0.1,
            activation: "relu".into(),
            batch_first: false,
            norm_first: false,
        }
    }
}

/// torch's `nn.Transformer`: an encoder and a decoder, each with a final `LayerNorm`, every
/// weight matrix then drawn Xavier-uniform, as torch's `_reset_parameters`.
pub struct Transformer {
    pub encoder: TransformerEncoder,
    pub decoder: TransformerDecoder,
    config: TransformerConfig,
}

impl Transformer {
    pub fn new(config: TransformerConfig) -> Transformer {
        let c = &config;
        let encoder = TransformerEncoder::new(
            || {
                TransformerEncoderLayer::new(c.d_model, c.nhead)
                    .dim_feedforward(c.dim_feedforward)
                    .dropout(c.dropout)
                    .activation(&c.activation)
                    .batch_first(c.batch_first)
                    .norm_first(c.norm_first)
            },
            c.num_encoder_layers,
        )
        .norm(LayerNorm::new([c.d_model]));
        let decoder = TransformerDecoder::new(
            || {
                TransformerDecoderLayer::new(c.d_model, c.nhead)
                    .dim_feedforward(c.dim_feedforward)
                    .dropout(c.dropout)
                    .activation(&c.activation)
                    .batch_first(c.batch_first)
                    .norm_first(c.norm_first)
            },
            c.num_decoder_layers,
        )
        .norm(LayerNorm::new([c.d_model]));
        let t = Transformer {
            encoder,
            decoder,
            config,
        };
        for (_, p) in t.named_parameters() {
            if p.shape().len() > 1 {
                xavier_uniform_(&p, 1.0).expect("a matrix has fans");
            }
        }
        t
    }

    /// torch's `Transformer.generate_square_subsequent_mask(sz)`: `[sz, sz]` float32, -inf
    /// above the diagonal and 0 elsewhere, so position `i` attends only to positions `<= i`.
    pub fn generate_square_subsequent_mask(sz: usize, device: Device) -> Result<Tensor> {
        Tensor::full([sz, sz], f32::NEG_INFINITY, device)?.triu(1)
    }

    /// torch's `transformer(src, tgt, src_mask, tgt_mask, memory_mask, src_key_padding_mask,
    /// tgt_key_padding_mask, memory_key_padding_mask)`: the encoder's output on `src` is the
    /// decoder's memory.
    pub fn forward_with(
        &self,
        src: &Tensor,
        tgt: &Tensor,
        masks: &TransformerMasks,
    ) -> Result<Tensor> {
        let batched = src.rank() == 3;
        let batch = |t: &Tensor| {
            let at = if self.config.batch_first { 0 } else { 1 };
            t.shape().get(at).copied()
        };
        if batched && batch(src) != batch(tgt) {
            return Err(Error::BadShape(format!(
                "{}: the batch number of src and tgt must be equal, got shapes {:?} and {:?}",
                self.describe_line(),
                src.shape(),
                tgt.shape()
            )));
        }
        let d = self.config.d_model;
        if src.shape().last() != Some(&d) || tgt.shape().last() != Some(&d) {
            return Err(Error::BadShape(format!(
                "{}: the feature number of src and tgt must be d_model ({d}), got shapes {:?} \
                 and {:?}",
                self.describe_line(),
                src.shape(),
                tgt.shape()
            )));
        }
        let memory = self
            .encoder
            .forward_with(src, masks.src_mask, masks.src_key_padding_mask)?;
        self.decoder.forward_with(tgt, &memory, masks)
    }

    fn describe_line(&self) -> String {
        let c = &self.config;
        format!(
            "Transformer(d_model={}, nhead={}, num_encoder_layers={}, num_decoder_layers={})",
            c.d_model, c.nhead, c.num_encoder_layers, c.num_decoder_layers
        )
    }
}

impl Module for Transformer {
    /// A transformer takes a source and a target: this refuses, naming `forward_with`.
    fn forward(&self, _x: &Tensor) -> Result<Tensor> {
        Err(Error::Invalid(format!(
            "{}: takes (src, tgt): use forward_with(src, tgt, masks)",
            self.describe_line()
        )))
    }
    fn parameters(&self) -> Vec<Parameter> {
        self.named_parameters()
            .into_iter()
            .map(|(_, p)| p)
            .collect()
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        prefixed(&[("encoder", &self.encoder), ("decoder", &self.decoder)])
    }
    fn set_training(&mut self, training: bool) {
        self.encoder.set_training(training);
        self.decoder.set_training(training);
    }
    fn describe(&self) -> String {
        let inner = |m: &dyn Module| m.describe().replace('\n', "\n  ");
        format!(
            "Transformer(\n  (encoder): {}\n  (decoder): {}\n)",
            inner(&self.encoder),
            inner(&self.decoder)
        )
    }
}
