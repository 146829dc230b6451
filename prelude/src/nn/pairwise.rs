//! Layers of two inputs: torch's `nn.Bilinear` (`F.bilinear`, `y = x1ᵀ A x2 + b` per output
//! feature), `nn.CosineSimilarity` and `nn.PairwiseDistance` (modules over `F`'s functions).
//! They take two tensors, so they are not `Module`s (whose forward takes one): each has
//! `forward(x1, x2)`, as the loss modules do; `Bilinear` is a `Module` for its parameters,
//! and its one-input forward refuses, naming `forward_with`.

use super::{init_param, same_device, weight_and_bias, Module, Parameter};
use crate::error::{Error, Result};
use crate::tensor::autocast::{autocast3, AmpOp};
use crate::tensor::Tensor;

/// torch's `F.bilinear(x1, x2, weight, bias)`: `y[.., o] = sum_ij x1[.., i] W[o, i, j]
/// x2[.., j] + b[o]`, `x1` `[.., in1]`, `x2` `[.., in2]` with the same leading dimensions,
/// `weight` `[out, in1, in2]`. One matmul with `W` laid out as `[in1, out * in2]`, then a
/// product with `x2` summed over `in2`.
pub fn bilinear(
    x1: &Tensor,
    x2: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
) -> Result<Tensor> {
    const OP: &str = "bilinear";
    // torch's autocast runs bilinear in the lower precision, as a matrix product.
    if let Some(y) = autocast3(AmpOp::Linear, OP, x1, Some(x2), Some(weight), |a, b, w| {
        bilinear(a, b.expect("x2"), w.expect("the weight"), bias)
    }) {
        return y;
    }
    let [o, i, j] = match weight.shape()[..] {
        [o, i, j] => [o, i, j],
        _ => {
            return Err(Error::BadShape(format!(
                "{OP}: expected a 3-D weight [out_features, in1_features, in2_features], got \
                 {:?}",
                weight.shape()
            )))
        }
    };
    let (s1, s2) = (x1.shape(), x2.shape());
    if s1.is_empty() || s2.is_empty() || s1.last() != Some(&i) || s2.last() != Some(&j) {
        return Err(Error::BadShape(format!(
            "{OP}: expected x1 [.., {i}] and x2 [.., {j}] (as the weight [{o}, {i}, {j}] says), \
             got {s1:?} and {s2:?}"
        )));
    }
    if s1[..s1.len() - 1] != s2[..s2.len() - 1] {
        return Err(Error::BadShape(format!(
            "{OP}: x1 and x2 must have the same leading dimensions, got {s1:?} and {s2:?}"
        )));
    }
    if let Some(b) = bias {
        if b.shape() != [o] {
            return Err(Error::BadShape(format!(
                "{OP}: expected a bias of shape [{o}] (one per output feature), got {:?}",
                b.shape()
            )));
        }
    }
    let lead = s1[..s1.len() - 1].to_vec();
    let rows: usize = lead.iter().product();
    let a = x1.reshape(vec![rows, i])?;
    let b = x2.reshape(vec![rows, 1, j])?;
    let w = weight.permute(&[1, 0, 2])?.reshape(vec![i, o * j])?;
    let left = a.matmul(&w)?;
    // An integer sum is int64; torch's bilinear keeps the inputs' dtype (wrapping).
    let mut y = left
        .reshape(vec![rows, o, j])?
        .mul(&b)?
        .sum_dim(2)?
        .to_dtype(left.dtype())?;
    if let Some(bias) = bias {
        y = y.add(bias)?;
    }
    let mut shape = lead;
    shape.push(o);
    y.reshape(shape)
}

/// torch's `nn.Bilinear(in1_features, in2_features, out_features)`: weight `[out, in1, in2]`
/// and a bias of `out` (`.bias(false)` for none), uniform in ±1/sqrt(in1) as torch draws
/// them; `forward_with(x1, x2)`.
pub struct Bilinear {
    pub weight: Parameter,
    pub bias: Option<Parameter>,
    in1: usize,
    in2: usize,
    out: usize,
}

