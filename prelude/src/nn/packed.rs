//! Batches of sequences of different lengths, as torch's `nn.utils.rnn`: `pad_sequence` and
//! `unpad_sequence`; `PackedSequence` with `pack_padded_sequence`, `pad_packed_sequence`,
//! `pack_sequence` and `unpack_sequence`, which the recurrent layers take
//! (`Recurrent::forward_packed`: each sequence runs for its own length only). Packing and
//! unpacking are one `index_select` each, so gradients pass through them on every device.

use crate::error::{Error, Result};
use crate::tensor::{fill_value, Tensor};
use crate::Device;

/// torch's `PackedSequence`: the steps of a batch of sequences, longest sequence first,
/// without padding. `data` holds step 0 of every sequence, then step 1 of those that have
/// one, and so on (`[total steps, *]`); `batch_sizes` how many sequences have each step
/// (int64, on the CPU, as torch's). `sorted_indices` says which batch entry each packed
/// column is (None when the batch came sorted), `unsorted_indices` the way back.
#[derive(Clone, Debug)]
pub struct PackedSequence {
    pub data: Tensor,
    pub batch_sizes: Tensor,
    pub sorted_indices: Option<Tensor>,
    pub unsorted_indices: Option<Tensor>,
}

fn int64(v: &[usize]) -> Tensor {
    let v: Vec<i64> = v.iter().map(|&x| x as i64).collect();
    let n = v.len();
    Tensor::from_vec(v, vec![n], Device::Cpu).expect("a 1-D int64 on the CPU")
}

fn indices(t: &Tensor) -> Result<Vec<usize>> {
    Ok(t.to_vec::<i64>()?.into_iter().map(|v| v as usize).collect())
}

impl PackedSequence {
    /// How many sequences have each step.
    pub fn sizes(&self) -> Result<Vec<usize>> {
        indices(&self.batch_sizes)
    }

    /// The batch entry of each packed column (sorted by length, longest first).
    /// Checked, as a hand-built `PackedSequence` may not hold to it: the sizes do not grow
    /// and the indices are a permutation of the batch.
    fn order(&self) -> Result<Vec<usize>> {
        let sizes = self.sizes()?;
        if sizes.windows(2).any(|w| w[0] < w[1]) || sizes.last() == Some(&0) {
            return Err(Error::Invalid(format!(
                "PackedSequence: batch_sizes must be positive and must not increase, got {sizes:?}"
            )));
        }
        let n = sizes.first().copied().unwrap_or(0);
        let order = match &self.sorted_indices {
            Some(s) => indices(s)?,
            None => (0..n).collect(),
        };
        let mut seen = vec![false; n];
        let permutation = order.len() == n
            && order
                .iter()
                .all(|&b| b < n && !std::mem::replace(&mut seen[b], true));
        if !permutation {
            return Err(Error::Invalid(format!(
                "PackedSequence: sorted_indices must hold each of 0..{n} once, got {order:?}"
            )));
        }
        Ok(order)
    }

    /// Each sequence's length, in the batch's order.
    pub fn lengths(&self) -> Result<Vec<usize>> {
        Ok(lengths_of(&self.sizes()?, &self.order()?))
    }

    /// The same sequences with `data` on `device` (torch's `packed.to(device)`).
    pub fn to(&self, device: Device) -> Result<PackedSequence> {
        Ok(PackedSequence {
            data: self.data.to(device)?,
            ..self.clone()
        })
    }

    /// `padded` (time-major `[T, N, *]`, in the batch's order) packed as this one is: the
    /// recurrent layers' packed output.
    pub(super) fn repack(&self, padded: &Tensor) -> Result<PackedSequence> {
        Ok(PackedSequence {
            data: gather_steps(padded, &self.order()?, &self.sizes()?)?,
            ..self.clone()
        })
    }
}

/// Each batch entry's length, from how many sequences have each step and the packed order.
fn lengths_of(sizes: &[usize], order: &[usize]) -> Vec<usize> {
    let mut lengths = vec![0; order.len()];
    for (j, &b) in order.iter().enumerate() {
        lengths[b] = sizes.iter().filter(|&&s| s > j).count();
    }
    lengths
}

/// The packed rows of time-major `x` `[T, N, *]`: for each step `t`, the first `sizes[t]`
/// batch entries of `order`.
fn gather_steps(x: &Tensor, order: &[usize], sizes: &[usize]) -> Result<Tensor> {
    let n = x.shape()[1];
    let idx: Vec<usize> = sizes
        .iter()
        .enumerate()
        .flat_map(|(t, &s)| order[..s].iter().map(move |&b| t * n + b))
        .collect();
    let mut rows = vec![x.shape()[0] * n];
    rows.extend_from_slice(&x.shape()[2..]);
    x.reshape(rows)?.index_select(0, &int64(&idx))
}

