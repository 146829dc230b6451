//! Training state as named tensors, the form the safetensors format holds, so a checkpoint
//! saved in one session resumes training in the next where it stopped: an optimiser's is
//! torch's `optimizer.state_dict()` flattened with dots (`state.0.exp_avg`, `state.0.step`,
//! `param_groups.0.lr`), numbered by the parameter's position in the optimiser as torch
//! numbers it; a learning-rate schedule's and `amp::GradScaler`'s are their torch keys
//! (`last_epoch`, `scale`). Numbers are 0-d float64 tensors (`betas` a pair).

use crate::error::{Error, Result};
use crate::nn::Parameter;
use crate::tensor::{DType, Tensor};

/// A state dict being written.
pub(crate) struct Saver(Vec<(String, Tensor)>);

impl Saver {
    pub(crate) fn new() -> Saver {
        Saver(Vec::new())
    }

    /// `name`: one value as a 0-d tensor, several as a 1-d one.
    pub(crate) fn value(&mut self, name: &str, values: &[f64]) -> Result<()> {
        let t = match values {
            [v] => Tensor::from_vec(vec![*v], (), crate::Device::Cpu)?,
            _ => Tensor::from_vec(values.to_vec(), values.len(), crate::Device::Cpu)?,
        };
        self.0.push((name.to_string(), t));
        Ok(())
    }

    /// `name`: a list (torch's `base_lrs`), a 1-d tensor even of one value.
    pub(crate) fn list(&mut self, name: &str, values: &[f64]) -> Result<()> {
        let t = Tensor::from_vec(values.to_vec(), values.len(), crate::Device::Cpu)?;
        self.0.push((name.to_string(), t));
        Ok(())
    }

    /// `param_groups.0.<name>`.
    pub(crate) fn hyper(&mut self, name: &str, values: &[f64]) -> Result<()> {
        self.value(&format!("param_groups.0.{name}"), values)
    }

    /// `state.<i>.<key>` for every parameter that has this state yet: a copy, so the dict
    /// keeps its values while training goes on (and the optimiser keeps its state its own).
    pub(crate) fn state(&mut self, key: &str, per_param: &[Option<Tensor>]) -> Result<()> {
        for (i, t) in per_param.iter().enumerate() {
            if let Some(t) = t {
                self.0
                    .push((format!("state.{i}.{key}"), t.detach().deep_clone()?));
            }
        }
        Ok(())
    }

    /// `state.<i>.step` (a float32 scalar, as torch stores it) for every parameter with state.
    pub(crate) fn step(&mut self, step: i64, with_state: &[Option<Tensor>]) -> Result<()> {
        for (i, t) in with_state.iter().enumerate() {
            if t.is_some() {
                let s = Tensor::from_vec(vec![step as f32], (), crate::Device::Cpu)?;
                self.0.push((format!("state.{i}.step"), s));
            }
        }
        Ok(())
    }

    pub(crate) fn done(self) -> Vec<(String, Tensor)> {
        self.0
    }
}

/// A state dict being read into an optimiser, a schedule or a scaler: every entry must be
/// taken by it (a name it does not know is an error, as is a shape that does not fit the
/// parameter), and its caller changes nothing until all of it has been read.
pub(crate) struct Loader<'a> {
    what: &'static str,
    /// What its names look like, for the error about one it does not know.
    expected: &'static str,
    entries: &'a [(String, Tensor)],
    used: Vec<bool>,
}

