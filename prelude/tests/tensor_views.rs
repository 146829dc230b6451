//! Strided views: each view op against plain index loops, sharing (a write through a view
//! is seen in its base), every existing op fed non-contiguous inputs (the result must equal
//! the one for a contiguous copy), the index ops (index_select, gather, cat, stack) for every
//! dtype, and the errors. GPU tests are `#[ignore]`d and print "skipped: no CUDA device"
//! without one.

use gpulab::tensor::DType;
use gpulab::{Device, Tensor};

mod common;
use common::{err_has, have_gpu, iota, vals};

const CPU: Device = Device::Cpu;

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

/// Element at `c` of a row-major `data` over `dims`.
fn at(data: &[f64], dims: &[usize], c: &[usize]) -> f64 {
    let mut i = 0;
    for d in 0..dims.len() {
        i = i * dims[d] + c[d];
    }
    data[i]
}

/// `view` against `expect(coord of the view) -> value`, element by element.
#[track_caller]
fn check_view(what: &str, view: &Tensor, dims: &[usize], expect: impl Fn(&[usize]) -> f64) {
    assert_eq!(view.shape(), dims, "{what}: shape");
    let got = vals(view);
    for (c, g) in coords(dims).iter().zip(&got) {
        assert_eq!(*g, expect(c), "{what}: element {c:?}");
    }
}

#[test]
fn strides_and_offsets_are_torchs() {
    let x = iota(&[2, 3, 4]);
    assert_eq!(x.stride(), vec![12, 4, 1]);
    assert!(x.is_contiguous());
    let t = x.transpose(0, 2).unwrap();
    assert_eq!(t.stride(), vec![1, 4, 12]);
    assert!(!t.is_contiguous());
    let n = x.narrow(1, 1, 2).unwrap();
    assert_eq!((n.storage_offset(), n.stride()), (4, vec![12, 4, 1]));
    assert!(!n.is_contiguous());
    let s = x.select(0, 1).unwrap();
    assert_eq!((s.storage_offset(), s.shape()), (12, &[3usize, 4][..]));
    assert!(s.is_contiguous(), "a select of dim 0 stays contiguous");
    let e = iota(&[3, 1]).expand((2, 3, 4)).unwrap();
    assert_eq!(e.stride(), vec![0, 1, 0]);
    let u = x.unsqueeze(1).unwrap();
    assert_eq!(u.shape(), &[2, 1, 3, 4]);
    assert!(u.is_contiguous());
    assert_eq!(u.squeeze(1).unwrap().shape(), &[2, 3, 4]);
    assert_eq!(
        u.squeeze(0).unwrap().shape(),
        &[2, 1, 3, 4],
        "size 2: unchanged"
    );
    assert_eq!(iota(&[1, 3, 1]).squeeze_all().shape(), &[3]);
}

