//! Recurrent layers as torch's `nn.RNN`, `nn.LSTM` and `nn.GRU`: stacked layers, `batch_first`,
//! `bias`, dropout between layers, torch's parameter names, shapes, gate order and
//! initialisation, so weights load from and save to a torch `state_dict`. Each step is
//! composed from matmul and element-wise ops (the input's product for all steps at once, the
//! hidden state's step by step), so it runs on every device and autograd differentiates it
//! through time; `bidirectional` adds a backward recurrence per layer.

use super::packed::{pad_packed_sequence, PackedSequence};
use super::{functional, init_param, py_float, same_device, Module, Parameter};
use crate::error::{Error, Result};
use crate::tensor::autocast::{self, AmpOp};
use crate::tensor::{DType, Tensor};
use crate::Device;

/// Which recurrence a layer runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    RnnTanh,
    RnnRelu,
    Lstm,
    Gru,
}

impl Kind {
    /// Gates per hidden unit: the rows of each weight are `gates * hidden_size`.
    pub(super) fn gates(self) -> usize {
        match self {
            Kind::RnnTanh | Kind::RnnRelu => 1,
            Kind::Lstm => 4,
            Kind::Gru => 3,
        }
    }
    /// An RNN's kind for torch's `nonlinearity=` name, and the name itself when it is
    /// neither "tanh" nor "relu" (refused when the layer runs); `None` for an LSTM or GRU,
    /// which have no such setting.
    pub(super) fn with_nonlinearity(self, name: &str) -> Option<(Kind, Option<String>)> {
        matches!(self, Kind::RnnTanh | Kind::RnnRelu).then(|| {
            let kind = if name == "relu" {
                Kind::RnnRelu
            } else {
                Kind::RnnTanh
            };
            (
                kind,
                (!matches!(name, "relu" | "tanh")).then(|| name.into()),
            )
        })
    }
    fn name(self) -> &'static str {
        match self {
            Kind::RnnTanh | Kind::RnnRelu => "RNN",
            Kind::Lstm => "LSTM",
            Kind::Gru => "GRU",
        }
    }
}

/// The error for a nonlinearity [`Kind::with_nonlinearity`] refused, naming the layer.
pub(super) fn check_nonlinearity(bad: &Option<String>, who: impl Fn() -> String) -> Result<()> {
    match bad {
        Some(bad) => Err(Error::Invalid(format!(
            "{}: the nonlinearity must be \"tanh\" or \"relu\", got \"{bad}\"",
            who()
        ))),
        None => Ok(()),
    }
}

/// One step of `kind`'s cell, torch's formulas in torch's order, from the input's part of
/// the gates `xt` (`x W_ihᵀ + b_ih`) and the hidden state's `hw` (`h W_hhᵀ + b_hh`): the new
/// hidden state and, for an LSTM, the new cell state (`cell` is the old one).
pub(super) fn cell_step(
    kind: Kind,
    xt: &Tensor,
    hw: &Tensor,
    hidden: &Tensor,
    cell: Option<&Tensor>,
) -> Result<(Tensor, Option<Tensor>)> {
    Ok(match kind {
        Kind::RnnTanh => (xt.add(hw)?.tanh()?, None),
        Kind::RnnRelu => (xt.add(hw)?.relu()?, None),
        Kind::Lstm => {
            let g = xt.add(hw)?.chunk(4, 1)?;
            let (i, f) = (g[0].sigmoid()?, g[1].sigmoid()?);
            let (cand, o) = (g[2].tanh()?, g[3].sigmoid()?);
            let c = f
                .mul(cell.expect("an LSTM has a cell state"))?
                .add(&i.mul(&cand)?)?;
            (o.mul(&c.tanh()?)?, Some(c))
        }
        Kind::Gru => {
            let gx = xt.chunk(3, 1)?;
            let gh = hw.chunk(3, 1)?;
            let r = gx[0].add(&gh[0])?.sigmoid()?;
            let z = gx[1].add(&gh[1])?.sigmoid()?;
            let cand = gx[2].add(&r.mul(&gh[2])?)?.tanh()?;
            // (1 - z) * n + z * h, as n + z * (h - n), as torch's cell computes it.
            (cand.add(&z.mul(&hidden.sub(&cand)?)?)?, None)
        }
    })
}

