//! torch's `nn.TransformerEncoderLayer`: self-attention and a feed-forward block, each with a
//! residual connection and layer norm (after, or before with `norm_first`), built from this
//! crate's `MultiheadAttention`, `Linear`, `LayerNorm` and dropout, under torch's parameter
//! names, so a torch `state_dict` loads. Stack several in a `Sequential` for an encoder.

use super::{functional, py_float, LayerNorm, Linear, Module, MultiheadAttention, Parameter};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// One encoder layer (torch's defaults: feed-forward width 2048, dropout 0.1, ReLU, layer
/// norm after each block, eps 1e-5). Input `[L, N, E]` (`[N, L, E]` with `batch_first`).
pub struct TransformerEncoderLayer {
    pub self_attn: MultiheadAttention,
    pub linear1: Linear,
    pub linear2: Linear,
    pub norm1: LayerNorm,
    pub norm2: LayerNorm,
    d_model: usize,
    dropout: f64,
    gelu: bool,
    /// An activation other than "relu" or "gelu" asked for: refused when the layer runs.
    bad_activation: Option<String>,
    norm_first: bool,
    training: bool,
}

impl TransformerEncoderLayer {
    /// Parameters drawn in torch's order: the attention, then `linear1`, `linear2`.
    pub fn new(d_model: usize, nhead: usize) -> TransformerEncoderLayer {
        TransformerEncoderLayer::build(d_model, nhead, 2048, false)
    }

    fn build(
        d_model: usize,
        nhead: usize,
        ff: usize,
        batch_first: bool,
    ) -> TransformerEncoderLayer {
        TransformerEncoderLayer {
            self_attn: MultiheadAttention::new(d_model, nhead)
                .batch_first(batch_first)
                .dropout(0.1),
            linear1: Linear::new(d_model, ff),
            linear2: Linear::new(ff, d_model),
            norm1: LayerNorm::new([d_model]),
            norm2: LayerNorm::new([d_model]),
            d_model,
            dropout: 0.1,
            gelu: false,
            bad_activation: None,
            norm_first: false,
            training: true,
        }
    }

    /// The feed-forward block's width (torch's `dim_feedforward`, default 2048); draws new
    /// feed-forward weights.
    pub fn dim_feedforward(mut self, width: usize) -> TransformerEncoderLayer {
        self.linear1 = Linear::new(self.d_model, width);
        self.linear2 = Linear::new(width, self.d_model);
        self
    }
    /// Dropout after attention, inside and after the feed-forward block (default 0.1).
    pub fn dropout(mut self, p: f64) -> TransformerEncoderLayer {
        self.dropout = p;
        self.self_attn = self.self_attn.dropout(p);
        self
    }
    /// `"relu"` (the default) or `"gelu"`; anything else is refused when the layer runs.
    pub fn activation(mut self, name: &str) -> TransformerEncoderLayer {
        self.gelu = name == "gelu";
        self.bad_activation = (!matches!(name, "relu" | "gelu")).then(|| name.to_string());
        self
    }
    pub fn batch_first(mut self, batch_first: bool) -> TransformerEncoderLayer {
        self.self_attn = self.self_attn.batch_first(batch_first);
        self
    }
    /// Layer norm before each block instead of after (torch's `norm_first=True`, the
    /// pre-norm transformers train more easily with).
    pub fn norm_first(mut self, norm_first: bool) -> TransformerEncoderLayer {
        self.norm_first = norm_first;
        self
    }

    fn drop(&self, x: &Tensor) -> Result<Tensor> {
        if self.dropout > 0.0 && self.training {
            functional::dropout(x, self.dropout, true)
        } else {
            Ok(x.clone())
        }
    }

    fn attention_block(&self, x: &Tensor, key_padding_mask: Option<&Tensor>) -> Result<Tensor> {
        let a = self
            .self_attn
            .attend(x, x, x, key_padding_mask, false, None)?;
        self.drop(&a.output)
    }

    fn feed_forward_block(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.linear1.forward(x)?;
        let h = if self.gelu { h.gelu()? } else { h.relu()? };
        let h = self.linear2.forward(&self.drop(&h)?)?;
        self.drop(&h)
    }

    /// torch's `layer(src, src_key_padding_mask=...)`: `key_padding_mask` `[N, L]`, true
    /// where a position is padding (no query attends to it).
    pub fn forward_masked(&self, x: &Tensor, key_padding_mask: Option<&Tensor>) -> Result<Tensor> {
        if let Some(bad) = &self.bad_activation {
            return Err(Error::Invalid(format!(
                "{}: the activation must be \"relu\" or \"gelu\", got \"{bad}\"",
                self.describe()
            )));
        }
        if self.norm_first {
            let x = x.add(&self.attention_block(&self.norm1.forward(x)?, key_padding_mask)?)?;
            x.add(&self.feed_forward_block(&self.norm2.forward(&x)?)?)
        } else {
            let x = self
                .norm1
                .forward(&x.add(&self.attention_block(x, key_padding_mask)?)?)?;
            self.norm2.forward(&x.add(&self.feed_forward_block(&x)?)?)
        }
    }
}

impl Module for TransformerEncoderLayer {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.forward_masked(x, None)
    }
    fn parameters(&self) -> Vec<Parameter> {
        self.named_parameters()
            .into_iter()
            .map(|(_, p)| p)
            .collect()
    }
    /// torch's names: `self_attn.*`, `linear1.*`, `linear2.*`, `norm1.*`, `norm2.*`.
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        let parts: [(&str, &dyn Module); 5] = [
            ("self_attn", &self.self_attn),
            ("linear1", &self.linear1),
            ("linear2", &self.linear2),
            ("norm1", &self.norm1),
            ("norm2", &self.norm2),
        ];
        parts
            .iter()
            .flat_map(|(prefix, m)| {
                m.named_parameters()
                    .into_iter()
                    .map(move |(n, p)| (format!("{prefix}.{n}"), p))
            })
            .collect()
    }
    fn set_training(&mut self, training: bool) {
        self.training = training;
        self.self_attn.set_training(training);
    }
    /// One line (torch prints this layer over several, as its children).
    fn describe(&self) -> String {
        format!(
            "TransformerEncoderLayer(d_model={}, dim_feedforward={}, dropout={}, \
             activation={}{})",
            self.d_model,
            self.linear1.weight.shape()[0],
            py_float(self.dropout),
            if self.gelu { "gelu" } else { "relu" },
            if self.norm_first {
                ", norm_first=True"
            } else {
                ""
            }
        )
    }
}