#[test]
fn every_view_matches_index_loops() {
    let dims = [2usize, 3, 4];
    let x = iota(&dims);
    let base = vals(&x);
    let b = |c: &[usize]| at(&base, &dims, c);

    check_view(
        "transpose(0, 2)",
        &x.transpose(0, 2).unwrap(),
        &[4, 3, 2],
        |c| b(&[c[2], c[1], c[0]]),
    );
    check_view(
        "transpose(-1, -2)",
        &x.transpose(-1, -2).unwrap(),
        &[2, 4, 3],
        |c| b(&[c[0], c[2], c[1]]),
    );
    check_view(
        "permute([2, 0, 1])",
        &x.permute(&[2, 0, 1]).unwrap(),
        &[4, 2, 3],
        |c| b(&[c[1], c[2], c[0]]),
    );
    // Big enough for the CPU's batched tiled transpose (conv2d's layout change), with
    // planes off the 32 x 32 tiles.
    let big = [3usize, 45, 37];
    let xb = iota(&big);
    let bb = vals(&xb);
    check_view(
        "transpose(1, 2) of [3, 45, 37], made contiguous",
        &xb.transpose(1, 2).unwrap().contiguous().unwrap(),
        &[3, 37, 45],
        |c| at(&bb, &big, &[c[0], c[2], c[1]]),
    );
    let m = iota(&[3, 5]);
    let mb = vals(&m);
    check_view("t()", &m.t().unwrap(), &[5, 3], |c| mb[c[1] * 5 + c[0]]);
    check_view(
        "narrow(2, 1, 2)",
        &x.narrow(2, 1, 2).unwrap(),
        &[2, 3, 2],
        |c| b(&[c[0], c[1], c[2] + 1]),
    );
    check_view(
        "slice(1, 1..3)",
        &x.slice(1, 1..3).unwrap(),
        &[2, 2, 4],
        |c| b(&[c[0], c[1] + 1, c[2]]),
    );
    check_view(
        "slice(-1, ..2)",
        &x.slice(-1, ..2).unwrap(),
        &[2, 3, 2],
        |c| b(c),
    );
    check_view(
        "slice(1, 1..=2)",
        &x.slice(1, 1..=2).unwrap(),
        &[2, 2, 4],
        |c| b(&[c[0], c[1] + 1, c[2]]),
    );
    check_view("slice(0, ..)", &x.slice(0, ..).unwrap(), &dims, |c| b(c));
    check_view("select(1, -1)", &x.select(1, -1).unwrap(), &[2, 4], |c| {
        b(&[c[0], 2, c[1]])
    });
    let col = iota(&[3, 1]);
    check_view("expand", &col.expand((2, 3, 4)).unwrap(), &dims, |c| {
        c[1] as f64
    });
    check_view(
        "broadcast_to",
        &iota(&[4]).broadcast_to((3, 4)).unwrap(),
        &[3, 4],
        |c| c[1] as f64,
    );
    check_view(
        "unsqueeze(-1)",
        &x.unsqueeze(-1).unwrap(),
        &[2, 3, 4, 1],
        |c| b(&c[..3]),
    );
    // Views of views: a narrowed transpose, reshaped where strides allow.
    let nt = x.transpose(1, 2).unwrap().narrow(1, 1, 3).unwrap();
    check_view("transpose.narrow", &nt, &[2, 3, 3], |c| {
        b(&[c[0], c[2], c[1] + 1])
    });
    let split = nt.view((2, 3, 3, 1)).unwrap();
    assert!(split.shares_storage(&x));
    check_view("transpose.narrow.view", &split, &[2, 3, 3, 1], |c| {
        b(&[c[0], c[2], c[1] + 1])
    });
    // Contiguous views reshape freely and share.
    let r = x.select(0, 1).unwrap().reshape((4, 3)).unwrap();
    assert!(r.shares_storage(&x));
    check_view("select.reshape", &r, &[4, 3], |c| {
        base[12 + c[0] * 3 + c[1]]
    });
    // A transpose cannot be viewed flat: reshape copies, view refuses.
    let t = x.transpose(0, 1).unwrap();
    let flat = t.reshape(24).unwrap();
    assert!(!flat.shares_storage(&x));
    check_view("transpose.reshape", &flat, &[24], |c| {
        let (i, j, k) = (c[0] / 8, (c[0] / 4) % 2, c[0] % 4);
        b(&[j, i, k])
    });
    assert_eq!(vals(&t.flatten().unwrap()), vals(&flat));
    let err = t.view(24).unwrap_err().to_string();
    assert!(
        err.contains("view") && err.contains("[3, 2, 4]") && err.contains("[24]"),
        "{err}"
    );
}

#[test]
fn contiguous_is_a_no_op_when_contiguous() {
    let x = iota(&[3, 4]);
    assert!(x.contiguous().unwrap().shares_storage(&x));
    let n = x.narrow(0, 1, 2).unwrap();
    assert!(n.contiguous().unwrap().shares_storage(&x), "offset only");
    let t = x.t().unwrap();
    let c = t.contiguous().unwrap();
    assert!(!c.shares_storage(&x) && c.is_contiguous());
    assert_eq!(vals(&c), vals(&t));
    let d = x.deep_clone().unwrap();
    assert!(!d.shares_storage(&x));
    assert!(
        x.clone().shares_storage(&x),
        "Rust clone shares, like Python assignment"
    );
}

