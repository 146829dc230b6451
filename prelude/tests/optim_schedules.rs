//! Learning-rate schedules (their rates are compared with torch's by bench/torch_parity.py):
//! the borrowing pattern a training loop uses, and that every optimiser takes them.
use gpulab::nn::{Linear, Module};
use gpulab::optim::lr_scheduler::{CosineAnnealingLR, ExponentialLR, LRScheduler, StepLR};
use gpulab::optim::{Adam, AdamW, Optimizer, RMSprop, SGD};
use gpulab::{Device, Tensor};

#[test]
fn a_schedule_sets_the_rate_of_any_optimiser_between_epochs() {
    let model = Linear::new(3, 2);
    let x = Tensor::ones([4, 3], Device::Cpu).unwrap();
    let optimisers: Vec<Box<dyn Optimizer>> = vec![
        Box::new(SGD::new(model.parameters(), 0.1)),
        Box::new(Adam::new(model.parameters(), 0.1)),
        Box::new(AdamW::new(model.parameters(), 0.1)),
        Box::new(RMSprop::new(model.parameters(), 0.1)),
    ];
    for mut opt in optimisers {
        let mut sched = StepLR::new(opt.as_ref(), 2, 0.5);
        assert_eq!(sched.get_last_lr(), 0.1);
        let mut rates = Vec::new();
        for _epoch in 0..4 {
            // The loop uses the optimiser freely; the schedule only borrows it in `step`.
            model
                .forward(&x)
                .unwrap()
                .sum()
                .unwrap()
                .backward()
                .unwrap();
            opt.step().unwrap();
            opt.zero_grad();
            sched.step(opt.as_mut());
            rates.push(opt.lr());
        }
        assert_eq!(rates, [0.1, 0.05, 0.05, 0.025]);
        assert_eq!(sched.get_last_lr(), 0.025);
    }
}

#[test]
fn the_cosine_reaches_its_floor_at_t_max_and_exponential_decays() {
    let p = gpulab::nn::Parameter::new(Tensor::zeros([1], Device::Cpu).unwrap()).unwrap();
    let mut opt = SGD::new(vec![p], 1.0);
    let mut cos = CosineAnnealingLR::new(&opt, 4, 0.1);
    let rates: Vec<f64> = (0..4)
        .map(|_| {
            cos.step(&mut opt);
            opt.lr()
        })
        .collect();
    assert!((rates[1] - 0.55).abs() < 1e-12, "{rates:?}");
    assert!((rates[3] - 0.1).abs() < 1e-12, "{rates:?}");
    let mut opt = SGD::new(vec![], 1.0);
    let mut exp = ExponentialLR::new(&opt, 0.5);
    exp.step(&mut opt);
    exp.step(&mut opt);
    assert_eq!(opt.lr(), 0.25);
}

/// Adam writes a parameter's new value over the old one only when nothing else holds that
/// storage: a clone kept from before the step keeps its values (tensors are values unless
/// written in place), and either way the step is Adam's (the first step moves every weight
/// by lr against the sign of its gradient, since m / sqrt(v) is ±1 after bias correction).
#[test]
fn adam_updates_in_place_only_what_nothing_else_holds() {
    for keep in [false, true] {
        let model = Linear::new(3, 2);
        let w = model.parameters()[0].clone();
        let before = w.tensor().to_vec::<f32>().unwrap();
        let kept = keep.then(|| w.tensor());
        let x =
            Tensor::from_vec(vec![1.0f32, -2.0, 0.5, 3.0, 1.0, -1.0], [2, 3], Device::Cpu).unwrap();
        let loss = model.forward(&x).unwrap().sum().unwrap();
        loss.backward().unwrap();
        let g = w.grad().unwrap().to_vec::<f32>().unwrap();
        let mut opt = Adam::new(model.parameters(), 0.1);
        opt.step().unwrap();
        let after = w.tensor().to_vec::<f32>().unwrap();
        for ((b, a), g) in before.iter().zip(&after).zip(&g) {
            let want = b - 0.1 * g.signum();
            assert!(
                (a - want).abs() < 1e-5,
                "keep {keep}: {b} -> {a}, want {want}"
            );
        }
        if let Some(k) = kept {
            assert_eq!(k.to_vec::<f32>().unwrap(), before, "the kept clone changed");
        }
        // The graph of the step's forward pass was freed by backward; the loss still exists.
        assert!(loss.backward().is_err());
    }
}

