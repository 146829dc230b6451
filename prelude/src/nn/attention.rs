//! Attention as torch computes it: `F::scaled_dot_product_attention` (re-exported by
//! `functional`) and `nn::MultiheadAttention`, with torch's parameter names and shapes, masks
//! and head-averaged weights. Composed of batched matmuls, softmax and element-wise ops, so it
//! runs on every device and autograd differentiates it.

use super::{functional, init_param, py_float, same_device, uniform, Module, Parameter};
use crate::error::{Error, Result};
use crate::tensor::autocast::{autocast, AmpOp};
use crate::tensor::{DType, Tensor};
use crate::Device;

/// `softmax(q kᵀ · scale + mask) v` (torch's `F.scaled_dot_product_attention`): `q`
/// `[..., L, E]`, `k` `[..., S, E]`, `v` `[..., S, Ev]` (leading dimensions broadcast) give
/// `[..., L, Ev]`. `attn_mask`: bool (true where a query may attend to a key) or float (added
/// to the scores), broadcasting to `[..., L, S]`; `is_causal` lets query `i` see keys `0..=i`
/// (not with a mask, as torch); `scale` defaults to `1 / sqrt(E)`; dropout with probability
/// `dropout_p` on the attention weights (always applied when above 0, as torch's function).
pub fn scaled_dot_product_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    attn_mask: Option<&Tensor>,
    dropout_p: f64,
    is_causal: bool,
    scale: Option<f64>,
) -> Result<Tensor> {
    const OP: &str = "scaled_dot_product_attention";
    if let Some(r) = autocast(
        AmpOp::Attention,
        OP,
        &[Some(q), Some(k), Some(v), attn_mask],
        |t| {
            let [q, k, v] = [0, 1, 2].map(|i| t[i].as_ref().expect("q, k, v"));
            scaled_dot_product_attention(q, k, v, t[3].as_ref(), dropout_p, is_causal, scale)
        },
    ) {
        return r;
    }
    for (name, t) in [("query", q), ("key", k), ("value", v)] {
        functional::float_input(t, OP)?;
        if t.rank() < 2 {
            return Err(Error::BadShape(format!(
                "{OP}: {name} must be [..., length, features], got shape {:?}",
                t.shape()
            )));
        }
    }
    let (l, e) = (q.shape()[q.rank() - 2], q.shape()[q.rank() - 1]);
    let (s, ek) = (k.shape()[k.rank() - 2], k.shape()[k.rank() - 1]);
    if ek != e || v.shape()[v.rank() - 2] != s {
        return Err(Error::BadShape(format!(
            "{OP}: query {:?}, key {:?} and value {:?} do not fit: the key needs the query's \
             features and the value the key's length",
            q.shape(),
            k.shape(),
            v.shape()
        )));
    }
    if is_causal && attn_mask.is_some() {
        return Err(Error::Invalid(format!(
            "{OP}: give either attn_mask or is_causal, not both (as torch)"
        )));
    }
    // Halves on the CPU in float32, rounded once, as torch's math kernel (a bool mask stays
    // bool; a float one is converted with the inputs).
    if q.device() == Device::Cpu
        && matches!(q.dtype(), DType::F16 | DType::BF16)
        && k.dtype() == q.dtype()
        && v.dtype() == q.dtype()
    {
        let bool_mask = attn_mask.filter(|m| m.dtype() == DType::Bool);
        let float_mask = attn_mask.filter(|m| m.dtype() != DType::Bool);
        if let Some(y) = functional::in_float32(q, &[Some(k), Some(v), float_mask], |q, t| {
            let mask = bool_mask.or(t[2].as_ref());
            let (k, v) = (t[0].as_ref().expect("key"), t[1].as_ref().expect("value"));
            scaled_dot_product_attention(q, k, v, mask, dropout_p, is_causal, scale)
        }) {
            return y;
        }
    }
    let scale = scale.unwrap_or(1.0 / (e as f64).sqrt());
    let causal;
    let mask = if is_causal {
        causal = Tensor::ones_dtype((l, s), DType::Bool, q.device())?.tril(0)?;
        Some(&causal)
    } else {
        attn_mask
    };
    let mask = mask.map(|m| additive(m, q.dtype())).transpose()?;
    let weights = attention_weights(q, k, scale, true, mask.as_ref())?;
    let weights = if dropout_p > 0.0 {
        functional::dropout(&weights, dropout_p, true)?
    } else {
        weights
    };
    weights.matmul(v)
}