#[test]
fn writes_through_views_reach_the_base() {
    let x = iota(&[3, 4]);
    // A column (through a transpose) and a block (through narrow).
    x.t().unwrap().select(0, 0).unwrap().fill_(-1.0).unwrap();
    x.narrow(0, 1, 2)
        .unwrap()
        .narrow(1, 2, 2)
        .unwrap()
        .fill_(9.0)
        .unwrap();
    let expect = vec![
        -1., 1., 2., 3., //
        -1., 5., 9., 9., //
        -1., 9., 9., 9.,
    ];
    assert_eq!(vals(&x), expect);

    // copy_ into a transposed view from a contiguous tensor of the view's shape.
    let y = Tensor::zeros((2, 3), CPU).unwrap();
    y.t().unwrap().copy_(&iota(&[3, 2])).unwrap();
    assert_eq!(vals(&y), vec![0., 2., 4., 1., 3., 5.]);
    // copy_ broadcasts and converts the dtype.
    let z = Tensor::zeros_dtype((2, 3), DType::I64, CPU).unwrap();
    z.slice(1, 1..).unwrap().copy_(&iota(&[2])).unwrap();
    assert_eq!(z.to_vec::<i64>().unwrap(), vec![0, 0, 1, 0, 0, 1]);

    // add_ / mul_ with scalars and tensors, through views; clones see it too.
    let a = iota(&[2, 3]);
    let alias = a.clone();
    a.select(1, 2).unwrap().add_(10.0).unwrap();
    a.t().unwrap().mul_(&iota(&[3, 2])).unwrap(); // a[i][j] *= (j * 2 + i)
    a.narrow(0, 0, 1).unwrap().add_(&iota(&[3])).unwrap(); // broadcast row
    a.narrow(0, 1, 1).unwrap().mul_(2).unwrap();
    let mut e = vec![0., 1., 12., 3., 4., 15.];
    for i in 0..2 {
        for j in 0..3 {
            e[i * 3 + j] *= (j * 2 + i) as f64;
        }
    }
    for j in 0..3 {
        e[j] += j as f64;
        e[3 + j] *= 2.0;
    }
    assert_eq!(vals(&alias), e);

    // A source overlapping the destination is read before it is written.
    let s = iota(&[5]);
    s.narrow(0, 1, 4)
        .unwrap()
        .copy_(&s.narrow(0, 0, 4).unwrap())
        .unwrap();
    assert_eq!(vals(&s), vec![0., 0., 1., 2., 3.]);
    let s = iota(&[2, 2]);
    s.copy_(&s.t().unwrap()).unwrap();
    assert_eq!(vals(&s), vec![0., 2., 1., 3.]);
    s.add_(&s).unwrap();
    assert_eq!(vals(&s), vec![0., 4., 2., 6.]);
}

/// Non-contiguous versions of an `[r, c]` (or broadcastable) tensor of `dtype`, each with a
/// name: transposed, narrowed, expanded, selected, offset.
fn strided_inputs(dtype: DType) -> Vec<(&'static str, Tensor)> {
    let v: Vec<f32> = (0..48).map(|i| ((i * 7) % 11) as f32 - 4.0).collect();
    let src = Tensor::from_vec(v, (6, 8), CPU)
        .unwrap()
        .to_dtype(dtype)
        .unwrap();
    vec![
        (
            "transposed",
            src.narrow(0, 0, 4)
                .unwrap()
                .t()
                .unwrap()
                .narrow(0, 0, 3)
                .unwrap(),
        ),
        (
            "narrowed",
            src.narrow(1, 2, 4).unwrap().narrow(0, 1, 3).unwrap(),
        ),
        (
            "expanded",
            src.select(0, 2)
                .unwrap()
                .narrow(0, 0, 4)
                .unwrap()
                .expand((3, 4))
                .unwrap(),
        ),
        (
            "strided",
            src.slice(0, 1..4)
                .unwrap()
                .permute(&[1, 0])
                .unwrap()
                .slice(0, 4..8)
                .unwrap()
                .t()
                .unwrap(),
        ),
    ]
}

