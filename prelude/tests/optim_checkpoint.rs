//! Training checkpoints: `state_dict` / `load_state_dict` of the optimisers, the learning-rate
//! schedules and `amp::GradScaler`, and the optimisers' safetensors files. A run stopped,
//! saved (model and optimiser), reloaded into fresh objects and resumed ends where an
//! uninterrupted run ends, bit for bit on the CPU, and a resumed schedule sets the same rates;
//! the names are torch's; bad state is refused with the name at fault and changes nothing.

use gpulab::nn::{self, Linear, Module, ReLU, Sequential};
use gpulab::optim::{self, Adam, AdamW, Optimizer, RMSprop, SGD};
use gpulab::{fork_rng, manual_seed, Device, Tensor, F};

fn model() -> Sequential {
    Sequential::new()
        .add(Linear::new(5, 8))
        .add(ReLU)
        .add(Linear::new(8, 2))
}

type MakeOpt = fn(&Sequential) -> Box<dyn Optimizer>;

fn optimisers() -> Vec<(&'static str, MakeOpt)> {
    vec![
        ("SGD", |m| {
            Box::new(
                SGD::new(m.parameters(), 0.05)
                    .momentum(0.9)
                    .weight_decay(1e-3),
            )
        }),
        ("Adam", |m| Box::new(Adam::new(m.parameters(), 0.01))),
        ("AdamW", |m| Box::new(AdamW::new(m.parameters(), 0.01))),
        ("RMSprop", |m| {
            Box::new(RMSprop::new(m.parameters(), 0.01).momentum(0.5))
        }),
    ]
}

fn train(model: &Sequential, opt: &mut dyn Optimizer, x: &Tensor, y: &Tensor, steps: usize) {
    for _ in 0..steps {
        let loss = F::mse_loss(&model.forward(x).unwrap(), y).unwrap();
        opt.zero_grad();
        loss.backward().unwrap();
        opt.step().unwrap();
    }
}

fn weights(model: &Sequential) -> Vec<Vec<f32>> {
    model
        .parameters()
        .iter()
        .map(|p| p.tensor().to_vec::<f32>().unwrap())
        .collect()
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("gpulab-optim-ckpt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn a_run_resumed_from_a_checkpoint_ends_where_an_unbroken_run_ends() {
    for (name, make) in optimisers() {
        fork_rng(11, || {
            let x = Tensor::randn((16, 5), Device::Cpu).unwrap();
            let y = Tensor::randn((16, 2), Device::Cpu).unwrap();
            manual_seed(1);
            let straight = model();
            let mut opt = make(&straight);
            train(&straight, opt.as_mut(), &x, &y, 6);

            manual_seed(1);
            let first = model();
            let mut opt = make(&first);
            train(&first, opt.as_mut(), &x, &y, 3);
            let (mpath, opath) = (
                tmp(&format!("{name}-model.safetensors")),
                tmp(&format!("{name}-optim.safetensors")),
            );
            nn::save_safetensors(&first, &mpath).unwrap();
            optim::save_safetensors(opt.as_ref(), &opath).unwrap();
            // The first run goes on after saving; the file keeps step 3.
            train(&first, opt.as_mut(), &x, &y, 2);

            // Next session: other initial weights, a fresh optimiser, both loaded.
            manual_seed(99);
            let resumed = model();
            let mut opt = make(&resumed);
            nn::load_safetensors(&resumed, &mpath).unwrap();
            optim::load_safetensors(opt.as_mut(), &opath).unwrap();
            train(&resumed, opt.as_mut(), &x, &y, 3);
            assert_eq!(
                weights(&resumed),
                weights(&straight),
                "{name}: resumed run differs from the unbroken one"
            );

            // The control: the weights alone, with a fresh optimiser, do not get there.
            let fresh = model();
            nn::load_safetensors(&fresh, &mpath).unwrap();
            let mut opt = make(&fresh);
            train(&fresh, opt.as_mut(), &x, &y, 3);
            assert_ne!(
                weights(&fresh),
                weights(&straight),
                "{name}: the optimiser's state made no difference, so the test shows nothing"
            );
        })
    }
}

#[test]
fn adams_state_dict_has_torchs_names_and_values() {
    fork_rng(12, || {
        let lin = Linear::new(3, 2);
        let mut opt = Adam::new(lin.parameters(), 0.01).betas(0.8, 0.99);
        let x = Tensor::randn((4, 3), Device::Cpu).unwrap();
        lin.forward(&x).unwrap().sum().unwrap().backward().unwrap();
        let g0 = lin.parameters()[0].grad().unwrap().to_vec::<f32>().unwrap();
        opt.step().unwrap();
        let sd = opt.state_dict().unwrap();
        let mut names: Vec<&str> = sd.iter().map(|(n, _)| n.as_str()).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "param_groups.0.betas",
                "param_groups.0.eps",
                "param_groups.0.lr",
                "param_groups.0.weight_decay",
                "state.0.exp_avg",
                "state.0.exp_avg_sq",
                "state.0.step",
                "state.1.exp_avg",
                "state.1.exp_avg_sq",
                "state.1.step",
            ]
        );
        let get = |n: &str| sd.iter().find(|(k, _)| k == n).unwrap().1.clone();
        assert_eq!(get("state.0.step").item::<f32>().unwrap(), 1.0);
        assert_eq!(
            get("param_groups.0.betas").to_vec::<f64>().unwrap(),
            [0.8, 0.99]
        );
        assert_eq!(get("param_groups.0.lr").item::<f64>().unwrap(), 0.01);
        // After one step, exp_avg = (1 - beta1) g and exp_avg_sq = (1 - beta2) g^2.
        let m = get("state.0.exp_avg").to_vec::<f32>().unwrap();
        let v = get("state.0.exp_avg_sq").to_vec::<f32>().unwrap();
        assert_eq!(get("state.0.exp_avg").shape(), &[2, 3]);
        for ((&g, &m), &v) in g0.iter().zip(&m).zip(&v) {
            assert!((m - 0.2 * g).abs() <= 1e-6 * (1.0 + g.abs()), "{m} vs {g}");
            assert!(
                (v - 0.01 * g * g).abs() <= 1e-6 * (1.0 + g * g),
                "{v} vs {g}"
            );
        }
        // A copy: further steps do not change it.
        lin.forward(&x).unwrap().sum().unwrap().backward().unwrap();
        opt.step().unwrap();
        assert_eq!(get("state.0.exp_avg").to_vec::<f32>().unwrap(), m);
        assert_eq!(
            opt.state_dict().unwrap()[0].1.item::<f32>().unwrap(),
            2.0,
            "step counts on"
        );
    })
}