/// A stack of recurrent layers (what `RNN::new`, `LSTM::new` and `GRU::new` build). Input
/// `[T, N, input_size]` (or `[N, T, input_size]` with `batch_first`, or `[T, input_size]`
/// unbatched); `forward` gives the last layer's hidden state at every step, `[T, N,
/// hidden_size]`; [`Recurrent::forward_with`] also takes initial states and gives the final
/// ones, as torch's `(output, h_n)` / `(output, (h_n, c_n))`.
pub struct Recurrent {
    kind: Kind,
    input_size: usize,
    hidden_size: usize,
    num_layers: usize,
    bias: bool,
    batch_first: bool,
    bidirectional: bool,
    dropout: f64,
    training: bool,
    /// A nonlinearity other than "tanh" or "relu" asked for: refused when the layer runs.
    bad_nonlinearity: Option<String>,
    /// Per layer: weight_ih `[G*H, in]`, weight_hh `[G*H, H]`, then (with bias) bias_ih and
    /// bias_hh `[G*H]`, under torch's names.
    params: Vec<(String, Parameter)>,
}

/// What [`Recurrent::forward_with`] gives: the last layer's hidden state at every step, the
/// final hidden state of every layer `[num_layers, N, H]` (`[2 * num_layers, N, H]` when
/// bidirectional), and for an LSTM the final cell state (same shape). Unbatched input gives
/// them without the `N` dimension.
pub struct RecurrentOutput {
    pub output: Tensor,
    pub h_n: Tensor,
    pub c_n: Option<Tensor>,
}

/// What [`Recurrent::forward_packed`] gives: the last layer's output packed as the input,
/// and the final states as [`RecurrentOutput`]'s, each sequence's at its own end.
pub struct PackedOutput {
    pub output: PackedSequence,
    pub h_n: Tensor,
    pub c_n: Option<Tensor>,
}

/// torch's `nn.RNN(input_size, hidden_size)`: `h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)`
/// (`.nonlinearity("relu")` for ReLU).
pub struct RNN;
/// torch's `nn.LSTM(input_size, hidden_size)`: gates input, forget, cell, output (torch's
/// order in the weights), `c' = f*c + i*g`, `h' = o*tanh(c')`.
pub struct LSTM;
/// torch's `nn.GRU(input_size, hidden_size)`: gates reset, update, new (torch's order),
/// `n = tanh(x W_inᵀ + b_in + r*(h W_hnᵀ + b_hn))`, `h' = (1-z)*n + z*h`.
pub struct GRU;

/// `Name::new(input_size, hidden_size)` for each marker type, building `$built` of a
/// `Kind` (the layers here and the cells in `recurrent_cell`).
macro_rules! kind_constructors {
    ($built:ident: $($name:ident => $kind:ident),+ $(,)?) => {$(
        impl $name {
            #[allow(clippy::new_ret_no_self)]
            pub fn new(input_size: usize, hidden_size: usize) -> $built {
                $built::build(Kind::$kind, input_size, hidden_size)
            }
        }
    )+};
}
pub(super) use kind_constructors;

kind_constructors!(Recurrent: RNN => RnnTanh, LSTM => Lstm, GRU => Gru);

impl Recurrent {
    fn build(kind: Kind, input_size: usize, hidden_size: usize) -> Recurrent {
        let mut r = Recurrent {
            kind,
            input_size,
            hidden_size,
            num_layers: 1,
            bias: true,
            batch_first: false,
            bidirectional: false,
            dropout: 0.0,
            training: true,
            bad_nonlinearity: None,
            params: Vec::new(),
        };
        r.draw();
        r
    }

    /// Fresh parameters for the current shape: uniform in ±1/sqrt(hidden_size), as torch's,
    /// drawn in torch's order.
    fn draw(&mut self) {
        let (h, g) = (self.hidden_size, self.kind.gates());
        self.params.clear();
        let dirs = self.directions();
        for l in 0..self.num_layers {
            let input = if l == 0 { self.input_size } else { h * dirs };
            for dir in 0..dirs {
                let name = |what: &str| {
                    let suffix = if dir == 1 { "_reverse" } else { "" };
                    format!("{what}_l{l}{suffix}")
                };
                let p = |dims: Vec<usize>| init_param(dims, h);
                self.params.push((name("weight_ih"), p(vec![g * h, input])));
                self.params.push((name("weight_hh"), p(vec![g * h, h])));
                if self.bias {
                    self.params.push((name("bias_ih"), p(vec![g * h])));
                    self.params.push((name("bias_hh"), p(vec![g * h])));
                }
            }
        }
    }