/// A plateau schedule saved mid-run and loaded into a fresh one goes on as the original:
/// the best value, the bad-epoch count and the cooldown come back; an unknown key is refused.
#[test]
fn a_plateau_schedule_resumes_from_its_state_dict() {
    use gpulab::optim::lr_scheduler::ReduceLROnPlateau;
    let model = Linear::new(3, 2);
    let mut opt = SGD::new(model.parameters(), 0.1);
    let mut a = ReduceLROnPlateau::new(&opt)
        .patience(1)
        .cooldown(1)
        .factor(0.5);
    for m in [1.0, 0.9, 0.95] {
        a.step(&mut opt, m);
    }
    let saved = a.state_dict().unwrap();
    let mut opt_b = SGD::new(model.parameters(), opt.lr());
    let mut b = ReduceLROnPlateau::new(&opt_b)
        .patience(1)
        .cooldown(1)
        .factor(0.5);
    b.load_state_dict(&saved).unwrap();
    for m in [0.95, 0.95, 0.95, 0.95, 0.7] {
        a.step(&mut opt, m);
        b.step(&mut opt_b, m);
        assert_eq!(opt.lr(), opt_b.lr());
    }
    assert!(opt.lr() < 0.1, "the plateau cut the rate: {}", opt.lr());
    let mut bad = saved.clone();
    bad.push(("patience_x".into(), Tensor::zeros([], Device::Cpu).unwrap()));
    let e = b.load_state_dict(&bad).unwrap_err().to_string();
    assert!(e.contains("patience_x"), "{e}");
}

/// A warm-restart schedule resumes mid-cycle from its state dict; LambdaLR's state holds the
/// epoch, so a new closure carries on from there.
#[test]
fn restarts_and_lambdas_resume_from_their_state_dicts() {
    use gpulab::optim::lr_scheduler::{CosineAnnealingWarmRestarts, LambdaLR};
    let model = Linear::new(3, 2);
    let mut opt = SGD::new(model.parameters(), 1.0);
    let mut a = CosineAnnealingWarmRestarts::new(&opt, 2, 2, 0.0);
    let mut rates = Vec::new();
    for _ in 0..4 {
        a.step(&mut opt);
        rates.push(opt.lr());
    }
    // Epoch 2 restarts at the starting rate; the next cycle is 4 epochs long.
    assert!(
        (rates[0] - 0.5).abs() < 1e-12 && rates[1] == 1.0,
        "{rates:?}"
    );
    let saved = a.state_dict().unwrap();
    let mut opt_b = SGD::new(model.parameters(), 1.0);
    let mut b = CosineAnnealingWarmRestarts::new(&opt_b, 2, 2, 0.0);
    b.load_state_dict(&saved).unwrap();
    for _ in 0..5 {
        a.step(&mut opt);
        b.step(&mut opt_b);
        assert_eq!(opt.lr(), opt_b.lr());
    }
    let mut opt = SGD::new(model.parameters(), 0.5);
    let mut l = LambdaLR::new(&mut opt, |e| 0.5f64.powi(e as i32));
    l.step(&mut opt);
    l.step(&mut opt);
    assert_eq!(opt.lr(), 0.125);
    let mut l2 = LambdaLR::new(&mut opt, |e| 0.5f64.powi(e as i32));
    l2.load_state_dict(&l.state_dict().unwrap()).unwrap();
    l2.step(&mut opt);
    assert_eq!(opt.lr(), 0.0625);
}
