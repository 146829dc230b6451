//! Checkpoints that PyTorch saved resume in gpulab where torch would go on: the files in
//! `tests/data/torch-checkpoint/` were written by torch 2.9.1
//! (`bench/torch_checkpoint_fixture.py`: a small CNN, three steps of each optimiser, the model
//! through `safetensors.torch.save_file`, the optimiser through
//! `notebooks/torch_checkpoint.py`), together with where torch's fourth step took them. gpulab
//! loads the step-3 files into a fresh model and optimiser (made with other hyperparameters,
//! which the file must override), takes the fourth step on the same batch and must land on
//! torch's step-4 weights, moments and step count; and its own `state_dict` then has exactly
//! the names of torch's, so the way back (notebooks/torch_checkpoint.py) has nothing to guess.
//! With `GPULAB_CHECKPOINT_OUT=DIR` it also writes its step-4 files there, for
//! tests/test_torch_checkpoint.py to resume in torch.

use gpulab::nn::{self, Module};
use gpulab::optim::{self, Adam, AdamW, Optimizer, RMSprop, SGD};
use gpulab::{Tensor, F};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/torch-checkpoint")
        .join(name)
}

fn read(name: &str) -> BTreeMap<String, Tensor> {
    nn::safetensors::load(data(name))
        .unwrap()
        .into_iter()
        .collect()
}

/// bench/torch_checkpoint_fixture.py's `model()`, layer for layer.
fn model() -> nn::Sequential {
    nn::Sequential::new()
        .add(nn::Conv2d::new(1, 4, 3).padding(1))
        .add(nn::ReLU)
        .add(nn::BatchNorm2d::new(4))
        .add(nn::MaxPool2d::new(2))
        .add(nn::Flatten)
        .add(nn::Linear::new(4 * 4 * 4, 8))
        .add(nn::ReLU)
        .add(nn::Linear::new(8, 3))
}

/// An optimiser of the fixture's kind, with hyperparameters unlike torch's: only the file can
/// make it take torch's step.
fn optimiser(kind: &str, m: &nn::Sequential) -> Box<dyn Optimizer> {
    let p = m.parameters();
    match kind {
        "sgd" => Box::new(SGD::new(p, 0.5).momentum(0.1)),
        "adam" => Box::new(Adam::new(p, 0.5).betas(0.5, 0.5)),
        "adamw" => Box::new(AdamW::new(p, 0.5).weight_decay(0.5)),
        "rmsprop" => Box::new(RMSprop::new(p, 0.5).momentum(0.1).alpha(0.5)),
        _ => unreachable!(),
    }
}

/// Where `got` differs from torch's `want`: a name missing or extra, a shape or dtype, or a
/// value further than `tol` from torch's (relative to the tensor's largest magnitude).
fn mismatch(
    what: &str,
    got: &[(String, Tensor)],
    want: &BTreeMap<String, Tensor>,
    tol: f64,
) -> Option<String> {
    let got: BTreeMap<&str, &Tensor> = got.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let (ours, theirs): (Vec<&str>, Vec<&str>) = (
        got.keys().copied().collect(),
        want.keys().map(String::as_str).collect(),
    );
    if ours != theirs {
        return Some(format!("{what}: names {ours:?}, torch's {theirs:?}"));
    }
    for (name, w) in want {
        let g = got[name.as_str()];
        if (g.shape(), g.dtype()) != (w.shape(), w.dtype()) {
            return Some(format!(
                "{what}: {name} is {:?} {:?}, torch's {:?} {:?}",
                g.dtype(),
                g.shape(),
                w.dtype(),
                w.shape()
            ));
        }
        let (g, w) = (g.to_f64_vec().unwrap(), w.to_f64_vec().unwrap());
        let scale = w.iter().fold(1e-3f64, |s, v| s.max(v.abs()));
        if let Some((i, (a, b))) = g
            .iter()
            .zip(&w)
            .enumerate()
            .find(|(_, (a, b))| (*a - *b).abs() > tol * scale)
        {
            return Some(format!(
                "{what}: {name}[{i}] is {a}, torch's is {b} (tolerance {:e})",
                tol * scale
            ));
        }
    }
    None
}

fn resume(kind: &str) {
    let batch = read("batch.safetensors");
    let (x, y) = (&batch["x"], &batch["y"]);
    let m = model();
    nn::load_safetensors(&m, data(&format!("{kind}-model.safetensors"))).unwrap();
    let mut opt = optimiser(kind, &m);
    optim::load_safetensors(opt.as_mut(), data(&format!("{kind}-optim.safetensors"))).unwrap();

    opt.zero_grad();
    F::cross_entropy(&m.forward(x).unwrap(), y)
        .unwrap()
        .backward()
        .unwrap();
    opt.step().unwrap();

    // One f32 step from the same state: the difference is rounding, far below what a wrong
    // hyperparameter, a missed moment or an off-by-one step count would move.
    let tol = 1e-5;
    let model_want = read(&format!("{kind}-model-step4.safetensors"));
    let opt_want = read(&format!("{kind}-optim-step4.safetensors"));
    let bad = mismatch("model", &m.state_dict(), &model_want, tol)
        .or_else(|| mismatch("optimiser", &opt.state_dict().unwrap(), &opt_want, tol));
    assert!(bad.is_none(), "{kind}: {}", bad.unwrap_or_default());
    // The way back: tests/test_torch_checkpoint.py sets this and loads gpulab's files, written
    // by gpulab's own safetensors writer, into torch.
    if let Some(dir) = std::env::var_os("GPULAB_CHECKPOINT_OUT") {
        let dir = PathBuf::from(dir);
        nn::save_safetensors(&m, dir.join(format!("{kind}-model-gpulab.safetensors"))).unwrap();
        optim::save_safetensors(
            opt.as_ref(),
            dir.join(format!("{kind}-optim-gpulab.safetensors")),
        )
        .unwrap();
    }
}

#[test]
fn sgd_resumes_from_torchs_checkpoint() {
    resume("sgd");
}

#[test]
fn adam_resumes_from_torchs_checkpoint() {
    resume("adam");
}

#[test]
fn adamw_resumes_from_torchs_checkpoint() {
    resume("adamw");
}

#[test]
fn rmsprop_resumes_from_torchs_checkpoint() {
    resume("rmsprop");
}

/// The test can fail: a checkpoint loaded into the wrong kind of optimiser is refused by name
/// (torch's Adam state in an SGD), and one that loads but is resumed with the hyperparameters
/// of another run lands elsewhere.
#[test]
fn a_mismatched_checkpoint_is_caught() {
    let m = model();
    nn::load_safetensors(&m, data("adam-model.safetensors")).unwrap();
    let mut sgd = optimiser("sgd", &m);
    let err = optim::load_safetensors(sgd.as_mut(), data("adam-optim.safetensors"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("is not part of its state"), "{err}");

    let batch = read("batch.safetensors");
    let mut adam = optimiser("adam", &m);
    optim::load_safetensors(adam.as_mut(), data("adam-optim.safetensors")).unwrap();
    adam.set_lr(0.02); // not torch's 0.01
    adam.zero_grad();
    F::cross_entropy(&m.forward(&batch["x"]).unwrap(), &batch["y"])
        .unwrap()
        .backward()
        .unwrap();
    adam.step().unwrap();
    let want = read("adam-model-step4.safetensors");
    assert!(
        mismatch("model", &m.state_dict(), &want, 1e-5).is_some(),
        "a step at twice the rate should not match torch's"
    );
}
