//! torch's `einsum`: products and sums of tensors named by index letters
//! (`"ij,jk->ik"`, `...` for unnamed leading dimensions), built from views, `index_select` (a repeated letter in one operand, a
//! diagonal), sums and one batched `matmul` per pair of operands, so it runs on every device
//! with gradients from those ops.

use super::Tensor;
use crate::error::{Error, Result};

fn bad(eq: &str, why: impl std::fmt::Display) -> Error {
    Error::Invalid(format!("einsum {eq:?}: {why}"))
}

/// One operand with one letter per dimension.
struct Term {
    t: Tensor,
    labels: Vec<char>,
}

impl Term {
    fn size(&self, l: char) -> usize {
        let i = self
            .labels
            .iter()
            .position(|&c| c == l)
            .expect("a label of this term");
        self.t.shape()[i]
    }

    /// The operand with its dimensions in the order `order` (each a label it has).
    fn permuted(&self, order: &[char]) -> Result<Tensor> {
        let perm: Vec<isize> = order
            .iter()
            .map(|l| self.labels.iter().position(|c| c == l).expect("label") as isize)
            .collect();
        if perm.iter().enumerate().all(|(i, &p)| i as isize == p) {
            return Ok(self.t.clone());
        }
        self.t.permute(&perm)
    }

    /// A letter repeated in this operand takes the diagonal: `ii` becomes `i`.
    fn diagonals(mut self, eq: &str) -> Result<Term> {
        while let Some((p, q)) = (0..self.labels.len()).find_map(|p| {
            (p + 1..self.labels.len())
                .find(|&q| self.labels[q] == self.labels[p])
                .map(|q| (p, q))
        }) {
            let n = self.t.shape()[p];
            if self.t.shape()[q] != n {
                return Err(bad(
                    eq,
                    format!(
                        "letter {:?} is repeated over dimensions of sizes {n} and {}",
                        self.labels[p],
                        self.t.shape()[q]
                    ),
                ));
            }
            // The diagonal comes last, after the other dimensions in their order.
            self.t = self.t.diagonal(0, p as isize, q as isize)?;
            let l = self.labels[p];
            self.labels = (0..self.labels.len())
                .filter(|&i| i != p && i != q)
                .map(|i| self.labels[i])
                .collect();
            self.labels.push(l);
        }
        Ok(self)
    }

    /// Sums out the letters that no other operand and not the output need.
    fn sum_unneeded(mut self, needed: &[char]) -> Result<Term> {
        let mut i = self.labels.len();
        while i > 0 {
            i -= 1;
            if !needed.contains(&self.labels[i]) {
                self.t = self.t.sum_dim(i as isize)?;
                self.labels.remove(i);
            }
        }
        Ok(self)
    }
}

/// The contraction of two operands into the letters `keep` (in any order; the result's
/// letters are returned with it): a batched matmul over the shared letters.
fn contract(a: Term, b: Term, keep: &[char]) -> Result<Term> {
    let shared: Vec<char> = a
        .labels
        .iter()
        .copied()
        .filter(|l| b.labels.contains(l))
        .collect();
    let batch: Vec<char> = shared
        .iter()
        .copied()
        .filter(|l| keep.contains(l))
        .collect();
    let summed: Vec<char> = shared
        .iter()
        .copied()
        .filter(|l| !keep.contains(l))
        .collect();
    let left: Vec<char> = a
        .labels
        .iter()
        .copied()
        .filter(|l| !shared.contains(l))
        .collect();
    let right: Vec<char> = b
        .labels
        .iter()
        .copied()
        .filter(|l| !shared.contains(l))
        .collect();
    let prod = |ls: &[char], t: &Term| ls.iter().map(|&l| t.size(l)).product::<usize>();
    let (nb, nl, nk, nr) = (
        prod(&batch, &a),
        prod(&left, &a),
        prod(&summed, &a),
        prod(&right, &b),
    );
    let order_a: Vec<char> = batch.iter().chain(&left).chain(&summed).copied().collect();
    let order_b: Vec<char> = batch.iter().chain(&summed).chain(&right).copied().collect();
    let a3 = a.permuted(&order_a)?.reshape([nb, nl, nk])?;
    let b3 = b.permuted(&order_b)?.reshape([nb, nk, nr])?;
    let mut dims: Vec<usize> = batch.iter().map(|&l| a.size(l)).collect();
    dims.extend(left.iter().map(|&l| a.size(l)));
    dims.extend(right.iter().map(|&l| b.size(l)));
    // Nothing summed: a broadcast product (exact, and defined for bool, which matmul is not).
    let t = if summed.is_empty() {
        a3.mul(&b3.reshape([nb, 1, nr])?)?
    } else {
        a3.matmul(&b3)?
    };
    let t = t.reshape(dims)?;
    let labels = batch.iter().chain(&left).chain(&right).copied().collect();
    Ok(Term { t, labels })
}

