//! torch's `F.embedding_bag` and `nn.EmbeddingBag`: the sum, mean or maximum of the
//! embeddings of each bag of indices, without the `[bags, length, dim]` tensor between (the
//! first layer of bag-of-words and recommendation models). Bags are the rows of a 2-D input,
//! or the runs of a 1-D input that `offsets` starts. Where each index goes is read on the
//! host, as torch's CPU kernel reads it; the rows are gathered by `index_select` and summed
//! by `index_add`, so the weight (and `per_sample_weights`) get their gradients on every
//! device.

use super::{same_device, Module, Parameter};
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};
use crate::Device;

/// The bags: for each kept element (not `padding_idx`), its index into the table, its
/// position in the input and its bag; and the number of bags.
struct Bags {
    index: Vec<i64>,
    position: Vec<i64>,
    bag: Vec<i64>,
    count: usize,
}

fn ints(t: &Tensor, what: &str) -> Result<Vec<i64>> {
    match t.dtype() {
        DType::I64 | DType::I32 => t.to_dtype(DType::I64)?.to_vec::<i64>(),
        other => Err(Error::Invalid(format!(
            "embedding_bag: {what} must hold int64 or int32 indices, got {other} (shape {:?})",
            t.shape()
        ))),
    }
}

fn bags(
    input: &Tensor,
    offsets: Option<&Tensor>,
    include_last_offset: bool,
    padding_idx: Option<i64>,
    num: usize,
) -> Result<Bags> {
    const OP: &str = "embedding_bag";
    let values = ints(input, "the input")?;
    let (bag_of, count): (Vec<usize>, usize) = match (input.rank(), offsets) {
        (2, None) => {
            let (b, l) = (input.shape()[0], input.shape()[1]);
            ((0..b * l).map(|j| j / l.max(1)).collect(), b)
        }
        (2, Some(_)) => {
            return Err(Error::Invalid(format!(
                "{OP}: offsets must be None for a 2-D input (each row is a bag), as in torch"
            )))
        }
        (1, Some(off)) => {
            if off.rank() != 1 {
                return Err(Error::BadShape(format!(
                    "{OP}: offsets has to be a 1-D tensor, got shape {:?}",
                    off.shape()
                )));
            }
            let starts = ints(off, "offsets")?;
            if starts.first().is_some_and(|&s| s != 0) {
                return Err(Error::Invalid(format!(
                    "{OP}: offsets[0] has to be 0 (the first bag starts at position 0), got {}",
                    starts[0]
                )));
            }
            let len = values.len() as i64;
            if starts.windows(2).any(|w| w[1] < w[0]) || starts.iter().any(|&s| s > len) {
                return Err(Error::Invalid(format!(
                    "{OP}: offsets must not decrease nor pass the input's length {len}, got \
                     {starts:?}"
                )));
            }
            let mut ends: Vec<i64> = starts.iter().skip(1).copied().collect();
            let count = if include_last_offset {
                starts.len().saturating_sub(1)
            } else {
                ends.push(len);
                starts.len()
            };
            let mut bag_of = vec![usize::MAX; values.len()];
            for b in 0..count {
                for slot in &mut bag_of[starts[b] as usize..ends[b] as usize] {
                    *slot = b;
                }
            }
            (bag_of, count)
        }
        (1, None) => {
            return Err(Error::Invalid(format!(
                "{OP}: a 1-D input needs offsets (where each bag starts), as in torch"
            )))
        }
        _ => {
            return Err(Error::BadShape(format!(
                "{OP}: expected a 2-D input [bags, length] or a 1-D input with offsets, got {:?}",
                input.shape()
            )))
        }
    };
    let padding = padding_idx.map(|p| if p < 0 { p + num as i64 } else { p });
    let mut out = Bags {
        index: Vec::new(),
        position: Vec::new(),
        bag: Vec::new(),
        count,
    };
    for (j, (&v, &b)) in values.iter().zip(&bag_of).enumerate() {
        if v < 0 || v >= num as i64 {
            return Err(Error::Invalid(format!(
                "{OP}: index {v} is out of range for a table of {num} rows"
            )));
        }
        if b == usize::MAX || Some(v) == padding {
            continue;
        }
        out.index.push(v);
        out.position.push(j as i64);
        out.bag.push(b as i64);
    }
    Ok(out)
}

