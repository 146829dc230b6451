//! The seeded generator behind `rand`/`randn`: SplitMix64, drawn on the host so that one seed
//! gives the same numbers whatever the device. (Not torch's generator: the same seed gives
//! different numbers than torch does.)

use std::cell::Cell;
use std::sync::Mutex;

/// torch's default seed, so a fresh session is reproducible too.
static STATE: Mutex<u64> = Mutex::new(67280421310721);

thread_local! {
    /// The generator of the innermost [`fork_rng`] running on this thread, if any.
    static FORKED: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Seeds the generator used by `Tensor::rand` and `Tensor::randn` (and by everything drawn
/// from them: initial weights, dropout masks, loaders' shuffles). Like torch's, it is one
/// generator for the whole process; see [`fork_rng`] for a private one. Inside a
/// [`fork_rng`] it reseeds that fork's generator (the global one is left alone, as torch's
/// `fork_rng` restores it on exit).
pub fn manual_seed(seed: u64) {
    let forked = FORKED.with(|c| {
        let inside = c.get().is_some();
        if inside {
            c.set(Some(seed));
        }
        inside
    });
    if !forked {
        *STATE.lock().unwrap_or_else(|e| e.into_inner()) = seed;
    }
}

/// Runs `f` with a generator of its own, seeded with `seed`: every draw `f` makes on this
/// thread comes from it, and the global generator ([`manual_seed`]'s) is neither read nor
/// advanced. Like torch's `with torch.random.fork_rng(): torch.manual_seed(seed)`, and more:
/// draws that other threads make meanwhile (libtest runs tests on parallel threads) cannot
/// interleave with `f`'s, so the same seed gives the same numbers every time. Forks nest.
///
/// ```
/// use gpulab::{fork_rng, Device, Tensor};
/// let draw = || Tensor::rand(3, Device::Cpu)?.to_vec::<f32>();
/// assert_eq!(fork_rng(7, draw)?, fork_rng(7, draw)?);
/// # Ok::<(), gpulab::Error>(())
/// ```
pub fn fork_rng<T>(seed: u64, f: impl FnOnce() -> T) -> T {
    /// Puts the enclosing generator back, also when `f` panics.
    struct Restore(Option<u64>);
    impl Drop for Restore {
        fn drop(&mut self) {
            FORKED.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(FORKED.with(|c| c.replace(Some(seed))));
    f()
}

/// SplitMix64 (Steele, Lea and Flood): one 64-bit state, one add and a mix per draw. The
/// global generator here and each `data::Rng` (which wraps one) share this step, so both
/// give the same sequences for a seed.
#[derive(Clone, Debug)]
pub(crate) struct SplitMix(u64);

impl SplitMix {
    pub(crate) fn new(seed: u64) -> SplitMix {
        SplitMix(seed)
    }

    pub(crate) fn state(&self) -> u64 {
        self.0
    }

    /// The next 64 random bits.
    #[inline]
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1): the top 24 bits, exactly representable in f32.
    #[inline]
    pub(crate) fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 * (1.0 / (1u64 << 24) as f32)
    }
}

/// Runs `f` on the generator and keeps the advanced state for the next call.
fn with_gen<T>(f: impl FnOnce(&mut SplitMix) -> T) -> T {
    if let Some(seed) = FORKED.with(|c| c.get()) {
        let mut g = SplitMix(seed);
        let out = f(&mut g);
        FORKED.with(|c| c.set(Some(g.0)));
        return out;
    }
    let mut st = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let mut g = SplitMix(*st);
    let out = f(&mut g);
    *st = g.0;
    out
}

/// `n` raw 64-bit draws (for `randint`).
pub(crate) fn bits(n: usize) -> Vec<u64> {
    with_gen(|g| (0..n).map(|_| g.next()).collect())
}

pub(crate) fn uniform(n: usize) -> Vec<f32> {
    let mut out = super::cpu::output_vec(n);
    with_gen(|g| out.extend((0..n).map(|_| g.unit())));
    out
}

/// Box-Muller on pairs of uniforms.
pub(crate) fn normal(n: usize) -> Vec<f32> {
    let pairs = n.div_ceil(2);
    with_gen(|g| {
        let mut out = super::cpu::output_vec(2 * pairs);
        for _ in 0..pairs {
            // 1 - u lies in (0, 1], so the log is finite.
            let u1 = 1.0 - g.unit() as f64;
            let u2 = g.unit() as f64;
            let r = (-2.0 * u1.ln()).sqrt();
            let t = std::f64::consts::TAU * u2;
            out.push((r * t.cos()) as f32);
            out.push((r * t.sin()) as f32);
        }
        out.truncate(n);
        out
    })
}
