//! The notebook view: with only `use gpulab::*` in scope (as in every session), a torch-style
//! training loop compiles and learns (the optimiser's `step` needs no trait import).

use gpulab::*;

#[test]
fn a_training_loop_needs_only_the_glob_import() -> std::result::Result<(), Error> {
    fork_rng(0, || {
        let x = Tensor::randn((64, 3), Device::Cpu)?;
        let y = x.sum_keepdim(1)?.relu()?; // the target: relu of the inputs' sum
        let model = nn::Sequential::new()
            .add(nn::Linear::new(3, 16))
            .add(nn::ReLU)
            .add(nn::Linear::new(16, 1));
        let mut opt = optim::SGD::new(model.parameters(), 0.05).momentum(0.9);
        for _ in 0..200 {
            let loss = F::mse_loss(&model.forward(&x)?, &y)?;
            opt.zero_grad();
            loss.backward()?;
            opt.step()?;
        }
        let loss = no_grad(|| F::mse_loss(&model.forward(&x)?, &y))?;
        let loss = loss.item::<f32>()?;
        assert!(loss < 0.01, "mse after 200 steps: {loss}");
        Ok(())
    })
}

/// A layer as a cell's last expression is shown with `{:?}`: every layer prints torch's repr
/// (the strings torch 2.9.1 printed for the same layers), and `{}` prints the same.
#[test]
fn every_layer_prints_as_torch_does() {
    let cases: Vec<(String, String, &str)> = vec![
        r(nn::Linear::new(3, 2), "Linear(in_features=3, out_features=2, bias=True)"),
        r(nn::ReLU, "ReLU()"),
        r(nn::Sigmoid, "Sigmoid()"),
        r(nn::Tanh, "Tanh()"),
        r(nn::GELU, "GELU(approximate='none')"),
        r(nn::Softplus, "Softplus(beta=1.0, threshold=20.0)"),
        r(nn::SiLU, "SiLU()"),
        r(nn::LeakyReLU::default(), "LeakyReLU(negative_slope=0.01)"),
        r(nn::Softmax::new(1), "Softmax(dim=1)"),
        r(nn::Flatten, "Flatten(start_dim=1, end_dim=-1)"),
        r(nn::Dropout::new(0.5), "Dropout(p=0.5, inplace=False)"),
        r(nn::ELU::new(1.0), "ELU(alpha=1.0)"),
        r(nn::Hardtanh::new(-1.0, 1.0), "Hardtanh(min_val=-1.0, max_val=1.0)"),
        r(nn::ReLU6, "ReLU6()"),
        r(nn::Mish, "Mish()"),
        r(nn::LogSoftmax::new(1), "LogSoftmax(dim=1)"),
        r(nn::Identity, "Identity()"),
        r(nn::Unflatten::new(1, &[2, 5]), "Unflatten(dim=1, unflattened_size=(2, 5))"),
        r(nn::Conv2d::new(1, 32, 3), "Conv2d(1, 32, kernel_size=(3, 3), stride=(1, 1))"),
        r(nn::ConvTranspose2d::new(4, 2, 2), "ConvTranspose2d(4, 2, kernel_size=(2, 2), stride=(1, 1))"),
        // Every rank of the generic conv and pool layers, and the lazy and fractional ones.
        r(nn::Conv1d::new(2, 4, 3), "Conv1d(2, 4, kernel_size=(3,), stride=(1,))"),
        r(nn::ConvTranspose1d::new(4, 2, 3).stride(2), "ConvTranspose1d(4, 2, kernel_size=(3,), stride=(2,))"),
        r(
            nn::Conv3d::new(1, 8, 3).padding(1),
            "Conv3d(1, 8, kernel_size=(3, 3, 3), stride=(1, 1, 1), padding=(1, 1, 1))",
        ),
        r(nn::MaxPool1d::new(2), "MaxPool1d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"),
        r(nn::AvgPool1d::new(2), "AvgPool1d(kernel_size=(2,), stride=(2,), padding=(0,))"),
        r(nn::MaxPool3d::new(2), "MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"),
        r(nn::AvgPool3d::new(2).stride(1), "AvgPool3d(kernel_size=2, stride=1, padding=0)"),
        r(nn::MaxUnpool2d::new(2), "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"),
        r(nn::FractionalMaxPool2d::new(2, (3, 3)), "FractionalMaxPool2d()"),
        r(nn::LazyLinear::new(4), "LazyLinear(in_features=0, out_features=4, bias=True)"),
        r(nn::LazyConv2d::new(8, 3), "LazyConv2d(0, 8, kernel_size=(3, 3), stride=(1, 1))"),
        r(nn::Embedding::new(10, 3), "Embedding(10, 3)"),
        r(nn::BatchNorm1d::new(4), "BatchNorm1d(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"),
        r(nn::BatchNorm2d::new(4), "BatchNorm2d(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"),
        r(nn::LayerNorm::new(8), "LayerNorm((8,), eps=1e-05, elementwise_affine=True)"),
        r(nn::GroupNorm::new(2, 4), "GroupNorm(2, 4, eps=1e-05, affine=True)"),
        r(nn::MaxPool2d::new(2), "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"),
        r(nn::AvgPool2d::new(2), "AvgPool2d(kernel_size=2, stride=2, padding=0)"),
        r(nn::AdaptiveAvgPool2d::new((1, 1)), "AdaptiveAvgPool2d(output_size=(1, 1))"),
        r(nn::RNN::new(3, 4), "RNN(3, 4)"),
        r(nn::LSTM::new(3, 4), "LSTM(3, 4)"),
        r(nn::GRU::new(3, 4), "GRU(3, 4)"),
        r(nn::Upsample::new(2.0), "Upsample(scale_factor=2.0, mode='nearest')"),
        r(nn::ConstantPad2d::new(1, 3.5), "ConstantPad2d(padding=(1, 1, 1, 1), value=3.5)"),
        r(nn::ZeroPad2d::new((1, 2, 3, 4)), "ZeroPad2d((1, 2, 3, 4))"),
        r(nn::ReflectionPad2d::new(2), "ReflectionPad2d((2, 2, 2, 2))"),
        r(nn::ReplicationPad2d::new((1, 0, 1, 0)), "ReplicationPad2d((1, 0, 1, 0))"),
        r(nn::CircularPad2d::new(1), "CircularPad2d((1, 1, 1, 1))"),
        // The 1-D and 3-D padding layers, as torch 2.9 prints them.
        r(nn::ZeroPad1d::new(2), "ZeroPad1d((2, 2))"),
        r(nn::ZeroPad3d::new(1), "ZeroPad3d((1, 1, 1, 1, 1, 1))"),
        r(nn::ConstantPad1d::new(2, 3.5), "ConstantPad1d(padding=(2, 2), value=3.5)"),
        r(
            nn::ConstantPad3d::new((1, 2, 3, 4, 5, 6), 0.0),
            "ConstantPad3d(padding=(1, 2, 3, 4, 5, 6), value=0.0)",
        ),
        r(nn::ReflectionPad1d::new((1, 2)), "ReflectionPad1d((1, 2))"),
        r(nn::ReplicationPad3d::new(1), "ReplicationPad3d((1, 1, 1, 1, 1, 1))"),
        r(nn::CircularPad1d::new(2), "CircularPad1d((2, 2))"),
        r(
            nn::Sequential::new()
                .add(nn::Linear::new(3, 2))
                .add(nn::Sequential::new().add(nn::ReLU).add(nn::Dropout::new(0.1))),
            "Sequential(\n  (0): Linear(in_features=3, out_features=2, bias=True)\n  (1): Sequential(\n    (0): ReLU()\n    (1): Dropout(p=0.1, inplace=False)\n  )\n)",
        ),
    ];
    for (debug, display, torch) in cases {
        assert_eq!(debug, torch);
        assert_eq!(display, torch);
    }
}