impl Bilinear {
    pub fn new(in1_features: usize, in2_features: usize, out_features: usize) -> Bilinear {
        Bilinear {
            weight: init_param(vec![out_features, in1_features, in2_features], in1_features),
            bias: Some(init_param(vec![out_features], in1_features)),
            in1: in1_features,
            in2: in2_features,
            out: out_features,
        }
    }
    /// `bias(false)` drops the bias (torch's `bias=False`); `bias(true)` draws one.
    pub fn bias(mut self, bias: bool) -> Bilinear {
        if !bias {
            self.bias = None;
        } else if self.bias.is_none() {
            self.bias = Some(init_param(vec![self.out], self.in1));
        }
        self
    }
    /// torch's `layer(x1, x2)`.
    pub fn forward_with(&self, x1: &Tensor, x2: &Tensor) -> Result<Tensor> {
        same_device(self, &self.weight, x1)?;
        same_device(self, &self.weight, x2)?;
        let b = self.bias.as_ref().map(Parameter::tensor);
        bilinear(x1, x2, &self.weight.tensor(), b.as_ref()).map_err(|e| match e {
            Error::BadShape(m) => Error::BadShape(format!("{}: {m}", self.describe())),
            other => other,
        })
    }
}

impl Module for Bilinear {
    /// Bilinear takes two inputs: this refuses, naming `forward_with`.
    fn forward(&self, _x: &Tensor) -> Result<Tensor> {
        Err(Error::Invalid(format!(
            "{}: takes (x1, x2): use forward_with(x1, x2)",
            self.describe()
        )))
    }
    fn parameters(&self) -> Vec<Parameter> {
        std::iter::once(self.weight.clone())
            .chain(self.bias.clone())
            .collect()
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        weight_and_bias(&self.weight, &self.bias)
    }
    fn describe(&self) -> String {
        format!(
            "Bilinear(in1_features={}, in2_features={}, out_features={}, bias={})",
            self.in1,
            self.in2,
            self.out,
            if self.bias.is_some() { "True" } else { "False" }
        )
    }
}

/// torch's `nn.CosineSimilarity(dim=1, eps=1e-8)`: `forward(x1, x2)` is
/// `F::cosine_similarity`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CosineSimilarity {
    pub dim: isize,
    pub eps: f64,
}

impl Default for CosineSimilarity {
    fn default() -> CosineSimilarity {
        CosineSimilarity { dim: 1, eps: 1e-8 }
    }
}

impl CosineSimilarity {
    pub fn new(dim: isize, eps: f64) -> CosineSimilarity {
        CosineSimilarity { dim, eps }
    }
    pub fn forward(&self, x1: &Tensor, x2: &Tensor) -> Result<Tensor> {
        super::functional::cosine_similarity_eps(x1, x2, self.dim, self.eps)
    }
}

/// torch's `nn.PairwiseDistance(p=2, eps=1e-6, keepdim=False)`: `forward(x1, x2)` is
/// `F::pairwise_distance`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairwiseDistance {
    pub p: f64,
    pub eps: f64,
    pub keepdim: bool,
}

impl Default for PairwiseDistance {
    fn default() -> PairwiseDistance {
        PairwiseDistance {
            p: 2.0,
            eps: 1e-6,
            keepdim: false,
        }
    }
}

impl PairwiseDistance {
    pub fn new(p: f64, eps: f64, keepdim: bool) -> PairwiseDistance {
        PairwiseDistance { p, eps, keepdim }
    }
    pub fn forward(&self, x1: &Tensor, x2: &Tensor) -> Result<Tensor> {
        super::functional::pairwise_distance(x1, x2, self.p, self.eps, self.keepdim)
    }
}
