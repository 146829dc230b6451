//! `DataLoader`: a [`TensorDataset`] cut into batches, torch's `torch.utils.data.DataLoader`.
//!
//! ```ignore
//! let loader = DataLoader::new(train, 64).shuffle(true).seed(0);
//! for epoch in 0..5 {
//!     for batch in &loader {            // each pass is the next epoch, in a new order
//!         let (x, y) = batch?;
//!         ...
//!     }
//! }
//! ```
//!
//! The order of epoch `e` comes from a generator seeded with `(seed, e)`, so a seeded run gives
//! the same batches every time and `epoch(e)` can replay any epoch. Without `.seed(..)` the seed
//! is drawn from the global generator when the loader is made, so `manual_seed` fixes it too
//! (torch draws its base seed the same way).

use super::{Rng, TensorDataset, Transform};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Batches of a dataset: `(inputs, targets)`, each contiguous. Clones share the epoch count
/// (so a loader passed to `fit` by reference goes on with new orders, as a torch loader does).
#[derive(Clone)]
pub struct DataLoader {
    dataset: TensorDataset,
    batch_size: usize,
    shuffle: bool,
    drop_last: bool,
    seed: u64,
    transform: Option<Arc<dyn Transform>>,
    device: Option<Device>,
    /// The epoch the next `iter()` yields; atomic so `for b in &loader` can advance it.
    next_epoch: Arc<AtomicU64>,
}

impl std::fmt::Debug for DataLoader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DataLoader(samples={}, batch_size={}, batches={}, shuffle={}, drop_last={}, seed={}",
            self.dataset.len(),
            self.batch_size,
            self.len(),
            self.shuffle,
            self.drop_last,
            self.seed
        )?;
        if let Some(t) = &self.transform {
            write!(f, ", transform={}", t.name())?;
        }
        if let Some(d) = self.device {
            write!(f, ", device={d}")?;
        }
        write!(f, ")")
    }
}

/// A seed from the global generator (`manual_seed`), for loaders not given one.
pub(crate) fn seed_from_global() -> u64 {
    let bits = Tensor::rand(4, Device::Cpu)
        .and_then(|t| t.to_vec::<f32>())
        .unwrap_or_default();
    bits.iter().fold(0x5851_F42D_4C95_7F2D, |acc: u64, v| {
        acc.rotate_left(16) ^ ((v * 65536.0) as u64)
    })
}

impl DataLoader {
    /// Batches of `batch_size` samples in order (no shuffling, last batch may be smaller).
    /// Errors: a `batch_size` of 0, an empty dataset.
    pub fn new(dataset: TensorDataset, batch_size: usize) -> Result<DataLoader> {
        if batch_size == 0 {
            return Err(Error::Invalid(
                "DataLoader: batch_size must be at least 1, got 0".into(),
            ));
        }
        if dataset.is_empty() {
            return Err(empty(&dataset));
        }
        Ok(DataLoader {
            dataset,
            batch_size,
            shuffle: false,
            drop_last: false,
            seed: seed_from_global(),
            transform: None,
            device: None,
            next_epoch: Arc::new(AtomicU64::new(0)),
        })
    }

    /// A new order of the samples every epoch (torch's `shuffle=True`).
    pub fn shuffle(mut self, shuffle: bool) -> DataLoader {
        self.shuffle = shuffle;
        self
    }

    /// Fixes the shuffling (and the transform's random draws): epoch `e` uses a generator
    /// made from `(seed, e)`.
    pub fn seed(mut self, seed: u64) -> DataLoader {
        self.seed = seed;
        self
    }

    /// Leaves out the last batch when it is smaller than `batch_size`.
    pub fn drop_last(mut self, drop_last: bool) -> DataLoader {
        self.drop_last = drop_last;
        self
    }

    /// Applies `t` to the inputs of every batch (on the dataset's device, before `device`
    /// moves the batch), e.g. the augmentations of article 04.
    pub fn transform(mut self, t: impl Transform + 'static) -> DataLoader {
        self.transform = Some(Arc::new(t));
        self
    }

    /// Moves every batch to `device` (e.g. the dataset stays in host memory, batches go to
    /// the GPU).
    pub fn device(mut self, device: impl Into<Device>) -> DataLoader {
        self.device = Some(device.into());
        self
    }

    /// The device given with [`DataLoader::device`], if any.
    pub fn target_device(&self) -> Option<Device> {
        self.device
    }

    pub fn dataset(&self) -> &TensorDataset {
        &self.dataset
    }

    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    pub fn is_shuffled(&self) -> bool {
        self.shuffle
    }

