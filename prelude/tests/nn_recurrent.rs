//! RNN, LSTM and GRU: torch's reprs, parameter names and shapes; the state carried between
//! calls continues a sequence exactly; batch_first, unbatched input and stacked layers give
//! torch's shapes; an LSTM learns a task that needs memory; bad input named. Values and
//! gradients against torch itself: `bench/torch_parity.py`'s `rnn` cases.

use gpulab::nn::{self, Module, GRU, LSTM, RNN};
use gpulab::optim::Adam;
use gpulab::{fork_rng, DType, Device, Tensor, F};

const CPU: Device = Device::Cpu;

#[test]
fn reprs_names_and_shapes_are_torchs() {
    // torch 2.9's reprs and state_dict names for the same layers.
    assert_eq!(RNN::new(3, 4).describe(), "RNN(3, 4)");
    assert_eq!(
        LSTM::new(3, 4).num_layers(2).batch_first(true).describe(),
        "LSTM(3, 4, num_layers=2, batch_first=True)"
    );
    assert_eq!(
        GRU::new(3, 4)
            .bias(false)
            .dropout(0.5)
            .num_layers(2)
            .describe(),
        "GRU(3, 4, num_layers=2, bias=False, dropout=0.5)"
    );
    let lstm = LSTM::new(3, 4).num_layers(2);
    let named: Vec<(String, Vec<usize>)> = lstm
        .named_parameters()
        .into_iter()
        .map(|(n, p)| (n, p.shape()))
        .collect();
    let want = [
        ("weight_ih_l0", vec![16, 3]),
        ("weight_hh_l0", vec![16, 4]),
        ("bias_ih_l0", vec![16]),
        ("bias_hh_l0", vec![16]),
        ("weight_ih_l1", vec![16, 4]),
        ("weight_hh_l1", vec![16, 4]),
        ("bias_ih_l1", vec![16]),
        ("bias_hh_l1", vec![16]),
    ];
    assert_eq!(
        named,
        want.iter()
            .map(|(n, s)| (n.to_string(), s.clone()))
            .collect::<Vec<_>>()
    );
    // torch's init: uniform in ±1/sqrt(hidden_size).
    let bound = 0.5f32;
    for (_, p) in lstm.named_parameters() {
        assert!(p
            .tensor()
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .all(|v| v.abs() <= bound));
    }
    assert_eq!(GRU::new(3, 4).bias(false).parameters().len(), 2);

    // Bidirectional: a backward recurrence per layer, its parameters named `_reverse`, the
    // next layer reading both directions' states.
    let bi = GRU::new(3, 4).num_layers(2).bidirectional(true);
    assert_eq!(bi.describe(), "GRU(3, 4, num_layers=2, bidirectional=True)");
    let names: Vec<(String, Vec<usize>)> = bi
        .named_parameters()
        .into_iter()
        .map(|(n, p)| (n, p.shape()))
        .take(6)
        .collect();
    assert_eq!(
        names,
        [
            ("weight_ih_l0", vec![12, 3]),
            ("weight_hh_l0", vec![12, 4]),
            ("bias_ih_l0", vec![12]),
            ("bias_hh_l0", vec![12]),
            ("weight_ih_l0_reverse", vec![12, 3]),
            ("weight_hh_l0_reverse", vec![12, 4]),
        ]
        .map(|(n, s)| (n.to_string(), s))
    );
    assert_eq!(
        bi.named_parameters()[8].1.shape(),
        &[12, 8],
        "layer 1 reads 2 x 4"
    );
    let r = bi
        .forward_with(&Tensor::ones((5, 2, 3), CPU).unwrap(), None, None)
        .unwrap();
    assert_eq!(
        (r.output.shape(), r.h_n.shape()),
        (&[5, 2, 8][..], &[4, 2, 4][..])
    );
    // The backward direction's final state is its output at the first step.
    let last = r.output.select(0, 0).unwrap().narrow(1, 4, 4).unwrap();
    assert_eq!(
        last.to_vec::<f32>().unwrap(),
        r.h_n.select(0, 3).unwrap().to_vec::<f32>().unwrap()
    );

    let x = Tensor::ones((5, 2, 3), CPU).unwrap();
    let r = lstm.forward_with(&x, None, None).unwrap();
    assert_eq!(r.output.shape(), &[5, 2, 4]);
    assert_eq!(r.h_n.shape(), &[2, 2, 4]);
    assert_eq!(r.c_n.unwrap().shape(), &[2, 2, 4]);
    // The last layer's final state is its output at the last step.
    assert_eq!(
        r.output.select(0, -1).unwrap().to_vec::<f32>().unwrap(),
        r.h_n.select(0, -1).unwrap().to_vec::<f32>().unwrap()
    );
    let bf = GRU::new(3, 4).batch_first(true);
    let y = bf.forward(&Tensor::ones((2, 5, 3), CPU).unwrap()).unwrap();
    assert_eq!(y.shape(), &[2, 5, 4]);
    let un = RNN::new(3, 4).forward_with(&Tensor::ones((5, 3), CPU).unwrap(), None, None);
    let un = un.unwrap();
    assert_eq!(
        (un.output.shape(), un.h_n.shape()),
        (&[5, 4][..], &[1, 4][..])
    );
    assert!(un.c_n.is_none());
}