/// A mask as scores to add: a bool one (true where attention is allowed) is 0 there and
/// -inf elsewhere; a float one is itself.
fn additive(m: &Tensor, dtype: DType) -> Result<Tensor> {
    if m.dtype() == DType::Bool {
        Tensor::zeros_dtype(m.shape().to_vec(), dtype, m.device())?
            .masked_fill(&m.logical_not()?, f64::NEG_INFINITY)
    } else {
        m.to_dtype(dtype)
    }
}

/// `softmax(q kᵀ · scale + mask)`: with `split`, `q` and `k` each scaled by `sqrt(scale)`
/// before the product, as torch's math attention kernel (smaller products; its multi-head
/// layer scales `q` alone, which measured no closer to torch's float32 gradients here). A row whose every score is -inf (a query that may attend to
/// nothing) gets weights 0, not NaN, as torch's `_safe_softmax`.
fn attention_weights(
    q: &Tensor,
    k: &Tensor,
    scale: f64,
    split: bool,
    mask: Option<&Tensor>,
) -> Result<Tensor> {
    let (q_by, k_by) = if split {
        let root = scale.abs().sqrt();
        (if scale < 0.0 { -root } else { root }, Some(root))
    } else {
        (scale, None)
    };
    let kt = k.transpose(-2, -1)?;
    let kt = match k_by {
        Some(by) => kt.mul(by)?,
        None => kt,
    };
    let mut scores = q.mul(q_by)?.matmul(&kt)?;
    if let Some(m) = mask {
        scores = scores.add(m)?;
    }
    let weights = scores.softmax(-1)?;
    let nothing = scores.max_dim(-1)?.unsqueeze(-1)?.eq(f64::NEG_INFINITY)?;
    weights.masked_fill(&nothing, 0.0)
}

/// torch's `nn.MultiheadAttention(embed_dim, num_heads)`: the query, key and value projected
/// by one packed `in_proj_weight` `[3E, E]` (and `in_proj_bias`), split into `num_heads`
/// heads of `E / num_heads` features, scaled dot-product attention per head, the heads joined
/// and projected by `out_proj` `[E, E]`. Input `[L, N, E]` (`[N, L, E]` with
/// `.batch_first(true)`, `[L, E]` unbatched). As a [`Module`] it is self-attention of its
/// input; [`MultiheadAttention::attend`] takes a separate key and value, masks, and gives the
/// attention weights.
pub struct MultiheadAttention {
    embed_dim: usize,
    num_heads: usize,
    batch_first: bool,
    dropout: f64,
    training: bool,
    pub in_proj_weight: Parameter,
    pub in_proj_bias: Option<Parameter>,
    pub out_proj_weight: Parameter,
    pub out_proj_bias: Option<Parameter>,
}

/// What [`MultiheadAttention::attend`] gives: the attended output (the query's shape) and,
/// when asked for, the attention weights averaged over the heads `[N, L, S]` (`[L, S]`
/// unbatched).
pub struct Attention {
    pub output: Tensor,
    pub weights: Option<Tensor>,
}

impl MultiheadAttention {
    /// torch's initialisation: `in_proj_weight` Xavier-uniform, `out_proj.weight` as a
    /// Linear's, both biases zero.
    pub fn new(embed_dim: usize, num_heads: usize) -> MultiheadAttention {
        let e = embed_dim;
        let xavier = (6.0 / (e + 3 * e).max(1) as f64).sqrt();
        let learned = |t: Tensor| Parameter::new(t).expect("float32 can require grad");
        let zeros = |n: usize| learned(Tensor::zeros(n, crate::Device::Cpu).expect("on the CPU"));
        let in_proj_weight = learned(uniform(vec![3 * e, e], xavier));
        // out_proj is a Linear in torch, drawn as one.
        let out_proj_weight = init_param(vec![e, e], e);
        MultiheadAttention {
            embed_dim,
            num_heads,
            batch_first: false,
            dropout: 0.0,
            training: true,
            in_proj_weight,
            in_proj_bias: Some(zeros(3 * e)),
            out_proj_weight,
            out_proj_bias: Some(zeros(e)),
        }
    }
    /// Input and output as `[N, L, E]` instead of `[L, N, E]`.
    pub fn batch_first(mut self, batch_first: bool) -> MultiheadAttention {
        self.batch_first = batch_first;
        self
    }
    /// `bias(false)` drops both projections' biases (torch's `bias=False`).
    pub fn bias(mut self, bias: bool) -> MultiheadAttention {
        if !bias {
            self.in_proj_bias = None;
            self.out_proj_bias = None;
        }
        self
    }
    /// Dropout on the attention weights while training.
    pub fn dropout(mut self, p: f64) -> MultiheadAttention {
        self.dropout = p;
        self
    }

