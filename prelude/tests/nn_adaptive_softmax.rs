//! AdaptiveLogSoftmaxWithLoss: a proper distribution over every class, the targets' log
//! probabilities read from it, the prediction its argmax, torch's parameter names and repr,
//! learning, and errors (values against torch: bench/torch_parity.py's asm cases).

use gpulab::nn::{self, Module};
use gpulab::optim::Adam;
use gpulab::{fork_rng, Device, Tensor};

const CPU: Device = Device::Cpu;

fn ramp(shape: &[usize], k: usize) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| ((i * k) % 13) as f32 / 5.0 - 1.2).collect();
    Tensor::from_vec(v, shape.to_vec(), CPU).unwrap()
}

fn targets(v: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), vec![v.len()], CPU).unwrap()
}

#[test]
fn log_prob_is_a_distribution_and_forward_reads_it() {
    fork_rng(4, || {
        let m = nn::AdaptiveLogSoftmaxWithLoss::new(8, 10, &[3, 6]).unwrap();
        let names: Vec<String> = m.named_parameters().into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            [
                "head.weight",
                "tail.0.0.weight",
                "tail.0.1.weight",
                "tail.1.0.weight",
                "tail.1.1.weight"
            ]
        );
        assert!(m.describe().starts_with(
            "AdaptiveLogSoftmaxWithLoss(\n  (head): Linear(in_features=8, out_features=5, bias=False)"
        ));
        let x = ramp(&[4, 8], 7);
        let lp = m.log_prob(&x).unwrap();
        assert_eq!(lp.shape(), [4, 10]);
        let sums = lp
            .exp()
            .unwrap()
            .sum_dim(1)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        assert!(sums.iter().all(|s| (s - 1.0).abs() < 1e-5), "{sums:?}");
        let t = [0i64, 4, 9, 7];
        let r = m.forward_target(&x, &targets(&t)).unwrap();
        let out = r.output.to_vec::<f32>().unwrap();
        let lpv = lp.to_vec::<f32>().unwrap();
        for (row, &c) in t.iter().enumerate() {
            assert!((out[row] - lpv[row * 10 + c as usize]).abs() < 1e-5);
        }
        let mean = -out.iter().sum::<f32>() / 4.0;
        assert!((r.loss.item::<f32>().unwrap() - mean).abs() < 1e-5);
        // predict is log_prob's argmax.
        let want = lp.argmax_dim(1).unwrap().to_vec::<i64>().unwrap();
        assert_eq!(m.predict(&x).unwrap().to_vec::<i64>().unwrap(), want);
        // One row with a 0-d target.
        let one = m
            .forward_target(&x.select(0, 1).unwrap(), &targets(&[4]).squeeze(0).unwrap())
            .unwrap();
        assert_eq!(one.output.shape(), [] as [usize; 0]);
        assert!((one.output.item::<f32>().unwrap() - out[1]).abs() < 1e-5);
    });
}

#[test]
fn it_learns_and_names_bad_input() {
    fork_rng(9, || {
        let m = nn::AdaptiveLogSoftmaxWithLoss::with_options(6, 12, &[2, 5], 2.0, true).unwrap();
        let mut opt = Adam::new(m.parameters(), 0.05);
        let x = ramp(&[12, 6], 5);
        let t = targets(&(0..12).collect::<Vec<i64>>());
        let first = m
            .forward_target(&x, &t)
            .unwrap()
            .loss
            .item::<f32>()
            .unwrap();
        for _ in 0..200 {
            opt.zero_grad();
            m.forward_target(&x, &t).unwrap().loss.backward().unwrap();
            opt.step().unwrap();
        }
        let last = m
            .forward_target(&x, &t)
            .unwrap()
            .loss
            .item::<f32>()
            .unwrap();
        // The last cluster's projection is 1 wide (6 / 2^2), so its 7 classes cannot all be
        // told apart: the loss falls well short of 0, but must still more than halve.
        assert!(last < first / 2.0, "loss {first} -> {last}");
        let e = m
            .forward_target(&x, &targets(&[0; 11]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("same size in the batch dimension"), "{e}");
        let e = m
            .forward_target(&x, &targets(&[12; 12]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("target values must be in [0, 11], got 12"),
            "{e}"
        );
        let e = m.forward(&x).unwrap_err().to_string();
        assert!(e.contains("forward_target"), "{e}");
        let e = m.log_prob(&ramp(&[2, 5], 3)).unwrap_err().to_string();
        assert!(e.contains("expected input [N, 6], got [2, 5]"), "{e}");
        for bad in [&[][..], &[5, 3], &[0, 4], &[4, 12]] {
            let e = nn::AdaptiveLogSoftmaxWithLoss::new(6, 12, bad)
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains("cutoffs must be unique, increasing"), "{e}");
        }
    });
}