    /// Stacked layers, each reading the previous one's outputs (draws new parameters).
    pub fn num_layers(mut self, num_layers: usize) -> Recurrent {
        self.num_layers = num_layers;
        self.draw();
        self
    }
    /// `bias(false)` drops the four biases of each layer (draws new parameters).
    pub fn bias(mut self, bias: bool) -> Recurrent {
        self.bias = bias;
        self.draw();
        self
    }
    /// Input and output as `[N, T, features]` instead of `[T, N, features]` (the states
    /// stay `[num_layers, N, H]`, as in torch).
    pub fn batch_first(mut self, batch_first: bool) -> Recurrent {
        self.batch_first = batch_first;
        self
    }
    /// A second recurrence per layer running backwards in time, its states concatenated to
    /// the forward one's (outputs `[T, N, 2 * hidden_size]`; states `[2 * num_layers, N, H]`,
    /// forward then backward per layer, as torch's). Draws new parameters (the backward
    /// ones named `..._reverse`).
    pub fn bidirectional(mut self, bidirectional: bool) -> Recurrent {
        self.bidirectional = bidirectional;
        self.draw();
        self
    }
    /// Dropout with probability `p` on each layer's outputs but the last, while training.
    pub fn dropout(mut self, p: f64) -> Recurrent {
        self.dropout = p;
        self
    }
    /// `"tanh"` (the default) or `"relu"`, for an `RNN`; anything else is an error when the
    /// layer runs.
    pub fn nonlinearity(mut self, name: &str) -> Recurrent {
        if let Some((kind, bad)) = self.kind.with_nonlinearity(name) {
            (self.kind, self.bad_nonlinearity) = (kind, bad);
        }
        self
    }

    /// 1, or 2 when bidirectional.
    fn directions(&self) -> usize {
        if self.bidirectional {
            2
        } else {
            1
        }
    }

    /// The parameters of slot `k` (layer `k / directions`, direction `k % directions`):
    /// weight_ih, weight_hh and the two biases if any.
    fn slot(&self, k: usize) -> (Tensor, Tensor, Option<(Tensor, Tensor)>) {
        let per = if self.bias { 4 } else { 2 };
        let p = &self.params[k * per..(k + 1) * per];
        let biases = self.bias.then(|| (p[2].1.tensor(), p[3].1.tensor()));
        (p[0].1.tensor(), p[1].1.tensor(), biases)
    }

    /// One direction of one layer over the whole sequence `input` `[T, N, in]` with the
    /// parameters of slot `k` (layer × direction), from `hidden` (and `cell`); backwards in
    /// time when `reverse`. Gives the hidden state at every step in time order `[T, N, H]`
    /// and the final states. With `lengths` (a packed batch), entry `b` steps only while `t <
    /// lengths[b]`, keeping its state elsewhere: forwards its final state is its last step's,
    /// backwards its run starts at its own last step.
    #[allow(clippy::too_many_arguments)]
    fn run_direction(
        &self,
        input: &Tensor,
        k: usize,
        mut hidden: Tensor,
        mut cell: Option<Tensor>,
        reverse: bool,
        lower: Option<DType>,
        lengths: Option<&[usize]>,
    ) -> Result<(Tensor, Tensor, Option<Tensor>)> {
        let (steps, n, width) = (input.shape()[0], input.shape()[1], input.shape()[2]);
        let (mut w_ih, mut w_hh, mut biases) = self.slot(k);
        if let Some(to) = lower {
            let cuda = input.device().is_cuda();
            let cast = |t: &Tensor| autocast::cast(t, to, cuda);
            (w_ih, w_hh) = (cast(&w_ih)?, cast(&w_hh)?);
            biases = biases
                .map(|(a, b)| Ok::<_, Error>((cast(&a)?, cast(&b)?)))
                .transpose()?;
        }
        // The input's part of every gate, for all steps in one product.
        let mut xw = input.reshape((steps * n, width))?.matmul(&w_ih.t()?)?;
        if let Some((b_ih, _)) = &biases {
            xw = xw.add(b_ih)?;
        }
        let xw = xw.reshape((steps, n, self.kind.gates() * self.hidden_size))?;
        let w_hh_t = w_hh.t()?;
        let mut outs = Vec::with_capacity(steps);
        for step in 0..steps {
            let t = if reverse { steps - 1 - step } else { step };
            let mut hw = hidden.matmul(&w_hh_t)?;
            if let Some((_, b_hh)) = &biases {
                hw = hw.add(b_hh)?;
            }
            let xt = xw.select(0, t as isize)?;
            let (new_h, new_c) = cell_step(self.kind, &xt, &hw, &hidden, cell.as_ref())?;
            match lengths {
                Some(lens) if lens.iter().any(|&l| l <= t) => {
                    let live: Vec<bool> = lens.iter().map(|&l| l > t).collect();
                    let live =
                        Tensor::from_vec(live, vec![n, 1], Device::Cpu)?.to(input.device())?;
                    hidden = new_h.where_(&live, &hidden)?;
                    cell = match (new_c, cell) {
                        (Some(nc), Some(c)) => Some(nc.where_(&live, &c)?),
                        (nc, _) => nc,
                    };
                }
                _ => (hidden, cell) = (new_h, new_c),
            }
            outs.push(hidden.clone());
        }
        if reverse {
            outs.reverse();
        }
        Ok((Tensor::stack(&outs, 0)?, hidden, cell))
    }

