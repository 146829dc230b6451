//! The Keras-like loop: it learns, it keeps one history row per epoch, it stops at an
//! interrupt with a usable model, it shows one bar and one chart updated in place, and bad
//! input gets errors that name what is wrong. CPU, fixed seeds, small problems.

use gpulab::*;
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

const CPU: Device = Device::Cpu;

// Each test runs in `fork_rng`, so its draws (weights, data, dropout) are its own although
// the harness runs tests on several threads and the global generator is one per process.

/// y = sin(2 x0) * x1 + 0.5 x0 on `n` points of [-1, 1]^2, targets `[n]` (as Keras takes them).
fn regression(n: usize) -> TensorDataset {
    let x = Tensor::rand((n, 2), CPU)
        .unwrap()
        .mul(2.0)
        .unwrap()
        .sub(1.0)
        .unwrap();
    let y: Vec<f32> = x
        .to_vec2::<f32>()
        .unwrap()
        .iter()
        .map(|r| (2.0 * r[0]).sin() * r[1] + 0.5 * r[0])
        .collect();
    TensorDataset::new(x, Tensor::from_vec(y, n, CPU).unwrap()).unwrap()
}

/// Three Gaussian blobs (centres 3 apart, spread 0.5), labels 0..3 as i64.
fn blobs(n: usize) -> TensorDataset {
    let centres = [(0.0f32, 0.0f32), (3.0, 0.0), (1.5, 2.6)];
    let noise = Tensor::randn((n, 2), CPU).unwrap().to_vec::<f32>().unwrap();
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for i in 0..n {
        let c = i % 3;
        xs.push(centres[c].0 + 0.5 * noise[2 * i]);
        xs.push(centres[c].1 + 0.5 * noise[2 * i + 1]);
        ys.push(c as i64);
    }
    TensorDataset::new(
        Tensor::from_vec(xs, (n, 2), CPU).unwrap(),
        Tensor::from_vec(ys, n, CPU).unwrap(),
    )
    .unwrap()
}

fn classifier() -> nn::Sequential {
    nn::Sequential::new()
        .add(nn::Linear::new(2, 16))
        .add(nn::ReLU)
        .add(nn::Dropout::new(0.1))
        .add(nn::Linear::new(16, 3))
}

/// A clock that moves 40 ms every time it is read, so throttled redraws happen on a schedule.
#[derive(Clone, Default)]
struct Ticking(Rc<Cell<Duration>>);
impl timing::Clock for Ticking {
    fn now(&self) -> Duration {
        let t = self.0.get() + Duration::from_millis(40);
        self.0.set(t);
        t
    }
}

fn parse(line: &str) -> Value {
    let body = line.strip_prefix("\x1egpulab:").expect("protocol prefix");
    serde_json::from_str(body.trim_end_matches('\n')).unwrap()
}

/// The dense net fits the regression target: mse falls below 0.01 (the target's variance is
/// about 0.2) in 30 epochs of 8 batches, with `[N]` targets for an `[N, 1]` output.
#[test]
fn fit_learns_a_regression_target_with_mse() {
    fork_rng(42, || {
        let data = regression(256);
        let mut model = nn::Sequential::new()
            .add(nn::Linear::new(2, 32))
            .add(nn::Tanh)
            .add(nn::Linear::new(32, 1));
        let mut opt = optim::Adam::new(model.parameters(), 0.01);
        let history = model
            .fit(&mut opt, Loss::Mse, &data)
            .epochs(30)
            .batch_size(32)
            .verbose(0)
            .run()
            .unwrap();
        let loss = history.loss();
        assert_eq!(history.len(), 30);
        assert!(history.accuracy().is_empty() && history.val_loss().is_empty());
        println!("mse per epoch: {:.4} -> {:.4}", loss[0], loss[29]);
        assert!(loss[29] < 0.01, "{loss:?}");
        assert!(loss[29] < loss[0] / 5.0, "{loss:?}");
        let (mse, acc) = model.evaluate(&data, Loss::Mse).unwrap();
        assert!(mse < 0.01 && acc.is_none(), "{mse} {acc:?}");
    })
}

