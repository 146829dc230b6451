//! nn::utils beyond gradient clipping by the 2-norm: conv/linear + batch-norm fusion, other
//! norm types and the two halves of clip_grad_norm_, parameters as one vector (values
//! against torch: bench/torch_parity.py's fuse, clipn and p2v cases).

use gpulab::nn::utils;
use gpulab::nn::{self, Module};
use gpulab::{fork_rng, no_grad, Device, Tensor};

const CPU: Device = Device::Cpu;

fn ramp(shape: &[usize], k: usize) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| ((i * k) % 13) as f32 / 5.0 - 1.2).collect();
    Tensor::from_vec(v, shape.to_vec(), CPU).unwrap()
}

fn close(a: &Tensor, b: &Tensor) {
    assert_eq!(a.shape(), b.shape());
    let (a, b) = (a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
    for (x, y) in a.iter().zip(&b) {
        assert!((x - y).abs() < 1e-4 * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}

fn err<T>(r: gpulab::error::Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

/// A norm with moved statistics and learned-looking affine parameters, in eval mode.
fn trained_norm(mut bn: nn::BatchNorm, input: &Tensor) -> nn::BatchNorm {
    for (i, p) in bn.parameters().iter().enumerate() {
        p.set_data(ramp(&p.shape(), 3 + i).add(1.5).unwrap())
            .unwrap();
    }
    no_grad(|| bn.forward(input)).unwrap();
    bn.eval();
    bn
}

#[test]
fn a_fused_layer_gives_the_pair_s_output() {
    fork_rng(2, || {
        let x = ramp(&[2, 2, 5, 5], 7);
        let conv = nn::Conv2d::new(2, 4, 3).padding(1).bias(false);
        let bn = trained_norm(nn::BatchNorm2d::new(4), &conv.forward(&x).unwrap());
        let fused = utils::fuse_conv_bn_eval(&conv, &bn).unwrap();
        assert!(fused.bias.is_some());
        close(
            &fused.forward(&x).unwrap(),
            &bn.forward(&conv.forward(&x).unwrap()).unwrap(),
        );
        let up = nn::ConvTranspose2d::new(2, 3, 2).stride(2);
        let bn = trained_norm(nn::BatchNorm2d::new(3), &up.forward(&x).unwrap());
        close(
            &utils::fuse_conv_bn_eval(&up, &bn)
                .unwrap()
                .forward(&x)
                .unwrap(),
            &bn.forward(&up.forward(&x).unwrap()).unwrap(),
        );
        let seq = ramp(&[3, 2, 6], 5);
        let c1 = nn::Conv1d::new(2, 3, 3);
        let bn = trained_norm(
            nn::BatchNorm1d::new(3).affine(false),
            &c1.forward(&seq).unwrap(),
        );
        close(
            &utils::fuse_conv_bn_eval(&c1, &bn)
                .unwrap()
                .forward(&seq)
                .unwrap(),
            &bn.forward(&c1.forward(&seq).unwrap()).unwrap(),
        );
        let lin = nn::Linear::new(4, 3);
        let rows = ramp(&[5, 4], 3);
        let bn = trained_norm(nn::BatchNorm1d::new(3), &lin.forward(&rows).unwrap());
        let fused = utils::fuse_linear_bn_eval(&lin, &bn).unwrap();
        close(
            &fused.forward(&rows).unwrap(),
            &bn.forward(&lin.forward(&rows).unwrap()).unwrap(),
        );
        // The originals are untouched, and what cannot be fused says why.
        assert!(conv.bias.is_none());
        let training = nn::BatchNorm2d::new(4);
        let e = err(utils::fuse_conv_bn_eval(&conv, &training));
        assert!(e.contains("fusion is for eval mode"), "{e}");
        let mut untracked = nn::BatchNorm2d::new(4).track_running_stats(false);
        untracked.eval();
        let e = err(utils::fuse_conv_bn_eval(&conv, &untracked));
        assert!(e.contains("keeps no running statistics"), "{e}");
        let mut wrong = nn::BatchNorm2d::new(5);
        wrong.eval();
        let e = err(utils::fuse_conv_bn_eval(&conv, &wrong));
        assert!(e.contains("one value per output channel"), "{e}");
    });
}

#[test]
fn clip_grad_norm_takes_torch_s_norm_types() {
    let p = nn::Parameter::new(Tensor::zeros([4], CPU).unwrap()).unwrap();
    let g = Tensor::from_vec(vec![3.0f32, -4.0, 0.0, 1.0], vec![4], CPU).unwrap();
    p.tensor()
        .mul(&g)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    let grads = [p.grad().unwrap()];
    let inf = utils::get_total_norm(&grads, f64::INFINITY, false).unwrap();
    assert_eq!(inf.item::<f32>().unwrap(), 4.0);
    let one = utils::get_total_norm(&grads, 1.0, false).unwrap();
    assert_eq!(one.item::<f32>().unwrap(), 8.0);
    let total =
        utils::clip_grad_norm_with(std::slice::from_ref(&p), 2.0, f64::INFINITY, false).unwrap();
    assert_eq!(total.item::<f32>().unwrap(), 4.0);
    let clipped = p.grad().unwrap().to_vec::<f32>().unwrap();
    assert!((clipped[1] + 2.0).abs() < 1e-5, "{clipped:?}");
    // Non-finite gradients are an error only when asked.
    let bad = [Tensor::from_vec(vec![f32::NAN, 1.0], vec![2], CPU).unwrap()];
    let e = err(utils::get_total_norm(&bad, 2.0, true));
    assert!(e.contains("non-finite"), "{e}");
    assert!(utils::get_total_norm(&bad, 2.0, false).is_ok());
    assert_eq!(
        utils::get_total_norm(&[], 2.0, true)
            .unwrap()
            .item::<f32>()
            .unwrap(),
        0.0
    );
}

#[test]
fn parameters_go_to_one_vector_and_back() {
    let lin = nn::Linear::new(3, 2);
    let params = lin.parameters();
    let v = utils::parameters_to_vector(&params).unwrap();
    assert_eq!(v.shape(), [8]);
    utils::vector_to_parameters(&v.mul(2.0).unwrap(), &params).unwrap();
    let again = utils::parameters_to_vector(&params).unwrap();
    close(&again, &v.mul(2.0).unwrap());
    // Gradients flow from the vector back to the parameters.
    utils::parameters_to_vector(&params)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(params[0].grad().unwrap().to_vec::<f32>().unwrap(), [1.0; 6]);
    let e = err(utils::vector_to_parameters(
        &v.narrow(0, 0, 7).unwrap(),
        &params,
    ));
    assert!(
        e.contains("expected a vector of the parameters' 8 elements, got shape [7]"),
        "{e}"
    );
}
