//! torch's named products, pointwise functions and joins (tensor/products.rs, pointwise.rs,
//! stacking.rs): what the parity harness cannot show, as it compares values with torch's:
//! which results are views of their input, gradients with torch's own rules where the
//! composition would give NaN, and errors that name the op and what was wrong.
use gpulab::{DType, Device, Tensor};

const CPU: Device = Device::Cpu;

fn m(rows: usize, cols: usize) -> Tensor {
    let v: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
    Tensor::from_vec(v, [rows, cols], CPU).unwrap()
}

fn err(r: gpulab::error::Result<impl std::fmt::Debug>) -> String {
    r.unwrap_err().to_string()
}

#[test]
fn split_pieces_are_views_of_the_tensor() {
    let x = m(2, 6);
    let pieces = x.tensor_split(4, 1).unwrap();
    let sizes: Vec<usize> = pieces.iter().map(|p| p.shape()[1]).collect();
    assert_eq!(sizes, [2, 2, 1, 1]);
    pieces[1].fill_(-1.0).unwrap();
    let row: Vec<f32> = x.select(0, 0).unwrap().to_vec().unwrap();
    assert_eq!(row, [0.0, 1.0, -1.0, -1.0, 4.0, 5.0]);
    let at = x.tensor_split_at(&[1, -2], 1).unwrap();
    assert_eq!(
        at.iter().map(|p| p.shape()[1]).collect::<Vec<_>>(),
        [1, 3, 2]
    );
}

#[test]
fn products_check_their_shapes() {
    let (a, b) = (m(2, 3), m(3, 4));
    assert_eq!(a.mm(&b).unwrap().shape(), [2, 4]);
    let e = err(a.mm(&b.unsqueeze(0).unwrap()));
    assert!(
        e.contains("mm: needs two matrices") && e.contains("[1, 3, 4]"),
        "{e}"
    );
    let e = err(a
        .unsqueeze(0)
        .unwrap()
        .bmm(&Tensor::zeros([2, 3, 4], CPU).unwrap()));
    assert!(e.contains("bmm: the batch sizes differ"), "{e}");
    let e = err(a.inner(&b));
    assert!(e.contains("inner: the last dimensions differ"), "{e}");
    let e = err(m(3, 4).addmm(&a, &b, 1.0, 1.0));
    assert!(
        e.contains("addmm: self of shape [3, 4] does not broadcast"),
        "{e}"
    );
    // Integer scales are cut toward zero, as torch converts them: 1 + (-1) * (1 * 1) = 0.
    let ones = Tensor::ones_dtype([1, 1], DType::I64, CPU).unwrap();
    let r = ones.addmm(&ones, &ones, 1.0, -1.5).unwrap();
    assert_eq!(r.to_vec::<i64>().unwrap(), [0]);
}

#[test]
fn joins_and_splits_name_what_was_wrong() {
    let e = err(m(2, 3).hsplit(2));
    assert!(
        e.contains("hsplit: dimension 1 of shape [2, 3] (size 3)"),
        "{e}"
    );
    let e = err(m(2, 3).dsplit(1));
    assert!(e.contains("dsplit: needs a tensor of at least 3"), "{e}");
    let e = err(Tensor::block_diag(
        &[Tensor::zeros([1, 1, 1], CPU).unwrap()],
    ));
    assert!(
        e.contains("block_diag") && e.contains("tensor 0 has shape [1, 1, 1]"),
        "{e}"
    );
    let e = err(Tensor::hstack::<Tensor>(&[]));
    assert!(e.contains("hstack: needs at least one tensor"), "{e}");
    let idx = Tensor::from_vec(vec![0i32], [1, 1], CPU).unwrap();
    let e = err(m(2, 3).take_along_dim(&idx, Some(1)));
    assert!(
        e.contains("take_along_dim: the indices need dtype int64, got int32"),
        "{e}"
    );
    let e =
        err(m(2, 3).take_along_dim(&Tensor::zeros_dtype([3], DType::I64, CPU).unwrap(), Some(0)));
    assert!(e.contains("one rank"), "{e}");
    let d = Tensor::block_diag(&[m(1, 2), m(2, 1)]).unwrap();
    assert_eq!(d.shape(), [3, 3]);
    assert_eq!(
        d.to_vec::<f32>().unwrap(),
        [0., 1., 0., 0., 0., 0., 0., 0., 1.]
    );
}

