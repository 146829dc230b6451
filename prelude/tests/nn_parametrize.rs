//! Weight and spectral normalisation, in torch's two spellings: names, reprs, what the
//! wrapper computes and learns, train/eval, moving and saving, and the errors (values against
//! torch: bench/torch_parity.py's param cases).

use gpulab::nn::utils::{self, parametrizations as P};
use gpulab::nn::{self, Module, SpectralOptions};
use gpulab::optim::SGD;
use gpulab::{fork_rng, linalg, DType, Device, Tensor};

const CPU: Device = Device::Cpu;

fn names(m: &dyn Module) -> Vec<String> {
    m.named_parameters().into_iter().map(|(n, _)| n).collect()
}

fn buffer_names(m: &dyn Module) -> Vec<String> {
    m.buffers().into_iter().map(|(n, _)| n).collect()
}

fn close(a: &Tensor, b: &Tensor, tol: f32) {
    assert_eq!(a.shape(), b.shape());
    let (a, b) = (a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
    for (x, y) in a.iter().zip(&b) {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}

fn err<T>(r: gpulab::error::Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn names_and_reprs_are_torchs() {
    // What torch 2.9 lists for the same calls.
    let wn = P::weight_norm(nn::Linear::new(3, 4)).unwrap();
    assert_eq!(
        names(&wn),
        [
            "bias",
            "parametrizations.weight.original0",
            "parametrizations.weight.original1"
        ]
    );
    assert_eq!(
        wn.describe(),
        "ParametrizedLinear(\n  in_features=3, out_features=4, bias=True\n  (parametrizations): \
         ModuleDict(\n    (weight): ParametrizationList(\n      (0): _WeightNorm()\n    )\n  \
         )\n)"
    );
    let old = utils::weight_norm(nn::Linear::new(3, 4)).unwrap();
    assert_eq!(names(&old), ["bias", "weight_g", "weight_v"]);
    assert_eq!(
        old.describe(),
        "Linear(in_features=3, out_features=4, bias=True)"
    );

    let sn = P::spectral_norm(nn::Linear::new(3, 4)).unwrap();
    assert_eq!(names(&sn), ["bias", "parametrizations.weight.original"]);
    assert_eq!(
        buffer_names(&sn),
        [
            "parametrizations.weight.0._u",
            "parametrizations.weight.0._v"
        ]
    );
    assert!(sn.describe().contains("(0): _SpectralNorm()"));
    let old = utils::spectral_norm(nn::Linear::new(3, 4)).unwrap();
    assert_eq!(names(&old), ["bias", "weight_orig"]);
    assert_eq!(buffer_names(&old), ["weight_u", "weight_v"]);
    let keys: Vec<String> = old.state_dict().into_iter().map(|(n, _)| n).collect();
    assert_eq!(keys, ["bias", "weight_orig", "weight_u", "weight_v"]);

    // Any tensor of any layer, and one wrapper per tensor.
    let gru = utils::weight_norm_with(nn::GRU::new(3, 4), "weight_hh_l0", Some(0)).unwrap();
    assert_eq!(
        names(&gru),
        [
            "weight_ih_l0",
            "bias_ih_l0",
            "bias_hh_l0",
            "weight_hh_l0_g",
            "weight_hh_l0_v"
        ]
    );
    let two = P::spectral_norm_with(
        P::weight_norm(nn::Linear::new(3, 4)).unwrap(),
        SpectralOptions {
            name: "bias",
            ..Default::default()
        },
    )
    .unwrap();
    assert!(two.describe().ends_with(
        "(0): _WeightNorm()\n    )\n    (bias): ParametrizationList(\n      (0): \
         _SpectralNorm()\n    )\n  )\n)"
    ));
    // A one-dimensional tensor has no u and v under torch's parametrization.
    assert!(buffer_names(&two).is_empty());
    let lstm = P::weight_norm_with(nn::LSTM::new(3, 4), "weight_hh_l0", Some(0)).unwrap();
    assert!(lstm
        .describe()
        .starts_with("ParametrizedLSTM(\n  3, 4\n  (parametrizations)"));
}

#[test]
fn weight_norm_starts_at_the_weight_and_learns_g_and_v() {
    fork_rng(3, || {
        let lin = nn::Linear::new(3, 4);
        let w0 = lin.weight.tensor();
        let x = Tensor::randn([5, 3], CPU).unwrap();
        let y0 = lin.forward(&x).unwrap();
        let wn = P::weight_norm(lin).unwrap();
        // g is each row's norm (torch's shapes: [4, 1] along dim 0, 0-d for the whole).
        assert_eq!(wn.g.shape(), [4, 1]);
        close(&wn.g.tensor(), &w0.norm_keepdim(1).unwrap(), 1e-6);
        close(&wn.weight().unwrap(), &w0, 1e-6);
        close(&wn.forward(&x).unwrap(), &y0, 1e-6);
        let whole = P::weight_norm_with(nn::Linear::new(3, 4), "weight", None).unwrap();
        assert_eq!(whole.g.shape(), Vec::<usize>::new());
        let conv = P::weight_norm_with(nn::Conv2d::new(2, 3, 2), "weight", Some(1)).unwrap();
        assert_eq!(conv.g.shape(), [1, 2, 1, 1]);

        // Doubling g doubles the weight; the direction v's scale does not matter.
        wn.g.set_data(wn.g.tensor().mul(2.0).unwrap()).unwrap();
        wn.v.set_data(wn.v.tensor().mul(5.0).unwrap()).unwrap();
        close(&wn.weight().unwrap(), &w0.mul(2.0).unwrap(), 1e-5);

        // Gradients reach g, v and the bias (not the layer's own weight handle), and a step
        // moves them; the layer's handle then holds the weight of the last forward.
        let mut opt = SGD::new(wn.parameters(), 0.1);
        let loss = wn.forward(&x).unwrap().square().unwrap().sum().unwrap();
        loss.backward().unwrap();
        assert!(wn.g.grad().is_some() && wn.v.grad().is_some());
        assert_eq!(wn.parameters().len(), 3);
        let g_before = wn.g.tensor().to_vec::<f32>().unwrap();
        opt.step().unwrap();
        assert_ne!(wn.g.tensor().to_vec::<f32>().unwrap(), g_before);
        wn.forward(&x).unwrap();
        close(&wn.module().weight.tensor(), &wn.weight().unwrap(), 1e-6);
        assert!(!wn.module().weight.tensor().requires_grad());

        // remove() gives the layer back with that weight as a plain, learnable parameter.
        let w = wn.weight().unwrap().detach();
        let y = wn.forward(&x).unwrap();
        let lin = utils::remove_weight_norm(wn).unwrap();
        close(&lin.weight.tensor(), &w, 1e-6);
        assert!(lin.weight.requires_grad());
        close(&lin.forward(&x).unwrap(), &y, 1e-6);
    });
}

#[test]
fn a_frozen_weight_stays_frozen() {
    let lin = nn::Linear::new(3, 4);
    lin.weight.requires_grad_(false).unwrap();
    let wn = P::weight_norm(lin).unwrap();
    assert!(!wn.g.requires_grad() && !wn.v.requires_grad());
}

#[test]
fn spectral_norm_brings_the_largest_singular_value_to_one() {
    fork_rng(11, || {
        let lin = nn::Linear::new(6, 5);
        lin.weight
            .set_data(lin.weight.tensor().mul(7.0).unwrap())
            .unwrap();
        let sigma0 = linalg::svdvals(&lin.weight.tensor())
            .unwrap()
            .to_vec::<f32>()
            .unwrap()[0];
        assert!(sigma0 > 1.5, "{sigma0}");
        let sn = P::spectral_norm(lin).unwrap();
        let x = Tensor::randn([2, 6], CPU).unwrap();
        for _ in 0..20 {
            sn.forward(&x).unwrap();
        }
        let w = sn.weight().unwrap().detach();
        let sigma = linalg::svdvals(&w).unwrap().to_vec::<f32>().unwrap()[0];
        assert!((sigma - 1.0).abs() < 1e-3, "largest singular value {sigma}");
        // u and v are the leading singular vectors, of unit length.
        let u = sn.u.as_ref().unwrap().tensor();
        assert!((u.norm().unwrap().item::<f32>().unwrap() - 1.0).abs() < 1e-5);
        close(&sn.original.tensor().div(sigma0).unwrap(), &w, 1e-3);
    });
}

#[test]
fn spectral_norm_iterates_only_in_training() {
    fork_rng(5, || {
        let mut sn = utils::spectral_norm(nn::Linear::new(4, 3)).unwrap();
        let x = Tensor::randn([2, 4], CPU).unwrap();
        fn sn_u(sn: &P::SpectralNorm<nn::Linear>) -> Vec<f32> {
            sn.u.as_ref().unwrap().tensor().to_vec::<f32>().unwrap()
        }
        let before = sn_u(&sn);
        sn.forward(&x).unwrap();
        let after_train = sn_u(&sn);
        assert_ne!(before, after_train);
        sn.eval();
        let y1 = sn.forward(&x).unwrap();
        let y2 = sn.forward(&x).unwrap();
        assert_eq!(sn_u(&sn), after_train);
        assert_eq!(y1.to_vec::<f32>().unwrap(), y2.to_vec::<f32>().unwrap());
        // The gradient of the original weight comes through sigma as well as the division.
        y1.sum().unwrap().backward().unwrap();
        assert!(sn.original.grad().is_some());
        // A transposed convolution's rows are its outputs, dimension 1, as torch.
        let ct = P::spectral_norm(nn::ConvTranspose2d::new(2, 3, 2)).unwrap();
        assert_eq!(ct.u.as_ref().unwrap().shape(), [3]);
        assert_eq!(ct.v.as_ref().unwrap().shape(), [8]);
    });
}

#[test]
fn moves_converts_saves_and_loads() {
    fork_rng(7, || {
        let sn = P::spectral_norm(nn::Linear::new(3, 2)).unwrap();
        sn.to_dtype(DType::F64).unwrap();
        for (_, b) in sn.buffers() {
            assert_eq!(b.tensor().dtype(), DType::F64);
        }
        let x = Tensor::randn([4, 3], CPU)
            .unwrap()
            .to_dtype(DType::F64)
            .unwrap();
        let y = sn.forward(&x).unwrap();
        assert_eq!(y.dtype(), DType::F64);
        sn.to(CPU).unwrap();

        let wn = utils::weight_norm(nn::Conv1d::new(2, 3, 2)).unwrap();
        let state = wn.state_dict();
        let other = utils::weight_norm(nn::Conv1d::new(2, 3, 2)).unwrap();
        other.load_state_dict(&state).unwrap();
        let x = Tensor::randn([1, 2, 5], CPU).unwrap();
        close(&other.forward(&x).unwrap(), &wn.forward(&x).unwrap(), 1e-6);
        // In a model, as any layer.
        let model = nn::Sequential::new().add(wn).add(nn::ReLU).add(nn::Flatten);
        assert_eq!(model.forward(&x).unwrap().shape(), [1, 12]);
        assert_eq!(model.num_parameters(), 3 + 12 + 3);
    });
}

#[test]
fn bad_settings_are_named() {
    let e = err(P::weight_norm_with(
        nn::Linear::new(3, 4),
        "wieght",
        Some(0),
    ));
    assert!(
        e.contains("no parameter named \"wieght\"") && e.contains("\"bias\""),
        "{e}"
    );
    let e = err(P::weight_norm_with(
        nn::Linear::new(3, 4),
        "weight",
        Some(2),
    ));
    assert!(
        e.contains("dim 2 is out of range") && e.contains("[4, 3]"),
        "{e}"
    );
    let options = SpectralOptions {
        n_power_iterations: 0,
        ..Default::default()
    };
    let e = err(P::spectral_norm_with(nn::Linear::new(3, 4), options));
    assert!(e.contains("n_power_iterations must be positive"), "{e}");
    let options = SpectralOptions {
        eps: 0.0,
        ..Default::default()
    };
    assert!(err(utils::spectral_norm_with(nn::Linear::new(3, 4), options)).contains("eps"));
    let e = err(P::weight_norm(nn::LazyLinear::new(4)));
    assert!(e.contains("no elements yet") && e.contains("lazy"), "{e}");
    // The layer's own checks still speak: a wrong input shape is the Linear's error.
    let wn = P::weight_norm(nn::Linear::new(3, 4)).unwrap();
    let e = err(wn.forward(&Tensor::zeros([2, 5], CPU).unwrap()));
    assert!(
        e.contains("Linear(in_features=3") && e.contains("[2, 5]"),
        "{e}"
    );
    // ... and the weight is back in place after the failed forward.
    assert_eq!(wn.module().weight.shape(), [4, 3]);
    assert!(wn.forward(&Tensor::zeros([2, 3], CPU).unwrap()).is_ok());
}

/// `QᵀQ` (tall or square) or `QQᵀ` (wide) is the identity.
fn assert_orthogonal(q: &Tensor) {
    let (n, k) = (q.shape()[0], q.shape()[1]);
    let g = if n >= k {
        q.t().unwrap().matmul(q).unwrap()
    } else {
        q.matmul(&q.t().unwrap()).unwrap()
    };
    let eye = Tensor::eye(n.min(k), CPU).unwrap();
    close(&g, &eye, 1e-5);
}

#[test]
fn orthogonal_weights_stay_orthogonal_while_learning() {
    fork_rng(13, || {
        for (inputs, outputs, map) in [
            (3, 3, None),
            (3, 5, None),
            (5, 3, None),
            (4, 4, Some("cayley")),
            (3, 5, Some("matrix_exp")),
            (3, 5, Some("householder")),
        ] {
            let o =
                P::orthogonal_with(nn::Linear::new(inputs, outputs), "weight", map, true).unwrap();
            assert_orthogonal(&o.weight().unwrap());
            let mut opt = SGD::new(o.parameters(), 0.5);
            let x = Tensor::randn([4, inputs], CPU).unwrap();
            for _ in 0..3 {
                let loss = o.forward(&x).unwrap().sin().unwrap().sum().unwrap();
                loss.backward().unwrap();
                opt.step().unwrap();
                opt.zero_grad();
            }
            assert!(o.original.grad().is_none() || o.original.requires_grad());
            assert_orthogonal(&o.weight().unwrap());
            assert_orthogonal(&o.module().weight.tensor());
        }
        // Without trivialization, Householder starts from the weight's QR.
        let o = P::orthogonal_with(nn::Linear::new(3, 5), "weight", None, false).unwrap();
        assert!(o.buffers().is_empty());
        assert_orthogonal(&o.weight().unwrap());
    });
}

#[test]
fn orthogonal_starts_at_an_orthogonal_weight_and_names_as_torch() {
    fork_rng(17, || {
        let lin = nn::Linear::new(4, 4);
        let q = gpulab::linalg::qr(&lin.weight.tensor(), "reduced")
            .unwrap()
            .0;
        lin.weight.set_data(q.clone()).unwrap();
        let o = P::orthogonal(lin).unwrap();
        close(&o.weight().unwrap(), &q, 1e-5);
        assert_eq!(names(&o), ["bias", "parametrizations.weight.original"]);
        assert_eq!(buffer_names(&o), ["parametrizations.weight.0.base"]);
        assert!(o.describe().contains("(0): _Orthogonal()"));
        let e = err(P::orthogonal_with(
            nn::Linear::new(3, 4),
            "bias",
            None,
            true,
        ));
        assert!(e.contains("expected a matrix") && e.contains("[4]"), "{e}");
        let e = err(P::orthogonal_with(
            nn::Linear::new(3, 4),
            "weight",
            Some("qr"),
            true,
        ));
        assert!(e.contains("\"qr\"") && e.contains("householder"), "{e}");
        let lin = nn::Linear::new(3, 4);
        lin.to_dtype(DType::F16).unwrap();
        let e = err(P::orthogonal(lin));
        assert!(
            e.contains("float32 or float64") && e.contains("float16"),
            "{e}"
        );
    });
}

struct Symmetric;
impl Module for Symmetric {
    fn forward(&self, x: &Tensor) -> gpulab::error::Result<Tensor> {
        x.triu(0)?.add(&x.triu(1)?.t()?)
    }
    fn describe(&self) -> String {
        "Symmetric()".into()
    }
}

struct Scaled(nn::Parameter);
impl Module for Scaled {
    fn forward(&self, x: &Tensor) -> gpulab::error::Result<Tensor> {
        x.mul(&self.0.tensor())
    }
    fn parameters(&self) -> Vec<nn::Parameter> {
        vec![self.0.clone()]
    }
    fn named_parameters(&self) -> Vec<(String, nn::Parameter)> {
        vec![("s".into(), self.0.clone())]
    }
    fn describe(&self) -> String {
        "Scaled()".into()
    }
}

/// Changes the shape: not a parametrization torch accepts.
struct Rows;
impl Module for Rows {
    fn forward(&self, x: &Tensor) -> gpulab::error::Result<Tensor> {
        x.sum_dim(0)
    }
    fn describe(&self) -> String {
        "Rows()".into()
    }
}

#[test]
fn a_users_parametrizations_chain_learn_and_come_off() {
    use gpulab::nn::utils::parametrize::{register_parametrization, register_parametrization_with};
    fork_rng(19, || {
        let lin = nn::Linear::new(3, 3);
        let w0 = lin.weight.tensor();
        let sym = register_parametrization(lin, "weight", Symmetric).unwrap();
        let w = sym.weight().unwrap();
        close(&w, &w.t().unwrap().contiguous().unwrap(), 0.0);
        close(&sym.original.tensor(), &w0, 0.0);
        let s = nn::Parameter::new(Tensor::full([3], 2.0, CPU).unwrap()).unwrap();
        let mut two = sym;
        two.register(Scaled(s.clone())).unwrap();
        assert_eq!(
            names(&two),
            [
                "bias",
                "parametrizations.weight.original",
                "parametrizations.weight.1.s"
            ]
        );
        assert!(two.describe().contains(
            "(weight): ParametrizationList(\n      (0): Symmetric()\n      (1): Scaled()\n    )"
        ));
        assert_eq!(two.parametrizations().len(), 2);
        // The chain's own parameter learns with the layer's.
        let x = Tensor::randn([2, 3], CPU).unwrap();
        two.forward(&x).unwrap().sum().unwrap().backward().unwrap();
        assert!(s.grad().is_some() && two.original.grad().is_some());
        let computed = two.weight().unwrap().detach();
        let back = two.remove(true).unwrap();
        close(&back.weight.tensor(), &computed, 0.0);
        assert!(back.weight.requires_grad());
        let again = register_parametrization(back, "weight", Symmetric).unwrap();
        // leave_parametrized false: the original's value, here the weight it started from.
        let plain = again.remove(false).unwrap();
        close(&plain.weight.tensor(), &computed, 0.0);

        // right_inverse sets where the original starts; a shape change is refused.
        let lin = nn::Linear::new(3, 3);
        let w0 = lin.weight.tensor();
        let halved = register_parametrization_with(
            lin,
            "weight",
            Scaled(nn::Parameter::new(Tensor::full([3], 2.0, CPU).unwrap()).unwrap()),
            |w| w.div(2.0),
        )
        .unwrap();
        close(&halved.weight().unwrap(), &w0, 1e-6);
        // A failed register leaves the chain as it was.
        let mut one = register_parametrization(nn::Linear::new(3, 3), "weight", Symmetric).unwrap();
        assert!(one.register(Rows).is_err());
        assert_eq!(one.parametrizations().len(), 1);
        assert!(one.forward(&Tensor::ones([1, 3], CPU).unwrap()).is_ok());
        let e = err(register_parametrization(
            nn::Linear::new(3, 4),
            "weight",
            Rows,
        ));
        assert!(
            e.contains("Rows() may not change the shape")
                && e.contains("[4, 3]")
                && e.contains("[3]"),
            "{e}"
        );
    });
}
