//! torch's `set_printoptions`: precision, summarising, line width and forced scientific
//! notation, each line read off torch 2.9 with the same options. In a test binary of its own,
//! since the options are process-wide (as torch's) and other tests print tensors in parallel.
use gpulab::{get_printoptions, set_printoptions, Device, PrintOptions, Tensor};

fn t(v: Vec<f32>) -> Tensor {
    let n = v.len();
    Tensor::from_vec(v, n, Device::Cpu).unwrap()
}

#[test]
fn print_options_change_every_later_print_as_torchs() {
    assert_eq!(get_printoptions(), PrintOptions::DEFAULT);
    set_printoptions(PrintOptions {
        precision: 2,
        ..get_printoptions()
    });
    assert_eq!(format!("{}", t(vec![1.23456, 2.5])), "tensor([1.23, 2.50])");
    assert_eq!(
        format!("{}", t(vec![1e-5, 1.0])),
        "tensor([1.00e-05, 1.00e+00])"
    );
    assert_eq!(format!("{}", t(vec![1.0, 2.0])), "tensor([1., 2.])");
    set_printoptions(PrintOptions {
        sci_mode: Some(true),
        ..get_printoptions()
    });
    assert_eq!(
        format!("{}", t(vec![1.5, 2.0])),
        "tensor([1.50e+00, 2.00e+00])"
    );
    assert_eq!(
        format!("{}", t(vec![1.0, 2.0])),
        "tensor([1.00e+00, 2.00e+00])"
    );
    set_printoptions(PrintOptions {
        sci_mode: Some(false),
        ..get_printoptions()
    });
    assert_eq!(format!("{}", t(vec![1e-5, 1.0])), "tensor([0.00, 1.00])");
    assert_eq!(
        format!("{}", t(vec![1e9, 1.0])),
        "tensor([1000000000.,          1.])"
    );
    set_printoptions(PrintOptions {
        threshold: 5,
        edgeitems: 1,
        ..PrintOptions::DEFAULT
    });
    let ten = Tensor::arange(0.0f32, 10.0, Device::Cpu).unwrap();
    assert_eq!(format!("{ten}"), "tensor([0.,  ..., 9.])");
    set_printoptions(PrintOptions {
        linewidth: 20,
        ..PrintOptions::DEFAULT
    });
    assert_eq!(
        format!("{ten}"),
        "tensor([0., 1., 2.,\n        3., 4., 5.,\n        6., 7., 8.,\n        9.])"
    );
    set_printoptions(PrintOptions::SHORT);
    let thirds = Tensor::arange(0.0f32, 2000.0, Device::Cpu)
        .unwrap()
        .div(3.0)
        .unwrap();
    assert_eq!(
        format!("{thirds}"),
        "tensor([0.00e+00, 3.33e-01,  ..., 6.66e+02, 6.66e+02])"
    );
    set_printoptions(PrintOptions::default());
    assert_eq!(format!("{}", t(vec![1.23456])), "tensor([1.2346])");
}