/// Running a sequence in two halves, the second starting from the first's final states, is
/// running it whole; for every kind of layer.
#[test]
fn carried_state_continues_the_sequence() {
    fork_rng(5, || {
        let x = Tensor::randn((6, 2, 3), CPU).unwrap();
        for layer in [
            RNN::new(3, 4).num_layers(2),
            LSTM::new(3, 4).num_layers(2),
            GRU::new(3, 4).num_layers(2),
        ] {
            let whole = layer.forward_with(&x, None, None).unwrap();
            let first = layer
                .forward_with(&x.narrow(0, 0, 4).unwrap(), None, None)
                .unwrap();
            let rest = layer
                .forward_with(
                    &x.narrow(0, 4, 2).unwrap(),
                    Some(&first.h_n),
                    first.c_n.as_ref(),
                )
                .unwrap();
            let joined = Tensor::cat(&[first.output, rest.output], 0).unwrap();
            let (a, b) = (
                joined.to_vec::<f32>().unwrap(),
                whole.output.to_vec::<f32>().unwrap(),
            );
            assert!(
                a.iter().zip(&b).all(|(p, q)| (p - q).abs() < 1e-6),
                "{}",
                layer.describe()
            );
        }
    })
}

/// A task only memory solves: the label is the sign of the sequence's first value, and the
/// later values are noise. An LSTM reading the whole sequence learns it.
#[test]
fn an_lstm_remembers_the_first_value() {
    fork_rng(11, || {
        let (n, steps) = (64, 8);
        let x = Tensor::randn((n, steps, 1), CPU).unwrap();
        let first = x.narrow(1, 0, 1).unwrap().flatten().unwrap();
        let y = first.gt(0.0).unwrap().to_dtype(DType::I64).unwrap();
        let lstm = LSTM::new(1, 16).batch_first(true);
        let head = nn::Linear::new(16, 2);
        let mut params = lstm.parameters();
        params.extend(head.parameters());
        let mut opt = Adam::new(params, 0.02);
        let logits = || {
            let h = lstm
                .forward_with(&x, None, None)
                .unwrap()
                .h_n
                .select(0, 0)
                .unwrap();
            head.forward(&h).unwrap()
        };
        for _ in 0..150 {
            opt.zero_grad();
            F::cross_entropy(&logits(), &y).unwrap().backward().unwrap();
            opt.step().unwrap();
        }
        let right = logits()
            .argmax_dim(1)
            .unwrap()
            .eq(&y)
            .unwrap()
            .to_dtype(DType::I64)
            .unwrap()
            .sum()
            .unwrap()
            .item::<i64>()
            .unwrap();
        assert!(right >= 60, "{right}/64 right");
    })
}

#[test]
fn bad_input_is_named() {
    let err = |r: Result<Tensor, gpulab::Error>| r.unwrap_err().to_string();
    let lstm = LSTM::new(3, 4);
    let e = err(lstm.forward(&Tensor::ones((5, 2, 7), CPU).unwrap()));
    assert!(
        e.contains("with 3 features") && e.contains("[5, 2, 7]"),
        "{e}"
    );
    let h0 = Tensor::zeros((2, 2, 4), CPU).unwrap();
    let e = lstm
        .forward_with(&Tensor::ones((5, 2, 3), CPU).unwrap(), Some(&h0), None)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("h_0 must have shape [1, 2, 4]"), "{e}");
    let e = GRU::new(3, 4)
        .forward_with(&Tensor::ones((5, 2, 3), CPU).unwrap(), None, Some(&h0))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("only an LSTM has a cell state"), "{e}");
    let e = err(RNN::new(3, 4)
        .nonlinearity("sigmoid")
        .forward(&Tensor::ones((5, 2, 3), CPU).unwrap()));
    assert!(e.contains("got \"sigmoid\""), "{e}");
}

/// A trained sequence model saved in safetensors under torch's names reloads into a fresh one
/// and computes the same outputs (the file a torch `load_state_dict` reads too).
#[test]
fn a_saved_lstm_reloads_under_torchs_names() {
    fork_rng(2, || {
        let model = nn::Sequential::new()
            .add(LSTM::new(3, 5).num_layers(2).batch_first(true))
            .add(nn::Flatten)
            .add(nn::Linear::new(4 * 5, 2));
        let dir = std::env::temp_dir().join(format!("gpulab-rnn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("lstm.safetensors");
        nn::save_safetensors(&model, &path).unwrap();
        let names: Vec<String> = model
            .named_parameters()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert!(names.contains(&"0.weight_hh_l1".to_string()), "{names:?}");
        let fresh = nn::Sequential::new()
            .add(LSTM::new(3, 5).num_layers(2).batch_first(true))
            .add(nn::Flatten)
            .add(nn::Linear::new(4 * 5, 2));
        let x = Tensor::randn((2, 4, 3), CPU).unwrap();
        let before = fresh.forward(&x).unwrap().to_vec::<f32>().unwrap();
        nn::load_safetensors(&fresh, &path).unwrap();
        let (a, b) = (
            model.forward(&x).unwrap().to_vec::<f32>().unwrap(),
            fresh.forward(&x).unwrap().to_vec::<f32>().unwrap(),
        );
        assert_eq!(a, b);
        assert_ne!(before, b, "loading changed the weights");
        std::fs::remove_dir_all(dir).ok();
    })
}
