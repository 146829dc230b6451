//! torch.func.functional_call: a module run with some tensors replaced for one call (values
//! against torch: bench/torch_parity.py's fcall cases).

use gpulab::nn::utils::stateless::{functional_call_with, reparametrize};
use gpulab::nn::{self, Module};
use gpulab::{fork_rng, func, Device, Tensor};

const CPU: Device = Device::Cpu;

fn err<T>(r: gpulab::error::Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

fn values(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

#[test]
fn given_tensors_serve_one_call_and_take_the_gradient() {
    fork_rng(2, || {
        let lin = nn::Linear::new(3, 2);
        let before = values(&lin.weight.tensor());
        let w = Tensor::randn([2, 3], CPU)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let x = Tensor::randn([4, 3], CPU).unwrap();
        let y = func::functional_call(&lin, &[("weight", w.clone())], &x).unwrap();
        let expected = x
            .matmul(&w.t().unwrap())
            .unwrap()
            .add(&lin.bias.as_ref().unwrap().tensor())
            .unwrap();
        assert_eq!(values(&y), values(&expected));
        y.sum().unwrap().backward().unwrap();
        // The given weight learns; the module's weight is untouched and gets no gradient, its
        // own bias (not replaced) gets one.
        assert!(w.grad().is_some());
        assert!(lin.weight.grad().is_none());
        assert!(lin.bias.as_ref().unwrap().grad().is_some());
        assert_eq!(values(&lin.weight.tensor()), before);
        assert_eq!(values(&lin.forward(&x).unwrap()).len(), 8);
    });
}

#[test]
fn buffers_nested_names_and_other_calls() {
    fork_rng(4, || {
        let mut model = nn::Sequential::new()
            .add(nn::Linear::new(3, 4))
            .add(nn::BatchNorm1d::new(4));
        model.eval();
        let x = Tensor::randn([2, 3], CPU).unwrap();
        let plain = values(&model.forward(&x).unwrap());
        let mean = Tensor::full([4], 1.5, CPU).unwrap();
        let y = func::functional_call(&model, &[("1.running_mean", mean)], &x).unwrap();
        let shifted = values(&y);
        for (a, b) in plain.iter().zip(&shifted) {
            // (x - 1.5) / sqrt(1 + eps) against x / sqrt(1 + eps), times the weight of 1.
            assert!(
                (a - b - 1.5 / (1.0f32 + 1e-5).sqrt()).abs() < 1e-4,
                "{a} {b}"
            );
        }
        // Any call, e.g. a two-input module's.
        let bil = nn::Bilinear::new(2, 3, 1);
        let w = Tensor::ones([1, 2, 3], CPU).unwrap();
        let (a, b) = (
            Tensor::ones([1, 2], CPU).unwrap(),
            Tensor::ones([1, 3], CPU).unwrap(),
        );
        let out =
            reparametrize(&bil, &[("weight", w)], false, || bil.forward_with(&a, &b)).unwrap();
        let bias = bil.bias.as_ref().unwrap().tensor().item::<f32>().unwrap();
        assert!((out.item::<f32>().unwrap() - (6.0 + bias)).abs() < 1e-5);
    });
}

#[test]
fn tied_weights_are_replaced_together() {
    let a = nn::Linear::no_bias(2, 2);
    let mut b = nn::Linear::no_bias(2, 2);
    b.weight = a.weight.clone();
    assert!(b.weight.same_as(&a.weight));
    let model = nn::Sequential::new().add(a).add(b);
    let twice = Tensor::eye(2, CPU).unwrap().mul(2.0).unwrap();
    let x = Tensor::ones([1, 2], CPU).unwrap();
    let y = func::functional_call(&model, &[("0.weight", twice.clone())], &x).unwrap();
    assert_eq!(values(&y), [4.0, 4.0]);
    let e = err(func::functional_call(
        &model,
        &[("0.weight", twice.clone()), ("1.weight", twice)],
        &x,
    ));
    assert!(
        e.contains("\"0.weight\" and \"1.weight\" are one tied parameter"),
        "{e}"
    );
}

#[test]
fn bad_names_and_failed_calls() {
    let lin = nn::Linear::new(3, 2);
    let w = Tensor::zeros([2, 3], CPU).unwrap();
    let x = Tensor::ones([1, 3], CPU).unwrap();
    let e = err(func::functional_call(&lin, &[("wieght", w.clone())], &x));
    assert!(
        e.contains("no parameter or buffer named \"wieght\"") && e.contains("\"bias\""),
        "{e}"
    );
    let e = err(func::functional_call(
        &lin,
        &[("weight", w.clone()), ("weight", w.clone())],
        &x,
    ));
    assert!(e.contains("given twice"), "{e}");
    let e = err(functional_call_with(
        &lin,
        &[("weight", w.clone())],
        &x,
        true,
    ));
    assert!(e.contains("strict") && e.contains("\"bias\""), "{e}");
    // A forward that fails still puts the module's own tensors back.
    let before = values(&lin.weight.tensor());
    let wrong = Tensor::zeros([2, 5], CPU).unwrap();
    assert!(func::functional_call(&lin, &[("weight", wrong)], &x).is_err());
    assert_eq!(values(&lin.weight.tensor()), before);
    assert!(lin.forward(&x).is_ok());
}
