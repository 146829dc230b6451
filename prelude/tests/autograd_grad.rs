//! torch.autograd.grad: gradients returned instead of accumulated (values against torch:
//! bench/torch_parity.py's agrad cases).

use gpulab::autograd::{grad, grad_with};
use gpulab::{Device, Tensor};

const CPU: Device = Device::Cpu;

fn leaf(v: &[f32]) -> Tensor {
    Tensor::from_vec(v.to_vec(), [v.len()], CPU)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

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
fn returns_what_backward_would_add_and_leaves_grad_alone() {
    let x = leaf(&[1.0, 2.0, 3.0]);
    let w = leaf(&[0.5, -1.0, 2.0]);
    // An earlier gradient stays as it is.
    x.mul(2.0).unwrap().sum().unwrap().backward().unwrap();
    let gs = grad(&x.mul(&w).unwrap().sum().unwrap(), &[&x, &w]).unwrap();
    assert_eq!(values(&gs[0]), [0.5, -1.0, 2.0]);
    assert_eq!(values(&gs[1]), [1.0, 2.0, 3.0]);
    assert_eq!(values(&x.grad().unwrap()), [2.0, 2.0, 2.0]);
    assert!(w.grad().is_none());

    // With respect to a tensor computed on the way: d/dh sum(h^2) = 2h.
    let h = x.mul(3.0).unwrap();
    let g = grad(&h.square().unwrap().sum().unwrap(), &[&h]).unwrap();
    assert_eq!(values(&g[0]), [6.0, 12.0, 18.0]);

    // A non-scalar output with its gradient.
    let y = x.mul(&w).unwrap();
    let seed = Tensor::from_vec(vec![1.0f32, 0.0, 10.0], [3], CPU).unwrap();
    let g = grad_with(&y, &[&w], Some(&seed), false, false).unwrap();
    assert_eq!(values(g[0].as_ref().unwrap()), [1.0, 0.0, 30.0]);
}

#[test]
fn retain_graph_unused_inputs_and_errors() {
    let x = leaf(&[1.0, 2.0]);
    let z = leaf(&[5.0]);
    let y = x.square().unwrap().sum().unwrap();
    let first = grad_with(&y, &[&x], None, true, false).unwrap();
    let again = grad_with(&y, &[&x], None, false, false).unwrap();
    assert_eq!(
        values(first[0].as_ref().unwrap()),
        values(again[0].as_ref().unwrap())
    );
    let e = err(grad(&y, &[&x]));
    assert!(e.contains("second time"), "{e}");

    let y = x.sum().unwrap();
    let e = err(grad_with(&y, &[&x, &z], None, true, false));
    assert!(
        e.contains("input 1") && e.contains("not used") && e.contains("allow_unused"),
        "{e}"
    );
    let gs = grad_with(&y, &[&x, &z], None, false, true).unwrap();
    assert!(gs[0].is_some() && gs[1].is_none());

    let plain = Tensor::ones([2], CPU).unwrap();
    let y = x.mul(&plain).unwrap().sum().unwrap();
    let e = err(grad(&y, &[&plain]));
    assert!(
        e.contains("input 0") && e.contains("does not require grad"),
        "{e}"
    );
    let e = err(grad(&x.mul(2.0).unwrap(), &[&x]));
    assert!(
        e.contains("one element") && e.contains("grad_output"),
        "{e}"
    );
}
