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
