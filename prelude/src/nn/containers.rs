//! torch's containers besides `Sequential`: `nn.ModuleList` and `nn.ModuleDict` (layers a
//! model calls in its own order, by index or by name) and `nn.ParameterList` /
//! `nn.ParameterDict` (bare parameters). They hold; they do not run: their `forward`
//! refuses, as torch's raise. Parameters and buffers come out under torch's `state_dict`
//! names (`0.weight`, `encoder.bias`, `1`), so a model built on them saves and loads as
//! torch's, and `to`, `train()`, `eval()` reach every member.

use super::{Module, Parameter};
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};
use crate::Device;

/// Each member's parameters (or buffers) under `name.`.
fn prefixed_all<'a>(
    members: impl Iterator<Item = (String, &'a dyn Module)>,
    of: impl Fn(&dyn Module) -> Vec<(String, Parameter)>,
) -> Vec<(String, Parameter)> {
    members
        .flat_map(|(prefix, m)| {
            of(m)
                .into_iter()
                .map(move |(n, p)| (format!("{prefix}.{n}"), p))
        })
        .collect()
}

fn no_forward(what: &str) -> Error {
    Error::Invalid(format!(
        "{what} holds modules but has no forward of its own (as in torch): call its members \
         in your model's forward"
    ))
}

/// torch's `nn.ModuleList`: layers by index, e.g. a stack a model loops over
/// (`for layer in list.iter() { x = layer.forward(&x)?; }`).
#[derive(Default)]
pub struct ModuleList {
    modules: Vec<Box<dyn Module>>,
}

impl ModuleList {
    pub fn new() -> ModuleList {
        ModuleList::default()
    }
    /// Appends a module and returns the list, so calls chain (torch's `append`).
    pub fn append(mut self, module: impl Module + 'static) -> ModuleList {
        self.modules.push(Box::new(module));
        self
    }
    /// Appends a module in place.
    pub fn push(&mut self, module: impl Module + 'static) {
        self.modules.push(Box::new(module));
    }
    pub fn len(&self) -> usize {
        self.modules.len()
    }
    pub fn is_empty(&self) -> bool {
        self.modules.is_empty()
    }
    /// The `i`-th module.
    pub fn get(&self, i: usize) -> Option<&dyn Module> {
        self.modules.get(i).map(|m| &**m)
    }
    pub fn get_mut(&mut self, i: usize) -> Option<&mut Box<dyn Module>> {
        self.modules.get_mut(i)
    }
    pub fn iter(&self) -> impl Iterator<Item = &dyn Module> {
        self.modules.iter().map(|m| &**m)
    }
    fn members(&self) -> impl Iterator<Item = (String, &dyn Module)> {
        self.modules
            .iter()
            .enumerate()
            .map(|(i, m)| (i.to_string(), &**m))
    }
}

impl Module for ModuleList {
    fn forward(&self, _x: &Tensor) -> Result<Tensor> {
        Err(no_forward("ModuleList"))
    }
    fn parameters(&self) -> Vec<Parameter> {
        self.modules.iter().flat_map(|m| m.parameters()).collect()
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        prefixed_all(self.members(), |m| m.named_parameters())
    }
    fn buffers(&self) -> Vec<(String, Parameter)> {
        prefixed_all(self.members(), |m| m.buffers())
    }
    fn set_training(&mut self, training: bool) {
        for m in &mut self.modules {
            m.set_training(training);
        }
    }
    /// torch's repr: runs of members that print alike collapse to `(0-2): 3 x Linear(..)`.
    fn describe(&self) -> String {
        if self.modules.is_empty() {
            return "ModuleList()".into();
        }
        let lines: Vec<String> = self.modules.iter().map(|m| m.describe()).collect();
        let mut s = String::from("ModuleList(\n");
        let mut i = 0;
        while i < lines.len() {
            let run = lines[i..].iter().take_while(|l| **l == lines[i]).count();
            let inner = lines[i].replace('\n', "\n  ");
            if run > 1 {
                s += &format!("  ({}-{}): {run} x {inner}\n", i, i + run - 1);
            } else {
                s += &format!("  ({i}): {inner}\n");
            }
            i += run;
        }
        s + ")"
    }
}

/// torch's `nn.ModuleDict`: layers by name, in the order they were inserted (a model picks
/// one by key, e.g. a head per task).
#[derive(Default)]
pub struct ModuleDict {
    entries: Vec<(String, Box<dyn Module>)>,
}

impl ModuleDict {
    pub fn new() -> ModuleDict {
        ModuleDict::default()
    }
    /// Adds `module` under `key` (replacing one already there, in its place) and returns
    /// the dict, so calls chain.
    pub fn insert(mut self, key: &str, module: impl Module + 'static) -> ModuleDict {
        self.set(key, module);
        self
    }
    /// Adds or replaces `module` under `key` in place (torch's `dict[key] = module`).
    pub fn set(&mut self, key: &str, module: impl Module + 'static) {
        let module: Box<dyn Module> = Box::new(module);
        match self.entries.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = module,
            None => self.entries.push((key.to_string(), module)),
        }
    }
    pub fn get(&self, key: &str) -> Option<&dyn Module> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, m)| &**m)
    }
    /// The module under `key`, or an error naming the keys there are.
    pub fn module(&self, key: &str) -> Result<&dyn Module> {
        self.get(key).ok_or_else(|| {
            Error::Invalid(format!(
                "ModuleDict has no module {key:?}; its keys are {:?}",
                self.keys()
            ))
        })
    }
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
    pub fn keys(&self) -> Vec<&str> {
        self.entries.iter().map(|(k, _)| k.as_str()).collect()
    }
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    fn members(&self) -> impl Iterator<Item = (String, &dyn Module)> {
        self.entries.iter().map(|(k, m)| (k.clone(), &**m))
    }
}

