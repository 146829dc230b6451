//! RNNCell, LSTMCell and GRUCell: torch's reprs and parameter names; a cell stepped by hand
//! over a sequence gives what the whole layer with the same weights gives; unbatched input;
//! bad input named. Values and gradients against torch itself: `bench/torch_parity.py`'s
//! `cell` cases.

use gpulab::nn::{GRUCell, LSTMCell, Module, RNNCell, GRU, LSTM, RNN};
use gpulab::{Device, Tensor};

const CPU: Device = Device::Cpu;

fn ramp(shape: &[usize], salt: usize) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n)
        .map(|i| (((i * 7 + salt) % 11) as f32 - 5.0) * 0.15)
        .collect();
    Tensor::from_vec(v, shape.to_vec(), CPU).unwrap()
}

/// The cell's parameters copied into the one-layer layer's (`weight_ih` to `weight_ih_l0`, ..).
fn same_weights(cell: &dyn Module, layer: &dyn Module) {
    for ((cn, cp), (ln, lp)) in cell
        .named_parameters()
        .into_iter()
        .zip(layer.named_parameters())
    {
        assert_eq!(format!("{cn}_l0"), ln);
        lp.set_data(cp.tensor().detach()).unwrap();
    }
}

#[test]
fn reprs_and_names_are_torchs() {
    assert_eq!(RNNCell::new(3, 4).describe(), "RNNCell(3, 4)");
    assert_eq!(
        RNNCell::new(3, 4)
            .bias(false)
            .nonlinearity("relu")
            .describe(),
        "RNNCell(3, 4, bias=False, nonlinearity=relu)"
    );
    assert_eq!(format!("{}", LSTMCell::new(2, 5)), "LSTMCell(2, 5)");
    let names: Vec<(String, Vec<usize>)> = GRUCell::new(3, 4)
        .named_parameters()
        .into_iter()
        .map(|(n, p)| (n, p.shape()))
        .collect();
    let want = [
        ("weight_ih", vec![12, 3]),
        ("weight_hh", vec![12, 4]),
        ("bias_ih", vec![12]),
        ("bias_hh", vec![12]),
    ];
    assert_eq!(names.len(), want.len());
    for ((n, s), (wn, ws)) in names.iter().zip(want) {
        assert_eq!((n.as_str(), s), (wn, &ws));
    }
    assert_eq!(LSTMCell::new(3, 4).bias(false).parameters().len(), 2);
}

#[test]
fn a_cell_stepped_by_hand_is_the_layer() {
    let x = ramp(&[4, 2, 3], 1);
    let h0 = ramp(&[2, 4], 2);
    for kind in ["rnn", "gru"] {
        let (cell, layer) = if kind == "rnn" {
            (RNNCell::new(3, 4), RNN::new(3, 4))
        } else {
            (GRUCell::new(3, 4), GRU::new(3, 4))
        };
        same_weights(&cell, &layer);
        let mut h = h0.clone();
        let mut outs = Vec::new();
        for t in 0..4 {
            h = cell
                .forward_with(&x.select(0, t).unwrap(), Some(&h))
                .unwrap();
            outs.push(h.clone());
        }
        let r = layer
            .forward_with(&x, Some(&h0.unsqueeze(0).unwrap()), None)
            .unwrap();
        let stepped = Tensor::stack(&outs, 0).unwrap();
        assert_eq!(
            stepped.to_vec::<f32>().unwrap(),
            r.output.to_vec::<f32>().unwrap(),
            "{kind}: the cell's steps are the layer's outputs"
        );
    }
    let (cell, layer) = (LSTMCell::new(3, 4), LSTM::new(3, 4));
    same_weights(&cell, &layer);
    let c0 = ramp(&[2, 4], 3);
    let (mut h, mut c) = (h0.clone(), c0.clone());
    for t in 0..4 {
        (h, c) = cell
            .forward_lstm(&x.select(0, t).unwrap(), Some((&h, &c)))
            .unwrap();
    }
    let r = layer
        .forward_with(
            &x,
            Some(&h0.unsqueeze(0).unwrap()),
            Some(&c0.unsqueeze(0).unwrap()),
        )
        .unwrap();
    let close = |a: &Tensor, b: &Tensor| {
        let (a, b) = (a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
        a.iter().zip(&b).all(|(p, q)| (p - q).abs() <= 1e-6)
    };
    assert!(close(&h, &r.h_n.squeeze(0).unwrap()), "LSTM h_n");
    assert!(close(&c, &r.c_n.unwrap().squeeze(0).unwrap()), "LSTM c_n");
}

#[test]
fn unbatched_input_and_zero_states() {
    let cell = GRUCell::new(3, 4);
    let x = ramp(&[3], 4);
    let h = cell.forward_with(&x, None).unwrap();
    assert_eq!(h.shape(), [4]);
    let batched = cell.forward(&x.unsqueeze(0).unwrap()).unwrap();
    assert_eq!(h.to_vec::<f32>().unwrap(), batched.to_vec::<f32>().unwrap());
    let (h, c) = LSTMCell::new(3, 4).forward_lstm(&x, None).unwrap();
    assert_eq!((h.shape(), c.shape()), (&[4][..], &[4][..]));
}

#[test]
fn bad_input_is_named() {
    let err = |r: gpulab::error::Result<Tensor>| r.unwrap_err().to_string();
    let cell = RNNCell::new(3, 4);
    let e = err(cell.forward_with(&ramp(&[2, 5], 0), None));
    assert!(
        e.contains("RNNCell(3, 4): expected input [N, 3] or [3] unbatched, got [2, 5]"),
        "{e}"
    );
    let e = err(cell.forward_with(&ramp(&[2, 3], 0), Some(&ramp(&[3, 4], 0))));
    assert!(e.contains("h must have shape [2, 4], got [3, 4]"), "{e}");
    let e = err(LSTMCell::new(3, 4).forward_with(&ramp(&[2, 3], 0), None));
    assert!(e.contains("use forward_lstm"), "{e}");
    let e = GRUCell::new(3, 4)
        .forward_lstm(&ramp(&[2, 3], 0), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("only an LSTM cell has a cell state"), "{e}");
    let e = err(RNNCell::new(3, 4)
        .nonlinearity("gelu")
        .forward(&ramp(&[3], 0)));
    assert!(
        e.contains("nonlinearity must be \"tanh\" or \"relu\", got \"gelu\""),
        "{e}"
    );
}