impl Tensor {
    /// torch's `einsum`: `equation` names each operand's dimensions by letters, separated by
    /// commas, and the result's after `->` (without it: the letters used once, in alphabetical
    /// order). Letters shared by operands are multiplied along, letters missing from the
    /// result summed over, a letter repeated in one operand takes its diagonal:
    /// `"ij,jk->ik"` is a matrix product, `"ii->"` a trace, `"bij,bjk->bik"` a batched product.
    /// `...` stands for the dimensions an operand does not name: they broadcast across the
    /// operands (`"...ij,...jk->...ik"` is a batched product over any leading dimensions) and
    /// come first in an output without `->`; an output that leaves them out sums them.
    pub fn einsum(equation: &str, operands: &[&Tensor]) -> Result<Tensor> {
        let eq: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
        let (lhs, out) = match eq.split_once("->") {
            Some((l, o)) => (l, Some(o)),
            None => (eq.as_str(), None),
        };
        let inputs: Vec<&str> = lhs.split(',').collect();
        if inputs.len() != operands.len() {
            return Err(bad(
                equation,
                format!("{} operands named, {} given", inputs.len(), operands.len()),
            ));
        }
        // Each operand as (letters before `...`, how many dimensions `...` covers, letters
        // after), or no `...`.
        let mut parts = Vec::with_capacity(operands.len());
        for (s, t) in inputs.iter().zip(operands) {
            let (before, after, ellipsis) = match s.split_once("...") {
                Some((b, a)) => (b, a, true),
                None => (*s, "", false),
            };
            if let Some(c) = before
                .chars()
                .chain(after.chars())
                .find(|c| !c.is_ascii_alphabetic())
            {
                return Err(bad(equation, format!("{c:?} is not a letter (in {s:?})")));
            }
            let named = before.len() + after.len();
            if named > t.rank() || (!ellipsis && named != t.rank()) {
                return Err(bad(
                    equation,
                    format!(
                        "operand {s:?} names {named} dimensions, but the tensor has shape {:?}",
                        t.shape()
                    ),
                ));
            }
            let covered = if ellipsis { t.rank() - named } else { 0 };
            parts.push((before, covered, after));
        }
        // `...`'s dimensions get letters of their own (Greek, which equations cannot use),
        // right-aligned across the operands as broadcasting aligns them.
        let wide = parts.iter().map(|p| p.1).max().unwrap_or(0);
        let fresh: Vec<char> = (0..wide as u32)
            .map(|k| char::from_u32(0x3B1 + k).expect("a Greek letter"))
            .collect();
        let mut sizes = vec![1usize; wide];
        for ((before, covered, _), t) in parts.iter().zip(operands) {
            let at = before.len();
            for k in 0..*covered {
                let (n, slot) = (t.shape()[at + k], wide - covered + k);
                if n != 1 && sizes[slot] != 1 && sizes[slot] != n {
                    return Err(bad(
                        equation,
                        format!(
                            "the dimensions under ... do not broadcast: size {n} against {} \
                             (shape {:?})",
                            sizes[slot],
                            t.shape()
                        ),
                    ));
                }
                if n != 1 {
                    sizes[slot] = n;
                }
            }
        }
        let mut terms = Vec::with_capacity(operands.len());
        for ((before, covered, after), t) in parts.iter().zip(operands) {
            let labels: Vec<char> = before
                .chars()
                .chain(fresh[wide - covered..].iter().copied())
                .chain(after.chars())
                .collect();
            // Size-1 dimensions under `...` broadcast: expanded (a view) to the common size.
            let mut dims = t.shape().to_vec();
            for k in 0..*covered {
                dims[before.len() + k] = sizes[wide - covered + k];
            }
            let t = if dims == t.shape() {
                (*t).clone()
            } else {
                t.expand(dims)?
            };
            terms.push(Term { t, labels });
        }
        let out = out.map(|o| match o.split_once("...") {
            Some((b, a)) => b
                .chars()
                .chain(fresh.iter().copied())
                .chain(a.chars())
                .collect(),
            None => o.to_string(),
        });
        if let Some(c) = out.as_deref().and_then(|o| {
            o.chars()
                .find(|c| !c.is_ascii_alphabetic() && !fresh.contains(c))
        }) {
            return Err(bad(
                equation,
                format!("{c:?} is not a letter (in the output)"),
            ));
        }
        let all: Vec<char> = terms.iter().flat_map(|t| t.labels.clone()).collect();
        let out: Vec<char> = match out {
            Some(o) => o.chars().collect(),
            None => {
                // `...`'s dimensions first, then the letters used once, alphabetically.
                let mut once: Vec<char> = all
                    .iter()
                    .copied()
                    .filter(|l| !fresh.contains(l))
                    .filter(|l| all.iter().filter(|m| *m == l).count() == 1)
                    .collect();
                once.sort_unstable();
                fresh.iter().copied().chain(once).collect()
            }
        };
        for (i, l) in out.iter().enumerate() {
            if !all.contains(l) {
                return Err(bad(
                    equation,
                    format!("output letter {l:?} names no operand's dimension"),
                ));
            }
            if out[..i].contains(l) {
                return Err(bad(equation, format!("output letter {l:?} appears twice")));
            }
        }
        // One size per letter across the operands.
        for (i, a) in terms.iter().enumerate() {
            for (j, &l) in a.labels.iter().enumerate() {
                for b in &terms[i..] {
                    for (k, &m) in b.labels.iter().enumerate() {
                        if l == m && a.t.shape()[j] != b.t.shape()[k] {
                            return Err(bad(
                                equation,
                                format!(
                                    "letter {l:?} has sizes {} and {} (shapes {:?} and {:?})",
                                    a.t.shape()[j],
                                    b.t.shape()[k],
                                    a.t.shape(),
                                    b.t.shape()
                                ),
                            ));
                        }
                    }
                }
            }
        }
        let mut terms: Vec<Term> = terms
            .into_iter()
            .map(|t| t.diagonals(equation))
            .collect::<Result<_>>()?;
        // Left to right: each pair contracted into what the output and the rest still need.
        let needed_after = |terms: &[Term], from: usize| -> Vec<char> {
            out.iter()
                .copied()
                .chain(terms[from..].iter().flat_map(|t| t.labels.clone()))
                .collect()
        };
        let first = terms.remove(0);
        let mut acc = first.sum_unneeded(&needed_after(&terms, 0))?;
        while !terms.is_empty() {
            let next = terms.remove(0);
            let keep = needed_after(&terms, 0);
            let next = next.sum_unneeded(&[keep.clone(), acc.labels.clone()].concat())?;
            acc = acc.sum_unneeded(&[keep.clone(), next.labels.clone()].concat())?;
            acc = contract(acc, next, &keep)?;
        }
        let acc = acc.sum_unneeded(&out)?;
        acc.permuted(&out)
    }
}
