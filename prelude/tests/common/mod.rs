//! Helpers shared by the tensor tests, so the CPU and GPU suites feed the same inputs and
//! judge results by the same tolerance.

/// Deterministic, irregular test data without touching the crate's generator.
pub fn data(n: usize, salt: u32) -> Vec<f32> {
    let mix = salt.wrapping_mul(0x9E37_79B9) | 1;
    (0..n)
        .map(|i| ((((i as u32) ^ mix).wrapping_mul(2654435761) >> 8) % 2000) as f32 / 100.0 - 10.0)
        .collect()
}

/// `x` matches the expected `y` within `tol`, relative above 1 and absolute below; NaN
/// matches only NaN.
pub fn within(x: f32, y: f32, tol: f32) -> bool {
    (x.is_nan() && y.is_nan()) || (x - y).abs() <= tol * (1.0 + y.abs())
}
