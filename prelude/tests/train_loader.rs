//! DataLoader: batch sizes, the last partial batch, drop_last, seeded shuffling per epoch,
//! transforms, errors.

use gpulab::data::{Rng, Transform};
use gpulab::*;

/// 10 samples: x row i is [i, i] (f32), y is i (i64), so a batch names its samples.
fn ten() -> TensorDataset {
    let x: Vec<f32> = (0..10).flat_map(|i| [i as f32, i as f32]).collect();
    let y: Vec<i64> = (0..10).collect();
    TensorDataset::new(
        Tensor::from_vec(x, (10, 2), Device::Cpu).unwrap(),
        Tensor::from_vec(y, 10, Device::Cpu).unwrap(),
    )
    .unwrap()
}

fn labels(loader: &DataLoader, epoch: u64) -> Vec<Vec<i64>> {
    loader
        .epoch(epoch)
        .map(|b| {
            let (x, y) = b.unwrap();
            assert!(x.is_contiguous() && y.is_contiguous());
            let y = y.to_vec::<i64>().unwrap();
            // Inputs and targets stay paired.
            let x0: Vec<f32> = x.to_vec2::<f32>().unwrap().iter().map(|r| r[0]).collect();
            assert_eq!(x0, y.iter().map(|&v| v as f32).collect::<Vec<_>>());
            y
        })
        .collect()
}

#[test]
fn batches_in_order_with_a_smaller_last_one() {
    let loader = DataLoader::new(ten(), 4).unwrap();
    assert_eq!(loader.len(), 3);
    let b = labels(&loader, 0);
    assert_eq!(b, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7], vec![8, 9]]);
    assert_eq!(loader.iter().len(), 3);
    let (x, _) = loader.iter().next().unwrap().unwrap();
    assert_eq!(x.shape(), &[4, 2]);
}

#[test]
fn drop_last_leaves_out_the_partial_batch() {
    let loader = DataLoader::new(ten(), 4).unwrap().drop_last(true);
    assert_eq!(loader.len(), 2);
    assert_eq!(labels(&loader, 0), vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
    // Exact multiples lose nothing.
    let loader = DataLoader::new(ten(), 5).unwrap().drop_last(true);
    assert_eq!(loader.len(), 2);
    assert_eq!(labels(&loader, 0).concat().len(), 10);
}

#[test]
fn shuffle_is_a_permutation_per_epoch_reproducible_by_seed() {
    let a = DataLoader::new(ten(), 3).unwrap().shuffle(true).seed(11);
    let b = DataLoader::new(ten(), 3).unwrap().shuffle(true).seed(11);
    let c = DataLoader::new(ten(), 3).unwrap().shuffle(true).seed(12);
    let e0 = labels(&a, 0);
    assert_eq!(
        e0.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![3, 3, 3, 1]
    );
    let mut all = e0.concat();
    assert_ne!(all, (0..10).collect::<Vec<_>>(), "epoch 0 was not shuffled");
    all.sort();
    assert_eq!(all, (0..10).collect::<Vec<_>>(), "not a permutation");
    // Same seed, same batches; another epoch, another order; another seed, another order.
    assert_eq!(labels(&b, 0), e0);
    let e1 = labels(&a, 1);
    assert_ne!(e1, e0);
    let mut s1 = e1.concat();
    s1.sort();
    assert_eq!(s1, (0..10).collect::<Vec<_>>());
    assert_ne!(labels(&c, 0), e0);
    // `iter()` walks the epochs in turn: first epoch 0, then epoch 1.
    let it0: Vec<Vec<i64>> = a
        .iter()
        .map(|b| b.unwrap().1.to_vec::<i64>().unwrap())
        .collect();
    let it1: Vec<Vec<i64>> = (&a)
        .into_iter()
        .map(|b| b.unwrap().1.to_vec::<i64>().unwrap())
        .collect();
    assert_eq!((it0, it1), (e0, e1));
}

/// Adds 100 to every input and records that it ran; draws one number from the loader's rng.
struct Plus100;
impl Transform for Plus100 {
    fn apply(&self, batch: &Tensor, rng: &mut Rng) -> gpulab::error::Result<Tensor> {
        let _ = rng.unit();
        batch.add(100.0)
    }
    fn name(&self) -> String {
        "Plus100".into()
    }
}

#[test]
fn the_transform_changes_inputs_not_targets() {
    let loader = DataLoader::new(ten(), 4).unwrap().transform(Plus100);
    let (x, y) = loader.iter().next().unwrap().unwrap();
    assert_eq!(x.to_vec2::<f32>().unwrap()[1], vec![101.0, 101.0]);
    assert_eq!(y.to_vec::<i64>().unwrap(), vec![0, 1, 2, 3]);
    assert!(format!("{loader:?}").contains("transform=Plus100"));
}

#[test]
fn bad_settings_are_errors_naming_them() {
    let e = DataLoader::new(ten(), 0).unwrap_err().to_string();
    assert!(e.contains("batch_size") && e.contains('0'), "{e}");
    let empty = TensorDataset::new(
        Tensor::zeros((0, 2), Device::Cpu).unwrap(),
        Tensor::zeros(0, Device::Cpu).unwrap(),
    )
    .unwrap();
    let e = DataLoader::new(empty, 4).unwrap_err().to_string();
    assert!(e.contains("empty"), "{e}");
}

#[test]
fn clones_share_the_epoch_count() {
    let a = DataLoader::new(ten(), 3).unwrap().shuffle(true).seed(2);
    let b = a.clone();
    let first: Vec<i64> = a
        .iter()
        .flat_map(|b| b.unwrap().1.to_vec::<i64>().unwrap())
        .collect();
    let second: Vec<i64> = b
        .iter()
        .flat_map(|b| b.unwrap().1.to_vec::<i64>().unwrap())
        .collect();
    assert_eq!(first, labels(&a, 0).concat());
    assert_eq!(
        second,
        labels(&a, 1).concat(),
        "the clone went on with epoch 1"
    );
}
