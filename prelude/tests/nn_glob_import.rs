//! The notebook view: with only `use gpulab::*` in scope (as in every session), a torch-style
//! training loop compiles and learns (the optimiser's `step` needs no trait import).

use gpulab::*;

#[test]
fn a_training_loop_needs_only_the_glob_import() -> std::result::Result<(), Error> {
    fork_rng(0, || {
        let x = Tensor::randn((64, 3), Device::Cpu)?;
        let y = x.sum_keepdim(1)?.relu()?; // the target: relu of the inputs' sum
        let model = nn::Sequential::new()
            .add(nn::Linear::new(3, 16))
            .add(nn::ReLU)
            .add(nn::Linear::new(16, 1));
        let mut opt = optim::SGD::new(model.parameters(), 0.05).momentum(0.9);
        for _ in 0..200 {
            let loss = F::mse_loss(&model.forward(&x)?, &y)?;
            opt.zero_grad();
            loss.backward()?;
            opt.step()?;
        }
        let loss = no_grad(|| F::mse_loss(&model.forward(&x)?, &y))?;
        let loss = loss.item::<f32>()?;
        assert!(loss < 0.01, "mse after 200 steps: {loss}");
        Ok(())
    })
}
