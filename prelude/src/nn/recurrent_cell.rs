//! One step of a recurrence, as torch's `nn.RNNCell`, `nn.LSTMCell` and `nn.GRUCell`: the
//! loop over time is the caller's (`for t in 0..T { h = cell.forward_with(&x.select(0, t)?,
//! Some(&h))?; }`), as in torch. The cell's formulas are `recurrent`'s (`cell_step`), and
//! the parameters have torch's names (`weight_ih`, `weight_hh`, `bias_ih`, `bias_hh`), shapes
//! and initialisation, so a torch `state_dict` loads.

use super::recurrent::{cell_step, check_nonlinearity, kind_constructors, Kind};
use super::{init_param, same_device, Module, Parameter};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// A recurrent cell (what `RNNCell::new`, `LSTMCell::new` and `GRUCell::new` build). Input
/// `[N, input_size]` or `[input_size]` unbatched; states `[N, hidden_size]` (or
/// `[hidden_size]`), zeros when not given.
pub struct RecurrentCell {
    kind: Kind,
    input_size: usize,
    hidden_size: usize,
    bias: bool,
    /// A nonlinearity other than "tanh" or "relu" asked for: refused when the cell runs.
    bad_nonlinearity: Option<String>,
    params: Vec<(String, Parameter)>,
}

/// torch's `nn.RNNCell(input_size, hidden_size)`: `h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ +
/// b_hh)` (`.nonlinearity("relu")` for ReLU).
pub struct RNNCell;
/// torch's `nn.LSTMCell(input_size, hidden_size)`: [`RecurrentCell::forward_lstm`] takes
/// and gives `(h, c)`.
pub struct LSTMCell;
/// torch's `nn.GRUCell(input_size, hidden_size)`.
pub struct GRUCell;

kind_constructors!(RecurrentCell: RNNCell => RnnTanh, LSTMCell => Lstm, GRUCell => Gru);

impl RecurrentCell {
    fn build(kind: Kind, input_size: usize, hidden_size: usize) -> RecurrentCell {
        let mut c = RecurrentCell {
            kind,
            input_size,
            hidden_size,
            bias: true,
            bad_nonlinearity: None,
            params: Vec::new(),
        };
        c.draw();
        c
    }

    /// Fresh parameters: uniform in ±1/sqrt(hidden_size), in torch's order.
    fn draw(&mut self) {
        let (h, g) = (self.hidden_size, self.kind.gates());
        let p = |dims: Vec<usize>| init_param(dims, h);
        self.params = vec![
            ("weight_ih".into(), p(vec![g * h, self.input_size])),
            ("weight_hh".into(), p(vec![g * h, h])),
        ];
        if self.bias {
            self.params.push(("bias_ih".into(), p(vec![g * h])));
            self.params.push(("bias_hh".into(), p(vec![g * h])));
        }
    }

    /// `bias(false)` drops both biases (draws new parameters).
    pub fn bias(mut self, bias: bool) -> RecurrentCell {
        self.bias = bias;
        self.draw();
        self
    }

    /// `"tanh"` (the default) or `"relu"`, for an `RNNCell`; anything else is an error when
    /// the cell runs.
    pub fn nonlinearity(mut self, name: &str) -> RecurrentCell {
        if let Some((kind, bad)) = self.kind.with_nonlinearity(name) {
            (self.kind, self.bad_nonlinearity) = (kind, bad);
        }
        self
    }

    /// torch's `h' = cell(x, h)` for an `RNNCell` or a `GRUCell` (`h` zeros when `None`).
    pub fn forward_with(&self, x: &Tensor, h: Option<&Tensor>) -> Result<Tensor> {
        if self.kind == Kind::Lstm {
            return Err(Error::Invalid(format!(
                "{}: an LSTM cell takes and gives (h, c): use forward_lstm",
                self.describe()
            )));
        }
        Ok(self.step(x, h, None)?.0)
    }

