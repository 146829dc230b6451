//! torch's norm-layer options (values checked against torch by bench/torch_parity.py's
//! NORM_OPTIONS cases; here the behaviour a user sees): BatchNorm's `affine(false)`,
//! `track_running_stats(false)` and `momentum(None)`; InstanceNorm's running statistics and
//! unbatched input; the lazy norms; their reprs, state dicts and errors.

use gpulab::nn::{self, BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm, Module};
use gpulab::{Device, Tensor, F};

const CPU: Device = Device::Cpu;

fn ramp(shape: &[usize], k: usize) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| ((i * k) % 11) as f32 / 4.0 - 1.0).collect();
    Tensor::from_vec(v, shape.to_vec(), CPU).unwrap()
}

fn values(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

fn close(a: &[f32], b: &[f32]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < 1e-5, "{a:?} vs {b:?}");
    }
}

fn names(m: &dyn Module) -> Vec<String> {
    m.state_dict().into_iter().map(|(n, _)| n).collect()
}

#[test]
fn batch_norm_without_affine_or_tracking_has_no_tensors_of_its_own() {
    let bn = BatchNorm1d::new(3).affine(false);
    assert!(bn.weight.is_none() && bn.parameters().is_empty());
    assert_eq!(
        names(&bn),
        ["running_mean", "running_var", "num_batches_tracked"]
    );
    let plain = BatchNorm1d::new(3).track_running_stats(false);
    assert!(plain.running_mean.is_none() && plain.buffers().is_empty());
    assert_eq!(names(&plain), ["weight", "bias"]);
    assert_eq!(
        BatchNorm2d::new(4)
            .momentum(None)
            .affine(false)
            .track_running_stats(false)
            .to_string(),
        "BatchNorm2d(4, eps=1e-05, momentum=None, affine=False, track_running_stats=False)"
    );
    // Without running statistics, eval mode normalises by the batch's, as in training.
    let mut m = BatchNorm1d::new(3).track_running_stats(false);
    let x = ramp(&[4, 3], 7);
    let train = values(&m.forward(&x).unwrap());
    m.eval();
    close(&values(&m.forward(&x).unwrap()), &train);
    let means = values(&m.forward(&x).unwrap().mean_dim(0).unwrap());
    close(&means, &[0.0; 3]);
}

#[test]
fn momentum_none_averages_every_batch_seen() {
    let bn = BatchNorm1d::new(2).momentum(None);
    let batches = [ramp(&[4, 2], 3), ramp(&[4, 2], 5), ramp(&[4, 2], 9)];
    for b in &batches {
        bn.forward(b).unwrap();
    }
    // The running mean is the plain mean of the three batch means.
    let mut want = [0.0f32; 2];
    for b in &batches {
        for (w, m) in want.iter_mut().zip(values(&b.mean_dim(0).unwrap())) {
            *w += m / 3.0;
        }
    }
    close(&values(&bn.running_mean.as_ref().unwrap().tensor()), &want);
    let count = &bn.state_dict()[4].1;
    assert_eq!(count.item::<i64>().unwrap(), 3);
}

#[test]
fn instance_norm_keeps_running_statistics_when_asked() {
    let mut m = InstanceNorm::new_1d(2).track_running_stats(true);
    assert_eq!(
        m.to_string(),
        "InstanceNorm1d(2, eps=1e-05, momentum=0.1, affine=False, track_running_stats=True)"
    );
    assert_eq!(
        names(&m),
        ["running_mean", "running_var", "num_batches_tracked"]
    );
    let x = ramp(&[3, 2, 5], 7);
    let y = m.forward(&x).unwrap();
    // Each instance normalised on its own in training ...
    close(
        &values(&y.mean_dim(2).unwrap().flatten().unwrap()),
        &[0.0; 6],
    );
    // ... and the running mean moved a tenth of the way to the mean of the instances' means.
    let per: Vec<f32> = values(&x.mean_dim(2).unwrap().mean_dim(0).unwrap());
    let rm = values(&m.buffers()[0].1.tensor());
    close(&rm, &per.iter().map(|v| v * 0.1).collect::<Vec<_>>());
    // In eval mode the running statistics normalise every instance alike.
    m.eval();
    let e = m.forward(&x).unwrap();
    let rv = values(&m.buffers()[1].1.tensor());
    let xv = values(&x);
    let ev = values(&e);
    for (i, (&xi, &ei)) in xv.iter().zip(&ev).enumerate() {
        let c = (i / 5) % 2;
        let want = (xi - rm[c]) / (rv[c] + 1e-5).sqrt();
        assert!((ei - want).abs() < 1e-5, "{i}: {ei} vs {want}");
    }
    // momentum None leaves them where they are (torch passes 0).
    let still = InstanceNorm::new_1d(2)
        .momentum(None)
        .track_running_stats(true);
    still.forward(&x).unwrap();
    close(&values(&still.buffers()[0].1.tensor()), &[0.0, 0.0]);
}