/// The batch order longest first (ties keep their order), and the inverse permutation.
fn by_length(lengths: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by_key(|&b| std::cmp::Reverse(lengths[b]));
    let mut back = vec![0; order.len()];
    for (j, &b) in order.iter().enumerate() {
        back[b] = j;
    }
    (order, back)
}

/// Packs `input`, a padded batch `[T, N, *]` (`[N, T, *]` with `batch_first`), whose entry
/// `b` is `lengths[b]` steps long (torch's `pack_padded_sequence`). With `enforce_sorted`
/// the lengths must be in decreasing order (torch's default; pass false to have them
/// sorted, and the recurrent layers give results back in the batch's order).
pub fn pack_padded_sequence(
    input: &Tensor,
    lengths: &[usize],
    batch_first: bool,
    enforce_sorted: bool,
) -> Result<PackedSequence> {
    const OP: &str = "pack_padded_sequence";
    if input.rank() < 2 {
        return Err(Error::BadShape(format!(
            "{OP}: expected a padded batch [T, N, *] or [N, T, *] (batch_first), got {:?}",
            input.shape()
        )));
    }
    let x = if batch_first {
        input.transpose(0, 1)?
    } else {
        input.clone()
    };
    let (steps, n) = (x.shape()[0], x.shape()[1]);
    if lengths.len() != n {
        return Err(Error::BadShape(format!(
            "{OP}: {} lengths for a batch of {n} sequences (input shape {:?}{})",
            lengths.len(),
            input.shape(),
            if batch_first { ", batch_first" } else { "" }
        )));
    }
    if let Some(&bad) = lengths.iter().find(|&&l| l == 0 || l > steps) {
        return Err(Error::Invalid(format!(
            "{OP}: every length must be between 1 and the padded length {steps}, got {bad} \
             (lengths {lengths:?})"
        )));
    }
    let sorted = lengths.windows(2).all(|w| w[0] >= w[1]);
    if enforce_sorted && !sorted {
        return Err(Error::Invalid(format!(
            "{OP}: the lengths must be in decreasing order when enforce_sorted is true, got \
             {lengths:?}; pass enforce_sorted=false to pack an unsorted batch"
        )));
    }
    let (order, back) = by_length(lengths);
    let longest = lengths.iter().copied().max().unwrap_or(0);
    let sizes: Vec<usize> = (0..longest)
        .map(|t| lengths.iter().filter(|&&l| l > t).count())
        .collect();
    let (sorted_indices, unsorted_indices) = if enforce_sorted {
        (None, None)
    } else {
        (Some(int64(&order)), Some(int64(&back)))
    };
    Ok(PackedSequence {
        data: gather_steps(&x, &order, &sizes)?,
        batch_sizes: int64(&sizes),
        sorted_indices,
        unsorted_indices,
    })
}

/// The padded batch back from `sequence` (torch's `pad_packed_sequence`): `[T, N, *]` (or
/// `[N, T, *]` with `batch_first`) in the batch's order, `padding_value` past each
/// sequence's end, `T` the longest length or `total_length`; and the lengths.
pub fn pad_packed_sequence(
    sequence: &PackedSequence,
    batch_first: bool,
    padding_value: f64,
    total_length: Option<usize>,
) -> Result<(Tensor, Vec<usize>)> {
    let sizes = sequence.sizes()?;
    let order = sequence.order()?;
    let lengths = lengths_of(&sizes, &order);
    let longest = sizes.len();
    let steps = total_length.unwrap_or(longest);
    if steps < longest {
        return Err(Error::Invalid(format!(
            "pad_packed_sequence: total_length must be at least the longest sequence's length \
             {longest}, got {steps}"
        )));
    }
    let data = &sequence.data;
    let rows = data.shape().first().copied().unwrap_or(0);
    if rows != sizes.iter().sum::<usize>() {
        return Err(Error::BadShape(format!(
            "pad_packed_sequence: data has {rows} rows but batch_sizes {sizes:?} add up to {}",
            sizes.iter().sum::<usize>()
        )));
    }
    let n = order.len();
    let mut column = vec![0; n];
    for (j, &b) in order.iter().enumerate() {
        column[b] = j;
    }
    // Each padded position reads its packed row, or one padding row appended to the data.
    let mut offset = 0;
    let mut idx = vec![rows; steps * n];
    for (t, &s) in sizes.iter().enumerate() {
        for b in 0..n {
            if column[b] < s {
                idx[t * n + b] = offset + column[b];
            }
        }
        offset += s;
    }
    fill_value("pad_packed_sequence", padding_value, data.dtype())?;
    let mut pad_shape = vec![1];
    pad_shape.extend_from_slice(&data.shape()[1..]);
    let pad = Tensor::full_dtype(pad_shape, padding_value, data.dtype(), data.device())?;
    let mut out_shape = vec![steps, n];
    out_shape.extend_from_slice(&data.shape()[1..]);
    let padded = Tensor::cat(&[data.clone(), pad], 0)?
        .index_select(0, &int64(&idx))?
        .reshape(out_shape)?;
    let padded = if batch_first {
        padded.transpose(0, 1)?.contiguous()?
    } else {
        padded
    };
    Ok((padded, lengths))
}