    /// torch's `h', c' = lstm_cell(x, (h, c))` (both zeros when `None`).
    pub fn forward_lstm(
        &self,
        x: &Tensor,
        state: Option<(&Tensor, &Tensor)>,
    ) -> Result<(Tensor, Tensor)> {
        if self.kind != Kind::Lstm {
            return Err(Error::Invalid(format!(
                "{}: only an LSTM cell has a cell state: use forward_with",
                self.describe()
            )));
        }
        let (h, c) = state.unzip();
        let (h, c) = self.step(x, h, Some(c))?;
        Ok((h, c.expect("an LSTM step gives a cell state")))
    }

    /// One step from `h` (and, for an LSTM, `c`: `Some(None)` for zeros).
    fn step(
        &self,
        x: &Tensor,
        h: Option<&Tensor>,
        c: Option<Option<&Tensor>>,
    ) -> Result<(Tensor, Option<Tensor>)> {
        check_nonlinearity(&self.bad_nonlinearity, || self.describe())?;
        same_device(self, &self.params[0].1, x)?;
        let features = x.shape().last().copied().unwrap_or(0);
        if !(x.rank() == 1 || x.rank() == 2) || features != self.input_size {
            return Err(Error::BadShape(format!(
                "{}: expected input [N, {}] or [{}] unbatched, got {:?}",
                self.describe(),
                self.input_size,
                self.input_size,
                x.shape()
            )));
        }
        let unbatched = x.rank() == 1;
        let x = if unbatched {
            x.unsqueeze(0)?
        } else {
            x.clone()
        };
        let (n, hs) = (x.shape()[0], self.hidden_size);
        let w_ih = self.params[0].1.tensor();
        let state = |given: Option<&Tensor>, what: &str| -> Result<Tensor> {
            let want = if unbatched { vec![hs] } else { vec![n, hs] };
            match given {
                Some(t) if t.shape() != want => Err(Error::BadShape(format!(
                    "{}: {what} must have shape {want:?}, got {:?}",
                    self.describe(),
                    t.shape()
                ))),
                Some(t) if unbatched => t.unsqueeze(0),
                Some(t) => Ok(t.clone()),
                None => Tensor::zeros_dtype((n, hs), w_ih.dtype(), w_ih.device()),
            }
        };
        let h = state(h, "h")?;
        let c = c.map(|c| state(c, "c")).transpose()?;
        // torch's cells are two `linear`s: the bias fused into the product (`addmm`, which
        // rounds a half-precision result once), or a plain product without one.
        let w_hh = self.params[1].1.tensor();
        let (xt, hw) = if self.bias {
            let (b_ih, b_hh) = (self.params[2].1.tensor(), self.params[3].1.tensor());
            (
                b_ih.addmm(&x, &w_ih.t()?, 1.0, 1.0)?,
                b_hh.addmm(&h, &w_hh.t()?, 1.0, 1.0)?,
            )
        } else {
            (x.matmul(&w_ih.t()?)?, h.matmul(&w_hh.t()?)?)
        };
        let (h, c) = cell_step(self.kind, &xt, &hw, &h, c.as_ref())?;
        if unbatched {
            Ok((h.squeeze(0)?, c.map(|c| c.squeeze(0)).transpose()?))
        } else {
            Ok((h, c))
        }
    }

    fn name(&self) -> &'static str {
        match self.kind {
            Kind::RnnTanh | Kind::RnnRelu => "RNNCell",
            Kind::Lstm => "LSTMCell",
            Kind::Gru => "GRUCell",
        }
    }
}

impl Module for RecurrentCell {
    /// One step from zero states: the new hidden state.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(self
            .step(x, None, (self.kind == Kind::Lstm).then_some(None))?
            .0)
    }
    fn parameters(&self) -> Vec<Parameter> {
        self.params.iter().map(|(_, p)| p.clone()).collect()
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        self.params.clone()
    }
    /// torch's repr: `LSTMCell(3, 4)`, `RNNCell(3, 4, bias=False, nonlinearity=relu)`.
    fn describe(&self) -> String {
        let mut s = format!("{}({}, {}", self.name(), self.input_size, self.hidden_size);
        if !self.bias {
            s += ", bias=False";
        }
        if self.kind == Kind::RnnRelu || self.bad_nonlinearity.is_some() {
            let name = self.bad_nonlinearity.as_deref().unwrap_or("relu");
            s += &format!(", nonlinearity={name}");
        }
        s + ")"
    }
}