/// torch's `F.embedding_bag(input, weight, offsets, mode=, per_sample_weights=,
/// include_last_offset=, padding_idx=)`: for each bag the `"sum"`, `"mean"` or `"max"` of
/// the rows of `weight` (`[num_embeddings, dim]`) its indices name, `[bags, dim]`.
/// `per_sample_weights` (the input's shape) scales each row first, in `"sum"` mode only;
/// `padding_idx` is left out of every bag (and out of a mean's count); an empty bag gives
/// zeros.
#[allow(clippy::too_many_arguments)]
pub fn embedding_bag(
    input: &Tensor,
    weight: &Tensor,
    offsets: Option<&Tensor>,
    mode: &str,
    per_sample_weights: Option<&Tensor>,
    include_last_offset: bool,
    padding_idx: Option<i64>,
) -> Result<Tensor> {
    const OP: &str = "embedding_bag";
    let [num, dim] = match weight.shape()[..] {
        [n, d] => [n, d],
        _ => {
            return Err(Error::BadShape(format!(
                "{OP}: expected a 2-D weight [num_embeddings, embedding_dim], got {:?}",
                weight.shape()
            )))
        }
    };
    // torch's kernel takes float tables only.
    super::functional::float_input(weight, OP)?;
    if !matches!(mode, "sum" | "mean" | "max") {
        return Err(Error::Invalid(format!(
            "{OP}: mode must be \"sum\", \"mean\" or \"max\", got \"{mode}\""
        )));
    }
    if let Some(w) = per_sample_weights {
        if mode != "sum" {
            return Err(Error::Invalid(format!(
                "{OP}: per_sample_weights is only supported for mode \"sum\" (as in torch), got \
                 mode \"{mode}\""
            )));
        }
        if w.shape() != input.shape() {
            return Err(Error::BadShape(format!(
                "{OP}: per_sample_weights must have the input's shape {:?}, got {:?}",
                input.shape(),
                w.shape()
            )));
        }
    }
    let b = bags(input, offsets, include_last_offset, padding_idx, num)?;
    let dev = weight.device();
    let on = |v: &[i64]| Tensor::from_vec(v.to_vec(), vec![v.len()], Device::Cpu)?.to(dev);
    let mut rows = weight.index_select(0, &on(&b.index)?)?;
    if let Some(w) = per_sample_weights {
        let picked = w
            .reshape(vec![w.numel()])?
            .index_select(0, &on(&b.position)?)?;
        rows = rows.mul(&picked.unsqueeze(1)?)?;
    }
    let zeros = Tensor::zeros_dtype(vec![b.count, dim], rows.dtype(), dev)?;
    if mode != "max" {
        let sum = zeros.index_add(0, &on(&b.bag)?, &rows, 1.0)?;
        if mode == "sum" {
            return Ok(sum);
        }
        let mut count = vec![0.0f64; b.count];
        for &bag in &b.bag {
            count[bag as usize] += 1.0;
        }
        let count: Vec<f64> = count.into_iter().map(|c| c.max(1.0)).collect();
        let count = Tensor::from_vec(count, vec![b.count, 1], Device::Cpu)?
            .to_dtype(sum.dtype())?
            .to(dev)?;
        return sum.div(&count);
    }
    // Max: each bag's rows gathered into a [bags, longest, dim] block, short bags padded
    // with a row of the lowest value (one appended to the rows), then max over the bag.
    let mut members: Vec<Vec<i64>> = vec![Vec::new(); b.count];
    for (k, &bag) in b.bag.iter().enumerate() {
        members[bag as usize].push(k as i64);
    }
    let longest = members.iter().map(Vec::len).max().unwrap_or(0);
    if longest == 0 {
        return Ok(zeros);
    }
    let pad_row = b.index.len() as i64;
    let table: Vec<i64> = members
        .iter()
        .flat_map(|m| (0..longest).map(move |t| m.get(t).copied().unwrap_or(pad_row)))
        .collect();
    let lowest = Tensor::full_dtype(vec![1, dim], f64::NEG_INFINITY, rows.dtype(), dev)?;
    let block = Tensor::cat(&[rows, lowest], 0)?
        .index_select(0, &on(&table)?)?
        .reshape(vec![b.count, longest, dim])?;
    let max = block.max_dim(1)?;
    let empty: Vec<bool> = members.iter().map(Vec::is_empty).collect();
    let empty = Tensor::from_vec(empty, vec![b.count, 1], Device::Cpu)?.to(dev)?;
    zeros.where_(&empty, &max)
}