    /// The number of batches per epoch.
    pub fn len(&self) -> usize {
        let n = self.dataset.len();
        if self.drop_last {
            n / self.batch_size
        } else {
            n.div_ceil(self.batch_size)
        }
    }

    /// True when an epoch yields no batch.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The batches of the next epoch (each call advances the epoch, as each `iter(loader)`
    /// does in torch).
    pub fn iter(&self) -> Batches<'_> {
        self.epoch(self.next_epoch.fetch_add(1, Ordering::Relaxed))
    }

    /// The batches of epoch `epoch` (0-based); does not change which epoch `iter()` gives next.
    pub fn epoch(&self, epoch: u64) -> Batches<'_> {
        // Two streams per epoch, so a transform's draws do not change the order and back.
        let mut rng = Rng::new(mix(self.seed, epoch));
        let n = self.dataset.len();
        let order = if self.shuffle {
            let mut o: Vec<usize> = (0..n).collect();
            rng.shuffle(&mut o);
            Some(o)
        } else {
            None
        };
        Batches {
            loader: self,
            order,
            next: 0,
            rng: Rng::new(rng.next_u64()),
            empty_reported: false,
        }
    }
}

fn empty(d: &TensorDataset) -> Error {
    Error::Invalid(format!(
        "DataLoader: the dataset is empty (inputs of shape {:?}); there is nothing to batch",
        d.x.shape()
    ))
}

/// A well-spread seed for epoch `epoch` of a loader seeded with `seed`.
fn mix(seed: u64, epoch: u64) -> u64 {
    let mut r = Rng::new(seed ^ epoch.wrapping_mul(0xD1B5_4A32_D192_ED03));
    r.next_u64()
}

impl<'a> IntoIterator for &'a DataLoader {
    type Item = Result<(Tensor, Tensor)>;
    type IntoIter = Batches<'a>;
    fn into_iter(self) -> Batches<'a> {
        self.iter()
    }
}

/// One epoch of batches; made by [`DataLoader::iter`] or [`DataLoader::epoch`].
pub struct Batches<'a> {
    loader: &'a DataLoader,
    order: Option<Vec<usize>>,
    next: usize,
    rng: Rng,
    empty_reported: bool,
}

impl Batches<'_> {
    /// The sample indices of the batches still to come, in order (tests, inspection).
    pub fn remaining_indices(&self) -> Vec<usize> {
        let n = self.loader.dataset.len();
        match &self.order {
            Some(o) => o[self.next.min(n)..].to_vec(),
            None => (self.next.min(n)..n).collect(),
        }
    }

    fn cut(&mut self, start: usize, len: usize) -> Result<(Tensor, Tensor)> {
        let l = self.loader;
        let part = match &self.order {
            Some(o) => l.dataset.select(&o[start..start + len])?,
            None => l.dataset.narrow(start, len)?,
        };
        let mut x = part.x.contiguous()?;
        let mut y = part.y.contiguous()?;
        if let Some(t) = &l.transform {
            let before = x.shape().to_vec();
            x = t.apply(&x, &mut self.rng)?.contiguous()?;
            if x.shape().first() != before.first() {
                return Err(Error::BadShape(format!(
                    "DataLoader: transform {} turned a batch of shape {before:?} into {:?}; \
                     a transform must keep the number of samples",
                    t.name(),
                    x.shape()
                )));
            }
        }
        if let Some(d) = l.device {
            x = x.to(d)?;
            y = y.to(d)?;
        }
        Ok((x, y))
    }
}

impl Iterator for Batches<'_> {
    type Item = Result<(Tensor, Tensor)>;

    fn next(&mut self) -> Option<Self::Item> {
        let l = self.loader;
        let n = l.dataset.len();
        if n == 0 {
            if self.empty_reported {
                return None;
            }
            self.empty_reported = true;
            return Some(Err(empty(&l.dataset)));
        }
        let start = self.next;
        if start >= n {
            return None;
        }
        let len = l.batch_size.min(n - start);
        if len < l.batch_size && l.drop_last {
            self.next = n;
            return None;
        }
        self.next = start + len;
        Some(self.cut(start, len))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let l = self.loader;
        let n = l.dataset.len();
        if n == 0 {
            let k = usize::from(!self.empty_reported);
            return (k, Some(k));
        }
        let left = n.saturating_sub(self.next);
        let k = if l.drop_last {
            left / l.batch_size
        } else {
            left.div_ceil(l.batch_size)
        };
        (k, Some(k))
    }
}

impl ExactSizeIterator for Batches<'_> {}
