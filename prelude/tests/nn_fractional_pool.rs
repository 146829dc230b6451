//! Fractional max pooling: torch's window starts, its output sizes from a ratio, indices that
//! point at the maxima, fresh windows on every forward from the seeded generator, and its
//! errors. (Values, indices and gradients in every dtype against torch with fixed samples:
//! tests/test_torch_parity.py; the gradient against finite differences: autograd_gradcheck.rs.)

use gpulab::nn::{self, Module};
use gpulab::{fork_rng, Device, Tensor, F};

const CPU: Device = Device::Cpu;

fn ramp(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| ((i * 7919) % 101) as f32 / 10.0).collect();
    Tensor::from_vec(v, shape.to_vec(), CPU).unwrap()
}

#[test]
fn windows_start_at_torchs_fractional_steps() {
    // One plane 1 x 10, kernel 2, output 4: alpha = (10 - 2) / 3; with sample 0.5 the starts
    // are floor((i + 0.5) * alpha) - floor(0.5 * alpha) = 0, 3, 5 and the last, 8.
    let x = Tensor::from_vec((0..20).map(|v| v as f32).collect(), vec![1, 1, 2, 10], CPU).unwrap();
    let u = Tensor::from_vec(vec![0.5f32, 0.0], vec![1, 1, 2], CPU).unwrap();
    let (v, i) = F::fractional_max_pool2d_with_indices(&x, (2, 2), (1, 4), Some(&u)).unwrap();
    assert_eq!(v.to_vec::<f32>().unwrap(), [11.0, 14.0, 16.0, 19.0]);
    assert_eq!(i.to_vec::<i64>().unwrap(), [11, 14, 16, 19]);
}

#[test]
fn ratios_indices_and_fresh_windows() {
    let x = ramp(&[2, 3, 9, 9]);
    let y = F::fractional_max_pool2d(&x, 2, 0.5, None).unwrap();
    assert_eq!(y.shape(), [2, 3, 4, 4]);
    let (v, i) =
        F::fractional_max_pool3d_with_indices(&ramp(&[1, 2, 6, 7, 8]), 2, (3, 3, 4), None).unwrap();
    assert_eq!(v.shape(), [1, 2, 3, 3, 4]);
    let flat = ramp(&[1, 2, 6, 7, 8]).reshape(vec![1, 2, 336]).unwrap();
    let picked = flat.gather(2, &i.reshape(vec![1, 2, 36]).unwrap()).unwrap();
    assert!(picked
        .reshape(vec![1, 2, 3, 3, 4])
        .unwrap()
        .equal(&v)
        .unwrap());
    // The layer draws new windows each call, reproducibly under a seed.
    let layer = nn::FractionalMaxPool2d::new(3, (0.6, 0.6));
    // (A generator of this thread's own: the tests share the global one.)
    let (a, b) = fork_rng(7, || {
        (layer.forward(&x).unwrap(), layer.forward(&x).unwrap())
    });
    let a2 = fork_rng(7, || layer.forward(&x).unwrap());
    assert!(a.equal(&a2).unwrap());
    assert!(!a.equal(&b).unwrap(), "two calls drew the same windows");
    assert_eq!(format!("{layer:?}"), "FractionalMaxPool2d()");
    // Unbatched [C, H, W].
    let u = layer.forward(&ramp(&[3, 9, 9])).unwrap();
    assert_eq!(u.shape(), [3, 5, 5]);
}

#[test]
fn bad_arguments_are_named() {
    let x = ramp(&[1, 2, 5, 6]);
    let err = |r: gpulab::error::Result<Tensor>| r.unwrap_err().to_string();
    let e = err(F::fractional_max_pool2d(&x, 3, (4, 4), None));
    assert!(e.contains("do not fit") && e.contains("[5, 6]"), "{e}");
    let e = err(F::fractional_max_pool2d(&x, 2, 1.5, None));
    assert!(e.contains("output_ratio"), "{e}");
    let u = Tensor::from_vec(vec![0.5f32; 2], vec![1, 1, 2], CPU).unwrap();
    let e = err(F::fractional_max_pool2d(&x, 2, (3, 3), Some(&u)));
    assert!(e.contains("expected random samples [1, 2, 2]"), "{e}");
    let u = Tensor::from_vec(vec![0.5f32, 1.5, 0.1, 0.2], vec![1, 2, 2], CPU).unwrap();
    let e = err(F::fractional_max_pool2d(&x, 2, (3, 3), Some(&u)));
    assert!(e.contains("[0, 1)"), "{e}");
    let e = err(F::fractional_max_pool3d(
        &ramp(&[5, 6, 7]),
        2,
        (2, 2, 2),
        None,
    ));
    assert!(e.contains("[N, C, D, H, W] or [C, D, H, W]"), "{e}");
}