/// `f` of the view and of its contiguous copy agree (values, shape, dtype).
#[track_caller]
fn same_result(
    what: &str,
    name: &str,
    f: impl Fn(&Tensor) -> gpulab::error::Result<Tensor>,
    v: &Tensor,
) {
    let c = v.deep_clone().unwrap();
    assert!(c.is_contiguous());
    let (a, b) = (f(v), f(&c));
    match (a, b) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.shape(), b.shape(), "{what} of {name}: shape");
            assert_eq!(a.dtype(), b.dtype(), "{what} of {name}: dtype");
            let (x, y) = (vals(&a), vals(&b));
            for (i, (p, q)) in x.iter().zip(&y).enumerate() {
                assert!(
                    p == q || (p.is_nan() && q.is_nan()),
                    "{what} of {name} ({}): element {i}: {p} vs {q}",
                    v.dtype()
                );
            }
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{what} of {name}"),
        (a, b) => panic!(
            "{what} of {name}: {:?} vs {:?}",
            a.map(|_| ()),
            b.map(|_| ())
        ),
    }
}

#[test]
fn every_op_accepts_non_contiguous_inputs() {
    type Op = fn(&Tensor) -> gpulab::error::Result<Tensor>;
    let ops: Vec<(&str, Op)> = vec![
        ("neg", |t| t.neg()),
        ("abs", |t| t.abs()),
        ("relu", |t| t.relu()),
        ("exp", |t| t.exp()),
        ("sqrt", |t| t.sqrt()),
        ("tanh", |t| t.tanh()),
        ("add scalar", |t| t.add(2)),
        ("mul float", |t| t.mul(0.5)),
        ("div", |t| t.div(3.0)),
        ("pow", |t| t.pow(2)),
        ("sum", |t| t.sum()),
        ("sum_dim 0", |t| t.sum_dim(0)),
        ("sum_keepdim -1", |t| t.sum_keepdim(-1)),
        ("max", |t| t.max()),
        ("min_dim 1", |t| t.min_dim(1)),
        ("mean", |t| t.mean()),
        ("mean_dim 0", |t| t.mean_dim(0)),
        ("argmax", |t| t.argmax()),
        ("argmax_dim 0", |t| t.argmax_dim(0)),
        ("argmin_dim 1", |t| t.argmin_dim(1)),
        ("gt scalar", |t| t.gt(0)),
        ("to f64", |t| t.to_dtype(DType::F64)),
        ("to i32", |t| t.to_dtype(DType::I32)),
        ("to bool", |t| t.to_dtype(DType::Bool)),
        ("matmul t", |t| t.matmul(&t.t()?)),
        ("t matmul", |t| t.t()?.matmul(t)),
        ("contiguous", |t| t.contiguous()),
        ("reshape", |t| t.reshape(12)),
        ("index_select", |t| {
            t.index_select(1, &Tensor::from(vec![3i64, 0, 0]))
        }),
        ("sum of t", |t| t.t()?.sum_dim(1)),
    ];
    for dtype in [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::Bool,
    ] {
        for (name, v) in strided_inputs(dtype) {
            assert!(
                !v.is_contiguous() || v.storage_offset() > 0,
                "{name} is a real view"
            );
            for (what, f) in &ops {
                same_result(what, name, f, &v);
            }
            // Two-operand ops with both operands strided (and a contiguous partner).
            let others = strided_inputs(dtype);
            for (oname, o) in &others {
                let oc = o.deep_clone().unwrap();
                type Op2 = fn(&Tensor, &Tensor) -> gpulab::error::Result<Tensor>;
                let ops2: [(&str, Op2); 6] = [
                    ("add", |a, b| a.add(b)),
                    ("mul", |a, b| a.mul(b)),
                    ("maximum", |a, b| a.maximum(b)),
                    ("eq", |a, b| a.eq(b)),
                    ("le", |a, b| a.le(b)),
                    ("where", |a, b| a.where_(&a.gt(b)?, b)),
                ];
                for (what, f) in ops2 {
                    let label = format!("{what} with {oname}");
                    same_result(&label, name, |t| f(t, o), &v);
                    same_result(&label, name, |t| f(t, &oc), &v);
                }
            }
            // Broadcasting a strided row against a strided matrix.
            same_result("add row", name, |t| t.add(&t.select(0, 1)?), &v);
            // Display and to_vec.
            let c = v.deep_clone().unwrap();
            assert_eq!(
                format!("{v}"),
                format!("{c}"),
                "display of {name} ({dtype})"
            );
            assert_eq!(
                format!("{v:?}"),
                format!("{c:?}"),
                "debug of {name} ({dtype})"
            );
        }
    }
}

