//! Normalisations that divide without centring: torch's `F.rms_norm` (the transformer
//! language models' layer norm) and `F.local_response_norm` (AlexNet's, across neighbouring
//! channels), with their modules `nn::RMSNorm` and `nn::LocalResponseNorm`. Both are
//! composed of ops with gradients in torch's order and dtypes.

use super::functional::float_input;
use super::{same_device, Module, Parameter};
use crate::error::{Error, Result};
use crate::tensor::{DType, Shape, Tensor};
use crate::Device;

/// `x / sqrt(mean(x^2) + eps)` over the last `normalized_shape.len()` dimensions (which must
/// equal `normalized_shape`), times `weight` of that shape when given (torch's
/// `F.rms_norm`). `eps` `None` is the machine epsilon of the dtype the mean is taken in, as
/// torch's. float16 and bfloat16 compute in float32 and round once at the end, as torch does;
/// the weight then multiplies in the input's dtype.
pub fn rms_norm(
    x: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    eps: Option<f64>,
) -> Result<Tensor> {
    float_input(x, "rms_norm")?;
    let k = normalized_shape.len();
    let rank = x.rank();
    if k == 0 || rank < k || x.shape()[rank - k..] != *normalized_shape {
        return Err(Error::BadShape(format!(
            "rms_norm: the input's last dimensions must be {normalized_shape:?}, got shape {:?}",
            x.shape()
        )));
    }
    if let Some(w) = weight.filter(|w| w.shape() != normalized_shape) {
        return Err(Error::BadShape(format!(
            "rms_norm: weight has shape {:?}, expected {normalized_shape:?}",
            w.shape()
        )));
    }
    let opmath = if x.dtype() == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let eps = eps.unwrap_or(if opmath == DType::F64 {
        f64::EPSILON
    } else {
        f32::EPSILON as f64
    });
    // torch holds eps in the input's own dtype (a float16 input's eps is rounded to float16)
    // before adding it to the float32 mean.
    let eps = Tensor::from_vec(vec![eps], (), Device::Cpu)?
        .to_dtype(x.dtype())?
        .to_f64_vec()?[0];
    let up = x.to_dtype(opmath)?;
    // One reduction over the normalised dimensions flattened (torch's order of summation),
    // then divided by their count, as torch's mean.
    let n: usize = normalized_shape.iter().product();
    let lead = &x.shape()[..rank - k];
    let keep: Vec<usize> = lead.iter().copied().chain(vec![1; k]).collect();
    let mean_sq = up
        .square()?
        .reshape([lead, &[n]].concat())?
        .sum_keepdim(-1)?
        .div(n as f64)?
        .reshape(keep)?;
    let y = up.mul(&mean_sq.add(eps)?.rsqrt()?)?.to_dtype(x.dtype())?;
    match weight {
        Some(w) => y.mul(w),
        None => Ok(y),
    }
}

/// Each element divided by `(k + alpha * mean of the squares over `size` neighbouring
/// channels)^beta` (torch's `F.local_response_norm`; the window is centred, `size / 2`
/// channels before and `(size - 1) / 2` after, zeros past the ends, and the mean is over
/// all `size`). `x` is `[N, C, ..]` of at least 3 dimensions, floating point or int64 (whose
/// mean truncates and whose result is float32, as torch's). The windows' sums run in float32
/// for float16 and bfloat16, as torch's average pooling does.
pub fn local_response_norm(
    x: &Tensor,
    size: usize,
    alpha: f64,
    beta: f64,
    k: f64,
) -> Result<Tensor> {
    // torch's average pooling takes int64 too (its mean then truncates), not other integers.
    let int = x.dtype() == DType::I64;
    if !int {
        float_input(x, "local_response_norm")?;
    }
    if x.rank() < 3 {
        return Err(Error::BadShape(format!(
            "local_response_norm: needs an input of at least 3 dimensions ([N, C, ..]), got \
             shape {:?}",
            x.shape()
        )));
    }
    if size == 0 {
        return Err(Error::Invalid(
            "local_response_norm: size must be positive, got 0".into(),
        ));
    }
    if x.numel() == 0 {
        return Ok(x.clone());
    }
    let sq = x.mul(x)?;
    let acc = if matches!(x.dtype(), DType::F16 | DType::BF16) {
        sq.to_dtype(DType::F32)?
    } else {
        sq.clone()
    };
    let (c, dtype) = (x.shape()[1], acc.dtype());
    let zeros = |n: usize| {
        let mut s = x.shape().to_vec();
        s[1] = n;
        Tensor::zeros_dtype(s, dtype, x.device())
    };
    let padded = Tensor::cat(&[zeros(size / 2)?, acc, zeros((size - 1) / 2)?], 1)?;
    let mut sum = padded.narrow(1, 0, c)?;
    for i in 1..size {
        sum = sum.add(&padded.narrow(1, i, c)?)?;
    }
    let mean = if int {
        sum.floor_divide(size as i64)?
    } else {
        sum.div(size as f64)?.to_dtype(x.dtype())?
    };
    x.div(&mean.mul(alpha)?.add(k)?.pow(beta)?)
}

