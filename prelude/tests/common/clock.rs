//! A clock the test moves by hand, for the timing tests (`Bench`, `timeit`).

use gpulab::timing::Clock;
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

/// Clones share one time, so a closure under test can move the clock the code under test
/// reads.
#[derive(Clone, Default)]
pub struct FakeClock(Rc<Cell<Duration>>);

impl FakeClock {
    pub fn advance(&self, d: Duration) {
        self.0.set(self.0.get() + d);
    }

    /// Moves the clock to `t` (a fake device's queued work finishing then).
    pub fn set(&self, t: Duration) {
        self.0.set(t);
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Duration {
        self.0.get()
    }
}