#[test]
fn pointwise_errors_and_torch_gradient_rules() {
    let ints = Tensor::from_vec(vec![1i64, 2], 2, CPU).unwrap();
    let e = err(ints.addcdiv(&ints, &ints, 1.0));
    assert!(
        e.contains("addcdiv: integer division is not supported"),
        "{e}"
    );
    let e = err(ints.hypot(&ints));
    assert!(
        e.contains("hypot needs floating-point tensors, got int64 and int64"),
        "{e}"
    );
    let f = Tensor::from_vec(vec![0.0f32, 2.0], 2, CPU).unwrap();
    let e = err(f.heaviside(&ints));
    assert!(
        e.contains("heaviside: input and values need one dtype"),
        "{e}"
    );
    // sinc's gradient is 0 at 0 (torch's rule), where sin(pi x) / (pi x) composed gives NaN.
    let x = Tensor::from_vec(vec![0.0f64, 0.5], 2, CPU)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    x.sinc().unwrap().sum().unwrap().backward().unwrap();
    let g: Vec<f64> = x.grad().unwrap().to_vec().unwrap();
    assert_eq!(g[0], 0.0);
    assert!((g[1] + 4.0 / std::f64::consts::PI).abs() < 1e-12, "{g:?}");
    // fmax: the gradient goes to the side that won, to self on a tie, past a NaN.
    let a = Tensor::from_vec(vec![1.0f32, 2.0, f32::NAN], 3, CPU)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let b = Tensor::from_vec(vec![1.0f32, 3.0, 5.0], 3, CPU)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let out = a.fmax(&b).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), [1.0, 3.0, 5.0]);
    out.sum().unwrap().backward().unwrap();
    assert_eq!(a.grad().unwrap().to_vec::<f32>().unwrap(), [1.0, 0.0, 0.0]);
    assert_eq!(b.grad().unwrap().to_vec::<f32>().unwrap(), [0.0, 1.0, 1.0]);
}

#[test]
fn linalg_refuses_what_it_cannot_solve() {
    use gpulab::linalg;
    let e = err(linalg::inv(&m(2, 3)));
    assert!(
        e.contains("linalg.inv: A must be a square matrix") && e.contains("[2, 3]"),
        "{e}"
    );
    let e = err(linalg::inv(&m(2, 2).mul(0).unwrap()));
    assert!(e.contains("linalg.inv: the matrix is singular"), "{e}");
    let e = err(linalg::det(&m(2, 2).to_dtype(DType::F16).unwrap()));
    assert!(
        e.contains("linalg.det: needs a float32 or float64 tensor, got float16"),
        "{e}"
    );
    let a = m(2, 2).add(&Tensor::eye(2, CPU).unwrap()).unwrap();
    let e = err(linalg::solve(&a, &m(3, 1)));
    assert!(e.contains("linalg.solve: B must have 2 rows"), "{e}");
    let e = err(linalg::solve(&a, &m(2, 1).to_dtype(DType::F64).unwrap()));
    assert!(
        e.contains("A and B need one dtype, got float32 and float64"),
        "{e}"
    );
    // [[1, 1], [2, 4]]: det 2, inverse [[2, -0.5], [-1, 0.5]]; a row swap flips no sign of det.
    let a = Tensor::from_vec(vec![1.0f64, 1.0, 2.0, 4.0], [2, 2], CPU).unwrap();
    assert_eq!(a.det().unwrap().to_vec::<f64>().unwrap(), [2.0]);
    let inv: Vec<f64> = a.inverse().unwrap().to_vec().unwrap();
    assert_eq!(inv, [2.0, -0.5, -1.0, 0.5]);
    let (sign, logabs) = a.neg().unwrap().slogdet().unwrap();
    assert_eq!(sign.to_vec::<f64>().unwrap(), [1.0]);
    assert!((logabs.to_vec::<f64>().unwrap()[0] - 2f64.ln()).abs() < 1e-15);
    // An empty matrix has determinant 1, as torch's.
    let empty = Tensor::zeros_dtype([0, 0], DType::F64, CPU).unwrap();
    assert_eq!(empty.det().unwrap().to_vec::<f64>().unwrap(), [1.0]);
}