/// Pads `sequences` (each `[L_i, *]`, the same `*`) to the longest into one batch `[T, N,
/// *]` (`[N, T, *]` with `batch_first`), `padding_value` after each (before, with
/// `padding_side` "left"), as torch's `pad_sequence`.
pub fn pad_sequence(
    sequences: &[Tensor],
    batch_first: bool,
    padding_value: f64,
    padding_side: &str,
) -> Result<Tensor> {
    const OP: &str = "pad_sequence";
    let first = sequences
        .first()
        .ok_or_else(|| Error::Invalid(format!("{OP}: received an empty list of sequences")))?;
    if !matches!(padding_side, "right" | "left") {
        return Err(Error::Invalid(format!(
            "{OP}: padding_side must be \"left\" or \"right\", got \"{padding_side}\""
        )));
    }
    let trailing = |t: &Tensor| t.shape().get(1..).unwrap_or(&[]).to_vec();
    for (i, s) in sequences.iter().enumerate() {
        if s.rank() == 0 || first.rank() == 0 || trailing(s) != trailing(first) {
            return Err(Error::BadShape(format!(
                "{OP}: every sequence must be [L, {rest}] (at least 1-D), sequence {i} has shape \
                 {:?} (sequence 0: {:?})",
                s.shape(),
                first.shape(),
                rest = trailing(first)
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    fill_value(OP, padding_value, first.dtype())?;
    let longest = sequences.iter().map(|s| s.shape()[0]).max().unwrap_or(0);
    let mut padded = Vec::with_capacity(sequences.len());
    for s in sequences {
        let short = longest - s.shape()[0];
        if short == 0 {
            padded.push(s.clone());
            continue;
        }
        let mut shape = vec![short];
        shape.extend_from_slice(&s.shape()[1..]);
        let fill = Tensor::full_dtype(shape, padding_value, s.dtype(), s.device())?;
        let parts = if padding_side == "right" {
            [s.clone(), fill]
        } else {
            [fill, s.clone()]
        };
        padded.push(Tensor::cat(&parts, 0)?);
    }
    Tensor::stack(&padded, if batch_first { 0 } else { 1 })
}

/// The sequences of a padded batch, each cut to its length (torch's `unpad_sequence`).
pub fn unpad_sequence(
    padded: &Tensor,
    lengths: &[usize],
    batch_first: bool,
) -> Result<Vec<Tensor>> {
    const OP: &str = "unpad_sequence";
    if padded.rank() < 2 {
        return Err(Error::BadShape(format!(
            "{OP}: expected a padded batch [T, N, *] or [N, T, *], got {:?}",
            padded.shape()
        )));
    }
    let (batch, time) = if batch_first { (0, 1) } else { (1, 0) };
    let (n, steps) = (padded.shape()[batch], padded.shape()[time]);
    if lengths.len() != n || lengths.iter().any(|&l| l > steps) {
        return Err(Error::BadShape(format!(
            "{OP}: lengths {lengths:?} do not fit a batch of {n} sequences of at most {steps} \
             steps (shape {:?})",
            padded.shape()
        )));
    }
    lengths
        .iter()
        .enumerate()
        .map(|(b, &l)| padded.select(batch as isize, b as isize)?.narrow(0, 0, l))
        .collect()
}

/// Packs `sequences` (each `[L_i, *]`) as `pack_padded_sequence` of their `pad_sequence`
/// (torch's `pack_sequence`).
pub fn pack_sequence(sequences: &[Tensor], enforce_sorted: bool) -> Result<PackedSequence> {
    let lengths: Vec<usize> = sequences
        .iter()
        .map(|s| s.shape().first().copied().unwrap_or(0))
        .collect();
    let padded = pad_sequence(sequences, false, 0.0, "right")?;
    pack_padded_sequence(&padded, &lengths, false, enforce_sorted)
}

/// The sequences a `PackedSequence` holds, in the batch's order (torch's
/// `unpack_sequence`).
pub fn unpack_sequence(sequence: &PackedSequence) -> Result<Vec<Tensor>> {
    let (padded, lengths) = pad_packed_sequence(sequence, true, 0.0, None)?;
    unpad_sequence(&padded, &lengths, true)
}
