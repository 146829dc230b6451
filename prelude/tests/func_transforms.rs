//! torch.func: grad, grad_and_value, vjp, jacrev, vmap, and per-sample gradients from vmap,
//! grad and functional_call together (values against torch: bench/torch_parity.py's func
//! cases).

use gpulab::func::{functional_call, grad, grad_and_value, jacrev, vjp, vmap};
use gpulab::nn::{self, Module};
use gpulab::{fork_rng, Device, Tensor};

const CPU: Device = Device::Cpu;

fn values(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

fn err<T>(r: gpulab::error::Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn gradients_pullbacks_and_jacobians() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], [3], CPU).unwrap();
    // d/dx sum(x^3) = 3x^2.
    let cube = |t: &Tensor| t.pow(3.0)?.sum();
    assert_eq!(values(&grad(cube, &x).unwrap()), [3.0, 12.0, 27.0]);
    let (g, y) = grad_and_value(cube, &x).unwrap();
    assert_eq!((values(&g)[0], y.item::<f32>().unwrap()), (3.0, 36.0));
    assert!(!x.requires_grad());
    let e = err(grad(|t: &Tensor| t.mul(2.0), &x));
    assert!(e.contains("one element") && e.contains("[3]"), "{e}");

    // The pullback of x^2 (2x v), called with two cotangents.
    let (y, pullback) = vjp(|t| t.square(), &x).unwrap();
    assert_eq!(values(&y), [1.0, 4.0, 9.0]);
    let ones = Tensor::ones([3], CPU).unwrap();
    assert_eq!(values(&pullback(&ones).unwrap()), [2.0, 4.0, 6.0]);
    assert_eq!(
        values(&pullback(&ones.mul(10.0).unwrap()).unwrap()),
        [20.0, 40.0, 60.0]
    );
    assert!(err(pullback(&Tensor::ones([2], CPU).unwrap())).contains("cotangent"));

    let j = jacrev(|t| t.square(), &x).unwrap();
    assert_eq!(values(&j), [2.0, 0.0, 0.0, 0.0, 4.0, 0.0, 0.0, 0.0, 6.0]);
}

#[test]
fn vmap_maps_slices_and_checks_its_dims() {
    let x = Tensor::from_vec((0..6).map(|v| v as f32).collect(), [2, 3], CPU).unwrap();
    let rows = vmap(|r| r.sum(), &x, 0, 0).unwrap();
    assert_eq!(values(&rows), [3.0, 12.0]);
    let cols = vmap(|c| c.mul(2.0), &x, 1, 1).unwrap();
    assert_eq!(values(&cols), values(&x.mul(2.0).unwrap()));
    let e = err(vmap(|r| r.sum(), &x, 2, 0));
    assert!(e.contains("in_dim 2") && e.contains("[2, 3]"), "{e}");
    let e = err(vmap(|r| r.sum(), &x, 0, 2));
    assert!(e.contains("out_dim 2"), "{e}");
    let ragged = |r: &Tensor| {
        let n = if r.i(0)?.item::<f32>()? == 0.0 { 1 } else { 2 };
        r.narrow(0, 0, n)
    };
    assert!(err(vmap(ragged, &x, 0, 0)).contains("one shape"));
}

#[test]
fn per_sample_gradients_from_vmap_grad_and_functional_call() {
    fork_rng(21, || {
        let model = nn::Linear::no_bias(3, 1);
        let w = model.weight.tensor().detach();
        let x = Tensor::randn([4, 3], CPU).unwrap();
        // One gradient of the weight per example: vmap over the batch of grad over the weight.
        let per_sample = vmap(
            |xi| {
                grad(
                    |wt| {
                        functional_call(&model, &[("weight", wt.clone())], &xi.unsqueeze(0)?)?
                            .square()?
                            .sum()
                    },
                    &w,
                )
            },
            &x,
            0,
            0,
        )
        .unwrap();
        assert_eq!(per_sample.shape(), [4, 1, 3]);
        // d/dw (w . xi)^2 = 2 (w . xi) xi.
        for i in 0..4 {
            let xi = x.narrow(0, i, 1).unwrap();
            let s = xi.matmul(&w.t().unwrap()).unwrap().item::<f32>().unwrap();
            let expected = values(&xi.mul(2.0 * s).unwrap());
            let got = values(&per_sample.narrow(0, i, 1).unwrap());
            for (a, b) in got.iter().zip(&expected) {
                assert!((a - b).abs() < 1e-5, "{got:?} vs {expected:?}");
            }
        }
        // The model's own weight got no gradient.
        assert!(model.weight.grad().is_none());
        let _ = model.forward(&x).unwrap();
    });
}
