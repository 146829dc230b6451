//! Scalar definitions of the gamma-family functions and `erfinv`, which neither std nor libm
//! has: the CPU kernels of the `Digamma`, `Trigamma`, `Erfinv` and `Zeta` op codes call
//! them, and kernels-cu/elementwise.cu evaluates the same series on the device.
//!
//! They follow the expansions torch evaluates (Cephes' digamma and Hurwitz zeta, the
//! asymptotic trigamma after six recurrence steps, Newton-polished erfinv), so a result
//! agrees with torch's to its last few bits, including where torch's own series is only
//! good to about 1e-8 (trigamma near 0.5) and a more accurate formula would disagree.

use std::f64::consts::PI;

/// ψ(x), the logarithmic derivative of Γ: -inf at +0 and +inf at -0 (the limits from the
/// right and left), NaN at the negative integers, as torch's.
pub(crate) fn digamma(x: f64) -> f64 {
    if x == 0.0 {
        return f64::INFINITY.copysign(-x);
    }
    if x < 0.0 {
        if x == x.trunc() {
            return f64::NAN;
        }
        // Reflection, ψ(x) = ψ(1 - x) - π / tan(πx), with the tangent of the fractional part
        // only: π·x itself rounds badly once |x| > 1, and tan has period π.
        return digamma(1.0 - x) - PI / (PI * x.fract()).tan();
    }
    // Recurrence ψ(x) = ψ(x + 1) - 1/x up to 10, then the asymptotic series.
    let mut x = x;
    let mut acc = 0.0;
    while x < 10.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    if x == 10.0 {
        // ψ(10) exactly: H_9 - γ.
        return acc + 2.251_752_589_066_721;
    }
    // ψ(x) ~ ln x - 1/(2x) - Σ B_2k / (2k x^2k); past 1e17 the sum is below an ulp.
    let tail = if x < 1e17 {
        // B_2k / 2k for k = 7 down to 1, evaluated by Horner's rule in 1/x².
        const C: [f64; 7] = [
            1.0 / 12.0,
            -691.0 / 32760.0,
            1.0 / 132.0,
            -1.0 / 240.0,
            1.0 / 252.0,
            -1.0 / 120.0,
            1.0 / 12.0,
        ];
        let z = 1.0 / (x * x);
        z * C.iter().fold(0.0, |p, c| p * z + c)
    } else {
        0.0
    };
    acc + x.ln() - 0.5 / x - tail
}

/// ψ'(x), the trigamma function, in `$t` arithmetic throughout: reflected below 0.5, six
/// recurrence steps, then the asymptotic series, as torch's `calc_trigamma`. One body for
/// both precisions because torch evaluates float32 tensors in float32 on both devices, and
/// that matters at and near the poles: `sin(π x)` of a float32 negative integer is about
/// 1e-7, not 0 or 1e-16, so torch's ψ'(-1) is about 1.3e15 in float32, and so is ours.
macro_rules! trigamma_in {
    ($name:ident, $t:ty, $pi:expr) => {
        pub(crate) fn $name(x: $t) -> $t {
            let (mut x, mut sign, mut acc): ($t, $t, $t) = (x, 1.0, 0.0);
            if x < 0.5 {
                sign = -1.0;
                let s = ($pi * x).sin();
                acc -= $pi * $pi / (s * s);
                x = 1.0 - x;
            }
            for _ in 0..6 {
                acc += 1.0 / (x * x);
                x += 1.0;
            }
            let ixx = 1.0 / (x * x);
            acc +=
                (1.0 + 1.0 / (2.0 * x) + ixx * (1.0 / 6.0 - ixx * (1.0 / 30.0 - ixx / 42.0))) / x;
            sign * acc
        }
    };
}
trigamma_in!(trigamma, f64, std::f64::consts::PI);
trigamma_in!(trigamma_f32, f32, std::f32::consts::PI);

/// The Hurwitz zeta function ζ(x, q) = Σ_k (k + q)^-x (torch's `special.zeta`): direct
/// terms until q + k passes 9, then Euler-Maclaurin. Infinite at x = 1 and at q a
/// non-positive integer, NaN for x < 1 and for a negative q with a fractional x.
pub(crate) fn zeta(x: f64, q: f64) -> f64 {
    const EPS: f64 = 1.110_223_024_625_156_5e-16;
    // (2k)! / B_2k, k = 1..12: the Euler-Maclaurin correction's denominators.
    const A: [f64; 12] = [
        12.0,
        -720.0,
        30240.0,
        -1209600.0,
        47900160.0,
        -1.892_437_580_318_379_2e9,
        7.47242496e10,
        -2.950_130_727_918_164e12,
        1.164_678_281_435_006_7e14,
        -4.597_978_722_407_473e15,
        1.815_210_540_194_354_7e17,
        -7.166_165_256_175_667e18,
    ];
    if x == 1.0 {
        return f64::INFINITY;
    }
    if x < 1.0 {
        return f64::NAN;
    }
    if q <= 0.0 {
        if q == q.floor() {
            return f64::INFINITY;
        }
        if x != x.floor() {
            // (k + q)^-x has no real value for a negative base.
            return f64::NAN;
        }
    }
    let mut s = q.powf(-x);
    let (mut a, mut b, mut i) = (q, 0.0, 0);
    while i < 9 || a <= 9.0 {
        i += 1;
        a += 1.0;
        b = a.powf(-x);
        s += b;
        if (-EPS * s < b) && (b < EPS * s) {
            return s;
        }
    }
    let w = a;
    s += b * w / (x - 1.0);
    s -= 0.5 * b;
    let (mut fac, mut k) = (1.0, 0.0);
    for d in A {
        fac *= x + k;
        b /= w;
        let t = fac * b / d;
        s += t;
        if (t / s).abs() < EPS {
            return s;
        }
        k += 1.0;
        fac *= x + k;
        b /= w;
        k += 1.0;
    }
    s
}

