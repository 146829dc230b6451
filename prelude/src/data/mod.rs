//! Data for training: datasets held as tensors, a seeded generator for shuffling and
//! augmentation, and the `Transform` trait that augmentations implement.
//!
//! The pieces meet at [`TensorDataset`]: every loader (MNIST files, image folders, the
//! synthetic stand-ins) returns one, a `DataLoader` cuts it into batches, and `fit` consumes the
//! batches. Samples stay on the CPU until a batch is cut, so a dataset larger than the GPU's
//! memory still trains; the batch is moved to the model's device by the loop that uses it.
//!
//! Loaders: [`mnist()`] / [`mnist_u8`] (the IDX files, plain or gzipped), [`synthetic_mnist`]
//! and [`mnist_or_synthetic`] (a labelled stand-in when the files are absent),
//! [`synthetic_cats_dogs`], [`image_folder()`] (one subfolder per class, JPEG/PNG). Augmentations
//! for article 04's `ImageDataGenerator` are in [`augment`] (also named [`transforms`]).
//!
//! ```
//! use gpulab::data::{self, augment::*, Transform};
//! let (train, test) = data::mnist_or_synthetic("data/mnist", 2000, 500, 0)?;
//! let aug = Compose::new(vec![Box::new(RandomShift::new(0.1, 0.1)), Box::new(RandomZoom::new(0.1))]);
//! let batch = aug.apply(&train.narrow(0, 64)?.x, &mut data::Rng::new(0))?;
//! # Ok::<(), gpulab::Error>(())
//! ```

use crate::error::Result;
use crate::{Error, Tensor};

pub mod augment;
mod image_folder;
mod loader;
mod mnist;
pub mod rng;
mod synthetic;
/// torchvision's name for the augmentations: `data::transforms::RandomHorizontalFlip`.
pub use augment as transforms;
pub use augment::Compose;
pub use image_folder::{image_folder, IMAGE_EXTENSIONS};
pub use loader::DataLoader;
pub use mnist::{
    mnist, mnist_files_present, mnist_u8, read_idx, MNIST_FILES, MNIST_NPM_URL, MNIST_URL,
};
pub use rng::Rng;
pub use synthetic::{mnist_or_synthetic, synthetic_cats_dogs, synthetic_mnist, CATS_DOGS_CLASSES};

/// Inputs and targets, sample `i` being row `i` of both (dimension 0 is the sample index).
#[derive(Clone, Debug)]
pub struct TensorDataset {
    /// Inputs, `[n, ...]` (images as `[n, c, h, w]`).
    pub x: Tensor,
    /// Targets, `[n]` class indices (i64) or `[n, ...]` regression targets.
    pub y: Tensor,
}

impl TensorDataset {
    /// Pairs inputs with targets; both must have the same number of samples (dimension 0).
    pub fn new(x: Tensor, y: Tensor) -> Result<TensorDataset> {
        let (nx, ny) = (x.shape().first().copied(), y.shape().first().copied());
        match (nx, ny) {
            (Some(a), Some(b)) if a == b => Ok(TensorDataset { x, y }),
            _ => Err(Error::BadShape(format!(
                "TensorDataset: inputs {:?} and targets {:?} must have the same number of samples (dimension 0)",
                x.shape(),
                y.shape()
            ))),
        }
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.x.shape()[0]
    }

    /// True when the dataset holds no samples.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The samples at `indices`, in that order, as a new (contiguous) dataset.
    pub fn select(&self, indices: &[usize]) -> Result<TensorDataset> {
        let idx = Tensor::from_vec(
            indices.iter().map(|&i| i as i64).collect::<Vec<i64>>(),
            [indices.len()],
            self.x.device(),
        )?;
        let yi = if self.y.device() == self.x.device() {
            idx.clone()
        } else {
            idx.to(self.y.device())?
        };
        Ok(TensorDataset {
            x: self.x.index_select(0, &idx)?,
            y: self.y.index_select(0, &yi)?,
        })
    }

    /// Samples `start..start + len` as views (no copy).
    pub fn narrow(&self, start: usize, len: usize) -> Result<TensorDataset> {
        Ok(TensorDataset {
            x: self.x.narrow(0, start, len)?,
            y: self.y.narrow(0, start, len)?,
        })
    }

    /// Splits off the last `fraction` of the samples (after shuffling with `seed`) as a
    /// validation set: `(train, validation)`.
    pub fn split(&self, fraction: f64, seed: u64) -> Result<(TensorDataset, TensorDataset)> {
        if !(0.0..1.0).contains(&fraction) {
            return Err(Error::Invalid(format!(
                "TensorDataset::split: fraction must be in [0, 1), got {fraction}"
            )));
        }
        let n = self.len();
        let n_val = ((n as f64) * fraction).round() as usize;
        let mut order: Vec<usize> = (0..n).collect();
        Rng::new(seed).shuffle(&mut order);
        let (train, val) = order.split_at(n - n_val);
        Ok((self.select(train)?, self.select(val)?))
    }
}

/// An augmentation or preprocessing step applied to a batch of inputs (`[n, c, h, w]` for
/// images) as the loader cuts it. `rng` is the loader's generator, so a seeded loader gives the
/// same augmented batches every run.
pub trait Transform: Send + Sync {
    /// Returns the transformed batch (same number of samples).
    fn apply(&self, batch: &Tensor, rng: &mut Rng) -> Result<Tensor>;
    /// A short name for summaries and errors, e.g. `RandomHorizontalFlip(p=0.5)`.
    fn name(&self) -> String;
}
