//! Division with a rounded quotient, element-wise, as torch's: `fmod` (the remainder of the
//! truncated quotient, C's `%`), `remainder` (of the floored quotient, Python's `%`) and
//! `floor_divide` (Python's `//`). Integer tensors stay integer, and a zero integer divisor is
//! an error (torch's ZeroDivisionError); in a float dtype it gives IEEE's NaN or infinity.

use super::arith::Operand;
use super::op::BinaryOp;
use super::Tensor;
use crate::error::Result;

impl Tensor {
    /// `self - trunc(self / other) * other`: the remainder with the dividend's sign (torch's
    /// `fmod`; `fmod(-7, 3)` is -1). `other` is a tensor (broadcast) or a number.
    pub fn fmod<'a>(&self, other: impl Into<Operand<'a>>) -> Result<Tensor> {
        self.binary(other.into(), BinaryOp::Fmod)
    }

    /// `self - floor(self / other) * other`: the remainder with the divisor's sign, Python's
    /// `%` (torch's `remainder`; `remainder(-7, 3)` is 2).
    pub fn remainder<'a>(&self, other: impl Into<Operand<'a>>) -> Result<Tensor> {
        self.binary(other.into(), BinaryOp::Remainder)
    }

    /// `floor(self / other)`, Python's `//` (torch's `floor_divide`, `div(.., rounding_mode=
    /// 'floor')`): integers stay integers. Piecewise constant, so it has no gradient (torch
    /// refuses to differentiate it; here the result does not require grad).
    pub fn floor_divide<'a>(&self, other: impl Into<Operand<'a>>) -> Result<Tensor> {
        self.binary(other.into(), BinaryOp::FloorDivide)
    }

    /// [`Tensor::fmod`] written into this tensor (torch's `fmod_`).
    pub fn fmod_<'a>(&self, other: impl Into<Operand<'a>>) -> Result<()> {
        self.inplace("fmod_", self.fmod(other))
    }

    /// [`Tensor::remainder`] written into this tensor (torch's `remainder_`).
    pub fn remainder_<'a>(&self, other: impl Into<Operand<'a>>) -> Result<()> {
        self.inplace("remainder_", self.remainder(other))
    }
}

#[cfg(test)]
mod tests {
    use crate::tensor::DType;
    use crate::{Device, Tensor};

    #[test]
    fn signs_follow_the_dividend_for_fmod_and_the_divisor_for_remainder() {
        let a = Tensor::from_vec(vec![-7i64, -3, 0, 3, 7, i64::MIN], 6, Device::Cpu).unwrap();
        let b = Tensor::from_vec(vec![2i64, -2, 3, -2, 3, -1], 6, Device::Cpu).unwrap();
        let v = |t: Tensor| {
            assert_eq!(t.dtype(), DType::I64);
            t.to_vec::<i64>().unwrap()
        };
        assert_eq!(v(a.fmod(&b).unwrap()), [-1, -1, 0, 1, 1, 0]);
        assert_eq!(v(a.remainder(&b).unwrap()), [1, -1, 0, -1, 1, 0]);
        // i64::MIN // -1 wraps, as torch's.
        assert_eq!(v(a.floor_divide(&b).unwrap()), [-4, 1, 0, -2, 2, i64::MIN]);
        let f = a.narrow(0, 0, 5).unwrap().to_dtype(DType::F64).unwrap();
        let fb = b.narrow(0, 0, 5).unwrap().to_dtype(DType::F64).unwrap();
        assert_eq!(
            f.remainder(&fb).unwrap().to_vec::<f64>().unwrap(),
            [1.0, -1.0, 0.0, -1.0, 1.0]
        );
        assert_eq!(
            f.floor_divide(2.5).unwrap().to_vec::<f64>().unwrap(),
            [-3.0, -2.0, 0.0, 1.0, 2.0]
        );
    }

    #[test]
    fn a_zero_integer_divisor_is_an_error_and_a_zero_float_one_is_ieee() {
        let a = Tensor::from_vec(vec![5i32, -5], 2, Device::Cpu).unwrap();
        let zero = Tensor::from_vec(vec![1i32, 0], 2, Device::Cpu).unwrap();
        for e in [
            a.fmod(&zero).unwrap_err(),
            a.remainder(0).unwrap_err(),
            a.floor_divide(&zero).unwrap_err(),
        ] {
            let e = e.to_string();
            assert!(
                e.contains("ZeroDivisionError") && e.contains("int32"),
                "{e}"
            );
        }
        let f = a.to_dtype(DType::F32).unwrap();
        let r = f.floor_divide(0.0).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(r, [f32::INFINITY, f32::NEG_INFINITY]);
        assert!(f.fmod(0.0).unwrap().to_vec::<f32>().unwrap()[0].is_nan());
        let bools = Tensor::from_vec(vec![true], 1, Device::Cpu).unwrap();
        let e = bools.fmod(&bools).unwrap_err().to_string();
        assert!(e.contains("fmod") && e.contains("bool"), "{e}");
    }

    #[test]
    fn gradients_are_one_and_minus_the_rounded_quotient() {
        let x = Tensor::from_vec(vec![1.5f64, -2.0], 2, Device::Cpu)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let y = Tensor::from_vec(vec![-0.5f64, 0.75], 2, Device::Cpu)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let f = x.fmod(&y).unwrap();
        assert_eq!(f.grad_fn(), Some("FmodBackward1"));
        f.sum().unwrap().backward().unwrap();
        assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), [1.0, 1.0]);
        assert_eq!(y.grad().unwrap().to_vec::<f64>().unwrap(), [3.0, 2.0]);
        x.zero_grad();
        y.zero_grad();
        x.remainder(&y).unwrap().sum().unwrap().backward().unwrap();
        assert_eq!(y.grad().unwrap().to_vec::<f64>().unwrap(), [3.0, 3.0]);
        assert!(!x.floor_divide(&y).unwrap().requires_grad());
    }
}