#[test]
fn instance_norm_takes_unbatched_input_and_names_bad_shapes() {
    let m = InstanceNorm::new_2d(3).affine(true);
    let x = ramp(&[3, 2, 4], 7);
    let one = m.forward(&x).unwrap();
    assert_eq!(one.shape(), [3, 2, 4]);
    let batched = m.forward(&x.unsqueeze(0).unwrap()).unwrap();
    close(&values(&one), &values(&batched));
    let e = m.forward(&ramp(&[2, 4, 2, 4], 3)).unwrap_err().to_string();
    assert!(
        e.contains("expected input of shape [N, 3, H, W] or [3, H, W]")
            && e.contains("[2, 4, 2, 4]"),
        "{e}"
    );
    let e = F::instance_norm(
        &ramp(&[2, 3, 1], 3),
        None,
        None,
        None,
        None,
        true,
        0.1,
        1e-5,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("more than 1 spatial element"), "{e}");
    let e = F::instance_norm(
        &ramp(&[2, 3, 4], 3),
        None,
        None,
        None,
        None,
        false,
        0.1,
        1e-5,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("needs the running mean and variance"), "{e}");
    let e = BatchNorm3d::new(2)
        .forward(&ramp(&[2, 2, 3], 3))
        .unwrap_err()
        .to_string();
    assert!(e.contains("expected an input [N, 2, D, H, W]"), "{e}");
}

#[test]
fn lazy_norms_read_their_channels_from_the_first_input() {
    let bn = nn::LazyBatchNorm2d::new();
    assert_eq!(
        bn.to_string(),
        "LazyBatchNorm2d(0, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"
    );
    // The placeholders' handles become the real tensors: a buffer held early sees them.
    let early = bn.buffers()[0].1.clone();
    bn.forward(&ramp(&[2, 5, 3, 3], 7)).unwrap();
    assert_eq!(
        bn.to_string(),
        "BatchNorm2d(5, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"
    );
    assert_eq!(early.shape(), [5]);
    assert!(values(&early.tensor()).iter().any(|&v| v != 0.0));
    assert_eq!(
        names(&bn),
        [
            "weight",
            "bias",
            "running_mean",
            "running_var",
            "num_batches_tracked"
        ]
    );
    // torch's lazy instance norms default to affine and tracked statistics.
    let inn = nn::LazyInstanceNorm1d::new();
    assert_eq!(
        inn.to_string(),
        "LazyInstanceNorm1d(0, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"
    );
    inn.forward(&ramp(&[4, 6], 3)).unwrap();
    assert_eq!(inn.parameters()[0].shape(), [4]);
    // Options before the first forward carry over; eval mode reaches the built layer.
    let mut plain = nn::LazyBatchNorm1d::new()
        .affine(false)
        .momentum(None)
        .eps(1e-3);
    plain.eval();
    let x = ramp(&[4, 3], 5);
    let y = plain.forward(&x).unwrap();
    // Eval mode with fresh statistics (mean 0, variance 1) is x / sqrt(1 + eps).
    close(
        &values(&y),
        &values(&x)
            .iter()
            .map(|v| v / 1.001f32.sqrt())
            .collect::<Vec<_>>(),
    );
    assert!(plain
        .to_string()
        .starts_with("BatchNorm1d(3, eps=0.001, momentum=None, affine=False"));
    // Loading before the first forward: the channels from the running mean when there is no
    // weight.
    let saved = BatchNorm1d::new(7).affine(false).state_dict();
    let lazy = nn::LazyBatchNorm1d::new().affine(false);
    lazy.load_state_dict(&saved).unwrap();
    assert_eq!(lazy.buffers()[0].1.shape(), [7]);
    let e = lazy.forward(&ramp(&[2, 3], 3)).unwrap_err().to_string();
    assert!(e.contains("expected an input [N, 7]"), "{e}");
    let e = nn::LazyInstanceNorm2d::new()
        .forward(&ramp(&[2, 3], 3))
        .unwrap_err()
        .to_string();
    assert!(e.contains("[N, C, H, W] or [C, H, W]"), "{e}");
}
