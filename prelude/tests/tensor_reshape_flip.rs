//! `reshape`/`view` with one inferred size (-1, as torch's `reshape(-1)` / `view(-1, 4)`)
//! and `flip`: against plain index loops, for several shapes, dims and dtypes, with their
//! gradients and their errors. The GPU test is `#[ignore]`d and prints "skipped: no CUDA
//! device" without one.

use gpulab::{Device, Tensor};

const CPU: Device = Device::Cpu;

/// 0, 1, 2, ... in `shape` as f32.
fn iota(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec((0..n).map(|i| i as f32).collect::<Vec<_>>(), shape, CPU).unwrap()
}

fn vals(t: &Tensor) -> Vec<f64> {
    t.to_f64_vec().unwrap()
}

#[track_caller]
fn err_has(r: gpulab::error::Result<impl Sized>, parts: &[&str]) {
    let e = match r {
        Ok(_) => panic!("expected an error containing {parts:?}"),
        Err(e) => e.to_string(),
    };
    for p in parts {
        assert!(e.contains(p), "{e:?} should contain {p:?}");
    }
}

// ---- reshape / view with -1 ---------------------------------------------------------------

#[test]
fn one_size_of_minus_one_is_inferred() {
    let x = iota(&[2, 3, 4]);
    let n: usize = 2;
    let cases: Vec<(Tensor, Vec<usize>)> = vec![
        (x.reshape(-1).unwrap(), vec![24]),
        (x.view(-1).unwrap(), vec![24]),
        (x.view((-1, 4)).unwrap(), vec![6, 4]),
        (x.reshape([2, -1]).unwrap(), vec![2, 12]),
        (x.reshape((n, -1, 2)).unwrap(), vec![2, 6, 2]),
        (x.view(&[3, -1]).unwrap(), vec![3, 8]),
        (x.reshape(vec![-1i64, 2, 3]).unwrap(), vec![4, 2, 3]),
        (x.reshape(&[4isize, 3, -1][..]).unwrap(), vec![4, 3, 2]),
        (x.reshape([1, 1, 24, -1]).unwrap(), vec![1, 1, 24, 1]),
    ];
    for (t, dims) in &cases {
        assert_eq!(t.shape(), &dims[..]);
        // Row-major order is kept, and a contiguous tensor is always viewed, never copied.
        assert_eq!(vals(t), vals(&x), "{dims:?}");
        assert!(t.shares_storage(&x), "{dims:?} should be a view");
    }
    // The usual forms still work unchanged.
    assert_eq!(x.reshape((4, 6)).unwrap().shape(), &[4, 6]);
    assert_eq!(x.reshape([4usize, 6]).unwrap().shape(), &[4, 6]);
    // Literal-only arrays (the notebooks' `reshape([10, 28, 1, 28, 1])`) fall back to i32.
    assert_eq!(
        x.reshape([2, 3, 1, 4, 1]).unwrap().shape(),
        &[2, 3, 1, 4, 1]
    );
    assert_eq!(x.reshape(x.shape()).unwrap().shape(), &[2, 3, 4]);
    assert_eq!(x.reshape(24).unwrap().shape(), &[24]);
    assert_eq!(
        x.reshape(gpulab::Shape(vec![6, 4])).unwrap().shape(),
        &[6, 4]
    );
    // One element into a scalar and back.
    let one = iota(&[1, 1]);
    assert_eq!(one.reshape(()).unwrap().shape(), &[] as &[usize]);
    assert_eq!(one.reshape(()).unwrap().reshape(-1).unwrap().shape(), &[1]);
    // Empty tensors: the -1 is what the other sizes leave (torch: [0, 3] -> (-1, 3) is
    // [0, 3], -> -1 is [0]).
    let empty = iota(&[0, 3]);
    assert_eq!(empty.reshape(-1).unwrap().shape(), &[0]);
    assert_eq!(empty.reshape((-1, 3)).unwrap().shape(), &[0, 3]);
}

#[test]
fn an_inferred_reshape_of_a_transpose_copies_and_view_refuses() {
    let x = iota(&[3, 4]);
    let t = x.t().unwrap();
    let r = t.reshape(-1).unwrap();
    assert_eq!(r.shape(), &[12]);
    assert_eq!(vals(&r), vals(&t.contiguous().unwrap()));
    assert!(!r.shares_storage(&x));
    err_has(t.view(-1), &["view", "[4, 3]", "[12]", "reshape"]);
    // A shape the transpose's strides can still express (splitting its last dimension)
    // is a view.
    let v = iota(&[2, 3, 4]).transpose(0, 1).unwrap();
    let w = v.view((3, 2, 2, -1)).unwrap();
    assert_eq!(w.shape(), &[3, 2, 2, 2]);
    assert!(w.shares_storage(&v));
    assert_eq!(vals(&w), vals(&v.contiguous().unwrap()));
}

#[test]
fn bad_inferred_shapes_name_the_op_the_shape_and_the_count() {
    let x = iota(&[2, 3, 4]);
    err_has(
        x.reshape((-1, -1)),
        &[
            "reshape",
            "[2, 3, 4]",
            "24 elements",
            "[-1, -1]",
            "only one",
        ],
    );
    err_has(
        x.view([-1, 5]),
        &[
            "view",
            "[2, 3, 4]",
            "24 elements",
            "[-1, 5]",
            "not a multiple of 5",
        ],
    );
    err_has(
        x.reshape([-2, 12]),
        &["reshape", "24 elements", "[-2, 12]", "size -2"],
    );
    let empty = iota(&[0, 3]);
    err_has(
        empty.reshape((0, -1)),
        &[
            "reshape",
            "[0, 3]",
            "0 elements",
            "[0, -1]",
            "multiply to 0",
        ],
    );
    err_has(
        x.reshape((7, -1)),
        &["reshape", "[2, 3, 4]", "24 elements", "[7, -1]"],
    );
    err_has(
        x.reshape((5, 5)),
        &["reshape", "[2, 3, 4]", "24 elements", "[5, 5]", "holds 25"],
    );
    err_has(
        x.reshape((usize::MAX, 2, -1)),
        &["reshape", "24 elements", "largest usize"],
    );
}

#[test]
fn the_gradient_of_an_inferred_reshape_comes_back_in_the_input_shape() {
    let x = iota(&[2, 3]).requires_grad_(true).unwrap();
    let y = x
        .reshape(-1)
        .unwrap()
        .mul(&iota(&[6]))
        .unwrap()
        .sum()
        .unwrap();
    y.backward().unwrap();
    let g = x.grad().unwrap();
    assert_eq!(g.shape(), &[2, 3]);
    assert_eq!(vals(&g), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
}
