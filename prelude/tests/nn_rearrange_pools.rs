//! pixel_shuffle / channel_shuffle, rms_norm / local_response_norm, the power-average and
//! adaptive pools, max pooling's indices and unpooling, and pdist: where their elements go, their errors and their modules' reprs.
//! (Their values and gradients in every dtype are checked against torch by
//! tests/test_torch_parity.py, their gradients against finite differences by
//! autograd_gradcheck.rs.)

use gpulab::nn::{self, Module};
use gpulab::{DType, Device, Tensor, F};

const CPU: Device = Device::Cpu;

fn ints(v: &[i64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape.to_vec(), CPU).unwrap()
}

fn err(r: gpulab::error::Result<Tensor>) -> String {
    r.map(|t| format!("no error: a tensor of shape {:?}", t.shape()))
        .unwrap_or_else(|e| e.to_string())
}

#[test]
fn pixel_shuffle_moves_channels_into_blocks_and_back() {
    let x = ints(&[0, 1, 2, 3], &[1, 4, 1, 1]);
    let y = F::pixel_shuffle(&x, 2).unwrap();
    assert_eq!(y.shape(), [1, 1, 2, 2]);
    assert_eq!(y.to_vec::<i64>().unwrap(), [0, 1, 2, 3]);
    // Any dtype, leading dimensions kept; unshuffle undoes it.
    let x = Tensor::arange(0.0, 72.0, CPU)
        .unwrap()
        .reshape([2, 1, 9, 2, 2])
        .unwrap();
    let y = nn::PixelShuffle(3).forward(&x).unwrap();
    assert_eq!(y.shape(), [2, 1, 1, 6, 6]);
    let back = nn::PixelUnshuffle(3).forward(&y).unwrap();
    assert_eq!(back.to_vec::<f32>().unwrap(), x.to_vec::<f32>().unwrap());
    let e = err(F::pixel_shuffle(
        &Tensor::zeros([1, 7, 2, 2], CPU).unwrap(),
        2,
    ));
    assert!(
        e.contains("must divide by upscale_factor squared (4)"),
        "{e}"
    );
    let e = err(F::pixel_shuffle(&Tensor::zeros([4, 2], CPU).unwrap(), 2));
    assert!(e.contains("at least 3 dimensions"), "{e}");
    let e = err(F::pixel_unshuffle(
        &Tensor::zeros([1, 1, 3, 4], CPU).unwrap(),
        2,
    ));
    assert!(e.contains("must divide by downscale_factor 2"), "{e}");
    let e = err(F::pixel_shuffle(&x, 0));
    assert!(e.contains("upscale_factor must be positive"), "{e}");
}

#[test]
fn channel_shuffle_deals_the_groups_out_in_turn() {
    let x = ints(&[0, 1, 2, 3, 4, 5], &[1, 6, 1]);
    let y = nn::ChannelShuffle(2).forward(&x).unwrap();
    assert_eq!(y.to_vec::<i64>().unwrap(), [0, 3, 1, 4, 2, 5]);
    let e = err(F::channel_shuffle(&x, 4));
    assert!(e.contains("channels (6) must divide by groups (4)"), "{e}");
    assert_eq!(
        nn::ChannelShuffle(2).to_string(),
        "ChannelShuffle(groups=2)"
    );
}

#[test]
fn rms_norm_divides_by_the_root_mean_square() {
    let x = Tensor::from_vec(vec![3.0f32, 4.0, 0.0, 0.0], (2, 2), CPU).unwrap();
    let y = F::rms_norm(&x, &[2], None, Some(0.0)).unwrap();
    let v = y.to_vec::<f32>().unwrap();
    // Row 0: rms = sqrt((9 + 16) / 2); row 1 is all zeros, and eps 0 makes it 0 / 0.
    let rms = (12.5f32).sqrt();
    assert!(
        (v[0] - 3.0 / rms).abs() < 1e-6 && (v[1] - 4.0 / rms).abs() < 1e-6,
        "{v:?}"
    );
    assert!(v[2].is_nan(), "0 / sqrt(0 + 0) is NaN, as torch's: {v:?}");
    // The default eps (float32's epsilon) keeps a zero row finite.
    let y = F::rms_norm(&x, &[2], None, None).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap()[2], 0.0);
    let e = err(F::rms_norm(&x, &[3], None, None));
    assert!(
        e.contains("last dimensions must be [3], got shape [2, 2]"),
        "{e}"
    );
    let w = Tensor::ones([3], CPU).unwrap();
    let e = err(F::rms_norm(&x, &[2], Some(&w), None));
    assert!(e.contains("weight has shape [3], expected [2]"), "{e}");
    let e = err(F::rms_norm(&ints(&[1, 2], &[1, 2]), &[2], None, None));
    assert!(e.contains("rms_norm needs a floating-point input"), "{e}");

    let m = nn::RMSNorm::new([2]);
    assert_eq!(
        m.to_string(),
        "RMSNorm((2,), eps=None, elementwise_affine=True)"
    );
    assert_eq!(m.named_parameters()[0].0, "weight");
    let plain = nn::RMSNorm::new([2]).eps(1e-6).elementwise_affine(false);
    assert!(plain.parameters().is_empty());
    assert_eq!(
        plain.to_string(),
        "RMSNorm((2,), eps=1e-06, elementwise_affine=False)"
    );
    // Weight ones: the module is the function.
    let a = m.forward(&x).unwrap().to_vec::<f32>().unwrap();
    let b = F::rms_norm(&x, &[2], None, None)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(a, b);
}

