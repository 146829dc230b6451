//! Distances and the vector product: `cdist` (every row of one set against every row of
//! another, the k-nearest-neighbours table), `dist` and `cross`, as torch's. The p-norms have
//! torch's backward rule (0 at a zero distance, the whole gradient to every tied element of the
//! infinity norm), so the gradient is defined where a point meets itself.

use super::shape::resolve_dim;
use super::Tensor;
use crate::autograd::{self, record, relabel, Saved};
use crate::error::{Error, Result};

/// The p-norm of `diff` along its last dimension, which disappears, with torch's gradient
/// (see the module's doc), recorded as `name`.
fn p_norm_last(diff: &Tensor, p: f64, name: &'static str) -> Result<Tensor> {
    let out = autograd::no_grad(|| {
        let a = diff.abs()?;
        if p == 0.0 {
            a.ne(0)?.to_dtype(diff.dtype())?.sum_dim(-1)
        } else if p == 1.0 {
            a.sum_dim(-1)
        } else if p == 2.0 {
            a.square()?.sum_dim(-1)?.sqrt()
        } else if p.is_infinite() {
            a.amax(&[-1], false)
        } else {
            a.pow(p)?.sum_dim(-1)?.pow(1.0 / p)
        }
    })?;
    let (ds, os) = (Saved::new(diff), Saved::new(&out));
    Ok(record(out, name, &[diff], move |g| {
        let (d, dist) = (ds.get()?, os.get()?.unsqueeze(-1)?);
        let zero = || Tensor::zeros_dtype((), d.dtype(), d.device());
        let per_elem = if p == 0.0 {
            d.zeros_like()?
        } else if p == 1.0 {
            d.sign()?
        } else if p.is_infinite() {
            d.sign()?.mul(&d.abs()?.eq(&dist)?.to_dtype(d.dtype())?)?
        } else {
            // sign(d) |d|^(p-1) / dist^(p-1) (d / dist for p = 2), 0 where dist is 0.
            let e = if p == 2.0 {
                d.div(&dist)?
            } else {
                d.sign()?
                    .mul(&d.abs()?.pow(p - 1.0)?)?
                    .div(&dist.pow(p - 1.0)?)?
            };
            zero()?.where_(&dist.eq(0)?, &e)?
        };
        Ok(vec![Some(g.unsqueeze(-1)?.mul(&per_elem)?)])
    }))
}

fn check_p(op: &str, p: f64) -> Result<()> {
    if p.is_nan() || p < 0.0 {
        return Err(Error::Invalid(format!(
            "{op}: p must be a non-negative number (or f64::INFINITY), got {p}"
        )));
    }
    Ok(())
}

impl Tensor {
    /// The p-norm distance between every row of this `[.., P, M]` tensor and every row of
    /// `other` (`[.., R, M]`), a `[.., P, R]` table (torch's `cdist`; leading batch dimensions
    /// broadcast). `p` is 2 for Euclidean, 1 for Manhattan, `f64::INFINITY` for the largest
    /// coordinate difference, 0 for the count of differing coordinates.
    pub fn cdist(&self, other: &Tensor, p: f64) -> Result<Tensor> {
        check_p("cdist", p)?;
        self.float_only("cdist")?;
        other.float_only("cdist")?;
        if self.rank() < 2 || other.rank() < 2 {
            return Err(Error::BadShape(format!(
                "cdist: needs tensors of at least 2 dimensions ([.., rows, features]), got \
                 shapes {:?} and {:?}",
                self.shape(),
                other.shape()
            )));
        }
        let (m1, m2) = (
            self.shape()[self.rank() - 1],
            other.shape()[other.rank() - 1],
        );
        if m1 != m2 {
            return Err(Error::BadShape(format!(
                "cdist: the two sets need the same number of features (last dimension), got \
                 shapes {:?} and {:?}",
                self.shape(),
                other.shape()
            )));
        }
        let diff = self.unsqueeze(-2)?.sub(&other.unsqueeze(-3)?)?;
        p_norm_last(&diff, p, "cdist")
    }

    /// The p-norm distance between every pair of rows `i < j` of this `[N, M]` tensor, pairs
    /// in row-major order: `N (N - 1) / 2` values, the upper triangle of `cdist(x, x)` above
    /// its diagonal (torch's `F.pdist`; `p` as `cdist`'s).
    pub fn pdist(&self, p: f64) -> Result<Tensor> {
        check_p("pdist", p)?;
        self.float_only("pdist")?;
        // As torch's, on either device (its kernels are float32 and float64 only).
        if matches!(self.dtype(), super::DType::F16 | super::DType::BF16) {
            return Err(Error::Invalid(format!(
                "pdist: needs float32 or float64, got {}; convert first with \
                 .to_dtype(DType::F32)",
                self.dtype()
            )));
        }
        if self.rank() != 2 {
            return Err(Error::BadShape(format!(
                "pdist: needs a 2-D tensor ([rows, features]), got shape {:?}",
                self.shape()
            )));
        }
        let n = self.shape()[0];
        let pairs = n * n.saturating_sub(1) / 2;
        crate::tensor::host_mem::host_room(pairs.saturating_mul(2), super::DType::I64)?;
        let (mut first, mut second) = (Vec::with_capacity(pairs), Vec::with_capacity(pairs));
        for i in 0..n {
            for j in i + 1..n {
                first.push(i as i64);
                second.push(j as i64);
            }
        }
        let rows = |v: Vec<i64>| -> Result<Tensor> {
            let idx = Tensor::from_vec(v, pairs, crate::Device::Cpu)?.to(self.device())?;
            self.index_select(0, &idx)
        };
        let diff = rows(first)?.sub(&rows(second)?)?;
        p_norm_last(&diff, p, "pdist")
    }

