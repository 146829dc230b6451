//! A small seeded generator for data work (shuffling, augmentation, synthetic datasets), apart
//! from the global one behind `Tensor::rand`, so that drawing a batch does not change the numbers
//! a later `Tensor::randn` gives. SplitMix64: fast, and one seed gives one sequence everywhere.

use crate::tensor::SplitMix;

/// SplitMix64 (the step of `tensor::random`, which `Tensor::rand` uses, with a state of its
/// own) with helpers for the draws data code needs.
#[derive(Clone)]
pub struct Rng(SplitMix);

/// Shown as before it wrapped `SplitMix`: `Rng(state)`.
impl std::fmt::Debug for Rng {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Rng").field(&self.0.state()).finish()
    }
}

impl Rng {
    /// A generator whose sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(SplitMix::new(seed))
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0.next()
    }

    /// Uniform in [0, 1): the top 24 bits, exactly representable in f32.
    #[inline]
    pub fn unit(&mut self) -> f32 {
        self.0.unit()
    }

    /// Uniform in [lo, hi).
    #[inline]
    pub fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.unit()
    }

    /// Uniform integer in `0..n` (n > 0); Lemire's multiply-shift, bias below 2^-32 for the
    /// sizes data code uses.
    #[inline]
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }

    /// True with probability `p`.
    #[inline]
    pub fn chance(&mut self, p: f32) -> bool {
        self.unit() < p
    }

    /// A standard normal sample (Box-Muller).
    pub fn normal(&mut self) -> f32 {
        let u1 = 1.0 - self.unit() as f64;
        let u2 = self.unit() as f64;
        ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
    }

    /// Fisher-Yates shuffle in place.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sequence is SplitMix64's, bit for bit: seeded datasets, loader orders and
    /// augmentations depend on it staying the same.
    #[test]
    fn the_sequence_is_splitmix64s() {
        let mut r = Rng::new(0);
        // SplitMix64's published first outputs for seed 0.
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(r.next_u64(), 0x06C4_5D18_8009_454F);
        let mut r = Rng::new(0);
        assert_eq!(
            r.unit(),
            (0xE220_A839_7B1D_CDAFu64 >> 40) as f32 / (1u64 << 24) as f32
        );
        assert_eq!(format!("{:?}", Rng::new(5)), "Rng(5)");
    }

    #[test]
    fn same_seed_same_sequence_and_shuffle_is_a_permutation() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        assert_eq!(
            (0..5).map(|_| a.next_u64()).collect::<Vec<_>>(),
            (0..5).map(|_| b.next_u64()).collect::<Vec<_>>()
        );
        let mut v: Vec<usize> = (0..100).collect();
        Rng::new(3).shuffle(&mut v);
        assert_ne!(v, (0..100).collect::<Vec<_>>());
        v.sort();
        assert_eq!(v, (0..100).collect::<Vec<_>>());
        let mut r = Rng::new(1);
        assert!((0..1000).all(|_| r.below(10) < 10));
    }
}
