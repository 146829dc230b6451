//! `reshape`/`view` with one inferred size (-1, as torch's `reshape(-1)` / `view(-1, 4)`)
//! and `flip`: against plain index loops, for several shapes, dims and dtypes, with their
//! gradients and their errors. The GPU test is `#[ignore]`d and prints "skipped: no CUDA
//! device" without one.

use gpulab::tensor::DType;
use gpulab::{Device, Tensor};

mod common;
use common::{err_has, have_gpu, iota, vals};

const CPU: Device = Device::Cpu;

// ---- reshape / view with -1 ---------------------------------------------------------------

#[test]
// `view(&[3, -1])` is borrowed on purpose: the `&[T; N]` form must work too.
#[allow(clippy::needless_borrows_for_generic_args)]
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

// ---- flip -----------------------------------------------------------------------------------

/// Row-major coordinates of every element of `dims`.
fn coords(dims: &[usize]) -> Vec<Vec<usize>> {
    let n: usize = dims.iter().product();
    (0..n)
        .map(|mut i| {
            let mut c = vec![0; dims.len()];
            for d in (0..dims.len()).rev() {
                c[d] = i % dims[d];
                i /= dims[d];
            }
            c
        })
        .collect()
}

/// torch.flip by plain index loops: output element `c` is input element `c` with
/// `c[d]` replaced by `size - 1 - c[d]` along every flipped `d`.
fn flip_reference(x: &Tensor, dims: &[isize]) -> Vec<f64> {
    let shape = x.shape().to_vec();
    let rank = shape.len() as isize;
    let flipped: Vec<usize> = dims
        .iter()
        .map(|&d| if d < 0 { d + rank } else { d } as usize)
        .collect();
    let data = vals(&x.to_dtype(DType::F64).unwrap());
    coords(&shape)
        .iter()
        .map(|c| {
            let mut i = 0;
            for d in 0..shape.len() {
                let k = if flipped.contains(&d) {
                    shape[d] - 1 - c[d]
                } else {
                    c[d]
                };
                i = i * shape[d] + k;
            }
            data[i]
        })
        .collect()
}

/// The (shape, dims) cases every flip test runs: each rank up to 4, single, several and
/// all dimensions, negative ones, sizes 0 and 1, and no dimension at all.
fn flip_cases() -> Vec<(Vec<usize>, Vec<isize>)> {
    vec![
        (vec![7], vec![0]),
        (vec![7], vec![-1]),
        (vec![3, 4], vec![0]),
        (vec![3, 4], vec![1]),
        (vec![3, 4], vec![0, 1]),
        (vec![3, 4], vec![-1, -2]),
        (vec![2, 3, 4], vec![1]),
        (vec![2, 3, 4], vec![0, 2]),
        (vec![2, 3, 4], vec![2, 0, 1]),
        (vec![2, 1, 5, 3], vec![1, 3]),
        (vec![2, 1, 5, 3], vec![-2]),
        (vec![4, 5], vec![]),
        (vec![0, 3], vec![0, 1]),
        (vec![], vec![]),
    ]
}

#[test]
fn flip_matches_index_loops_for_every_dtype() {
    for (shape, dims) in flip_cases() {
        for dtype in DType::ALL {
            // Bool gets an irregular pattern (every third element true), so a reversal
            // shows; the other dtypes hold 0, 1, 2, ... exactly at these sizes.
            let x = match dtype {
                DType::Bool => {
                    let n: usize = shape.iter().product();
                    let v: Vec<bool> = (0..n).map(|i| i % 3 == 0).collect();
                    Tensor::from_vec(v, &shape[..], CPU).unwrap()
                }
                _ => iota(&shape).to_dtype(dtype).unwrap(),
            };
            let y = x.flip(&dims).unwrap();
            let what = format!("{dtype} {shape:?} flip {dims:?}");
            assert_eq!(y.shape(), &shape[..], "{what}: shape");
            assert_eq!(y.dtype(), dtype, "{what}: dtype");
            assert!(y.is_contiguous(), "{what}: contiguous");
            assert!(!y.shares_storage(&x), "{what}: a new tensor");
            assert_eq!(
                vals(&y.to_dtype(DType::F64).unwrap()),
                flip_reference(&x, &dims),
                "{what}"
            );
        }
    }
}

