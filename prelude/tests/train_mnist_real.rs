//! Issue #8's bar for learning for real: article 01's MNIST CNN reaches at least 97 % test
//! accuracy on the real MNIST files. The files are not in the repository: `./install` downloads
//! them into `notebooks/data/mnist` (`notebooks/fetch_mnist.py`, checked against pinned SHA-256
//! sums), and `tests/run` (the README's test command) then runs this test with `GPULAB_MNIST_DIR`
//! naming that folder (`cargo test --release -p gpulab --test train_mnist_real -- --ignored`). It
//! is `#[ignore]`d in the plain workspace run, which has no files to give it. It uses the GPU when
//! one is there; `gpu-check/build` packs the files when this checkout has them. Two epochs
//! instead of the article's five: with Adam at 1e-3 the article's network is past 97 % after one.

use gpulab::*;

#[test]
#[ignore = "needs the MNIST files: set GPULAB_MNIST_DIR and run with --ignored"]
fn article_cnn_reaches_97_percent_on_real_mnist() {
    // Run with --include-ignored (the GPU check does) but without the files: a skip that says so.
    let Some(dir) = std::env::var_os("GPULAB_MNIST_DIR").filter(|d| !d.is_empty()) else {
        println!("skipped: no MNIST files (GPULAB_MNIST_DIR is not set)");
        return;
    };
    let (train, test) = data::mnist(&dir).expect("the MNIST files load");
    assert_eq!(train.x.shape(), &[60_000, 1, 28, 28]);
    assert_eq!(test.x.shape(), &[10_000, 1, 28, 28]);

    manual_seed(0);
    // Keras' Conv2D(32,3)+relu, MaxPool(2), Conv2D(64,3)+relu, MaxPool(2), Conv2D(64,3)+relu,
    // Flatten, Dense(64)+relu, Dense(10) (logits: the loss applies the softmax).
    let mut model = nn::Sequential::new()
        .add(nn::Conv2d::new(1, 32, 3))
        .add(nn::ReLU)
        .add(nn::MaxPool2d::new(2))
        .add(nn::Conv2d::new(32, 64, 3))
        .add(nn::ReLU)
        .add(nn::MaxPool2d::new(2))
        .add(nn::Conv2d::new(64, 64, 3))
        .add(nn::ReLU)
        .add(nn::Flatten)
        .add(nn::Linear::new(64 * 3 * 3, 64))
        .add(nn::ReLU)
        .add(nn::Linear::new(64, 10));
    let device = Device::cuda_if_available();
    model.to(device).unwrap();
    let mut opt = optim::Adam::new(model.parameters(), 1e-3);
    let history = model
        .fit(&mut opt, Loss::CrossEntropy, &train)
        .epochs(2)
        .batch_size(64)
        .seed(0)
        .validation_data(&test)
        .verbose(2)
        .run()
        .unwrap();
    assert!(history.interrupted.is_none());
    let (loss, acc) = model.evaluate(&test, Loss::CrossEntropy).unwrap();
    let acc = acc.expect("cross-entropy reports accuracy");
    println!(
        "real MNIST on {device}: test loss {loss:.4}, test accuracy {:.2} %",
        acc * 100.0
    );
    assert!(
        acc >= 0.97,
        "test accuracy {:.2} % is below the 97 % bar",
        acc * 100.0
    );
}