/// Cross-entropy on the blobs with validation data: one history row per epoch with every
/// field, held-out accuracy at least 90 % (chance 33 %); evaluate agrees with the last
/// validation row; predict gives [N, 3] probabilities whose rows sum to 1.
#[test]
fn fit_classifies_blobs_and_reports_validation_each_epoch() {
    fork_rng(7, || {
        let (train, test) = (blobs(300), blobs(150));
        let mut model = classifier();
        let mut opt = optim::SGD::new(model.parameters(), 0.05).momentum(0.9);
        let history = Fit::new(&mut model, &mut opt, Loss::CrossEntropy)
            .data(&train)
            .epochs(6)
            .batch_size(32)
            .validation_data((&test.x, &test.y))
            .seed(1)
            .verbose(0)
            .run()
            .unwrap();
        assert_eq!(history.len(), 6);
        assert!(!history.was_interrupted());
        for (i, e) in history.epochs.iter().enumerate() {
            assert_eq!(e.epoch, i + 1);
            assert!(e.complete && e.batches == 10);
            assert!(e.accuracy.is_some() && e.val_loss.is_some() && e.val_accuracy.is_some());
        }
        let val_acc = *history.val_accuracy().last().unwrap();
        println!("blobs: val accuracy per epoch {:?}", history.val_accuracy());
        assert!(val_acc >= 0.9, "{:?}", history.val_accuracy());
        assert!(history.loss()[5] < history.loss()[0]);

        let (loss, acc) = model.evaluate(&test, Loss::CrossEntropy).unwrap();
        assert!((loss - history.val_loss()[5]).abs() < 1e-5);
        assert!((acc.unwrap() - val_acc).abs() < 1e-9);

        let p = model.predict(&test.x).unwrap();
        assert_eq!(p.shape(), &[150, 3]);
        for row in p.to_vec2::<f32>().unwrap() {
            assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5, "{row:?}");
            assert!(row.iter().all(|&v| (0.0..=1.0).contains(&v)));
        }
        // The table and the chart.
        let table = history.to_string();
        assert!(
            table.contains("val_accuracy") && table.lines().count() == 7,
            "{table}"
        );
        let svg = history.chart().0;
        assert!(
            svg.starts_with("<svg") && svg.contains("Accuracy"),
            "{}",
            &svg[..100]
        );
    })
}

/// One logit per sample with 0/1 targets: accuracy is reported, predict gives [N, 1]
/// probabilities from the sigmoid.
#[test]
fn binary_classification_with_bce_with_logits() {
    fork_rng(3, || {
        let x = Tensor::randn((200, 2), CPU).unwrap();
        let y = x
            .sum_dim(1)
            .unwrap()
            .gt(0.0)
            .unwrap()
            .to_dtype(DType::F32)
            .unwrap();
        let data = TensorDataset::new(x.clone(), y).unwrap();
        let mut model = nn::Sequential::new().add(nn::Linear::new(2, 1));
        let mut opt = optim::Adam::new(model.parameters(), 0.05);
        let h = model
            .fit(&mut opt, Loss::BceWithLogits, &data)
            .epochs(10)
            .batch_size(20)
            .verbose(0)
            .run()
            .unwrap();
        let acc = h.accuracy();
        assert!(*acc.last().unwrap() >= 0.95, "{acc:?}");
        let p = model.predict(&x).unwrap();
        assert_eq!(p.shape(), &[200, 1]);
        assert!(p
            .to_vec2::<f32>()
            .unwrap()
            .iter()
            .all(|r| r[0] > 0.0 && r[0] < 1.0));
    })
}