#[test]
fn local_response_norm_uses_a_centred_window_of_channels() {
    // One position, three channels, size 2: channel c's window is channels c - 1 and c.
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], (1, 3, 1), CPU).unwrap();
    let y = F::local_response_norm(&x, 2, 1.0, 1.0, 1.0).unwrap();
    let sq = [1.0, 4.0, 9.0];
    let want: Vec<f64> = (0..3)
        .map(|c| {
            let before = if c > 0 { sq[c - 1] } else { 0.0 };
            (c + 1) as f64 / (1.0 + (before + sq[c]) / 2.0)
        })
        .collect();
    assert_eq!(y.to_vec::<f64>().unwrap(), want);
    let e = err(F::local_response_norm(
        &x.reshape([3, 1]).unwrap(),
        2,
        1.0,
        1.0,
        1.0,
    ));
    assert!(e.contains("at least 3 dimensions"), "{e}");
    let e = err(F::local_response_norm(&x, 0, 1.0, 1.0, 1.0));
    assert!(e.contains("size must be positive"), "{e}");
    let e = err(F::local_response_norm(
        &x.to_dtype(DType::I32).unwrap(),
        2,
        1.0,
        1.0,
        1.0,
    ));
    assert!(e.contains("needs a floating-point input, got int32"), "{e}");
    assert_eq!(
        nn::LocalResponseNorm::new(2).to_string(),
        "LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)"
    );
}

#[test]
fn lp_pool_is_the_p_norm_of_each_window() {
    let x = Tensor::from_vec(vec![3.0f32, 4.0, 1.0, 2.0], (1, 1, 4), CPU).unwrap();
    let y = F::lp_pool1d(&x, 2.0, 2, None, false).unwrap();
    let v = y.to_vec::<f32>().unwrap();
    assert!(
        (v[0] - 5.0).abs() < 1e-5 && (v[1] - 5f32.sqrt()).abs() < 1e-5,
        "{v:?}"
    );
    let e = err(F::lp_pool2d(&x.unsqueeze(0).unwrap(), 0.0, 2, None, false));
    assert!(e.contains("norm_type must be a non-zero number"), "{e}");
    assert_eq!(
        nn::LPPool2d::new(2.0, 2).to_string(),
        "LPPool2d(norm_type=2, kernel_size=2, stride=None, ceil_mode=False)"
    );
    assert_eq!(
        nn::LPPool1d::new(1.5, 3)
            .stride(2)
            .ceil_mode(true)
            .to_string(),
        "LPPool1d(norm_type=1.5, kernel_size=3, stride=2, ceil_mode=True)"
    );
    // In 3-D: a 2 x 2 x 2 window of ones has 2-norm sqrt(8); batched or not.
    let ones = Tensor::ones((2, 4, 2, 2), CPU).unwrap();
    let pool = nn::LPPool3d::new(2.0, 2);
    let y = pool.forward(&ones).unwrap();
    assert_eq!(y.shape(), [2, 2, 1, 1]);
    assert!(y
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .all(|v| (v - 8f32.sqrt()).abs() < 1e-5));
    let batched = pool.forward(&ones.unsqueeze(0).unwrap()).unwrap();
    assert_eq!(batched.shape(), [1, 2, 2, 1, 1]);
    assert_eq!(
        nn::LPPool3d::new(1.5, (1, 2, 2))
            .stride(1)
            .ceil_mode(true)
            .to_string(),
        "LPPool3d(norm_type=1.5, kernel_size=(1, 2, 2), stride=1, ceil_mode=True)"
    );
    let e = err(F::lp_pool3d(&ones, f64::NAN, 2, None, false));
    assert!(
        e.contains("lp_pool3d: norm_type must be a non-zero number"),
        "{e}"
    );
}

