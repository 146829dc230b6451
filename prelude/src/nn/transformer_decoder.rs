//! torch's `nn.TransformerDecoderLayer`: masked self-attention over the target, attention
//! from the target to the encoder's output (`memory`), and a feed-forward block, each with a
//! residual connection and layer norm (after, or before with `norm_first`), under torch's
//! parameter names (`self_attn.*`, `multihead_attn.*`, `linear1.*`, `linear2.*`,
//! `norm1..3.*`). The masks travel in one [`TransformerMasks`].

use super::transformer::{check_activation, dropped, feed_forward, layer_builders};
use super::{py_float, LayerNorm, Linear, Module, MultiheadAttention, Parameter};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// torch's optional masks of a transformer's forward, by torch's names; `Default` is none.
/// An attention mask is `[L, S]`, bool (true where a query may not look) or float (added to
/// the scores, as `Transformer::generate_square_subsequent_mask` gives); a key padding mask
/// is `[N, S]`, true where a position is padding.
#[derive(Clone, Copy, Default)]
pub struct TransformerMasks<'a> {
    pub src_mask: Option<&'a Tensor>,
    pub tgt_mask: Option<&'a Tensor>,
    pub memory_mask: Option<&'a Tensor>,
    pub src_key_padding_mask: Option<&'a Tensor>,
    pub tgt_key_padding_mask: Option<&'a Tensor>,
    pub memory_key_padding_mask: Option<&'a Tensor>,
}

/// One decoder layer (torch's defaults: feed-forward width 2048, dropout 0.1, ReLU, layer
/// norm after each block, eps 1e-5). Target `[T, N, E]` and memory `[S, N, E]` (`[N, T, E]`
/// and `[N, S, E]` with `batch_first`).
pub struct TransformerDecoderLayer {
    pub self_attn: MultiheadAttention,
    pub multihead_attn: MultiheadAttention,
    pub linear1: Linear,
    pub linear2: Linear,
    pub norm1: LayerNorm,
    pub norm2: LayerNorm,
    pub norm3: LayerNorm,
    d_model: usize,
    dropout: f64,
    gelu: bool,
    bad_activation: Option<String>,
    norm_first: bool,
    training: bool,
}

layer_builders!(TransformerDecoderLayer, self_attn, multihead_attn);

impl TransformerDecoderLayer {
    /// Parameters drawn in torch's order: the two attentions, then `linear1`, `linear2`.
    pub fn new(d_model: usize, nhead: usize) -> TransformerDecoderLayer {
        let attention = || MultiheadAttention::new(d_model, nhead).dropout(0.1);
        TransformerDecoderLayer {
            self_attn: attention(),
            multihead_attn: attention(),
            linear1: Linear::new(d_model, 2048),
            linear2: Linear::new(2048, d_model),
            norm1: LayerNorm::new([d_model]),
            norm2: LayerNorm::new([d_model]),
            norm3: LayerNorm::new([d_model]),
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

    /// torch's `layer(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
    /// memory_key_padding_mask)`; `masks.src_*` are not read.
    pub fn forward_with(
        &self,
        tgt: &Tensor,
        memory: &Tensor,
        masks: &TransformerMasks,
    ) -> Result<Tensor> {
        check_activation(&self.bad_activation, || self.describe())?;
        let sa = |x: &Tensor| -> Result<Tensor> {
            let a = self.self_attn.attend(
                x,
                x,
                x,
                masks.tgt_key_padding_mask,
                false,
                masks.tgt_mask,
            )?;
            self.drop(&a.output)
        };
        let mha = |x: &Tensor| -> Result<Tensor> {
            let a = self.multihead_attn.attend(
                x,
                memory,
                memory,
                masks.memory_key_padding_mask,
                false,
                masks.memory_mask,
            )?;
            self.drop(&a.output)
        };
        let ff =
            |x: &Tensor| feed_forward(&self.linear1, &self.linear2, self.gelu, x, |t| self.drop(t));
        if self.norm_first {
            let x = tgt.add(&sa(&self.norm1.forward(tgt)?)?)?;
            let x = x.add(&mha(&self.norm2.forward(&x)?)?)?;
            x.add(&ff(&self.norm3.forward(&x)?)?)
        } else {
            let x = self.norm1.forward(&tgt.add(&sa(tgt)?)?)?;
            let x = self.norm2.forward(&x.add(&mha(&x)?)?)?;
            self.norm3.forward(&x.add(&ff(&x)?)?)
        }
    }
}

impl Module for TransformerDecoderLayer {
    /// A decoder layer needs the encoder's output too: this refuses, naming `forward_with`.
    fn forward(&self, _x: &Tensor) -> Result<Tensor> {
        Err(Error::Invalid(format!(
            "{}: a decoder layer takes (tgt, memory): use forward_with(tgt, memory, masks)",
            self.describe()
        )))
    }
    fn parameters(&self) -> Vec<Parameter> {
        self.named_parameters()
            .into_iter()
            .map(|(_, p)| p)
            .collect()
    }
    /// torch's names, in torch's order.
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        let parts: [(&str, &dyn Module); 7] = [
            ("self_attn", &self.self_attn),
            ("multihead_attn", &self.multihead_attn),
            ("linear1", &self.linear1),
            ("linear2", &self.linear2),
            ("norm1", &self.norm1),
            ("norm2", &self.norm2),
            ("norm3", &self.norm3),
        ];
        super::transformer::prefixed(&parts)
    }
    fn set_training(&mut self, training: bool) {
        self.training = training;
        self.self_attn.set_training(training);
        self.multihead_attn.set_training(training);
    }
    /// One line (torch prints this layer over several, as its children).
    fn describe(&self) -> String {
        format!(
            "TransformerDecoderLayer(d_model={}, dim_feedforward={}, dropout={}, \
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