/// The interrupt is checked before every batch: raised after 5 batches, training stops
/// there, the history says so, and the model still predicts.
#[test]
fn an_interrupt_stops_at_the_next_batch_and_keeps_the_model() {
    fork_rng(5, || {
        let data = blobs(64);
        let mut model = classifier();
        let before = model.parameters()[0].tensor().to_vec2::<f32>().unwrap();
        let mut opt = optim::Adam::new(model.parameters(), 0.01);
        let calls = Cell::new(0);
        let lines = RefCell::new(Vec::<String>::new());
        let h = model
            .fit(&mut opt, Loss::CrossEntropy, &data)
            .epochs(3)
            .batch_size(8) // 8 batches per epoch
            .interrupt_probe(|| {
                calls.set(calls.get() + 1);
                calls.get() > 5
            })
            .plain_sink(|l| lines.borrow_mut().push(l.to_string()))
            .run()
            .unwrap();
        assert_eq!(h.interrupted, Some((1, 5)));
        assert_eq!(h.len(), 1);
        assert!(!h.epochs[0].complete && h.epochs[0].batches == 5);
        assert_eq!(
            calls.get(),
            6,
            "one check per batch, stopping at the first raised one"
        );
        let note = h.interrupted_note().unwrap();
        assert!(
            note.contains("interrupted") && note.contains("5/8"),
            "{note}"
        );
        assert!(lines.borrow().last().unwrap().contains("interrupted"));
        assert!(h.to_string().contains("interrupted"));
        // Trained weights are kept and the model is usable.
        assert_ne!(
            model.parameters()[0].tensor().to_vec2::<f32>().unwrap(),
            before
        );
        let p = model.predict(&data.x).unwrap();
        assert_eq!(p.shape(), &[64, 3]);
    })
}

/// In a notebook: the bar and the chart are each displayed once, then only updated under
/// their ids; the chart is redrawn far less often than the bar (throttled) but at each epoch's
/// end; the last bar says training is done.
#[test]
fn live_bar_and_chart_are_displayed_once_then_updated_in_place() {
    fork_rng(9, || {
        let (train, test) = (blobs(96), blobs(30));
        let mut model = classifier();
        let mut opt = optim::Adam::new(model.parameters(), 0.01);
        let lines = RefCell::new(Vec::<String>::new());
        let epochs = 3;
        let h = model
            .fit(&mut opt, Loss::CrossEntropy, &train)
            .epochs(epochs)
            .batch_size(4) // 24 batches per epoch
            .validation_data(&test)
            .clock(Ticking::default())
            .interrupt_probe(|| false)
            .notebook_sink(|l| lines.borrow_mut().push(l.to_string()))
            .run()
            .unwrap();
        assert_eq!(h.len(), epochs);
        let msgs: Vec<Value> = lines.borrow().iter().map(|l| parse(l)).collect();
        assert_eq!(
            (msgs[0]["op"].as_str(), msgs[1]["op"].as_str()),
            (Some("display"), Some("display"))
        );
        let bar = msgs[0]["display_id"].as_str().unwrap();
        let chart = msgs[1]["display_id"].as_str().unwrap();
        assert_ne!(bar, chart);
        assert!(msgs[0]["data"]["text/html"]
            .as_str()
            .unwrap()
            .contains("Epoch 1/3"));
        assert!(msgs[1]["data"]["image/svg+xml"]
            .as_str()
            .unwrap()
            .starts_with("<svg"));
        let rest = &msgs[2..];
        assert!(rest.iter().all(|m| m["op"] == "update"));
        let n_bar = rest.iter().filter(|m| m["display_id"] == bar).count();
        let n_chart = rest.iter().filter(|m| m["display_id"] == chart).count();
        assert_eq!(n_bar + n_chart, rest.len(), "an update under an unknown id");
        println!(
            "{} batches: {n_bar} bar updates, {n_chart} chart updates",
            24 * epochs
        );
        assert!(n_bar >= 10 && n_bar < 24 * epochs, "bar updates: {n_bar}");
        assert!(
            n_chart > epochs && n_chart < n_bar,
            "chart updates: {n_chart}"
        );
        // The running loss and accuracy are on the bar while it trains.
        let mid = rest.iter().find(|m| m["display_id"] == bar).unwrap()["data"]["text/plain"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            mid.contains("loss: ") && mid.contains("accuracy: "),
            "{mid}"
        );
        let last_bar = rest.iter().rev().find(|m| m["display_id"] == bar).unwrap();
        let text = last_bar["data"]["text/plain"].as_str().unwrap();
        assert!(
            text.contains("done: 3 epochs") && text.contains("val_accuracy"),
            "{text}"
        );
        let last_chart = rest
            .iter()
            .rev()
            .find(|m| m["display_id"] == chart)
            .unwrap();
        assert!(last_chart["data"]["image/svg+xml"]
            .as_str()
            .unwrap()
            .contains("validation"));
    })
}

