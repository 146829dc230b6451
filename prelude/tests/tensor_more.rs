//! torch's conveniences built from the primitive ops (tensor/math.rs, tensor/sort.rs): what
//! the parity harness cannot show (its cases compare with torch value by value): seeds,
//! ranges, stability, the zero-vector gradient of `norm`, and the errors.
use gpulab::{fork_rng, manual_seed, DType, Device, Tensor};

const CPU: Device = Device::Cpu;

#[test]
fn randint_is_seeded_int64_in_range() {
    fork_rng(5, || {
        let a = Tensor::randint(-3, 4, [1000], CPU).unwrap();
        manual_seed(5);
        let b = Tensor::randint(-3, 4, [1000], CPU).unwrap();
        assert_eq!(a.dtype(), DType::I64);
        let (va, vb) = (a.to_vec::<i64>().unwrap(), b.to_vec::<i64>().unwrap());
        assert_eq!(va, vb);
        assert!(va.iter().all(|v| (-3..4).contains(v)));
        for v in -3..4 {
            assert!(va.contains(&v), "{v} never drawn in 1000 tries");
        }
        let e = Tensor::randint(2, 2, [3], CPU).unwrap_err().to_string();
        assert!(e.contains("randint: the range 2..2 is empty"), "{e}");
    })
}

#[test]
fn sort_is_stable_and_topk_takes_the_lower_index_on_ties() {
    let x = Tensor::from_vec(vec![2.0f32, 1.0, 2.0, 1.0, f32::NAN], 5, CPU).unwrap();
    let (v, i) = x.sort(0, false).unwrap();
    assert_eq!(i.to_vec::<i64>().unwrap(), [1, 3, 0, 2, 4]);
    assert!(v.to_vec::<f32>().unwrap()[4].is_nan());
    let (_, i) = x.sort(0, true).unwrap();
    assert_eq!(i.to_vec::<i64>().unwrap(), [4, 0, 2, 1, 3]);
    let (v, i) = x.topk(2, 0, false).unwrap();
    assert_eq!(
        (v.to_vec::<f32>().unwrap(), i.to_vec::<i64>().unwrap()),
        (vec![1.0, 1.0], vec![1, 3])
    );
    // int64 beyond 2^53 keeps its exact order.
    let big = Tensor::from_vec(vec![(1i64 << 60) + 1, 1 << 60, -5], 3, CPU).unwrap();
    assert_eq!(
        big.argsort(0, false).unwrap().to_vec::<i64>().unwrap(),
        [2, 1, 0]
    );
    // A 0-d tensor sorts to itself; k = 0 gives empty results; k past the size is an error.
    let (v, i) = Tensor::from_vec(vec![3.0f32], (), CPU)
        .unwrap()
        .sort(0, false)
        .unwrap();
    assert_eq!(
        (v.item::<f32>().unwrap(), i.item::<i64>().unwrap()),
        (3.0, 0)
    );
    assert_eq!(x.topk(0, 0, true).unwrap().0.shape(), [0]);
    let e = x.topk(6, 0, true).unwrap_err().to_string();
    assert!(
        e.contains("k = 6 is larger than dimension 0 (size 5"),
        "{e}"
    );
}

#[test]
fn sorted_values_send_their_gradients_home() {
    let x = Tensor::from_vec(vec![3.0f32, 1.0, 2.0], 3, CPU)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let (v, _) = x.topk(2, 0, true).unwrap();
    let w = Tensor::from_vec(vec![10.0f32, 1.0], 2, CPU).unwrap();
    v.mul(&w).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), [10.0, 0.0, 1.0]);
}

#[test]
fn norm_of_the_zero_vector_has_gradient_zero() {
    let x = Tensor::zeros([3], CPU)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let n = x.norm().unwrap();
    assert_eq!(n.item::<f32>().unwrap(), 0.0);
    n.backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), [0.0; 3]);
    let y = Tensor::from_vec(vec![3.0f32, 4.0], 2, CPU)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let n = y.norm().unwrap();
    assert_eq!(n.item::<f32>().unwrap(), 5.0);
    n.backward().unwrap();
    assert_eq!(y.grad().unwrap().to_vec::<f32>().unwrap(), [0.6, 0.8]);
}