#[test]
fn bad_state_is_refused_by_name_and_changes_nothing() {
    fork_rng(13, || {
        let lin = Linear::new(3, 2);
        let mut opt = Adam::new(lin.parameters(), 0.01);
        let x = Tensor::randn((4, 3), Device::Cpu).unwrap();
        lin.forward(&x).unwrap().sum().unwrap().backward().unwrap();
        opt.step().unwrap();
        let good = opt.state_dict().unwrap();
        let snapshot = |o: &Adam| -> Vec<(String, Vec<f64>)> {
            o.state_dict()
                .unwrap()
                .into_iter()
                .map(|(n, t)| (n, t.to_dtype(gpulab::DType::F64).unwrap().to_vec().unwrap()))
                .collect()
        };
        let before = snapshot(&opt);

        let mut wrong_shape = good.clone();
        let at = wrong_shape
            .iter()
            .position(|(n, _)| n == "state.0.exp_avg")
            .unwrap();
        wrong_shape[at].1 = Tensor::zeros((3, 2), Device::Cpu).unwrap();
        let e = opt.load_state_dict(&wrong_shape).unwrap_err().to_string();
        assert!(
            e.contains("state.0.exp_avg") && e.contains("[3, 2]") && e.contains("[2, 3]"),
            "{e}"
        );

        let mut unknown = good.clone();
        unknown.push((
            "state.5.exp_avg".into(),
            Tensor::zeros(3, Device::Cpu).unwrap(),
        ));
        let e = opt.load_state_dict(&unknown).unwrap_err().to_string();
        assert!(
            e.contains("\"state.5.exp_avg\"") && e.contains("Adam"),
            "{e}"
        );

        let mut steps_differ = good.clone();
        let at = steps_differ
            .iter()
            .position(|(n, _)| n == "state.1.step")
            .unwrap();
        steps_differ[at].1 = Tensor::from_vec(vec![4.0f32], (), Device::Cpu).unwrap();
        let e = opt.load_state_dict(&steps_differ).unwrap_err().to_string();
        assert!(
            e.contains("state.1.step") && e.contains("one step count"),
            "{e}"
        );

        let mut twice = good.clone();
        twice.push(good[0].clone());
        let e = opt.load_state_dict(&twice).unwrap_err().to_string();
        assert!(e.contains(&format!("{:?} appears twice", good[0].0)), "{e}");

        assert_eq!(
            snapshot(&opt),
            before,
            "a refused load changed the optimiser"
        );

        // A file that is not an optimiser's state names the file.
        let path = tmp("model-not-optim.safetensors");
        nn::save_safetensors(&lin, &path).unwrap();
        let e = optim::load_safetensors(&mut opt, &path)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("model-not-optim") && e.contains("\"weight\""),
            "{e}"
        );
        assert_eq!(snapshot(&opt), before);
    })
}

