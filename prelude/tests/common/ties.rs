//! The gradients of the ops that pick elements (maximum, minimum, clamp, max, max(dim),
//! min(dim), abs, relu) at ties, NaNs and bounds, against the values torch 2.9.1 gives for the
//! same inputs (printed by `torch.autograd` on the CPU). Run on the CPU by
//! `autograd_semantics.rs` and on CUDA by `autograd_gpu.rs`, so both devices follow torch.
#![allow(dead_code)]

use gpulab::{DType, Device, Tensor};

const NAN: f32 = f32::NAN;

fn leaf(v: &[f32], shape: &[usize], dev: Device, dtype: DType) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape.to_vec(), Device::Cpu)
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
        .to(dev)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn grad(x: &Tensor) -> Vec<f32> {
    x.grad()
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap()
        .cpu()
        .unwrap()
        .to_vec::<f32>()
        .unwrap()
}

#[track_caller]
fn same(what: &str, got: Vec<f32>, torch: &[f32]) {
    assert_eq!(got, torch, "{what}: gradient differs from torch's");
}

/// Every case, in f32 and f64, on `dev`.
pub fn check_on(dev: Device) {
    for dt in [DType::F32, DType::F64] {
        let w = |op: &str| format!("{op} ({dt:?} on {dev})");
        let a = [1.0, 2.0, 3.0, NAN, 5.0];
        let b = [1.0, 3.0, 2.0, 4.0, NAN];
        for (op, ga, gb) in [
            (
                "maximum",
                [0.5, 0.0, 1.0, 1.0, 1.0],
                [0.5, 1.0, 0.0, 1.0, 1.0],
            ),
            (
                "minimum",
                [0.5, 1.0, 0.0, 1.0, 1.0],
                [0.5, 0.0, 1.0, 1.0, 1.0],
            ),
        ] {
            let (x, y) = (leaf(&a, &[5], dev, dt), leaf(&b, &[5], dev, dt));
            let z = if op == "maximum" {
                x.maximum(&y)
            } else {
                x.minimum(&y)
            };
            z.unwrap().sum().unwrap().backward().unwrap();
            same(&w(op), grad(&x), &ga);
            same(&w(op), grad(&y), &gb);
        }
        // A scalar bound is torch's clamp_min / clamp_max: the bound itself passes.
        let x = leaf(&[1.0, 2.0, 3.0], &[3], dev, dt);
        x.maximum(2.0).unwrap().sum().unwrap().backward().unwrap();
        same(&w("maximum(scalar)"), grad(&x), &[0.0, 1.0, 1.0]);
        let x = leaf(&[1.0, 2.0, 3.0], &[3], dev, dt);
        x.minimum(2.0).unwrap().sum().unwrap().backward().unwrap();
        same(&w("minimum(scalar)"), grad(&x), &[1.0, 1.0, 0.0]);

        let m = [3.0, 1.0, 3.0, 2.0, NAN, NAN];
        // max() over all elements: shared by the tied maxima, or by the NaNs.
        let x = leaf(&m[..3], &[3], dev, dt);
        x.max().unwrap().backward().unwrap();
        same(&w("max() tie"), grad(&x), &[0.5, 0.0, 0.5]);
        let x = leaf(&m, &[2, 3], dev, dt);
        x.max().unwrap().backward().unwrap();
        same(&w("max() NaN"), grad(&x), &[0.0, 0.0, 0.0, 0.0, 0.5, 0.5]);
        // max(dim) / min(dim): all to the first extreme, or the first NaN.
        for (op, dim, want) in [
            ("max_dim(1)", 1, [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]),
            ("min_dim(1)", 1, [0.0, 1.0, 0.0, 0.0, 1.0, 0.0]),
            ("max_dim(0)", 0, [1.0, 0.0, 0.0, 0.0, 1.0, 1.0]),
        ] {
            let x = leaf(&m, &[2, 3], dev, dt);
            let r = if op.starts_with("max") {
                x.max_dim(dim)
            } else {
                x.min_dim(dim)
            };
            r.unwrap().sum().unwrap().backward().unwrap();
            same(&w(op), grad(&x), &want);
        }
        let x = leaf(&[-1.0, 0.0, 2.0], &[3], dev, dt);
        x.abs().unwrap().sum().unwrap().backward().unwrap();
        same(&w("abs"), grad(&x), &[-1.0, 0.0, 1.0]);
        let x = leaf(&[-1.0, 0.0, 2.0], &[3], dev, dt);
        x.relu().unwrap().sum().unwrap().backward().unwrap();
        same(&w("relu"), grad(&x), &[0.0, 0.0, 1.0]);
    }
}