    /// torch's `output, h_n = rnn(x, h_0)` and `output, (h_n, c_n) = lstm(x, (h_0, c_0))`:
    /// `h0` (and for an LSTM `c0`) `[num_layers, N, H]` (or `[num_layers, H]` unbatched; twice
    /// the layers when bidirectional), zeros when not given.
    pub fn forward_with(
        &self,
        x: &Tensor,
        h0: Option<&Tensor>,
        c0: Option<&Tensor>,
    ) -> Result<RecurrentOutput> {
        // In an autocast region the whole layer runs in its lower precision (torch's cuDNN
        // and oneDNN recurrent kernels are on its lists): the input, states and weights.
        self.lowered(x, h0, c0, None)
    }

    /// torch's `output, h_n = rnn(packed, h_0)` (and an LSTM's `(h_n, c_n)`): each sequence
    /// of the [`PackedSequence`] runs for its own length, so `h_n` holds each one's state at
    /// its last step (backwards: at its first), in the batch's order, and `output` is
    /// packed as `x` is (`pad_packed_sequence` pads it). `h0`/`c0` as in
    /// [`Recurrent::forward_with`], in the batch's order; `batch_first` does not apply.
    pub fn forward_packed(
        &self,
        x: &PackedSequence,
        h0: Option<&Tensor>,
        c0: Option<&Tensor>,
    ) -> Result<PackedOutput> {
        if x.data.rank() != 2 || x.data.shape()[0] == 0 {
            return Err(Error::BadShape(format!(
                "{}: expected packed data [steps, {}] holding at least one step, got {:?}",
                self.describe(),
                self.input_size,
                x.data.shape()
            )));
        }
        let (padded, lengths) = pad_packed_sequence(x, false, 0.0, None)?;
        let RecurrentOutput { output, h_n, c_n } = self.lowered(&padded, h0, c0, Some(&lengths))?;
        Ok(PackedOutput {
            output: x.repack(&output)?,
            h_n,
            c_n,
        })
    }

    /// In an autocast region the whole layer runs in its lower precision (torch's cuDNN
    /// and oneDNN recurrent kernels are on its lists): the input, states and weights.
    fn lowered(
        &self,
        x: &Tensor,
        h0: Option<&Tensor>,
        c0: Option<&Tensor>,
        lengths: Option<&[usize]>,
    ) -> Result<RecurrentOutput> {
        if let Some(to) = autocast::lowering(AmpOp::Recurrent, x.device()) {
            let cuda = x.device().is_cuda();
            let cast = |t: &Tensor| autocast::cast(t, to, cuda);
            let (h0, c0) = (h0.map(cast).transpose()?, c0.map(cast).transpose()?);
            return autocast::suspended(|| {
                self.forward_in(&cast(x)?, h0.as_ref(), c0.as_ref(), Some(to), lengths)
            });
        }
        self.forward_in(x, h0, c0, None, lengths)
    }