/// The inverse of erf on (-1, 1): ±inf at ±1, NaN beyond. A first guess good to single
/// precision (`erfinv_guess`), then two Newton steps on erf(x) - y, as torch's
/// `calc_erfinv` ends.
pub(crate) fn erfinv(y: f64) -> f64 {
    if y.is_nan() || y.abs() > 1.0 {
        return f64::NAN;
    }
    if y.abs() == 1.0 {
        return f64::INFINITY.copysign(y);
    }
    let mut x = erfinv_guess(y);
    let slope = std::f64::consts::FRAC_2_SQRT_PI;
    for _ in 0..2 {
        x -= (libm::erf(x) - y) / (slope * (-x * x).exp());
    }
    x
}

/// M. Giles' single-precision approximation of erfinv ("Approximating the erfinv function",
/// 2010): a polynomial in w = -ln(1 - y²), one form for the centre and one for the tails.
fn erfinv_guess(y: f64) -> f64 {
    let w = -((1.0 - y) * (1.0 + y)).ln();
    let p = if w < 5.0 {
        let w = w - 2.5;
        [
            2.810_226_36e-08,
            3.432_739_39e-07,
            -3.523_387_7e-06,
            -4.391_506_54e-06,
            0.000_218_580_87,
            -0.001_253_725_03,
            -0.004_177_681_64,
            0.246_640_727,
            1.501_409_41,
        ]
        .iter()
        .fold(0.0, |p, c| p * w + c)
    } else {
        let w = w.sqrt() - 3.0;
        [
            -0.000_200_214_257,
            0.000_100_950_558,
            0.001_349_343_22,
            -0.003_673_428_44,
            0.005_739_507_73,
            -0.007_622_461_3,
            0.009_438_870_47,
            1.001_674_06,
            2.832_976_82,
        ]
        .iter()
        .fold(0.0, |p, c| p * w + c)
    };
    p * y
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1.0)
    }

    #[test]
    fn digamma_meets_its_known_values_and_recurrence() {
        let euler = 0.577_215_664_901_532_9;
        assert!(close(digamma(1.0), -euler, 1e-15));
        assert!(close(digamma(0.5), -euler - 2.0 * 2f64.ln(), 1e-15));
        // ψ(x + 1) = ψ(x) + 1/x, across the recurrence's cut at 10 and the reflection.
        for x in [-3.7, -0.25, 0.3, 2.5, 9.5, 10.0, 10.5, 37.0, 1e5] {
            assert!(close(digamma(x + 1.0), digamma(x) + 1.0 / x, 1e-13), "{x}");
        }
        assert_eq!(digamma(0.0), f64::NEG_INFINITY);
        assert_eq!(digamma(-0.0), f64::INFINITY);
        assert!(digamma(-2.0).is_nan());
    }

    #[test]
    fn trigamma_and_zeta_meet_their_known_values() {
        let pi2 = PI * PI;
        assert!(close(trigamma(1.0), pi2 / 6.0, 1e-8));
        assert!(close(trigamma(0.5), pi2 / 2.0, 1e-8));
        // float32 keeps torch's float32 pole: sin(π·-1) in float32 is about -8.7e-8.
        let pole = trigamma_f32(-1.0);
        assert!((1.2e15..1.4e15).contains(&pole), "{pole}");
        assert!(((trigamma_f32(2.5) as f64) / trigamma(2.5) - 1.0).abs() < 1e-6);
        // ζ(2, 1) = π²/6, ζ(4, 1) = π⁴/90, ζ(2, 1/2) = π²/2 (the direct sum and the tail).
        assert!(close(zeta(2.0, 1.0), pi2 / 6.0, 1e-15));
        assert!(close(zeta(4.0, 1.0), pi2 * pi2 / 90.0, 1e-15));
        assert!(close(zeta(2.0, 0.5), pi2 / 2.0, 1e-15));
        // Apéry's constant, ζ(3).
        assert!(close(zeta(3.0, 1.0), 1.202_056_903_159_594_3, 1e-15));
        assert_eq!(zeta(1.0, 2.0), f64::INFINITY);
        assert!(zeta(0.5, 2.0).is_nan());
        assert_eq!(zeta(3.0, -2.0), f64::INFINITY);
        assert!(zeta(2.5, -1.5).is_nan());
    }

    #[test]
    fn erfinv_inverts_erf_to_the_last_bits() {
        for y in [-0.999, -0.9, -0.5, -1e-9, 0.0, 0.1, 0.7, 0.95, 0.999_999] {
            let x = erfinv(y);
            assert!((libm::erf(x) - y).abs() <= 4e-16, "{y}: erf({x})");
        }
        assert_eq!(erfinv(1.0), f64::INFINITY);
        assert_eq!(erfinv(-1.0), f64::NEG_INFINITY);
        assert!(erfinv(1.5).is_nan() && erfinv(f64::NAN).is_nan());
    }
}