    /// The p-norm of `self - other` over all elements, a 0-d tensor (torch's `dist`); the two
    /// broadcast.
    pub fn dist(&self, other: &Tensor, p: f64) -> Result<Tensor> {
        check_p("dist", p)?;
        self.float_only("dist")?;
        other.float_only("dist")?;
        p_norm_last(&self.sub(other)?.flatten()?, p, "dist")
    }

    /// The p-norm of `self - other + eps` along the last dimension, one distance per row
    /// (torch's `F.pairwise_distance(x1, x2, p, eps, keepdim)`; its default eps is 1e-6, so
    /// the distance of a row to itself is not 0 and its gradient is defined). The two
    /// broadcast.
    pub fn pairwise_distance(
        &self,
        other: &Tensor,
        p: f64,
        eps: f64,
        keepdim: bool,
    ) -> Result<Tensor> {
        check_p("pairwise_distance", p)?;
        // As torch: integers subtract in their own dtype (uint8 wraps), then `+ eps` makes
        // the difference float32.
        let diff = self.sub(other)?.add(eps)?;
        let diff = if diff.rank() == 0 {
            diff.reshape([1])?
        } else {
            diff
        };
        let d = p_norm_last(&diff, p, "norm")?;
        if keepdim {
            d.unsqueeze(-1)
        } else {
            Ok(d)
        }
    }

    /// The vector (cross) product along `dim`, which has size 3 in both (torch's
    /// `linalg.cross`, `torch.cross(a, b, dim=..)`); the other dimensions broadcast.
    pub fn cross(&self, other: &Tensor, dim: isize) -> Result<Tensor> {
        let rank = self.rank().max(other.rank());
        let d = resolve_dim(dim, rank)?;
        let size = |t: &Tensor| {
            (d + t.rank())
                .checked_sub(rank)
                .map(|i| t.shape()[i])
                .unwrap_or(1)
        };
        if size(self) != 3 || size(other) != 3 {
            return Err(Error::BadShape(format!(
                "cross: dimension {dim} must have length 3 in both, got shapes {:?} and {:?}",
                self.shape(),
                other.shape()
            )));
        }
        // Component i is a[i+1] b[i+2] - a[i+2] b[i+1]: each a rolled along `dim`.
        let (da, db) = (
            (d + self.rank() - rank) as isize,
            (d + other.rank() - rank) as isize,
        );
        let out = self
            .roll(&[-1], &[da])?
            .mul(&other.roll(&[-2], &[db])?)?
            .sub(&self.roll(&[-2], &[da])?.mul(&other.roll(&[-1], &[db])?)?)?;
        Ok(relabel("cross", out))
    }
}

#[cfg(test)]
mod tests {
    use crate::{Device, Tensor};

    fn t(v: Vec<f64>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape.to_vec(), Device::Cpu).unwrap()
    }

    #[test]
    fn cdist_tables_every_pair_and_its_gradient_is_zero_where_points_meet() {
        let a = t(vec![0., 0., 3., 4.], &[2, 2])
            .requires_grad_(true)
            .unwrap();
        let b = t(vec![0., 0., 0., 4.], &[2, 2]);
        let d = a.cdist(&b, 2.0).unwrap();
        assert_eq!(d.shape(), &[2, 2]);
        assert_eq!(d.to_vec::<f64>().unwrap(), [0., 4., 5., 3.]);
        assert_eq!(d.grad_fn(), Some("CdistBackward0"));
        d.sum().unwrap().backward().unwrap();
        // Row 0 meets b's row 0 (gradient 0 there) and is 4 below b's row 1.
        assert_eq!(
            a.grad().unwrap().to_vec::<f64>().unwrap(),
            [0., -1., 1.6, 0.8]
        );
        for (p, want) in [
            (1.0, [0., 4., 7., 3.]),
            (f64::INFINITY, [0., 4., 4., 3.]),
            (0.0, [0., 1., 2., 1.]),
        ] {
            assert_eq!(
                a.cdist(&b, p).unwrap().to_vec::<f64>().unwrap(),
                want,
                "p={p}"
            );
        }
        let e = a
            .cdist(&b.narrow(1, 0, 1).unwrap(), 2.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("features") && e.contains("[2, 1]"), "{e}");
        let e = a.cdist(&b, -1.0).unwrap_err().to_string();
        assert!(e.contains("non-negative"), "{e}");
    }

    #[test]
    fn cross_is_the_right_handed_product() {
        let x = t(vec![1., 0., 0., 0., 1., 0.], &[2, 3]);
        let y = t(vec![0., 1., 0., 0., 0., 1.], &[2, 3]);
        assert_eq!(
            x.cross(&y, -1).unwrap().to_vec::<f64>().unwrap(),
            [0., 0., 1., 1., 0., 0.]
        );
        let e = x
            .narrow(1, 0, 2)
            .unwrap()
            .cross(&y.narrow(1, 0, 2).unwrap(), 1);
        assert!(e.unwrap_err().to_string().contains("length 3"));
        assert_eq!(x.dist(&y, 2.0).unwrap().item::<f64>().unwrap(), 2.0);
    }
}
