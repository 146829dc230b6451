//! nn.utils.prune: masks by magnitude, channel norm, at random or given, step after step;
//! names, training with the mask, removal and the errors (values against torch:
//! bench/torch_parity.py's prune cases).

use gpulab::nn::utils::prune;
use gpulab::nn::{self, Module};
use gpulab::optim::SGD;
use gpulab::{fork_rng, DType, Device, Tensor};

const CPU: Device = Device::Cpu;

fn values(t: &Tensor) -> Vec<f32> {
    t.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap()
}

fn err<T>(r: gpulab::error::Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

/// A Linear(4, 3) with weight 1..12 (row-major) and bias 0.
fn counting() -> nn::Linear {
    let lin = nn::Linear::new(4, 3);
    let w: Vec<f32> = (1..=12).map(|v| v as f32).collect();
    lin.weight
        .set_data(Tensor::from_vec(w, [3, 4], CPU).unwrap())
        .unwrap();
    lin
}

#[test]
fn magnitude_pruning_step_after_step() {
    let mut p = prune::l1_unstructured(counting(), "weight", 0.25).unwrap();
    let names: Vec<String> = p.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["bias", "weight_orig"]);
    let buffers: Vec<String> = p.buffers().into_iter().map(|(n, _)| n).collect();
    assert_eq!(buffers, ["weight_mask"]);
    // 0.25 of 12: the three smallest go.
    assert_eq!(
        values(&p.mask.tensor()),
        [0., 0., 0., 1., 1., 1., 1., 1., 1., 1., 1., 1.]
    );
    assert_eq!(
        p.describe(),
        "Linear(in_features=4, out_features=3, bias=True)"
    );
    // Then half of the nine left: round(4.5) is 4, as Python's round.
    p.l1_unstructured(0.5).unwrap();
    assert_eq!(
        values(&p.weight().unwrap()),
        [0., 0., 0., 0., 0., 0., 0., 8., 9., 10., 11., 12.]
    );
    assert!((p.sparsity().unwrap() - 7.0 / 12.0).abs() < 1e-12);

    // A bad amount changes nothing, and the model is still there.
    let e = err(p.l1_unstructured(20));
    assert!(e.contains("amount=20") && e.contains("=5"), "{e}");
    assert!(err(p.l1_unstructured(1.5)).contains("range [0, 1]"));
    assert!(err(p.l1_unstructured(-1)).contains("non-negative"));
    assert!((p.sparsity().unwrap() - 7.0 / 12.0).abs() < 1e-12);
}

#[test]
fn pruned_entries_stay_zero_while_the_rest_learn() {
    fork_rng(8, || {
        let p = prune::l1_unstructured(counting(), "weight", 6).unwrap();
        let orig_before = values(&p.orig.tensor());
        let mut opt = SGD::new(p.parameters(), 0.1);
        let x = Tensor::randn([5, 4], CPU).unwrap();
        for _ in 0..3 {
            p.forward(&x)
                .unwrap()
                .sin()
                .unwrap()
                .sum()
                .unwrap()
                .backward()
                .unwrap();
            opt.step().unwrap();
            opt.zero_grad();
        }
        let (w, orig) = (values(&p.weight().unwrap()), values(&p.orig.tensor()));
        for i in 0..6 {
            assert_eq!(w[i], 0.0);
            assert_eq!(
                orig[i], orig_before[i],
                "no gradient reaches a pruned entry"
            );
        }
        assert!((6..12).any(|i| orig[i] != orig_before[i]));
        // remove(): the zeros stay in a plain, learnable weight.
        let lin = prune::remove(p).unwrap();
        assert_eq!(values(&lin.weight.tensor())[..6], [0.0; 6]);
        assert!(lin.weight.requires_grad());
    });
}