fn r<M: std::fmt::Debug + std::fmt::Display>(m: M, torch: &str) -> (String, String, &str) {
    (format!("{m:?}"), format!("{m}"), torch)
}

/// The padding layers pad the last two dimensions as `F::pad` does in their mode, and a
/// wrong input says what reflect padding needs.
#[test]
fn padding_layers_pad_the_last_two_dimensions() {
    let x = Tensor::arange(0.0, 6.0, Device::Cpu)
        .unwrap()
        .reshape((1, 1, 2, 3))
        .unwrap();
    let z = nn::ZeroPad2d::new((1, 0, 0, 1)).forward(&x).unwrap();
    assert_eq!(z.shape(), &[1, 1, 3, 4]);
    assert_eq!(
        z.to_vec::<f32>().unwrap(),
        [0., 0., 1., 2., 0., 3., 4., 5., 0., 0., 0., 0.]
    );
    let r = nn::ReflectionPad2d::new(1).forward(&x).unwrap();
    assert_eq!(
        r.to_vec::<f32>().unwrap(),
        [4., 3., 4., 5., 4., 1., 0., 1., 2., 1., 4., 3., 4., 5., 4., 1., 0., 1., 2., 1.]
    );
    let c = nn::ConstantPad2d::new((0, 1, 0, 0), -1.0)
        .forward(&x)
        .unwrap();
    assert_eq!(
        c.to_vec::<f32>().unwrap(),
        [0., 1., 2., -1., 3., 4., 5., -1.]
    );
    let e = nn::ReflectionPad2d::new(2)
        .forward(&x)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("smaller than the size") && e.contains("size 2"),
        "{e}"
    );
}

#[test]
fn one_and_three_dimensional_padding_layers_pad_their_axes() {
    let seq = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], vec![1, 1, 3], Device::Cpu).unwrap();
    let r = nn::ReflectionPad1d::new((2, 1)).forward(&seq).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), [3., 2., 1., 2., 3., 2.]);
    let c = nn::CircularPad1d::new(1).forward(&seq).unwrap();
    assert_eq!(c.to_vec::<f32>().unwrap(), [3., 1., 2., 3., 1.]);
    let k = nn::ConstantPad1d::new((0, 2), -1.0).forward(&seq).unwrap();
    assert_eq!(k.to_vec::<f32>().unwrap(), [1., 2., 3., -1., -1.]);
    let vol = Tensor::ones([1, 1, 2, 2, 2], Device::Cpu).unwrap();
    let z = nn::ZeroPad3d::new((1, 0, 0, 1, 1, 1))
        .forward(&vol)
        .unwrap();
    assert_eq!(z.shape(), &[1, 1, 4, 3, 3]);
    assert_eq!(z.sum().unwrap().item::<f32>().unwrap(), 8.0);
    let rep = nn::ReplicationPad3d::new(1).forward(&vol).unwrap();
    assert_eq!(rep.shape(), &[1, 1, 4, 4, 4]);
    assert_eq!(rep.sum().unwrap().item::<f32>().unwrap(), 64.0);
}