#[test]
fn index_select_gather_cat_stack_match_loops_for_every_dtype() {
    for dtype in DType::ALL {
        let x = iota(&[3, 4]).to_dtype(dtype).unwrap();
        let xv = vals(&x);
        let xt = x.t().unwrap(); // [4, 3], strided source
                                 // index_select along both dims, with i64 and i32 indices, repeated indices.
        let idx = Tensor::from(vec![2i64, 0, 2]);
        let s = x.index_select(0, &idx).unwrap();
        check_view("index_select 0", &s, &[3, 4], |c| {
            xv[[2, 0, 2][c[0]] * 4 + c[1]]
        });
        assert_eq!(s.dtype(), dtype);
        let s = xt.index_select(1, &Tensor::from(vec![1i32, 1])).unwrap();
        check_view("index_select of t", &s, &[4, 2], |c| xv[4 + c[0]]);
        // gather along dim 1 and dim 0 (torch's definition).
        let gi = Tensor::from_vec(vec![3i64, 0, 1, 1, 2, 0], (3, 2), CPU).unwrap();
        let g = x.gather(1, &gi).unwrap();
        let gv = [3usize, 0, 1, 1, 2, 0];
        check_view("gather 1", &g, &[3, 2], |c| {
            xv[c[0] * 4 + gv[c[0] * 2 + c[1]]]
        });
        let gi0 = Tensor::from_vec(vec![2i64, 1, 0, 0], (1, 4), CPU).unwrap();
        let g = x.gather(0, &gi0).unwrap();
        check_view("gather 0", &g, &[1, 4], |c| {
            xv[[2, 1, 0, 0][c[1]] * 4 + c[1]]
        });
        let g = xt.gather(0, &gi).unwrap(); // xt[gi[i][j]][j] = x[j][gi]
        check_view("gather of t", &g, &[3, 2], |c| {
            xv[c[1] * 4 + gv[c[0] * 2 + c[1]]]
        });
        // cat of a view and a contiguous tensor along each dim; stack.
        let y = iota(&[3, 2]).add(100).unwrap().to_dtype(dtype).unwrap();
        let yv = vals(&y);
        let c1 = Tensor::cat(&[&x, &y, &x.narrow(1, 1, 1).unwrap()], 1).unwrap();
        check_view("cat 1", &c1, &[3, 7], |c| match c[1] {
            j @ 0..4 => xv[c[0] * 4 + j],
            j @ 4..6 => yv[c[0] * 2 + j - 4],
            _ => xv[c[0] * 4 + 1],
        });
        let c0 = Tensor::cat(&[xt.clone(), y.t().unwrap()], 0).unwrap();
        check_view("cat 0 of transposes", &c0, &[6, 3], |c| {
            if c[0] < 4 {
                xv[c[1] * 4 + c[0]]
            } else {
                yv[c[1] * 2 + c[0] - 4]
            }
        });
        assert_eq!(c0.dtype(), dtype);
        let st = Tensor::stack(&[&x, &x.add(1).unwrap().to_dtype(dtype).unwrap()], -1).unwrap();
        let x1 = vals(&x.add(1).unwrap().to_dtype(dtype).unwrap());
        check_view("stack -1", &st, &[3, 4, 2], |c| {
            if c[2] == 0 {
                xv[c[0] * 4 + c[1]]
            } else {
                x1[c[0] * 4 + c[1]]
            }
        });
        let st0 = Tensor::stack(&[&x, &x], 0).unwrap();
        check_view("stack 0", &st0, &[2, 3, 4], |c| xv[c[1] * 4 + c[2]]);
    }
}