/// torch's `nn.EmbeddingBag(num_embeddings, embedding_dim)`: a table drawn standard normal
/// (the `padding_idx` row zero), reduced per bag by `mode` (`"mean"` unless set).
/// `forward(x)` takes a 2-D input, a bag per row; `forward_with(input, offsets,
/// per_sample_weights)` takes the 1-D form.
pub struct EmbeddingBag {
    pub weight: Parameter,
    num_embeddings: usize,
    embedding_dim: usize,
    mode: String,
    include_last_offset: bool,
    padding_idx: Option<i64>,
}

impl EmbeddingBag {
    pub fn new(num_embeddings: usize, embedding_dim: usize) -> EmbeddingBag {
        let table = Tensor::randn(vec![num_embeddings, embedding_dim], Device::Cpu)
            .expect("normal values on the CPU");
        EmbeddingBag {
            weight: Parameter::new(table).expect("a float32 tensor can require grad"),
            num_embeddings,
            embedding_dim,
            mode: "mean".into(),
            include_last_offset: false,
            padding_idx: None,
        }
    }
    /// `"sum"`, `"mean"` (the default) or `"max"`.
    pub fn mode(mut self, mode: &str) -> EmbeddingBag {
        self.mode = mode.to_string();
        self
    }
    /// Offsets include the end of the last bag (torch's `include_last_offset=True`).
    pub fn include_last_offset(mut self, on: bool) -> EmbeddingBag {
        self.include_last_offset = on;
        self
    }
    /// An index left out of every bag; its row is set to zeros, as torch does.
    pub fn padding_idx(mut self, idx: i64) -> EmbeddingBag {
        self.padding_idx = Some(idx);
        let row = if idx < 0 {
            idx + self.num_embeddings as i64
        } else {
            idx
        };
        if (0..self.num_embeddings as i64).contains(&row) {
            let t = self.weight.tensor();
            crate::autograd::no_grad(|| t.narrow(0, row as usize, 1)?.fill_(0.0))
                .expect("a row of the table");
        }
        self
    }
    /// torch's `bag(input, offsets, per_sample_weights)`.
    pub fn forward_with(
        &self,
        input: &Tensor,
        offsets: Option<&Tensor>,
        per_sample_weights: Option<&Tensor>,
    ) -> Result<Tensor> {
        same_device(self, &self.weight, input)?;
        embedding_bag(
            input,
            &self.weight.tensor(),
            offsets,
            &self.mode,
            per_sample_weights,
            self.include_last_offset,
            self.padding_idx,
        )
    }
}

impl Module for EmbeddingBag {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.forward_with(x, None, None)
    }
    fn parameters(&self) -> Vec<Parameter> {
        vec![self.weight.clone()]
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        vec![("weight".into(), self.weight.clone())]
    }
    fn describe(&self) -> String {
        let mut s = format!(
            "EmbeddingBag({}, {}, mode='{}'",
            self.num_embeddings, self.embedding_dim, self.mode
        );
        if let Some(p) = self.padding_idx {
            s += &format!(", padding_idx={p}");
        }
        s + ")"
    }
}