impl<'a> Loader<'a> {
    /// A loader for an optimiser's state (`optimizer` names it in errors).
    pub(crate) fn new(optimizer: &'static str, entries: &'a [(String, Tensor)]) -> Loader<'a> {
        Loader::named(
            optimizer,
            "expected state.<i>.<key> for a parameter index the optimiser has, or \
             param_groups.0.<hyperparameter>",
            entries,
        )
    }

    /// A loader for `what` (a schedule, a scaler), whose names look like `expected`.
    pub(crate) fn named(
        what: &'static str,
        expected: &'static str,
        entries: &'a [(String, Tensor)],
    ) -> Loader<'a> {
        Loader {
            what,
            expected,
            entries,
            used: vec![false; entries.len()],
        }
    }

    fn take(&mut self, name: &str) -> Option<&'a Tensor> {
        let i = self.entries.iter().position(|(n, _)| n == name)?;
        self.used[i] = true;
        Some(&self.entries[i].1)
    }

    pub(crate) fn err(&self, what: String) -> Error {
        Error::Invalid(format!("{} load_state_dict: {what}", self.what))
    }

    /// `param_groups.0.<name>` with `n` values, if the dict has it.
    pub(crate) fn hyper(&mut self, name: &str, n: usize) -> Result<Option<Vec<f64>>> {
        self.values(&format!("param_groups.0.{name}"), n)
    }

    /// `name` with `n` values, if the dict has it.
    pub(crate) fn values(&mut self, key: &str, n: usize) -> Result<Option<Vec<f64>>> {
        let Some(t) = self.take(key) else {
            return Ok(None);
        };
        if t.numel() != n {
            return Err(self.err(format!(
                "{key} has {} values (shape {:?}), expected {n}",
                t.numel(),
                t.shape()
            )));
        }
        Ok(Some(t.to_dtype(DType::F64)?.to_vec::<f64>()?))
    }

    /// `param_groups.0.<name>`, one value, or `current` when the dict lacks it.
    pub(crate) fn scalar(&mut self, name: &str, current: f64) -> Result<f64> {
        Ok(self.hyper(name, 1)?.map_or(current, |v| v[0]))
    }

    /// `name`, one value, or `current` when the dict lacks it.
    pub(crate) fn value(&mut self, name: &str, current: f64) -> Result<f64> {
        Ok(self.values(name, 1)?.map_or(current, |v| v[0]))
    }

    /// `name`, a count (a whole number from 0), or `current` when the dict lacks it.
    pub(crate) fn count(&mut self, name: &str, current: u64) -> Result<u64> {
        let v = self.value(name, current as f64)?;
        self.whole(name, v)
    }

    /// `v`, the value of `name`, as a count: a whole number from 0 that a float64 holds
    /// exactly.
    fn whole(&self, name: &str, v: f64) -> Result<u64> {
        if v < 0.0 || v.fract() != 0.0 || v > 2f64.powi(53) {
            return Err(self.err(format!("{name} is {v}, not a count")));
        }
        Ok(v as u64)
    }

    /// `state.<i>.<key>` for each parameter: shaped as the parameter, converted to its dtype
    /// and device, and a tensor of the optimiser's own (not shared with the dict).
    pub(crate) fn state(&mut self, key: &str, params: &[Parameter]) -> Result<Vec<Option<Tensor>>> {
        let mut out = Vec::with_capacity(params.len());
        for (i, p) in params.iter().enumerate() {
            let name = format!("state.{i}.{key}");
            let Some(t) = self.take(&name) else {
                out.push(None);
                continue;
            };
            let w = p.tensor();
            if t.shape() != w.shape() {
                return Err(self.err(format!(
                    "{name} has shape {:?}, parameter {i} has shape {:?}",
                    t.shape(),
                    w.shape()
                )));
            }
            out.push(Some(
                t.detach()
                    .to_dtype(w.dtype())?
                    .to(w.device())?
                    .deep_clone()?,
            ));
        }
        Ok(out)
    }

    /// The step count the `state.<i>.step` entries agree on (0 when there are none): one
    /// count for the whole optimiser, as gpulab's optimisers keep it.
    pub(crate) fn step(&mut self, n_params: usize) -> Result<i64> {
        let mut step: Option<(usize, i64)> = None;
        for i in 0..n_params {
            let name = format!("state.{i}.step");
            let Some(v) = self.values(&name, 1)? else {
                continue;
            };
            let s = self.whole(&name, v[0])? as i64;
            match step {
                Some((j, t)) if t != s => {
                    return Err(self.err(format!(
                        "state.{j}.step is {t} but {name} is {s}: gpulab keeps one step count \
                         for all parameters"
                    )))
                }
                _ => step = Some((i, s)),
            }
        }
        Ok(step.map_or(0, |(_, s)| s))
    }

    /// Every entry was taken, or the first that was not is named.
    pub(crate) fn finish(self) -> Result<()> {
        match self.used.iter().position(|u| !u) {
            None => Ok(()),
            Some(i)
                if self.entries[..i]
                    .iter()
                    .any(|(n, _)| *n == self.entries[i].0) =>
            {
                Err(self.err(format!("{:?} appears twice", self.entries[i].0)))
            }
            Some(i) => Err(self.err(format!(
                "{:?} is not part of its state ({})",
                self.entries[i].0, self.expected
            ))),
        }
    }
}
