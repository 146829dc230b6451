//! BatchNorm1d/2d and LayerNorm beyond what the parity harness compares with torch (outputs,
//! gradients, running statistics): buffers saved, loaded and moved with the model, eval mode,
//! the summary leaving the statistics alone, and the errors.
use gpulab::nn::{self, BatchNorm1d, BatchNorm2d, LayerNorm, Linear, Module, Sequential};
use gpulab::{DType, Device, Tensor, F};

const CPU: Device = Device::Cpu;

fn ramp(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec(
        (0..n).map(|i| (i % 7) as f32 - 3.0).collect::<Vec<_>>(),
        shape,
        CPU,
    )
    .unwrap()
}

#[test]
fn training_moves_the_statistics_and_eval_uses_them() {
    let mut bn = BatchNorm1d::new(2);
    let x = Tensor::from_vec(vec![1.0f32, 10.0, 3.0, 20.0], [2, 2], CPU).unwrap();
    let y = bn.forward(&x).unwrap().to_vec::<f32>().unwrap();
    // Each channel normalised by its own batch statistics: -1 and +1 (to within eps).
    for (got, want) in y.iter().zip([-1.0, -1.0, 1.0, 1.0]) {
        assert!((got - want).abs() < 1e-3, "{y:?}");
    }
    let rm = bn
        .running_mean
        .as_ref()
        .unwrap()
        .tensor()
        .to_vec::<f32>()
        .unwrap();
    let rv = bn
        .running_var
        .as_ref()
        .unwrap()
        .tensor()
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(rm, [0.2, 1.5]); // 0.9 * 0 + 0.1 * mean
    assert_eq!(rv, [0.9 + 0.1 * 2.0, 0.9 + 0.1 * 50.0]); // unbiased variances 2 and 50
    let count = |bn: &nn::BatchNorm| {
        let b = bn.buffers();
        b.iter()
            .find(|(n, _)| n == "num_batches_tracked")
            .unwrap()
            .1
            .tensor()
            .item::<i64>()
            .unwrap()
    };
    assert_eq!(count(&bn), 1);
    bn.eval();
    let y = bn.forward(&x).unwrap().to_vec::<f32>().unwrap();
    let want = (1.0 - 0.2) / (1.1f32 + 1e-5).sqrt();
    assert!((y[0] - want).abs() < 1e-5, "{y:?}");
    assert_eq!(count(&bn), 1, "eval does not count batches");
    assert_eq!(
        bn.running_mean
            .as_ref()
            .unwrap()
            .tensor()
            .to_vec::<f32>()
            .unwrap(),
        rm,
        "eval does not move them"
    );
}

#[test]
fn buffers_are_saved_loaded_converted_and_not_learned() {
    let model = Sequential::new()
        .add(Linear::new(4, 3))
        .add(BatchNorm1d::new(3))
        .add(LayerNorm::new([3]));
    let names: Vec<String> = model.buffers().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        ["1.running_mean", "1.running_var", "1.num_batches_tracked"]
    );
    // 12 + 3 weights and biases of Linear, 3 + 3 of each norm: buffers are not parameters.
    assert_eq!(model.num_parameters(), 15 + 6 + 6);
    model.forward(&ramp(&[5, 4])).unwrap();
    let path =
        std::env::temp_dir().join(format!("gpulab-nn-norm-{}.safetensors", std::process::id()));
    nn::save_safetensors(&model, &path).unwrap();
    let saved = nn::safetensors::load(&path).unwrap();
    let rm = &saved.iter().find(|(n, _)| n == "1.running_mean").unwrap().1;
    assert_eq!(
        rm.to_vec::<f32>().unwrap(),
        model.buffers()[0].1.tensor().to_vec::<f32>().unwrap()
    );
    let fresh = Sequential::new()
        .add(Linear::new(4, 3))
        .add(BatchNorm1d::new(3))
        .add(LayerNorm::new([3]));
    nn::load_safetensors(&fresh, &path).unwrap();
    for ((a, x), (b, y)) in model.buffers().into_iter().zip(fresh.buffers()) {
        assert_eq!(a, b);
        assert_eq!(
            x.tensor().to_f64_vec().unwrap(),
            y.tensor().to_f64_vec().unwrap(),
            "{a}"
        );
    }
    let _ = std::fs::remove_file(&path);
    model.to_dtype(DType::F64).unwrap();
    let dtypes: Vec<DType> = model
        .buffers()
        .iter()
        .map(|(_, b)| b.tensor().dtype())
        .collect();
    assert_eq!(dtypes, [DType::F64, DType::F64, DType::I64]);
    assert!(model
        .buffers()
        .iter()
        .all(|(_, b)| !b.tensor().requires_grad()));
}