    /// torch's `attn_output, attn_weights = mha(query, key, value, key_padding_mask=...,
    /// need_weights=..., attn_mask=...)`. `key_padding_mask` `[N, S]` and `attn_mask` `[L, S]`
    /// or `[N * num_heads, L, S]`: bool, true where attention is NOT allowed (torch's
    /// convention for this layer, the opposite of `scaled_dot_product_attention`'s), or float,
    /// added to the scores. The weights come averaged over the heads when `need_weights`.
    pub fn attend(
        &self,
        query: &Tensor,
        key: &Tensor,
        value: &Tensor,
        key_padding_mask: Option<&Tensor>,
        need_weights: bool,
        attn_mask: Option<&Tensor>,
    ) -> Result<Attention> {
        let (e, heads) = (self.embed_dim, self.num_heads);
        if heads == 0 || !e.is_multiple_of(heads) {
            return Err(Error::Invalid(format!(
                "{}: embed_dim ({e}) must be divisible by num_heads ({heads}), as torch requires",
                self.describe()
            )));
        }
        same_device(self, &self.in_proj_weight, query)?;
        let unbatched = query.rank() == 2;
        let time_major = |t: &Tensor, what: &str| -> Result<Tensor> {
            let ok = t.rank() == query.rank()
                && (t.rank() == 2 || t.rank() == 3)
                && t.shape().last() == Some(&e);
            if !ok {
                let layout = if self.batch_first {
                    "[N, L, E]"
                } else {
                    "[L, N, E]"
                };
                return Err(Error::BadShape(format!(
                    "{}: expected {what} {layout} (or [L, E] unbatched) with E = {e}, got {:?}",
                    self.describe(),
                    t.shape()
                )));
            }
            if unbatched {
                t.unsqueeze(1)
            } else if self.batch_first {
                t.transpose(0, 1)
            } else {
                Ok(t.clone())
            }
        };
        let (q, k, v) = (
            time_major(query, "query")?,
            time_major(key, "key")?,
            time_major(value, "value")?,
        );
        let (l, n, s, d) = (q.shape()[0], q.shape()[1], k.shape()[0], e / heads);
        if k.shape()[1] != n || v.shape()[..2] != k.shape()[..2] {
            return Err(Error::BadShape(format!(
                "{}: query {:?}, key {:?} and value {:?} must share the batch, and key and \
                 value the length",
                self.describe(),
                query.shape(),
                key.shape(),
                value.shape()
            )));
        }
        let w = self.in_proj_weight.tensor();
        let b = self.in_proj_bias.as_ref().map(Parameter::tensor);
        // [len, N, E] -> [N, heads, len, d], projected by rows `part` of the packed weight.
        let project = |x: &Tensor, part: usize, len: usize| -> Result<Tensor> {
            let bias = b.as_ref().map(|b| b.narrow(0, part * e, e)).transpose()?;
            functional::linear(x, &w.narrow(0, part * e, e)?, bias.as_ref())?
                .reshape((len, n, heads, d))?
                .permute(&[1, 2, 0, 3])
        };
        let (qh, kh, vh) = (project(&q, 0, l)?, project(&k, 1, s)?, project(&v, 2, s)?);
        let mask = self.additive_mask(key_padding_mask, attn_mask, [n, l, s], q.dtype())?;
        let mut weights =
            attention_weights(&qh, &kh, 1.0 / (d as f64).sqrt(), true, mask.as_ref())?;
        if self.dropout > 0.0 && self.training {
            weights = functional::dropout(&weights, self.dropout, true)?;
        }
        // [N, heads, L, d] -> [L, N, E], then the output projection.
        let joined = weights
            .matmul(&vh)?
            .permute(&[2, 0, 1, 3])?
            .reshape((l, n, e))?;
        let out_bias = self.out_proj_bias.as_ref().map(Parameter::tensor);
        let mut output =
            functional::linear(&joined, &self.out_proj_weight.tensor(), out_bias.as_ref())?;
        let mut averaged = need_weights.then(|| weights.mean_dim(1)).transpose()?;
        if unbatched {
            output = output.squeeze(1)?;
            averaged = averaged.map(|a| a.squeeze(0)).transpose()?;
        } else if self.batch_first {
            output = output.transpose(0, 1)?;
        }
        Ok(Attention {
            output,
            weights: averaged,
        })
    }