/// Outside a notebook: one Keras-style line per epoch.
#[test]
fn plain_output_is_one_line_per_epoch() {
    fork_rng(2, || {
        let data = regression(64);
        let mut model = nn::Sequential::new().add(nn::Linear::new(2, 1));
        let mut opt = optim::SGD::new(model.parameters(), 0.1);
        let lines = RefCell::new(Vec::<String>::new());
        model
            .fit(&mut opt, Loss::Mse, &data)
            .epochs(2)
            .validation_data(&data)
            .plain_sink(|l| lines.borrow_mut().push(l.to_string()))
            .run()
            .unwrap();
        let lines = lines.borrow();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("Epoch 1/2 - ") && lines[0].contains("val_loss: "));
        assert!(!lines[0].contains("accuracy"), "{}", lines[0]);
    })
}

#[test]
fn bad_input_gets_errors_naming_what_is_wrong() {
    fork_rng(1, || {
        let data = blobs(12);
        let mut model = classifier();
        let mut opt = optim::SGD::new(model.parameters(), 0.1);
        let err = |r: gpulab::error::Result<History>| r.unwrap_err().to_string();

        // Output [N, 3] against regression targets [N, 2].
        let wrong =
            TensorDataset::new(data.x.clone(), Tensor::zeros((12, 2), CPU).unwrap()).unwrap();
        let e = err(model.fit(&mut opt, Loss::Mse, &wrong).verbose(0).run());
        assert!(e.contains("[12, 3]") && e.contains("[12, 2]"), "{e}");

        // A label past the classes.
        let mut y = data.y.to_vec::<i64>().unwrap();
        y[4] = 5;
        let bad =
            TensorDataset::new(data.x.clone(), Tensor::from_vec(y, 12, CPU).unwrap()).unwrap();
        let e = err(model
            .fit(&mut opt, Loss::CrossEntropy, &bad)
            .shuffle(false)
            .verbose(0)
            .run());
        assert!(e.contains("target 5") && e.contains("3 classes"), "{e}");

        // Float targets for cross-entropy.
        let floats = TensorDataset::new(data.x.clone(), Tensor::zeros(12, CPU).unwrap()).unwrap();
        let e = err(model
            .fit(&mut opt, Loss::CrossEntropy, &floats)
            .verbose(0)
            .run());
        assert!(e.contains("class indices"), "{e}");

        // Batches sent to another device than the model's (no GPU needed: checked first).
        let loader = DataLoader::new(data.clone(), 4)
            .unwrap()
            .device(Device::Cuda(0));
        let e = err(model
            .fit(&mut opt, Loss::CrossEntropy, &loader)
            .verbose(0)
            .run());
        assert!(e.contains("cuda:0") && e.contains("cpu"), "{e}");

        // A DataLoader sets its own batch size.
        let loader = DataLoader::new(data.clone(), 4).unwrap();
        let e = err(model
            .fit(&mut opt, Loss::CrossEntropy, loader)
            .batch_size(8)
            .verbose(0)
            .run());
        assert!(e.contains("DataLoader") && e.contains("batch size"), "{e}");

        let e = err(model
            .fit(&mut opt, Loss::CrossEntropy, &data)
            .epochs(0)
            .run());
        assert!(e.contains("epochs"), "{e}");
    })
}