#[test]
fn a_summary_does_not_move_the_statistics() {
    let model = Sequential::new().add(BatchNorm2d::new(2));
    let before = model.buffers()[0].1.tensor().to_vec::<f32>().unwrap();
    let text = format!("{}", model.summary_for([4, 2, 3, 3]));
    assert!(
        text.contains("BatchNorm2d(2, eps=1e-05, momentum=0.1"),
        "{text}"
    );
    assert!(text.contains("[4, 2, 3, 3]"), "{text}");
    assert_eq!(
        model.buffers()[0].1.tensor().to_vec::<f32>().unwrap(),
        before
    );
    assert_eq!(model.buffers()[2].1.tensor().item::<i64>().unwrap(), 0);
}

#[test]
fn bad_input_says_what_is_wrong() {
    let errors = [
        BatchNorm2d::new(3)
            .forward(&ramp(&[2, 3, 4]))
            .unwrap_err()
            .to_string(),
        BatchNorm1d::new(3)
            .forward(&ramp(&[2, 4]))
            .unwrap_err()
            .to_string(),
        BatchNorm1d::new(3)
            .forward(&ramp(&[1, 3]))
            .unwrap_err()
            .to_string(),
        LayerNorm::new([4])
            .forward(&ramp(&[2, 3]))
            .unwrap_err()
            .to_string(),
        nn::functional::batch_norm(&ramp(&[2, 3]), None, None, None, None, false, 0.1, 1e-5)
            .unwrap_err()
            .to_string(),
    ];
    let expected = [
        "expected an input [N, 3, H, W], got shape [2, 3, 4]",
        "expected an input [N, 3] or [N, 3, L], got shape [2, 4]",
        "expected more than 1 value per channel when training, got input shape [1, 3]",
        "layer_norm: the input's last dimensions must be [4], got shape [2, 3]",
        "eval mode needs the running mean and variance",
    ];
    for (e, want) in errors.iter().zip(expected) {
        assert!(e.contains(want), "{e:?} should say {want:?}");
    }
    assert_eq!(
        LayerNorm::new([2, 2]).describe(),
        "LayerNorm((2, 2), eps=1e-05, elementwise_affine=True)"
    );
}

/// GroupNorm: torch's repr, statistics per sample and group (so a batch of one works, unlike
/// batch norm), and bad sizes named. Values and gradients against torch: the parity cases
/// `norm gn*`.
#[test]
fn group_norm_normalises_each_group_of_each_sample() {
    let gn = nn::GroupNorm::new(2, 4);
    assert_eq!(gn.describe(), "GroupNorm(2, 4, eps=1e-05, affine=True)");
    let x = Tensor::from_vec(
        (0..2 * 4 * 3).map(|v| (v * v) as f64).collect::<Vec<_>>(),
        [2, 4, 3],
        Device::Cpu,
    )
    .unwrap();
    let y = F::group_norm(&x, 2, None, None, 1e-5).unwrap();
    let v = y.to_vec::<f64>().unwrap();
    for group in v.chunks(6) {
        let mean = group.iter().sum::<f64>() / 6.0;
        let var = group.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / 6.0;
        assert!(
            mean.abs() < 1e-9 && (var - 1.0).abs() < 1e-3,
            "{mean} {var}"
        );
    }
    let one = Tensor::ones((1, 4, 2, 2), Device::Cpu).unwrap();
    assert_eq!(gn.forward(&one).unwrap().shape(), &[1, 4, 2, 2]);
    let e = F::group_norm(&x, 3, None, None, 1e-5)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("4 channels must split into num_groups (3)"),
        "{e}"
    );
    let e = gn
        .forward(&Tensor::ones((2, 3, 2), Device::Cpu).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("expected input of shape [N, 4, ...]"), "{e}");
}