#[test]
fn flip_reads_views_through_their_strides() {
    let x = iota(&[4, 5, 6]);
    let views = [
        ("transpose", x.transpose(0, 2).unwrap()),
        ("narrow", x.narrow(1, 1, 3).unwrap()),
        ("select", x.select(1, 2).unwrap()),
        (
            "expand",
            x.select(0, 1)
                .unwrap()
                .unsqueeze(0)
                .unwrap()
                .expand((3, 5, 6))
                .unwrap(),
        ),
        (
            "permute+slice",
            x.permute(&[2, 0, 1]).unwrap().slice(0, 1..5).unwrap(),
        ),
    ];
    for (name, v) in views {
        for dims in [vec![0isize], vec![-1], vec![0, 1]] {
            let got = vals(&v.flip(&dims).unwrap());
            let want = flip_reference(&v.contiguous().unwrap(), &dims);
            assert_eq!(got, want, "{name} flip {dims:?}");
        }
    }
    // Flipping twice gives the input back; flipping is not a view, so writes do not leak.
    let f = x.flip(&[0, 2]).unwrap();
    assert_eq!(vals(&f.flip(&[2, 0]).unwrap()), vals(&x));
    f.fill_(0.0).unwrap();
    assert_eq!(vals(&x)[1], 1.0);
}

#[test]
fn the_gradient_of_flip_is_the_flipped_gradient() {
    // Weights that differ per element, so a gradient sent to the wrong place shows.
    let x = iota(&[2, 3, 4])
        .to_dtype(DType::F64)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let w = iota(&[2, 3, 4])
        .to_dtype(DType::F64)
        .unwrap()
        .mul(0.5)
        .unwrap()
        .add(1.0)
        .unwrap();
    let y = x.flip(&[0, -1]).unwrap();
    y.mul(&w).unwrap().sum().unwrap().backward().unwrap();
    let g = x.grad().unwrap();
    assert_eq!(g.shape(), &[2, 3, 4]);
    assert_eq!(vals(&g), flip_reference(&w, &[0, -1]));
    // Through a view of a leaf the gradient lands back in the leaf's layout.
    let x = iota(&[3, 4]).requires_grad_(true).unwrap();
    let y = x.t().unwrap().flip(&[1]).unwrap();
    y.mul(&iota(&[4, 3]))
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    let want = flip_reference(&iota(&[4, 3]), &[1]);
    let want = Tensor::from_vec(
        want.iter().map(|&v| v as f32).collect::<Vec<_>>(),
        (4, 3),
        CPU,
    )
    .unwrap();
    assert_eq!(
        vals(&x.grad().unwrap()),
        vals(&want.t().unwrap().contiguous().unwrap())
    );
}

#[test]
fn bad_flip_dims_are_named() {
    let x = iota(&[2, 3, 4]);
    err_has(x.flip(&[3]), &["flip", "dimension 3", "[2, 3, 4]"]);
    err_has(x.flip(&[-4]), &["flip", "dimension -4", "[2, 3, 4]"]);
    err_has(
        x.flip(&[0, 2, -3]),
        &[
            "flip",
            "dimension 0",
            "more than once",
            "[0, 2, -3]",
            "[2, 3, 4]",
        ],
    );
    err_has(iota(&[]).flip(&[0]), &["flip", "dimension 0", "rank 0"]);
}

const GPU: Device = Device::Cuda(0);

/// CUDA builds flip from one gather per flipped dimension: it must agree with the CPU's
/// loop for every case, dtype and strided view, and its gradient too.
#[test]
#[ignore = "needs a CUDA device"]
fn gpu_flip_equals_cpu() {
    if !have_gpu() {
        return;
    }
    for (shape, dims) in flip_cases() {
        for dtype in [DType::F32, DType::F64, DType::F16, DType::I64, DType::U8] {
            let x = iota(&shape).to_dtype(dtype).unwrap();
            let c = x.flip(&dims).unwrap();
            let g = x.to(GPU).unwrap().flip(&dims).unwrap();
            assert_eq!(g.device(), GPU);
            assert_eq!(g.dtype(), dtype);
            assert_eq!(vals(&g), vals(&c), "{dtype} {shape:?} flip {dims:?}");
        }
    }
    let x = iota(&[4, 5, 6]);
    let v = x.permute(&[2, 0, 1]).unwrap().slice(0, 1..5).unwrap();
    let gv = x
        .to(GPU)
        .unwrap()
        .permute(&[2, 0, 1])
        .unwrap()
        .slice(0, 1..5)
        .unwrap();
    assert_eq!(
        vals(&gv.flip(&[0, 2]).unwrap()),
        vals(&v.flip(&[0, 2]).unwrap())
    );
    let xg = iota(&[3, 4]).to(GPU).unwrap().requires_grad_(true).unwrap();
    let w = iota(&[3, 4]).add(1.0).unwrap();
    xg.flip(&[0])
        .unwrap()
        .mul(&w.to(GPU).unwrap())
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(vals(&xg.grad().unwrap()), flip_reference(&w, &[0]));
}