#[test]
fn errors_name_the_op_shapes_and_dims() {
    let x = iota(&[2, 3, 4]);
    err_has(
        x.permute(&[0, 0, 1]),
        &["permute", "[0, 0, 1]", "[2, 3, 4]"],
    );
    err_has(x.permute(&[0, 1]), &["permute", "[0, 1]", "3 dimensions"]);
    err_has(x.permute(&[0, 1, 5]), &["permute", "[2, 3, 4]"]);
    err_has(
        x.narrow(1, 2, 2),
        &[
            "narrow",
            "start 2",
            "length 2",
            "size 3",
            "dimension 1",
            "[2, 3, 4]",
        ],
    );
    err_has(x.narrow(3, 0, 1), &["narrow", "dimension 3", "[2, 3, 4]"]);
    err_has(
        x.slice(2, 3..6),
        &["slice", "3..6", "dimension 2", "size 4"],
    );
    err_has(
        x.select(0, 2),
        &["select", "index 2", "dimension 0", "size 2"],
    );
    err_has(x.select(0, -3), &["select", "index -3"]);
    err_has(
        x.transpose(0, 3),
        &["transpose", "dimension 3", "[2, 3, 4]"],
    );
    err_has(x.t(), &["t()", "3", "[2, 3, 4]"]);
    err_has(
        x.transpose(0, 1).unwrap().view((6, 4)),
        &["view", "[3, 2, 4]", "[6, 4]", "reshape"],
    );
    err_has(x.view(7), &["view", "[2, 3, 4]", "[7]"]);
    err_has(x.reshape((5, 5)), &["reshape", "[2, 3, 4]", "[5, 5]"]);
    err_has(x.expand((2, 5, 4)), &["expand", "[2, 3, 4]", "[2, 5, 4]"]);
    err_has(x.unsqueeze(4), &["unsqueeze", "dimension 4", "0..=3"]);
    err_has(
        Tensor::cat(&[&x, &iota(&[2, 2, 4])], 2),
        &["cat", "[2, 3, 4]", "[2, 2, 4]", "dimension 2"],
    );
    // Mixed dtypes promote (tensor_dtype.rs's edge_cases_follow_torch); devices must agree.
    err_has(Tensor::cat::<Tensor>(&[], 0), &["cat", "at least one"]);
    err_has(
        Tensor::stack(&[&x, &iota(&[2, 3])], 0),
        &["stack", "[2, 3, 4]", "[2, 3]"],
    );
    err_has(
        x.index_select(1, &Tensor::from(vec![0i64, 3])),
        &["index_select", "index 3", "dimension 1", "size 3"],
    );
    err_has(
        x.index_select(0, &Tensor::from(vec![0.0f32])),
        &["index_select", "int64", "float32"],
    );
    err_has(
        x.gather(0, &Tensor::from(vec![0i64])),
        &["gather", "[1]", "[2, 3, 4]"],
    );
    // In-place: expanded destinations, impossible broadcasts, dtype casts.
    err_has(
        iota(&[1, 3]).expand((2, 3)).unwrap().fill_(1.0),
        &["copy_", "[2, 3]", "strides [0, 1]"],
    );
    err_has(iota(&[3]).add_(&iota(&[2, 3])), &["add_", "[3]", "[2, 3]"]);
    err_has(iota(&[3]).copy_(&iota(&[4])), &["copy_", "[4]", "[3]"]);
    let ints = Tensor::from(vec![1i64, 2]);
    err_has(ints.mul_(0.5), &["mul_", "float32", "int64"]);
    ints.mul_(3).unwrap();
    assert_eq!(ints.to_vec::<i64>().unwrap(), vec![3, 6]);
    // A user kernel can take a contiguous view, not a strided one (checked before any GPU
    // is needed only on a GPU machine; see tensor_views_gpu below).
}

