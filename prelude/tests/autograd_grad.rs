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

#[test]
fn retain_grad_keeps_an_activations_gradient() {
    let x = leaf(&[1.0, -2.0, 3.0]);
    let h = x.mul(2.0).unwrap();
    assert!(!h.retains_grad());
    h.retain_grad().unwrap();
    assert!(h.retains_grad() && !x.retains_grad());
    let y = h.square().unwrap().sum().unwrap();
    y.backward_retain_graph().unwrap();
    assert_eq!(values(&h.grad().unwrap()), [4.0, -8.0, 12.0]);
    // It accumulates as a leaf's does, and a computed tensor that did not ask keeps none.
    y.backward().unwrap();
    assert_eq!(values(&h.grad().unwrap()), [8.0, -16.0, 24.0]);
    let other = x.exp().unwrap();
    other.sum().unwrap().backward().unwrap();
    assert!(other.grad().is_none());
    // A leaf: nothing to do; a tensor without grad: an error.
    x.retain_grad().unwrap();
    let e = err(Tensor::ones([2], CPU).unwrap().retain_grad());
    assert!(e.contains("does not require grad"), "{e}");
}

#[test]
fn jacobians_and_vector_jacobian_products() {
    use gpulab::autograd::functional::{jacobian, vjp};
    let x = Tensor::from_vec(vec![1.0f32, 2.0], [2], CPU).unwrap();
    // f(x) = [x0 * x1, x0 + 3 x1]: J = [[x1, x0], [1, 3]].
    let f = |t: &Tensor| {
        let (a, b) = (t.narrow(0, 0, 1)?, t.narrow(0, 1, 1)?);
        Tensor::cat(&[a.mul(&b)?, a.add(&b.mul(3.0)?)?], 0)
    };
    let j = jacobian(f, &x).unwrap();
    assert_eq!(j.shape(), [2, 2]);
    assert_eq!(values(&j), [2.0, 1.0, 1.0, 3.0]);
    // Inside no_grad too, and the caller's tensor stays without history.
    let j2 = gpulab::no_grad(|| jacobian(f, &x)).unwrap();
    assert_eq!(values(&j2), values(&j));
    assert!(!x.requires_grad());
    let v = Tensor::from_vec(vec![1.0f32, 10.0], [2], CPU).unwrap();
    let (y, g) = vjp(f, &x, Some(&v)).unwrap();
    assert_eq!(values(&y), [2.0, 7.0]);
    assert_eq!(values(&g), [12.0, 31.0]);
    let e = err(vjp(f, &x, None));
    assert!(e.contains("v can be None only") && e.contains("[2]"), "{e}");
    let e = err(jacobian(
        f,
        &Tensor::from_vec(vec![1i64, 2], [2], CPU).unwrap(),
    ));
    assert!(e.contains("floating-point") && e.contains("int64"), "{e}");
}
