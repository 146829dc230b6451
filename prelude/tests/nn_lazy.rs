//! Lazy layers: the input size read from the first input, the placeholders an optimiser
//! built early updates, `to` before the first forward, loading before it, reprs and errors,
//! against torch's behaviour.

use gpulab::nn::{self, Module};
use gpulab::optim::Adam;
use gpulab::{fork_rng, DType, Device, Tensor};

const CPU: Device = Device::Cpu;

fn ramp(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n)
        .map(|i| ((i * 37) % 19) as f32 / 10.0 - 0.9)
        .collect();
    Tensor::from_vec(v, shape.to_vec(), CPU).unwrap()
}

#[test]
fn lazy_linear_reads_its_input_size_and_prints_as_torch() {
    let l = nn::LazyLinear::new(5);
    assert_eq!(
        format!("{l:?}"),
        "LazyLinear(in_features=0, out_features=5, bias=True)"
    );
    assert!(!l.is_materialized());
    assert_eq!(l.parameters()[0].tensor().numel(), 0);
    let y = l.forward(&ramp(&[2, 3])).unwrap();
    assert_eq!(y.shape(), [2, 5]);
    assert_eq!(
        format!("{l}"),
        "Linear(in_features=3, out_features=5, bias=True)"
    );
    assert_eq!(l.parameters()[0].tensor().shape(), [5, 3]);
    // Built once: another width is now a shape error, as for any Linear.
    let e = l.forward(&ramp(&[2, 4])).unwrap_err().to_string();
    assert!(e.contains("expected input of shape [..., 3]"), "{e}");
    let no_bias = nn::LazyLinear::no_bias(2);
    no_bias.forward(&ramp(&[4])).unwrap();
    assert_eq!(no_bias.parameters().len(), 1);
}

#[test]
fn an_optimiser_built_before_the_first_forward_trains_the_real_parameters() {
    // Drawn from a generator of its own: the tests share the global one across threads.
    fork_rng(3, trains_the_real_parameters);
}

fn trains_the_real_parameters() {
    let model = nn::Sequential::new()
        .add(nn::LazyConv2d::new(4, 3).padding(1))
        .add(nn::ReLU)
        .add(nn::Flatten)
        .add(nn::LazyLinear::new(1));
    let mut opt = Adam::new(model.parameters(), 0.05);
    let x = ramp(&[8, 2, 5, 5]);
    // A target far from any first guess, so the first loss is large whatever was drawn.
    let target = Tensor::zeros((8, 1), CPU).unwrap().add(3.0).unwrap();
    let mut losses = Vec::new();
    for _ in 0..30 {
        opt.zero_grad();
        let loss = nn::functional::mse_loss(&model.forward(&x).unwrap(), &target).unwrap();
        losses.push(loss.item::<f32>().unwrap());
        loss.backward().unwrap();
        opt.step().unwrap();
    }
    assert!(losses[29] < losses[0] / 10.0, "{losses:?}");
    let shapes: Vec<Vec<usize>> = model
        .parameters()
        .iter()
        .map(|p| p.tensor().shape().to_vec())
        .collect();
    assert_eq!(shapes, [vec![4, 2, 3, 3], vec![4], vec![1, 100], vec![1]]);
    let text = format!("{model:?}");
    assert!(
        text.contains("Conv2d(2, 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))"),
        "{text}"
    );
}

#[test]
fn to_dtype_before_the_first_forward_places_the_parameters() {
    let l = nn::LazyConv1d::new(3, 2);
    l.to_dtype(DType::F64).unwrap();
    let y = l
        .forward(&ramp(&[1, 2, 6]).to_dtype(DType::F64).unwrap())
        .unwrap();
    assert_eq!(y.dtype(), DType::F64);
    assert_eq!(l.parameters()[0].tensor().dtype(), DType::F64);
    assert_eq!(l.parameters()[0].tensor().shape(), [3, 2, 2]);
}

#[test]
fn loading_before_the_first_forward_takes_the_saved_size() {
    let source = nn::Conv2d::new(6, 4, 3).groups(2);
    let lazy = nn::LazyConv2d::new(4, 3).groups(2);
    lazy.load_state_dict(&source.state_dict()).unwrap();
    assert!(lazy.is_materialized());
    assert_eq!(format!("{lazy}"), format!("{source}"));
    let x = ramp(&[1, 6, 5, 5]);
    assert!(lazy
        .forward(&x)
        .unwrap()
        .equal(&source.forward(&x).unwrap())
        .unwrap());
    let t = nn::LazyConvTranspose1d::new(4, 2).padding(1);
    assert_eq!(
        format!("{t:?}"),
        "LazyConvTranspose1d(0, 4, kernel_size=(2,), stride=(1,), padding=(1,))"
    );
    t.load_state_dict(&nn::ConvTranspose1d::new(3, 4, 2).padding(1).state_dict())
        .unwrap();
    assert_eq!(t.forward(&ramp(&[1, 3, 5])).unwrap().shape(), [1, 4, 4]);
}

#[test]
fn an_input_it_cannot_read_is_named() {
    let c = nn::LazyConv3d::new(2, 1);
    let e = c.forward(&ramp(&[4, 4])).unwrap_err().to_string();
    assert!(
        e.contains("LazyConv3d(0, 2") && e.contains("[N, C, D, H, W] or [C, D, H, W]"),
        "{e}"
    );
    assert!(!c.is_materialized());
    let e = nn::LazyLinear::new(2)
        .load_state_dict(&[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("needs a \"weight\""), "{e}");
}

/// No input features at all (a width of 0) gives the bias alone, as torch's linear does: this
/// used to divide by zero when it worked out the rows of a batched input.
#[test]
fn a_linear_layer_of_no_inputs_gives_its_bias() {
    let x = Tensor::zeros((2, 4, 0), CPU).unwrap();
    let l = nn::Linear::new(0, 3);
    let y = l.forward(&x).unwrap();
    assert_eq!(y.shape(), [2, 4, 3]);
    let b = l.bias.as_ref().unwrap().tensor().to_vec::<f32>().unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap()[..3], b[..]);
    assert_eq!(
        nn::LazyLinear::new(3).forward(&x).unwrap().shape(),
        [2, 4, 3]
    );
}