const GPU: Device = Device::Cuda(0);

#[test]
#[ignore = "needs a CUDA device"]
fn gpu_contiguous_of_views_equals_cpu() {
    if !have_gpu() {
        return;
    }
    let x = iota(&[5, 6, 7]);
    let g = x.to(GPU).unwrap();
    type V = fn(&Tensor) -> gpulab::error::Result<Tensor>;
    let views: [(&str, V); 7] = [
        ("transpose", |t| t.transpose(0, 2)),
        ("permute", |t| t.permute(&[1, 2, 0])),
        ("narrow", |t| t.narrow(1, 2, 3)),
        ("select", |t| t.select(2, 4)),
        ("expand", |t| {
            t.select(0, 1)?.unsqueeze(0)?.expand((3, 6, 7))
        }),
        ("strided", |t| t.slice(0, 1..4)?.t_last()),
        ("empty", |t| t.narrow(1, 2, 0)),
    ];
    for (name, f) in views {
        let (c, d) = (f(&x).unwrap(), f(&g).unwrap());
        assert_eq!(d.device(), GPU);
        let dc = d.contiguous().unwrap();
        assert!(dc.is_contiguous());
        assert_eq!(vals(&dc), vals(&c), "{name}");
        // Ops on GPU views go through the strided copy too.
        assert_eq!(
            vals(&d.mul(2.0).unwrap()),
            vals(&c.mul(2.0).unwrap()),
            "{name} * 2"
        );
    }
}

/// `transpose(-1, -2)`, for the table above.
trait TLast {
    fn t_last(&self) -> gpulab::error::Result<Tensor>;
}
impl TLast for Tensor {
    fn t_last(&self) -> gpulab::error::Result<Tensor> {
        self.transpose(-1, -2)
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn gpu_writes_through_views_and_index_ops_equal_cpu() {
    if !have_gpu() {
        return;
    }
    let run = |dev: Device| -> Vec<Vec<f64>> {
        let x = iota(&[4, 5]).to(dev).unwrap();
        x.t().unwrap().select(0, 1).unwrap().fill_(-3.0).unwrap();
        x.narrow(0, 2, 2)
            .unwrap()
            .add_(&iota(&[5]).to(dev).unwrap())
            .unwrap();
        x.slice(1, 3..).unwrap().mul_(10.0).unwrap();
        let idx = Tensor::from(vec![3i64, 1, 3]);
        let sel = x.t().unwrap().index_select(1, &idx).unwrap();
        let gi = Tensor::from_vec(vec![0i64, 4, 2, 1, 1, 3, 0, 0], (4, 2), CPU).unwrap();
        let gat = x.gather(1, &gi).unwrap();
        let cat = Tensor::cat(
            &[x.t().unwrap(), x.narrow(0, 0, 3).unwrap().t().unwrap()],
            1,
        )
        .unwrap();
        let st = Tensor::stack(&[&x, &x], 1).unwrap();
        vec![vals(&x), vals(&sel), vals(&gat), vals(&cat), vals(&st)]
    };
    assert_eq!(run(GPU), run(CPU));
    // Mixed devices in cat are refused with both named.
    let a = iota(&[2]);
    err_has(
        Tensor::cat(&[a.clone(), a.to(GPU).unwrap()], 0),
        &["cat", "cpu", "cuda:0"],
    );
}