    /// The masks as one float tensor added to the scores `[N, heads, L, S]` (-inf where a
    /// bool mask is true), or None.
    fn additive_mask(
        &self,
        key_padding_mask: Option<&Tensor>,
        attn_mask: Option<&Tensor>,
        [n, l, s]: [usize; 3],
        dtype: DType,
    ) -> Result<Option<Tensor>> {
        let heads = self.num_heads;
        // This layer's bool masks are true where attention is NOT allowed.
        let additive = |m: &Tensor| -> Result<Tensor> {
            if m.dtype() == DType::Bool {
                additive(&m.logical_not()?, dtype)
            } else {
                m.to_dtype(dtype)
            }
        };
        let mut total: Option<Tensor> = None;
        if let Some(m) = attn_mask {
            let shaped = match m.shape() {
                [a, b] if (*a, *b) == (l, s) => m.reshape((1, 1, l, s))?,
                [nh, a, b] if (*nh, *a, *b) == (n * heads, l, s) => m.reshape((n, heads, l, s))?,
                other => {
                    return Err(Error::BadShape(format!(
                        "{}: attn_mask must be [{l}, {s}] or [{}, {l}, {s}], got {other:?}",
                        self.describe(),
                        n * heads
                    )))
                }
            };
            total = Some(additive(&shaped)?);
        }
        if let Some(m) = key_padding_mask {
            let want: &[usize] = if n == 1 && m.rank() == 1 {
                &[s]
            } else {
                &[n, s]
            };
            if m.shape() != want {
                return Err(Error::BadShape(format!(
                    "{}: key_padding_mask must be [{n}, {s}] (batch, key length), got {:?}",
                    self.describe(),
                    m.shape()
                )));
            }
            let padded = additive(&m.reshape((n, 1, 1, s))?)?;
            total = Some(match total {
                Some(t) => t.add(&padded)?,
                None => padded,
            });
        }
        Ok(total)
    }
}

impl Module for MultiheadAttention {
    /// Self-attention: the input as query, key and value.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(self.attend(x, x, x, None, false, None)?.output)
    }
    fn parameters(&self) -> Vec<Parameter> {
        self.named_parameters()
            .into_iter()
            .map(|(_, p)| p)
            .collect()
    }
    /// torch's names: `in_proj_weight`, `in_proj_bias`, `out_proj.weight`, `out_proj.bias`.
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        let mut v = vec![("in_proj_weight".to_string(), self.in_proj_weight.clone())];
        v.extend(
            self.in_proj_bias
                .clone()
                .map(|b| ("in_proj_bias".to_string(), b)),
        );
        v.push(("out_proj.weight".to_string(), self.out_proj_weight.clone()));
        v.extend(
            self.out_proj_bias
                .clone()
                .map(|b| ("out_proj.bias".to_string(), b)),
        );
        v
    }
    fn set_training(&mut self, training: bool) {
        self.training = training;
    }
    /// One line (torch prints this layer over several, as its out_proj child).
    fn describe(&self) -> String {
        let mut s = format!(
            "MultiheadAttention(embed_dim={}, num_heads={}",
            self.embed_dim, self.num_heads
        );
        if self.dropout != 0.0 {
            s += &format!(", dropout={}", py_float(self.dropout));
        }
        if self.in_proj_bias.is_none() {
            s += ", bias=False";
        }
        if self.batch_first {
            s += ", batch_first=True";
        }
        s + ")"
    }
}