#[test]
fn structured_random_custom_and_identity() {
    // Rows (dim 0) by L2 norm: the first row (1..4) is the smallest.
    let p = prune::ln_structured(counting(), "weight", 1, 2.0, 0).unwrap();
    assert_eq!(values(&p.weight().unwrap())[..4], [0.0; 4]);
    assert_eq!(values(&p.weight().unwrap())[4], 5.0);
    // Columns (dim -1) by L1: the first two columns go.
    let mut p = prune::ln_structured(counting(), "weight", 0.5, 1.0, -1).unwrap();
    let w = values(&p.weight().unwrap());
    assert_eq!([w[0], w[1], w[2], w[4], w[5]], [0.0, 0.0, 3.0, 0.0, 0.0]);
    // A second structured step counts only the channels left.
    p.ln_structured(1, 2.0, -1).unwrap();
    assert_eq!(values(&p.weight().unwrap())[2], 0.0);
    assert!(err(p.ln_structured(2, 2.0, -1)).contains("amount=2"));
    let e = err(p.ln_structured(1, 2.0, 2));
    assert!(e.contains("invalid index 2") && e.contains("[3, 4]"), "{e}");
    let e = err(prune::ln_structured(counting(), "bias", 1, 2.0, 0));
    assert!(e.contains("multidimensional") && e.contains("[3]"), "{e}");

    fork_rng(1, || {
        let p = prune::random_unstructured(counting(), "weight", 5).unwrap();
        assert!((p.sparsity().unwrap() - 5.0 / 12.0).abs() < 1e-12);
        let p = prune::random_structured(counting(), "weight", 2, 0).unwrap();
        let zero_rows = values(&p.mask.tensor())
            .chunks(4)
            .filter(|r| r.iter().all(|&v| v == 0.0))
            .count();
        assert_eq!(zero_rows, 2);
    });
    let keep = Tensor::from_vec(vec![1.0f32, 0.0, 1.0, 0.0], [1, 4], CPU)
        .unwrap()
        .expand([3, 4])
        .unwrap()
        .contiguous()
        .unwrap();
    let p = prune::custom_from_mask(counting(), "weight", &keep).unwrap();
    assert_eq!(values(&p.weight().unwrap())[..4], [1.0, 0.0, 3.0, 0.0]);
    let e = err(prune::custom_from_mask(
        counting(),
        "weight",
        &Tensor::ones([4], CPU).unwrap(),
    ));
    assert!(e.contains("[4]") && e.contains("[3, 4]"), "{e}");
    let p = prune::identity(counting(), "weight").unwrap();
    assert_eq!(p.sparsity().unwrap(), 0.0);
    // Moves and converts with its mask.
    p.to_dtype(DType::F64).unwrap();
    assert_eq!(p.mask.tensor().dtype(), DType::F64);
    assert_eq!(
        p.forward(
            &Tensor::ones([1, 4], CPU)
                .unwrap()
                .to_dtype(DType::F64)
                .unwrap()
        )
        .unwrap()
        .dtype(),
        DType::F64
    );
}

#[test]
fn global_pruning_takes_the_smallest_over_all_layers() {
    use prune::{global_unstructured, GlobalMethod};
    // Layer a holds 1..12, layer b 100..: the 6 smallest of all 18 are all in a.
    let mut a = prune::identity(counting(), "weight").unwrap();
    let big = nn::Linear::new(3, 2);
    let w: Vec<f32> = (100..106).map(|v| v as f32).collect();
    big.weight
        .set_data(Tensor::from_vec(w, [2, 3], CPU).unwrap())
        .unwrap();
    let mut b = prune::identity(big, "weight").unwrap();
    global_unstructured(&mut [&mut a, &mut b], GlobalMethod::L1Unstructured, 6).unwrap();
    assert!((a.sparsity().unwrap() - 0.5).abs() < 1e-12);
    assert_eq!(b.sparsity().unwrap(), 0.0);
    // A second round counts what is left (12 entries): a quarter of them, again from a.
    global_unstructured(&mut [&mut a, &mut b], GlobalMethod::L1Unstructured, 0.25).unwrap();
    assert!((a.sparsity().unwrap() - 0.75).abs() < 1e-12);
    // Too many: nothing changes.
    let e = err(global_unstructured(
        &mut [&mut a, &mut b],
        GlobalMethod::RandomUnstructured,
        10,
    ));
    assert!(e.contains("amount=10") && e.contains("=9"), "{e}");
    assert!((a.sparsity().unwrap() - 0.75).abs() < 1e-12);
    // The wrappers then make a model.
    let model = nn::Sequential::new().add(a).add(b);
    assert_eq!(
        model
            .forward(&Tensor::ones([1, 4], CPU).unwrap())
            .unwrap()
            .shape(),
        [1, 2]
    );
}
