//! Trigonometric and hyperbolic functions and their inverses, element-wise, as torch's: an
//! integer or bool tensor is converted to float32 first, and each has its gradient.

use super::autocast::{autocast1, AmpOp};
use super::op::{BinaryOp, UnaryOp};
use super::Tensor;
use crate::error::Result;

macro_rules! unary_fns {
    ($($(#[$doc:meta])* $name:ident => $op:ident),* $(,)?) => {
        impl Tensor {
            $(
                $(#[$doc])*
                pub fn $name(&self) -> Result<Tensor> {
                    self.unary(UnaryOp::$op)
                }
            )*
        }
    };
}

/// The ones torch's CUDA autocast runs in float32 (they overflow float16 early: `sinh(12)`
/// is past its largest value).
macro_rules! unary_fns_f32_under_autocast {
    ($($(#[$doc:meta])* $name:ident => $op:ident),* $(,)?) => {
        impl Tensor {
            $(
                $(#[$doc])*
                pub fn $name(&self) -> Result<Tensor> {
                    if let Some(r) = autocast1(AmpOp::Trig, stringify!($name), self, |x| x.$name()) {
                        return r;
                    }
                    self.unary(UnaryOp::$op)
                }
            )*
        }
    };
}

unary_fns_f32_under_autocast!(
    /// Tangent, element-wise (radians).
    tan => Tan,
    /// Inverse sine, in `[-pi/2, pi/2]`; NaN outside `[-1, 1]`.
    asin => Asin,
    /// Inverse cosine, in `[0, pi]`; NaN outside `[-1, 1]`.
    acos => Acos,
    /// Hyperbolic sine.
    sinh => Sinh,
    /// Hyperbolic cosine.
    cosh => Cosh,
);

unary_fns!(
    /// Inverse tangent, in `(-pi/2, pi/2)`.
    atan => Atan,
    /// Inverse hyperbolic sine.
    asinh => Asinh,
    /// Inverse hyperbolic cosine; NaN below 1.
    acosh => Acosh,
    /// Inverse hyperbolic tangent; infinite at ±1, NaN beyond.
    atanh => Atanh,
);

impl Tensor {
    /// The angle of the point `(other, self)`, element-wise: `atan(self / other)` placed in
    /// the right quadrant, in `[-pi, pi]` (torch's `atan2(input, other)`, `y.atan2(&x)`).
    /// The two broadcast; integers give float32.
    pub fn atan2(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(other.into(), BinaryOp::Atan2)
    }

    /// Degrees to radians (torch's `deg2rad`); integers give float32.
    pub fn deg2rad(&self) -> Result<Tensor> {
        self.float_or_self()?.mul(std::f64::consts::PI / 180.0)
    }

    /// Radians to degrees (torch's `rad2deg`); integers give float32.
    pub fn rad2deg(&self) -> Result<Tensor> {
        self.float_or_self()?.mul(180.0 / std::f64::consts::PI)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Device, Tensor};

    fn t(v: Vec<f64>) -> Tensor {
        Tensor::from_vec(v, 4, Device::Cpu).unwrap()
    }

    #[test]
    fn inverse_functions_undo_their_functions_and_gradients_match_the_derivatives() {
        let x = t(vec![-0.9, -0.3, 0.2, 0.7]).requires_grad_(true).unwrap();
        for (name, f, inv, d) in [
            (
                "tan",
                Tensor::tan as fn(&Tensor) -> crate::error::Result<Tensor>,
                Tensor::atan as fn(&Tensor) -> crate::error::Result<Tensor>,
                (|v: f64| 1.0 / v.cos().powi(2)) as fn(f64) -> f64,
            ),
            ("sin", Tensor::sin, Tensor::asin, |v: f64| v.cos()),
            ("cos", Tensor::cos, Tensor::acos, |v: f64| -v.sin()),
            ("sinh", Tensor::sinh, Tensor::asinh, |v: f64| v.cosh()),
            ("tanh", Tensor::tanh, Tensor::atanh, |v: f64| {
                1.0 - v.tanh().powi(2)
            }),
        ] {
            let y = f(&x).unwrap();
            let back = inv(&y.detach()).unwrap().to_vec::<f64>().unwrap();
            let xs = x.to_vec::<f64>().unwrap();
            for (a, b) in xs.iter().zip(&back) {
                // acos(cos(x)) is |x|.
                let a = if name == "cos" { a.abs() } else { *a };
                assert!((a - b).abs() < 1e-12, "{name}: {a} vs {b}");
            }
            y.sum().unwrap().backward().unwrap();
            let g = x.grad().unwrap().to_vec::<f64>().unwrap();
            for (v, gv) in xs.iter().zip(&g) {
                assert!((d(*v) - gv).abs() < 1e-12, "{name}'({v}): {gv}");
            }
            x.zero_grad();
        }
        let c = t(vec![1.5, 2.0, 3.0, 10.0]).requires_grad_(true).unwrap();
        let y = c.cosh().unwrap().acosh().unwrap();
        assert!(y
            .to_vec::<f64>()
            .unwrap()
            .iter()
            .zip([1.5, 2.0, 3.0, 10.0])
            .all(|(a, b)| (a - b).abs() < 1e-9));
    }

    #[test]
    fn atan2_finds_the_quadrant_and_its_gradient_is_the_rotation() {
        let y = t(vec![1.0, 1.0, -1.0, -1.0]).requires_grad_(true).unwrap();
        let x = t(vec![1.0, -1.0, -1.0, 1.0]).requires_grad_(true).unwrap();
        let a = y.atan2(&x).unwrap();
        let pi = std::f64::consts::PI;
        let want = [pi / 4.0, 3.0 * pi / 4.0, -3.0 * pi / 4.0, -pi / 4.0];
        for (g, w) in a.to_vec::<f64>().unwrap().iter().zip(want) {
            assert!((g - w).abs() < 1e-15, "{g} vs {w}");
        }
        assert_eq!(a.grad_fn(), Some("Atan2Backward0"));
        a.sum().unwrap().backward().unwrap();
        // x / (x^2 + y^2) for y, -y / (x^2 + y^2) for x, with x^2 + y^2 = 2.
        assert_eq!(
            y.grad().unwrap().to_vec::<f64>().unwrap(),
            [0.5, -0.5, -0.5, 0.5]
        );
        assert_eq!(
            x.grad().unwrap().to_vec::<f64>().unwrap(),
            [-0.5, -0.5, 0.5, 0.5]
        );
        let ints = Tensor::from_vec(vec![1i64, -1], 2, Device::Cpu).unwrap();
        assert_eq!(
            ints.atan2(&ints).unwrap().dtype(),
            crate::tensor::DType::F32
        );
        assert_eq!(
            Tensor::from_vec(vec![180i64], 1, Device::Cpu)
                .unwrap()
                .deg2rad()
                .unwrap()
                .to_vec::<f32>()
                .unwrap(),
            [std::f32::consts::PI]
        );
    }
}