/// A DataLoader as training data: its batches are used as they are (drop_last shows in the
/// batch count), and a seeded run repeats exactly.
#[test]
fn a_seeded_run_from_a_dataloader_repeats_exactly() {
    fork_rng(4, || {
        let run = || {
            manual_seed(4);
            let data = blobs(50);
            let loader = DataLoader::new(data, 8)
                .unwrap()
                .shuffle(true)
                .seed(3)
                .drop_last(true);
            let mut model = classifier();
            let mut opt = optim::Adam::new(model.parameters(), 0.01);
            model
                .fit(&mut opt, Loss::CrossEntropy, &loader)
                .epochs(2)
                .verbose(0)
                .run()
                .unwrap()
        };
        let (a, b) = (run(), run());
        assert_eq!(a.batches_per_epoch, 6);
        assert_eq!(a.loss(), b.loss());
        assert_eq!(a.accuracy(), b.accuracy());
    })
}

/// A model that ends in Softmax (Keras' habit): predict returns its outputs as they are
/// (no second softmax).
#[test]
fn predict_does_not_apply_softmax_twice() {
    fork_rng(6, || {
        let mut model = classifier().add(nn::Softmax::new(1));
        let x = Tensor::randn((5, 2), CPU).unwrap();
        model.eval(); // dropout off, as predict has it
        let direct = no_grad(|| model.forward(&x))
            .unwrap()
            .to_vec2::<f32>()
            .unwrap();
        let p = model.predict(&x).unwrap().to_vec2::<f32>().unwrap();
        assert_eq!(p, direct);
    })
}

/// A schedule handed to `fit` is stepped once per epoch: StepLR halves the rate every two
/// epochs, each epoch's rate is in its history row and line; ReduceLROnPlateau watches the
/// validation loss, and with a learning rate of 0 (nothing improves) it cuts after each
/// `patience + 1` epochs.
#[test]
fn fit_steps_a_schedule_after_each_epoch() {
    use optim::lr_scheduler::{ReduceLROnPlateau, StepLR};
    fork_rng(5, || {
        let data = blobs(96);
        let mut model = classifier();
        let mut opt = optim::SGD::new(model.parameters(), 0.08);
        let mut sched = StepLR::new(&opt, 2, 0.5);
        let lines = RefCell::new(Vec::new());
        let h = Fit::new(&mut model, &mut opt, Loss::CrossEntropy)
            .data(&data)
            .epochs(5)
            .lr_scheduler(&mut sched)
            .plain_sink(|l| lines.borrow_mut().push(l.to_string()))
            .run()
            .unwrap();
        let rates: Vec<f64> = h.epochs.iter().map(|e| e.lr.unwrap()).collect();
        assert_eq!(rates, vec![0.08, 0.08, 0.04, 0.04, 0.02]);
        assert!(
            lines.borrow()[2].contains(" - lr: 4.0000e-2"),
            "{:?}",
            lines.borrow()
        );
        assert_eq!(
            opt.lr(),
            0.02,
            "stepped after the last epoch too, as a torch loop does"
        );

        // At 1e-6 the validation loss moves by far less than the 1e-4 (relative) that counts
        // as better: the first epoch improves on infinity, then every epoch is a bad one.
        let mut model = classifier();
        let mut opt = optim::SGD::new(model.parameters(), 1e-6);
        let mut plateau = ReduceLROnPlateau::new(&opt).patience(1).factor(0.5);
        let h = Fit::new(&mut model, &mut opt, Loss::CrossEntropy)
            .data(&data)
            .validation_data(&data)
            .epochs(6)
            .verbose(0)
            .reduce_lr_on_plateau(&mut plateau)
            .run()
            .unwrap();
        let rates: Vec<f64> = h.epochs.iter().map(|e| e.lr.unwrap()).collect();
        assert_eq!(rates, vec![1e-6, 1e-6, 1e-6, 5e-7, 5e-7, 2.5e-7]);
        assert_eq!(plateau.get_last_lr(), 2.5e-7);
        // Without a schedule the rows carry no rate.
        let mut model = classifier();
        let mut opt = optim::SGD::new(model.parameters(), 0.1);
        let h = Fit::new(&mut model, &mut opt, Loss::CrossEntropy)
            .data(&data)
            .epochs(1)
            .verbose(0)
            .run()
            .unwrap();
        assert_eq!(h.epochs[0].lr, None);
    })
}