#[test]
fn adaptive_max_pool1d_gives_where_each_maximum_is() {
    let x = Tensor::from_vec(vec![1.0f32, 9.0, 2.0, 3.0, 8.0, 7.0], (1, 6), CPU).unwrap();
    let (v, i) = nn::AdaptiveMaxPool1d::new(2)
        .forward_with_indices(&x)
        .unwrap();
    assert_eq!(v.to_vec::<f32>().unwrap(), [9.0, 8.0]);
    assert_eq!(i.to_vec::<i64>().unwrap(), [1, 4]);
    assert_eq!(i.shape(), [1, 2]);
    // The positions unpool back to where the maxima were.
    let back = F::max_unpool1d(
        &v.unsqueeze(0).unwrap(),
        &i.unsqueeze(0).unwrap(),
        3,
        None,
        0,
        Some(6),
    )
    .unwrap();
    assert_eq!(
        back.to_vec::<f32>().unwrap(),
        [0.0, 9.0, 0.0, 0.0, 8.0, 0.0]
    );
}

#[test]
fn the_old_upsampling_layers_are_interpolate() {
    let x = Tensor::from_vec(vec![0.0f32, 1.0, 2.0, 3.0], (1, 1, 2, 2), CPU).unwrap();
    let near = nn::UpsamplingNearest2d::new(2.0);
    assert_eq!(
        near.to_string(),
        "UpsamplingNearest2d(scale_factor=2.0, mode='nearest')"
    );
    assert_eq!(
        near.forward(&x).unwrap().to_vec::<f32>().unwrap(),
        F::upsample_nearest(&x, 2.0)
            .unwrap()
            .to_vec::<f32>()
            .unwrap()
    );
    let bil = nn::UpsamplingBilinear2d::new((3, 3));
    assert_eq!(
        bil.to_string(),
        "UpsamplingBilinear2d(size=(3, 3), mode='bilinear')"
    );
    // align_corners=True: the corners stay put and the centre is their mean.
    let y = bil.forward(&x).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(y, [0.0, 0.5, 1.0, 1.0, 1.5, 2.0, 2.0, 2.5, 3.0]);
    assert_eq!(
        y,
        F::upsample_bilinear(&x, (3, 3))
            .unwrap()
            .to_vec::<f32>()
            .unwrap()
    );
    assert_eq!(
        F::upsample(&x, (3, 3), "bilinear", true)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        y
    );
    let e = err(bil.forward(&x.squeeze(0).unwrap()));
    assert!(e.contains("bilinear mode needs 4D input"), "{e}");
}

#[test]
fn adaptive_max_pool_gives_each_maximum_and_where_it_is() {
    // A 3 x 3 plane pooled to 2 x 2: windows rows/cols 0..2 and 1..3, overlapping.
    let x = Tensor::from_vec(
        vec![1.0f32, 9.0, 2.0, 3.0, 4.0, 8.0, 7.0, 5.0, 6.0],
        (1, 1, 3, 3),
        CPU,
    )
    .unwrap();
    let (v, i) = F::adaptive_max_pool2d_with_indices(&x, (2, 2)).unwrap();
    assert_eq!(v.to_vec::<f32>().unwrap(), [9.0, 9.0, 7.0, 8.0]);
    assert_eq!(i.dtype(), DType::I64);
    assert_eq!(i.to_vec::<i64>().unwrap(), [1, 1, 6, 5]);
    let m = nn::AdaptiveMaxPool2d::new((2, 2));
    assert_eq!(m.to_string(), "AdaptiveMaxPool2d(output_size=(2, 2))");
    assert_eq!(
        m.forward(&x).unwrap().to_vec::<f32>().unwrap(),
        [9.0, 9.0, 7.0, 8.0]
    );
    let seq = x.reshape([1, 9]).unwrap();
    let avg = nn::AdaptiveAvgPool1d::new(3).forward(&seq).unwrap();
    assert_eq!(avg.shape(), [1, 3]);
    assert_eq!(avg.to_vec::<f32>().unwrap(), [4.0, 5.0, 6.0]);
    let max = nn::AdaptiveMaxPool1d::new(1).forward(&seq).unwrap();
    assert_eq!(max.to_vec::<f32>().unwrap(), [9.0]);
    assert_eq!(
        nn::AdaptiveMaxPool1d::new(1).to_string(),
        "AdaptiveMaxPool1d(output_size=1)"
    );
    let e = err(F::adaptive_max_pool2d(
        &ints(&[1, 2, 3, 4], &[1, 1, 2, 2]),
        (1, 1),
    ));
    assert!(e.contains("needs a floating-point input"), "{e}");
}