/// torch's `nn.RMSNorm(normalized_shape)`: [`rms_norm`] over the last dimensions with a
/// learned `weight` of that shape (ones), eps `None` (the dtype's epsilon) unless set.
pub struct RMSNorm {
    shape: Vec<usize>,
    pub weight: Option<Parameter>,
    eps: Option<f64>,
}

impl RMSNorm {
    pub fn new(normalized_shape: impl Into<Shape>) -> RMSNorm {
        let shape = normalized_shape.into().0;
        let ones = Tensor::ones(shape.clone(), Device::Cpu).expect("on the CPU");
        RMSNorm {
            weight: Some(Parameter::new(ones).expect("float32 can require grad")),
            shape,
            eps: None,
        }
    }

    /// Added to the mean square before the square root (default: the dtype's epsilon).
    pub fn eps(mut self, eps: f64) -> RMSNorm {
        self.eps = Some(eps);
        self
    }

    /// torch's `elementwise_affine=`: `false` for no weight.
    pub fn elementwise_affine(mut self, on: bool) -> RMSNorm {
        if !on {
            self.weight = None;
        } else if self.weight.is_none() {
            let ones = Tensor::ones(self.shape.clone(), Device::Cpu).expect("on the CPU");
            self.weight = Some(Parameter::new(ones).expect("float32 can require grad"));
        }
        self
    }
}

impl Module for RMSNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let w = match &self.weight {
            Some(w) => {
                same_device(self, w, x)?;
                Some(w.tensor())
            }
            None => None,
        };
        rms_norm(x, &self.shape, w.as_ref(), self.eps)
    }
    fn parameters(&self) -> Vec<Parameter> {
        self.weight.iter().cloned().collect()
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        self.weight
            .iter()
            .map(|w| ("weight".to_string(), w.clone()))
            .collect()
    }
    fn describe(&self) -> String {
        let dims: Vec<String> = self.shape.iter().map(usize::to_string).collect();
        let trail = if dims.len() == 1 { "," } else { "" };
        let eps = self.eps.map_or("None".to_string(), super::py_float);
        format!(
            "RMSNorm(({}{trail}), eps={eps}, elementwise_affine={})",
            dims.join(", "),
            if self.weight.is_some() {
                "True"
            } else {
                "False"
            }
        )
    }
}

/// torch's `nn.LocalResponseNorm(size)` ([`local_response_norm`]): alpha 1e-4, beta 0.75 and
/// k 1 unless set.
#[derive(Clone, Copy, PartialEq)]
pub struct LocalResponseNorm {
    size: usize,
    alpha: f64,
    beta: f64,
    k: f64,
}

impl LocalResponseNorm {
    pub fn new(size: usize) -> LocalResponseNorm {
        LocalResponseNorm {
            size,
            alpha: 1e-4,
            beta: 0.75,
            k: 1.0,
        }
    }

    /// The mean square's scale (1e-4 unless set).
    pub fn alpha(mut self, alpha: f64) -> LocalResponseNorm {
        self.alpha = alpha;
        self
    }

    /// The power the divisor is raised to (0.75 unless set).
    pub fn beta(mut self, beta: f64) -> LocalResponseNorm {
        self.beta = beta;
        self
    }

    /// Added to the scaled mean square (1 unless set).
    pub fn k(mut self, k: f64) -> LocalResponseNorm {
        self.k = k;
        self
    }
}

impl Module for LocalResponseNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        local_response_norm(x, self.size, self.alpha, self.beta, self.k)
    }
    fn describe(&self) -> String {
        use super::py_float;
        format!(
            "LocalResponseNorm({}, alpha={}, beta={}, k={})",
            self.size,
            py_float(self.alpha),
            py_float(self.beta),
            py_float(self.k)
        )
    }
}