#[test]
fn pieces_views_and_bad_arguments() {
    let x = Tensor::arange(0.0f32, 10.0, CPU).unwrap();
    let parts = x.chunk(3, 0).unwrap();
    let sizes: Vec<usize> = parts.iter().map(|p| p.numel()).collect();
    assert_eq!(sizes, [4, 4, 2]);
    assert!(parts.iter().all(|p| p.shares_storage(&x)));
    let sizes: Vec<usize> = x.split(3, 0).unwrap().iter().map(|p| p.numel()).collect();
    assert_eq!(sizes, [3, 3, 3, 1]);
    assert_eq!(
        Tensor::zeros([0], CPU).unwrap().chunk(2, 0).unwrap().len(),
        1
    );
    let errors = [
        x.split(0, 0).unwrap_err().to_string(),
        x.chunk(0, 0).unwrap_err().to_string(),
        x.masked_fill(&x, 1.0).unwrap_err().to_string(),
        x.tril(0).unwrap_err().to_string(),
        x.outer(&x.reshape([2, 5]).unwrap())
            .unwrap_err()
            .to_string(),
        x.dot(&x.to_dtype(DType::F64).unwrap())
            .unwrap_err()
            .to_string(),
        x.repeat(&[]).unwrap_err().to_string(),
        x.isclose(&x.to_dtype(DType::I64).unwrap(), 0.0, 0.0)
            .unwrap_err()
            .to_string(),
        Tensor::arange(0, 3, CPU)
            .unwrap()
            .norm()
            .unwrap_err()
            .to_string(),
    ];
    let expected = [
        "split: the piece size must be positive",
        "chunk: the number of chunks must be positive",
        "masked_fill: the mask must be a bool tensor, got float32",
        "tril: needs at least 2 dimensions, got shape [10]",
        "outer: needs two 1-D tensors, got shapes [10] and [2, 5]",
        "dot: both vectors need one dtype, got float32 and float64",
        "repeat: 0 repeat counts for a tensor of rank 1",
        "isclose: both tensors need one dtype, got float32 and int64",
        "norm() needs a floating-point tensor, got int64",
    ];
    for (e, want) in errors.iter().zip(expected) {
        assert!(e.contains(want), "{e:?} should say {want:?}");
    }
    let e = x.masked_fill(&Tensor::zeros_dtype([3], DType::Bool, CPU).unwrap(), 1.0);
    assert!(e
        .unwrap_err()
        .to_string()
        .contains("does not broadcast to the tensor's shape [10]"));
}

/// `rand_like` and `randn_like` keep the tensor's shape, float dtype and device, come from
/// the seeded generator, and refuse integer tensors as torch does.
#[test]
fn random_like_follows_the_tensor() {
    let x = Tensor::zeros((3, 4), Device::Cpu)
        .unwrap()
        .to_dtype(DType::F64)
        .unwrap();
    let a = gpulab::fork_rng(9, || x.rand_like().unwrap());
    let b = gpulab::fork_rng(9, || x.rand_like().unwrap());
    assert_eq!((a.shape(), a.dtype()), (&[3usize, 4][..], DType::F64));
    assert_eq!(a.to_vec::<f64>().unwrap(), b.to_vec::<f64>().unwrap());
    assert!(a
        .to_vec::<f64>()
        .unwrap()
        .iter()
        .all(|v| (0.0..1.0).contains(v)));
    let n = x.randn_like().unwrap();
    assert_eq!(n.dtype(), DType::F64);
    let e = Tensor::zeros_dtype(2, DType::I64, Device::Cpu)
        .unwrap()
        .randn_like()
        .unwrap_err()
        .to_string();
    assert!(e.contains("randn_like") && e.contains("int64"), "{e}");
}