impl Module for ModuleDict {
    fn forward(&self, _x: &Tensor) -> Result<Tensor> {
        Err(no_forward("ModuleDict"))
    }
    fn parameters(&self) -> Vec<Parameter> {
        self.entries
            .iter()
            .flat_map(|(_, m)| m.parameters())
            .collect()
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        prefixed_all(self.members(), |m| m.named_parameters())
    }
    fn buffers(&self) -> Vec<(String, Parameter)> {
        prefixed_all(self.members(), |m| m.buffers())
    }
    fn set_training(&mut self, training: bool) {
        for (_, m) in &mut self.entries {
            m.set_training(training);
        }
    }
    fn describe(&self) -> String {
        if self.entries.is_empty() {
            return "ModuleDict()".into();
        }
        let mut s = String::from("ModuleDict(\n");
        for (k, m) in &self.entries {
            s += &format!("  ({k}): {}\n", m.describe().replace('\n', "\n  "));
        }
        s + ")"
    }
}

/// A parameter's description in torch's list and dict reprs: its type, its size as
/// `3x4` (empty for a scalar), and the GPU it lives on.
fn parameter_line(p: &Parameter, type_name: String) -> String {
    let size: Vec<String> = p.shape().iter().map(|d| d.to_string()).collect();
    let device = match p.device() {
        Device::Cpu => String::new(),
        Device::Cuda(i) => format!(" (GPU {i})"),
    };
    format!(
        "Parameter containing: [{type_name} of size {}{device}]",
        size.join("x")
    )
}

/// torch's legacy tensor type names, which `ParameterDict` prints.
fn legacy_type(p: &Parameter) -> String {
    let base = match p.tensor().dtype() {
        DType::F32 => "FloatTensor",
        DType::F64 => "DoubleTensor",
        DType::F16 => "HalfTensor",
        DType::BF16 => "BFloat16Tensor",
        DType::I64 => "LongTensor",
        DType::I32 => "IntTensor",
        DType::U8 => "ByteTensor",
        DType::Bool => "BoolTensor",
    };
    match p.device() {
        Device::Cpu => format!("torch.{base}"),
        Device::Cuda(_) => format!("torch.cuda.{base}"),
    }
}

fn parameters_repr(name: &str, lines: Vec<(String, String)>) -> String {
    if lines.is_empty() {
        return format!("{name}()");
    }
    let mut s = format!("{name}(\n");
    for (k, line) in lines {
        s += &format!("    ({k}): {line}\n");
    }
    s + ")"
}

/// torch's `nn.ParameterList`: bare parameters by index (`0`, `1`, ... in the state dict),
/// e.g. one scale per stage of a model.
#[derive(Clone, Default)]
pub struct ParameterList {
    params: Vec<Parameter>,
}

impl ParameterList {
    pub fn new() -> ParameterList {
        ParameterList::default()
    }
    /// Appends a parameter and returns the list, so calls chain.
    pub fn append(mut self, p: Parameter) -> ParameterList {
        self.params.push(p);
        self
    }
    pub fn push(&mut self, p: Parameter) {
        self.params.push(p);
    }
    pub fn get(&self, i: usize) -> Option<&Parameter> {
        self.params.get(i)
    }
    pub fn len(&self) -> usize {
        self.params.len()
    }
    pub fn is_empty(&self) -> bool {
        self.params.is_empty()
    }
    pub fn iter(&self) -> impl Iterator<Item = &Parameter> {
        self.params.iter()
    }
}

impl Module for ParameterList {
    fn forward(&self, _x: &Tensor) -> Result<Tensor> {
        Err(no_forward("ParameterList"))
    }
    fn parameters(&self) -> Vec<Parameter> {
        self.params.clone()
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        self.params
            .iter()
            .enumerate()
            .map(|(i, p)| (i.to_string(), p.clone()))
            .collect()
    }
    fn describe(&self) -> String {
        let lines = self
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let dtype = format!("torch.{}", p.tensor().dtype());
                (i.to_string(), parameter_line(p, dtype))
            })
            .collect();
        parameters_repr("ParameterList", lines)
    }
}

/// torch's `nn.ParameterDict`: bare parameters by name, in the order they were inserted.
#[derive(Clone, Default)]
pub struct ParameterDict {
    entries: Vec<(String, Parameter)>,
}

impl ParameterDict {
    pub fn new() -> ParameterDict {
        ParameterDict::default()
    }
    /// Adds `p` under `key` (replacing one already there, in its place) and returns the
    /// dict, so calls chain.
    pub fn insert(mut self, key: &str, p: Parameter) -> ParameterDict {
        self.set(key, p);
        self
    }
    pub fn set(&mut self, key: &str, p: Parameter) {
        match self.entries.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = p,
            None => self.entries.push((key.to_string(), p)),
        }
    }
    pub fn get(&self, key: &str) -> Option<&Parameter> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, p)| p)
    }
    pub fn keys(&self) -> Vec<&str> {
        self.entries.iter().map(|(k, _)| k.as_str()).collect()
    }
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl Module for ParameterDict {
    fn forward(&self, _x: &Tensor) -> Result<Tensor> {
        Err(no_forward("ParameterDict"))
    }
    fn parameters(&self) -> Vec<Parameter> {
        self.entries.iter().map(|(_, p)| p.clone()).collect()
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        self.entries.clone()
    }
    fn describe(&self) -> String {
        let lines = self
            .entries
            .iter()
            .map(|(k, p)| (k.clone(), parameter_line(p, legacy_type(p))))
            .collect();
        parameters_repr("ParameterDict", lines)
    }
}
