//! torch's `nn.TransformerEncoderLayer`: self-attention and a feed-forward block, each with a
//! residual connection and layer norm (after, or before with `norm_first`), built from this
//! crate's `MultiheadAttention`, `Linear`, `LayerNorm` and dropout, under torch's parameter
//! names, so a torch `state_dict` loads. `transformer_stack` stacks them (`TransformerEncoder`),
//! and `transformer_decoder` holds the decoder layer.

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
        TransformerEncoderLayer {
            self_attn: MultiheadAttention::new(d_model, nhead).dropout(0.1),
            linear1: Linear::new(d_model, 2048),
            linear2: Linear::new(2048, d_model),
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

    fn drop(&self, x: &Tensor) -> Result<Tensor> {
        dropped(x, self.dropout, self.training)
    }

    fn attention_block(
        &self,
        x: &Tensor,
        attn_mask: Option<&Tensor>,
        key_padding_mask: Option<&Tensor>,
    ) -> Result<Tensor> {
        let a = self
            .self_attn
            .attend(x, x, x, key_padding_mask, false, attn_mask)?;
        self.drop(&a.output)
    }

    /// torch's `layer(src, src_key_padding_mask=...)`: `key_padding_mask` `[N, L]`, true
    /// where a position is padding (no query attends to it).
    pub fn forward_masked(&self, x: &Tensor, key_padding_mask: Option<&Tensor>) -> Result<Tensor> {
        self.forward_with_masks(x, None, key_padding_mask)
    }

    /// torch's `layer(src, src_mask, src_key_padding_mask)`: `attn_mask` `[L, L]` (bool, true
    /// where a query may not look, or float, added to the scores, as
    /// [`Transformer::generate_square_subsequent_mask`](super::Transformer) gives) and the
    /// padding mask.
    pub fn forward_with_masks(
        &self,
        x: &Tensor,
        attn_mask: Option<&Tensor>,
        key_padding_mask: Option<&Tensor>,
    ) -> Result<Tensor> {
        check_activation(&self.bad_activation, || self.describe())?;
        let ff =
            |x: &Tensor| feed_forward(&self.linear1, &self.linear2, self.gelu, x, |t| self.drop(t));
        if self.norm_first {
            let n1 = self.norm1.forward(x)?;
            let x = x.add(&self.attention_block(&n1, attn_mask, key_padding_mask)?)?;
            x.add(&ff(&self.norm2.forward(&x)?)?)
        } else {
            let a = self.attention_block(x, attn_mask, key_padding_mask)?;
            let x = self.norm1.forward(&x.add(&a)?)?;
            self.norm2.forward(&x.add(&ff(&x)?)?)
        }
    }
}

/// The builder methods the encoder and decoder layers share (`dim_feedforward`, `dropout`,
/// `activation`, `batch_first`, `norm_first`), for a layer type with the fields both have and
/// the attention fields named.
macro_rules! layer_builders {
    ($t:ident, $($attn:ident),+) => {
        impl $t {
            /// The feed-forward block's width (torch's `dim_feedforward`, default 2048);
            /// draws new feed-forward weights.
            pub fn dim_feedforward(mut self, width: usize) -> $t {
                self.linear1 = Linear::new(self.d_model, width);
                self.linear2 = Linear::new(width, self.d_model);
                self
            }
            /// Dropout after each block's attention or feed-forward, and inside the
            /// feed-forward (default 0.1).
            pub fn dropout(mut self, p: f64) -> $t {
                self.dropout = p;
                $(self.$attn = self.$attn.dropout(p);)+
                self
            }
            /// `"relu"` (the default) or `"gelu"`; anything else is refused when the layer
            /// runs.
            pub fn activation(mut self, name: &str) -> $t {
                self.gelu = name == "gelu";
                self.bad_activation =
                    (!matches!(name, "relu" | "gelu")).then(|| name.to_string());
                self
            }
            /// Inputs `[N, L, E]` instead of `[L, N, E]` (torch's `batch_first=True`).
            pub fn batch_first(mut self, batch_first: bool) -> $t {
                $(self.$attn = self.$attn.batch_first(batch_first);)+
                self
            }
            /// Layer norm before each block instead of after (torch's `norm_first=True`, the
            /// pre-norm transformers train more easily with).
            pub fn norm_first(mut self, norm_first: bool) -> $t {
                self.norm_first = norm_first;
                self
            }
        }
    };
}
pub(super) use layer_builders;

layer_builders!(TransformerEncoderLayer, self_attn);

/// Dropout with probability `p` while training, else `x` itself.
pub(super) fn dropped(x: &Tensor, p: f64, training: bool) -> Result<Tensor> {
    if p > 0.0 && training {
        functional::dropout(x, p, true)
    } else {
        Ok(x.clone())
    }
}

/// The feed-forward block of a transformer layer: `drop(linear2(drop(act(linear1(x)))))`.
pub(super) fn feed_forward(
    linear1: &Linear,
    linear2: &Linear,
    gelu: bool,
    x: &Tensor,
    drop: impl Fn(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    let h = linear1.forward(x)?;
    let h = if gelu { h.gelu()? } else { h.relu()? };
    drop(&linear2.forward(&drop(&h)?)?)
}

/// The activation a layer was asked for, refused when it is not "relu" or "gelu".
pub(super) fn check_activation(bad: &Option<String>, who: impl Fn() -> String) -> Result<()> {
    match bad {
        Some(bad) => Err(Error::Invalid(format!(
            "{}: the activation must be \"relu\" or \"gelu\", got \"{bad}\"",
            who()
        ))),
        None => Ok(()),
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
        prefixed(&parts)
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

/// The children's parameters under `prefix.name`, in the children's order (torch's
/// `state_dict` names for a module's submodules).
pub(super) fn prefixed(parts: &[(&str, &dyn Module)]) -> Vec<(String, Parameter)> {
    parts
        .iter()
        .flat_map(|(prefix, m)| {
            m.named_parameters()
                .into_iter()
                .map(move |(n, p)| (format!("{prefix}.{n}"), p))
        })
        .collect()
}