#[test]
fn meshgrid_unbind_and_repeat_interleave_lay_out_as_torch() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], 3, Device::Cpu).unwrap();
    let y = Tensor::from_vec(vec![10.0f32, 20.0], 2, Device::Cpu).unwrap();
    let ij = Tensor::meshgrid(&[&x, &y], "ij").unwrap();
    assert_eq!((ij[0].shape(), ij[1].shape()), (&[3, 2][..], &[3, 2][..]));
    assert_eq!(
        ij[1].to_vec::<f32>().unwrap(),
        [10., 20., 10., 20., 10., 20.]
    );
    let xy = Tensor::meshgrid(&[&x, &y], "xy").unwrap();
    assert_eq!(xy[0].shape(), &[2, 3]);
    assert_eq!(xy[0].to_vec::<f32>().unwrap(), [1., 2., 3., 1., 2., 3.]);
    // Views of the inputs, not copies.
    assert!(xy[0].shares_storage(&x));
    let e = Tensor::meshgrid(&[&x, &y], "yx").unwrap_err().to_string();
    assert!(e.contains("\"ij\" or \"xy\""), "{e}");
    let e = Tensor::meshgrid(&[&x.reshape([3, 1]).unwrap()], "ij").unwrap_err();
    assert!(e.to_string().contains("0-d or 1-d"), "{e}");

    let m = Tensor::arange(0.0f32, 6.0, Device::Cpu)
        .unwrap()
        .reshape([2, 3])
        .unwrap();
    let cols = m.unbind(1).unwrap();
    assert_eq!(cols.len(), 3);
    assert_eq!(cols[2].to_vec::<f32>().unwrap(), [2., 5.]);
    assert_eq!(
        m.repeat_interleave(2, Some(1))
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        [0., 0., 1., 1., 2., 2., 3., 3., 4., 4., 5., 5.]
    );
    let counts = Tensor::from_vec(vec![0i64, 2], 2, Device::Cpu).unwrap();
    assert_eq!(
        m.repeat_interleave_counts(&counts, Some(0))
            .unwrap()
            .shape(),
        &[2, 3]
    );
    let e = m
        .repeat_interleave_counts(&counts, Some(1))
        .unwrap_err()
        .to_string();
    assert!(e.contains("2 counts") && e.contains("size 3"), "{e}");
}

#[test]
fn searchsorted_cummax_and_the_guarded_functions() {
    let seq = Tensor::from_vec(vec![1.0f64, 3.0, 5.0], 3, Device::Cpu).unwrap();
    let v = Tensor::from_vec(vec![0.0f64, 3.0, 4.0, f64::NAN], 4, Device::Cpu).unwrap();
    let left = Tensor::searchsorted(&seq, &v, false).unwrap();
    assert_eq!(left.to_vec::<i64>().unwrap(), [0, 1, 2, 3]);
    assert_eq!(
        v.bucketize(&seq, true).unwrap().to_vec::<i64>().unwrap(),
        [0, 2, 2, 3]
    );
    let rows = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], [2, 2], Device::Cpu).unwrap();
    let e = Tensor::searchsorted(&rows, &v, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("[2, 2]") && e.contains("[4]"), "{e}");

    let x = Tensor::from_vec(vec![1.0f64, 3.0, 2.0, 3.0], 4, Device::Cpu)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let (m, at) = x.cummax(0).unwrap();
    assert_eq!(m.to_vec::<f64>().unwrap(), [1., 3., 3., 3.]);
    // A tie moves to the later position, and the gradient goes where the maximum was.
    assert_eq!(at.to_vec::<i64>().unwrap(), [0, 1, 1, 3]);
    assert_eq!(m.grad_fn(), Some("CummaxBackward0"));
    m.sum().unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), [1., 2., 0., 1.]);

    let s = Tensor::from_vec(vec![f64::NAN, f64::INFINITY, -1.0], 3, Device::Cpu).unwrap();
    assert_eq!(
        s.nan_to_num(0.0, None, Some(-9.0))
            .unwrap()
            .to_vec::<f64>()
            .unwrap(),
        [0.0, f64::MAX, -1.0]
    );
    let big = Tensor::from_vec(vec![1000.0f32, -f32::INFINITY], 2, Device::Cpu).unwrap();
    let other = Tensor::from_vec(vec![1000.0f32, -f32::INFINITY], 2, Device::Cpu).unwrap();
    let l = big.logaddexp(&other).unwrap().to_vec::<f32>().unwrap();
    assert!((l[0] - (1000.0 + std::f32::consts::LN_2)).abs() < 1e-3 && l[1] == -f32::INFINITY);
    let p = Tensor::from_vec(vec![0.0f32, 0.5], 2, Device::Cpu).unwrap();
    assert_eq!(p.xlogy(&p).unwrap().to_vec::<f32>().unwrap()[0], 0.0);
    let e = Tensor::from_vec(vec![1i64], 1, Device::Cpu)
        .unwrap()
        .logaddexp(&Tensor::from_vec(vec![1i64], 1, Device::Cpu).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("logaddexp") && e.contains("int64"), "{e}");
}

#[test]
fn tril_of_an_empty_batch_of_large_matrices_allocates_nothing() {
    // Found by no_panics: the mask was built for rows x cols (39 GB here) before noticing
    // there was nothing to mask.
    let t = Tensor::zeros([1, 0, 140_000, 280_000], Device::Cpu).unwrap();
    assert_eq!(t.tril(-3).unwrap().shape(), [1, 0, 140_000, 280_000]);
    assert_eq!(t.triu(2).unwrap().shape(), [1, 0, 140_000, 280_000]);
}