#[test]
fn a_schedule_resumed_from_its_state_sets_the_rates_an_unbroken_one_sets() {
    use gpulab::optim::lr_scheduler::{CosineAnnealingLR, ExponentialLR, LRScheduler, StepLR};
    type MakeSched = fn(&dyn Optimizer) -> Box<dyn LRScheduler>;
    let schedules: [(&str, MakeSched); 3] = [
        ("StepLR", |o| Box::new(StepLR::new(o, 3, 0.5))),
        ("ExponentialLR", |o| Box::new(ExponentialLR::new(o, 0.9))),
        ("CosineAnnealingLR", |o| {
            Box::new(CosineAnnealingLR::new(o, 5, 0.01))
        }),
    ];
    for (name, make) in schedules {
        let p = || vec![nn::Parameter::new(Tensor::zeros(1, Device::Cpu).unwrap()).unwrap()];
        let mut opt = SGD::new(p(), 0.1);
        let mut sched = make(&opt);
        let straight: Vec<f64> = (0..8)
            .map(|_| {
                sched.step(&mut opt);
                opt.lr()
            })
            .collect();

        let mut opt = SGD::new(p(), 0.1);
        let mut sched = make(&opt);
        for _ in 0..4 {
            sched.step(&mut opt);
        }
        let (opt_state, sched_state) = (opt.state_dict().unwrap(), sched.state_dict().unwrap());
        let last = sched_state.iter().find(|(n, _)| n == "last_epoch").unwrap();
        assert_eq!(last.1.item::<f64>().unwrap(), 4.0, "{name}");

        // Fresh objects, made as the first ones were, then loaded.
        let mut opt = SGD::new(p(), 0.1);
        let mut sched = make(&opt);
        opt.load_state_dict(&opt_state).unwrap();
        sched.load_state_dict(&sched_state).unwrap();
        let resumed: Vec<f64> = (0..4)
            .map(|_| {
                sched.step(&mut opt);
                opt.lr()
            })
            .collect();
        assert_eq!(resumed, straight[4..], "{name}");
    }
    let opt = SGD::new(vec![], 0.1);
    let mut sched = StepLR::new(&opt, 2, 0.5);
    let mut bad = sched.state_dict().unwrap();
    bad.push((
        "T_max".into(),
        Tensor::from_vec(vec![3.0], (), Device::Cpu).unwrap(),
    ));
    let e = sched.load_state_dict(&bad).unwrap_err().to_string();
    assert!(e.contains("StepLR") && e.contains("\"T_max\""), "{e}");
}

#[test]
fn a_grad_scalers_state_round_trips_and_a_disabled_ones_is_empty() {
    use gpulab::amp::GradScaler;
    let mut a = GradScaler::new().init_scale(1024.0).growth_interval(3);
    a.update_to(256.0);
    let sd = a.state_dict().unwrap();
    let names: Vec<&str> = sd.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "scale",
            "growth_factor",
            "backoff_factor",
            "growth_interval",
            "_growth_tracker"
        ]
    );
    let mut b = GradScaler::new();
    b.load_state_dict(&sd).unwrap();
    assert_eq!(b.get_scale(), 256.0);
    assert_eq!(b.state_dict().unwrap()[3].1.item::<f64>().unwrap(), 3.0);

    let off = GradScaler::new().enabled(false);
    assert!(off.state_dict().unwrap().is_empty());
    let e = b.load_state_dict(&[]).unwrap_err().to_string();
    assert!(e.contains("empty"), "{e}");
    assert_eq!(b.get_scale(), 256.0);
}

/// torch's habit, `torch.save({"model": model.state_dict(), "optimizer": opt.state_dict()})`:
/// both state dicts in one file under prefixes, split again on loading.
#[test]
fn one_file_can_hold_the_model_and_the_optimiser() {
    fork_rng(14, || {
        let x = Tensor::randn((16, 5), Device::Cpu).unwrap();
        let y = Tensor::randn((16, 2), Device::Cpu).unwrap();
        manual_seed(2);
        let straight = model();
        let mut opt = Adam::new(straight.parameters(), 0.01);
        train(&straight, &mut opt, &x, &y, 4);

        manual_seed(2);
        let first = model();
        let mut opt = Adam::new(first.parameters(), 0.01);
        train(&first, &mut opt, &x, &y, 2);
        let prefixed = |prefix: &str, sd: Vec<(String, Tensor)>| {
            sd.into_iter()
                .map(|(n, t)| (format!("{prefix}.{n}"), t))
                .collect::<Vec<_>>()
        };
        let mut ckpt = prefixed("model", first.state_dict());
        ckpt.extend(prefixed("optimizer", opt.state_dict().unwrap()));
        let path = tmp("checkpoint.safetensors");
        nn::safetensors::save(&ckpt, &path).unwrap();

        let loaded = nn::safetensors::load(&path).unwrap();
        let part = |prefix: &str| -> Vec<(String, Tensor)> {
            loaded
                .iter()
                .filter_map(|(n, t)| {
                    let rest = n.strip_prefix(prefix)?.strip_prefix('.')?;
                    Some((rest.to_string(), t.clone()))
                })
                .collect()
        };
        manual_seed(77);
        let resumed = model();
        let mut opt = Adam::new(resumed.parameters(), 0.01);
        resumed.load_state_dict(&part("model")).unwrap();
        opt.load_state_dict(&part("optimizer")).unwrap();
        train(&resumed, &mut opt, &x, &y, 2);
        assert_eq!(weights(&resumed), weights(&straight));

        // The model's load names what is missing.
        let e = resumed
            .load_state_dict(&part("optimizer"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("load_state_dict") && e.contains("\"0.weight\""),
            "{e}"
        );
    })
}