    /// `forward_with`, with the weights cast to `lower` as they are read when given. With
    /// `lengths` (a packed batch, padded), `x` is time-major `[T, N, in]` whatever
    /// `batch_first` says, and so is the output.
    fn forward_in(
        &self,
        x: &Tensor,
        h0: Option<&Tensor>,
        c0: Option<&Tensor>,
        lower: Option<DType>,
        lengths: Option<&[usize]>,
    ) -> Result<RecurrentOutput> {
        let time_major = lengths.is_some();
        check_nonlinearity(&self.bad_nonlinearity, || self.describe())?;
        if !(0.0..=1.0).contains(&self.dropout) {
            return Err(Error::Invalid(format!(
                "{}: dropout must be a probability in [0, 1], got {}",
                self.describe(),
                self.dropout
            )));
        }
        if self.num_layers == 0 {
            return Err(Error::Invalid(format!(
                "{}: num_layers must be at least 1",
                self.describe()
            )));
        }
        same_device(self, &self.params[0].1, x)?;
        let first_w = self.params[0].1.tensor();
        let unbatched = x.rank() == 2 && !time_major;
        let features = x.shape().last().copied().unwrap_or(0);
        if !(x.rank() == 2 || x.rank() == 3) || features != self.input_size {
            let layout = if self.batch_first {
                "[N, T, features] (batch_first)"
            } else {
                "[T, N, features]"
            };
            return Err(Error::BadShape(format!(
                "{}: expected input {layout} or [T, features] unbatched, with {} features, got \
                 {:?}",
                self.describe(),
                self.input_size,
                x.shape()
            )));
        }
        // Time-major [T, N, I] inside.
        let x = if unbatched {
            x.unsqueeze(1)?
        } else if self.batch_first && !time_major {
            x.transpose(0, 1)?
        } else {
            x.clone()
        };
        let (n, h) = (x.shape()[1], self.hidden_size);
        let slots = self.num_layers * self.directions();
        let state = |given: Option<&Tensor>, what: &str| -> Result<Tensor> {
            let want = if unbatched {
                vec![slots, h]
            } else {
                vec![slots, n, h]
            };
            match given {
                Some(t) if t.shape() != want => Err(Error::BadShape(format!(
                    "{}: {what} must have shape {want:?}, got {:?}",
                    self.describe(),
                    t.shape()
                ))),
                Some(t) if unbatched => t.unsqueeze(1),
                Some(t) => Ok(t.clone()),
                None => Tensor::zeros_dtype(
                    (slots, n, h),
                    lower.unwrap_or(first_w.dtype()),
                    first_w.device(),
                ),
            }
        };
        let h0 = state(h0, "h_0")?;
        let c0 = match self.kind {
            Kind::Lstm => Some(state(c0, "c_0")?),
            _ if c0.is_some() => {
                return Err(Error::Invalid(format!(
                    "{}: only an LSTM has a cell state (c_0)",
                    self.describe()
                )))
            }
            _ => None,
        };
        let (mut hs, mut cs) = (Vec::new(), Vec::new());
        let mut input = x;
        let dirs = self.directions();
        for l in 0..self.num_layers {
            let mut layer_outs = Vec::with_capacity(dirs);
            for dir in 0..dirs {
                let k = l * dirs + dir;
                let (h_k, c_k) = (
                    h0.select(0, k as isize)?,
                    c0.as_ref().map(|c| c.select(0, k as isize)).transpose()?,
                );
                let (outs, hidden, cell) =
                    self.run_direction(&input, k, h_k, c_k, dir == 1, lower, lengths)?;
                hs.push(hidden);
                cs.extend(cell);
                layer_outs.push(outs);
            }
            input = if dirs == 1 {
                layer_outs.pop().expect("one direction")
            } else {
                Tensor::cat(&layer_outs, 2)?
            };
            if l + 1 < self.num_layers && self.dropout > 0.0 {
                input = functional::dropout(&input, self.dropout, self.training)?;
            }
        }
        let mut output = input;
        let mut h_n = Tensor::stack(&hs, 0)?;
        let mut c_n = (!cs.is_empty())
            .then(|| Tensor::stack(&cs, 0))
            .transpose()?;
        if unbatched {
            output = output.squeeze(1)?;
            h_n = h_n.squeeze(1)?;
            c_n = c_n.map(|c| c.squeeze(1)).transpose()?;
        } else if self.batch_first && !time_major {
            output = output.transpose(0, 1)?;
        }
        Ok(RecurrentOutput { output, h_n, c_n })
    }
}

impl Module for Recurrent {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(self.forward_with(x, None, None)?.output)
    }
    fn parameters(&self) -> Vec<Parameter> {
        self.params.iter().map(|(_, p)| p.clone()).collect()
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        self.params.clone()
    }
    fn set_training(&mut self, training: bool) {
        self.training = training;
    }
    /// torch's repr (which leaves out an RNN's nonlinearity).
    fn describe(&self) -> String {
        let mut s = format!(
            "{}({}, {}",
            self.kind.name(),
            self.input_size,
            self.hidden_size
        );
        if self.num_layers != 1 {
            s += &format!(", num_layers={}", self.num_layers);
        }
        if !self.bias {
            s += ", bias=False";
        }
        if self.batch_first {
            s += ", batch_first=True";
        }
        if self.dropout != 0.0 {
            s += &format!(", dropout={}", py_float(self.dropout));
        }
        if self.bidirectional {
            s += ", bidirectional=True";
        }
        s + ")"
    }
}