#[test]
fn pdist_lists_each_pair_once() {
    let x = Tensor::from_vec(vec![0.0f64, 0.0, 3.0, 4.0, 6.0, 8.0], (3, 2), CPU).unwrap();
    assert_eq!(
        F::pdist(&x, 2.0).unwrap().to_vec::<f64>().unwrap(),
        [5.0, 10.0, 5.0]
    );
    assert_eq!(
        F::pdist(&x, 1.0).unwrap().to_vec::<f64>().unwrap(),
        [7.0, 14.0, 7.0]
    );
    let one = F::pdist(&x.narrow(0, 0, 1).unwrap(), 2.0).unwrap();
    assert_eq!(one.shape(), [0]);
    let e = err(F::pdist(&x.unsqueeze(0).unwrap(), 2.0));
    assert!(e.contains("pdist: needs a 2-D tensor"), "{e}");
    let e = err(F::pdist(&x.to_dtype(DType::F16).unwrap(), 2.0));
    assert!(e.contains("needs float32 or float64, got float16"), "{e}");
    let e = err(F::pdist(&x, -1.0));
    assert!(e.contains("p must be a non-negative number"), "{e}");
}

#[test]
fn max_unpool_puts_each_maximum_back_where_it_was() {
    let x = Tensor::from_vec(
        vec![
            1.0f32, 9.0, 2.0, 3.0, 4.0, 8.0, 7.0, 5.0, 6.0, 0.0, 1.0, 2.0,
        ],
        (1, 1, 3, 4),
        CPU,
    )
    .unwrap();
    let pool = nn::MaxPool2d::new(2);
    let (v, i) = pool.forward_with_indices(&x).unwrap();
    assert_eq!(v.to_vec::<f32>().unwrap(), [9.0, 7.0]);
    assert_eq!(i.to_vec::<i64>().unwrap(), [1, 6]);
    let unpool = nn::MaxUnpool2d::new(2);
    assert_eq!(
        unpool.describe(),
        "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"
    );
    // Without a size: (1 - 1) * 2 + 2 rows, (2 - 1) * 2 + 2 columns.
    let y = unpool.forward(&v, &i).unwrap();
    assert_eq!(y.shape(), [1, 1, 2, 4]);
    assert_eq!(
        y.to_vec::<f32>().unwrap(),
        [0.0, 9.0, 0.0, 0.0, 0.0, 0.0, 7.0, 0.0]
    );
    // The pooled input's size, within a stride of that.
    let y = unpool.forward_sized(&v, &i, Some((3, 4))).unwrap();
    assert_eq!(y.shape(), [1, 1, 3, 4]);
    let e = err(unpool.forward_sized(&v, &i, Some((4, 4))));
    assert!(e.contains("invalid output_size (4, 4)"), "{e}");
    assert!(e.contains("between 0 and 4"), "{e}");
    let far = ints(&[1, 99], &[1, 1, 1, 2]);
    let e = err(unpool.forward(&v, &far));
    assert!(
        e.contains("invalid max index 99 (the output planes are 2 x 4)"),
        "{e}"
    );
    let e = err(unpool.forward(&v, &i.to_dtype(DType::I32).unwrap()));
    assert!(e.contains("indices must be int64"), "{e}");
    // 1-D: indices along the sequence.
    let seq = x.reshape([1, 12]).unwrap();
    let (v, i) = F::max_pool1d_with_indices(&seq, 3, 3, 0, 1, false).unwrap();
    assert_eq!(i.to_vec::<i64>().unwrap(), [1, 5, 6, 11]);
    let back = nn::MaxUnpool1d::new(3).forward(&v, &i).unwrap();
    assert_eq!(back.shape(), [1, 12]);
    assert_eq!(back.to_vec::<f32>().unwrap()[5], 8.0);
    assert_eq!(
        nn::MaxUnpool1d::new(3).describe(),
        "MaxUnpool1d(kernel_size=(3,), stride=(3,), padding=(0,))"
    );
}
