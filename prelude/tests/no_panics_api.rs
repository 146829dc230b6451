//! Odd input to the rest of the prelude (layers, optimisers, data, training, plots, images,
//! Mandelbrot, timing, progress bars): zero sizes, NaN and infinite settings, empty data,
//! garbage files. Each call must return (an error is fine), not panic: a panic in a cell
//! shows a backtrace instead of a message and can take the cell's variables with it. The
//! builders that document a panic (mismatched series lengths, a wrong value count) are not
//! called here.

use gpulab::data::transforms::{RandomHorizontalFlip, RandomShear, RandomShift, RandomZoom};
use gpulab::data::{
    image_folder, read_idx, synthetic_cats_dogs, synthetic_mnist, Compose, DataLoader, Rng,
    TensorDataset, Transform,
};
use gpulab::nn::{self, Conv2d, Dropout, Flatten, Linear, MaxPool2d, ReLU, Sequential, Softmax};
use gpulab::optim::{Adam, SGD};
use gpulab::plot::short_number;
use gpulab::timing::{format_duration, Stats};
use gpulab::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

const CPU: Device = Device::Cpu;

fn x(shape: &[usize]) -> Tensor {
    Tensor::rand(shape.to_vec(), CPU).unwrap()
}

fn labels(n: usize, classes: i64) -> Tensor {
    Tensor::from_vec(
        (0..n as i64).map(|i| i % classes).collect::<Vec<_>>(),
        n,
        CPU,
    )
    .unwrap()
}

/// Runs each probe, collecting the panics (with the probe's name) instead of stopping.
struct Probes {
    panics: Vec<String>,
    count: usize,
}

impl Probes {
    fn run<R>(&mut self, name: &str, f: impl FnOnce() -> R) {
        self.count += 1;
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| drop(f()))) {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            self.panics.push(format!("{name}: {msg}"));
        }
    }
}

#[test]
fn odd_input_anywhere_in_the_prelude_is_an_error_not_a_panic() {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut p = Probes {
        panics: Vec::new(),
        count: 0,
    };
    let dir = std::env::temp_dir().join(format!("gpulab-no-panics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    // Layers.
    p.run("Linear(0, 3) on [2, 0]", || {
        Linear::new(0, 3).forward(&x(&[2, 0]))
    });
    p.run("Linear(3, 0) on [2, 3]", || {
        Linear::new(3, 0).forward(&x(&[2, 3]))
    });
    p.run("Linear(3, 2) on [2, 4]", || {
        Linear::new(3, 2).forward(&x(&[2, 4]))
    });
    p.run("Linear(3, 2) on [3]", || {
        Linear::new(3, 2).forward(&x(&[3]))
    });
    p.run("Linear(3, 2) on [2, 5, 3]", || {
        Linear::new(3, 2).forward(&x(&[2, 5, 3]))
    });
    p.run("Linear(3, 2) on a 0-d", || {
        Linear::new(3, 2).forward(&x(&[]))
    });
    p.run("Linear(3, 2) on i64", || {
        Linear::new(3, 2).forward(&Tensor::zeros_dtype([2, 3], DType::I64, CPU).unwrap())
    });
    p.run("Conv2d(0, 3, 3)", || {
        Conv2d::new(0, 3, 3).forward(&x(&[1, 0, 5, 5]))
    });
    p.run("Conv2d kernel 0", || {
        Conv2d::new(1, 1, 0).forward(&x(&[1, 1, 5, 5]))
    });
    p.run("Conv2d stride 0", || {
        Conv2d::new(1, 1, 3).stride(0).forward(&x(&[1, 1, 5, 5]))
    });
    p.run("Conv2d kernel > input", || {
        Conv2d::new(1, 1, 7).forward(&x(&[1, 1, 5, 5]))
    });
    p.run("Conv2d huge padding", || {
        Conv2d::new(1, 1, 3)
            .padding(1 << 40)
            .forward(&x(&[1, 1, 2, 2]))
    });
    p.run("Conv2d on [1, 5, 5]", || {
        Conv2d::new(1, 1, 3).forward(&x(&[1, 5, 5]))
    });
    p.run("MaxPool2d(0)", || {
        MaxPool2d::new(0).forward(&x(&[1, 1, 4, 4]))
    });
    p.run("MaxPool2d stride 0", || {
        MaxPool2d::new(2).stride(0).forward(&x(&[1, 1, 4, 4]))
    });
    p.run("MaxPool2d(5) on 4x4", || {
        MaxPool2d::new(5).forward(&x(&[1, 1, 4, 4]))
    });
    p.run("AvgPool2d(0)", || {
        nn::AvgPool2d::new(0).forward(&x(&[1, 1, 4, 4]))
    });
    p.run("AvgPool2d stride 0", || {
        nn::AvgPool2d::new(2).stride(0).forward(&x(&[1, 1, 4, 4]))
    });
    p.run("AvgPool2d huge padding", || {
        nn::AvgPool2d::new(3)
            .padding(1 << 40)
            .forward(&x(&[1, 1, 4, 4]))
    });
    p.run("AvgPool2d(5) on 4x4", || {
        nn::AvgPool2d::new(5).forward(&x(&[1, 1, 4, 4]))
    });
    p.run("AvgPool2d on an empty batch", || {
        nn::AvgPool2d::new(2).forward(&x(&[0, 1, 4, 4]))
    });
    p.run("AdaptiveAvgPool2d((0, 0))", || {
        nn::AdaptiveAvgPool2d::new((0, 0)).forward(&x(&[1, 2, 4, 4]))
    });
    p.run("AdaptiveAvgPool2d larger than the input", || {
        nn::AdaptiveAvgPool2d::new((9, 7)).forward(&x(&[1, 2, 4, 3]))
    });
    p.run("AdaptiveAvgPool2d on 0x4", || {
        nn::AdaptiveAvgPool2d::new((2, 2)).forward(&x(&[1, 2, 0, 4]))
    });
    p.run("AdaptiveAvgPool2d huge output", || {
        nn::AdaptiveAvgPool2d::new((1 << 40, 1 << 40)).forward(&x(&[1, 1, 2, 2]))
    });
    p.run("Embedding(0, 3) looked up", || {
        nn::Embedding::new(0, 3).forward(&labels(2, 2))
    });
    p.run("Embedding index past the end", || {
        nn::Embedding::new(4, 2).forward(&labels(6, 6))
    });
    p.run("Embedding with float indices", || {
        nn::Embedding::new(4, 2).forward(&x(&[3]))
    });
    p.run("Embedding of a 0-d index", || {
        nn::Embedding::new(4, 2).forward(&Tensor::from_vec(vec![3i64], (), CPU).unwrap())
    });
    p.run("Embedding with negative indices", || {
        nn::Embedding::new(4, 2).forward(&Tensor::from_vec(vec![-1i64], 1, CPU).unwrap())
    });
    p.run("one_hot with 2^40 classes", || {
        F::one_hot(&labels(3, 2), Some(1 << 40))
    });
    p.run("one_hot of a huge label", || {
        F::one_hot(&Tensor::from_vec(vec![i64::MAX], 1, CPU).unwrap(), None)
    });
    p.run("normalize along dimension 7", || {
        F::normalize(&x(&[2, 3]), 7)
    });
    p.run("cosine_similarity of empty rows", || {
        F::cosine_similarity(&x(&[0, 3]), &x(&[0, 3]), 1)
    });
    p.run("binary_cross_entropy of an empty batch", || {
        F::binary_cross_entropy(&x(&[0]), &x(&[0]))
    });
    p.run("nll_loss of an empty batch", || {
        F::nll_loss(&x(&[0, 3]), &labels(0, 3))
    });
    p.run("huber_loss with a NaN delta", || {
        F::huber_loss(&x(&[2]), &x(&[2]), f64::NAN)
    });
    p.run("clip_grad_norm_ to NaN", || {
        let l = Linear::new(2, 1);
        l.forward(&x(&[3, 2]))?.sum()?.backward()?;
        nn::utils::clip_grad_norm_(&l.parameters(), f64::NAN)
    });
    p.run("clip_grad_value_ to a negative bound", || {
        let l = Linear::new(2, 1);
        l.forward(&x(&[3, 2]))?.sum()?.backward()?;
        nn::utils::clip_grad_value_(&l.parameters(), -1.0)
    });
    p.run("cumprod over a huge dimension index", || {
        x(&[2, 3]).cumprod(1 << 40)
    });
    p.run("prod of a 0-d", || x(&[]).prod_dim(0));
    p.run("Softmax(5) on [2, 3]", || {
        Softmax::new(5).forward(&x(&[2, 3]))
    });
    p.run("Dropout(1.5)", || Dropout::new(1.5).forward(&x(&[2, 3])));
    p.run("Dropout(NaN)", || {
        Dropout::new(f64::NAN).forward(&x(&[2, 3]))
    });
    p.run("Flatten on a 0-d", || Flatten.forward(&x(&[])));
    p.run("ReLU on bool", || {
        ReLU.forward(&Tensor::zeros_dtype([2], DType::Bool, CPU).unwrap())
    });
    p.run("empty Sequential", || {
        Sequential::new().forward(&x(&[2, 3]))
    });
    p.run("empty Sequential summary", || {
        format!("{}", Sequential::new().summary())
    });
    p.run("summary_for a wrong shape", || {
        let m = Sequential::new().add(Linear::new(3, 2)).add(ReLU);
        format!("{}", m.summary_for([2, 7]))
    });
    p.run("summary_for an empty shape", || {
        let m = Sequential::new().add(Conv2d::new(1, 2, 3)).add(Flatten);
        format!("{}", m.summary_for(Vec::<usize>::new()))
    });
    p.run("Parameter::set_data of another shape", || {
        let l = Linear::new(3, 2);
        l.parameters()[0].set_data(x(&[5]))
    });

    // Optimisers.
    p.run("SGD with no parameters", || SGD::new(vec![], 0.1).step());
    p.run("SGD step without gradients", || {
        SGD::new(Linear::new(3, 2).parameters(), 0.1)
            .momentum(0.9)
            .step()
    });
    p.run("SGD lr NaN", || {
        let l = Linear::new(3, 2);
        l.forward(&x(&[4, 3]))?.sum()?.backward()?;
        SGD::new(l.parameters(), f64::NAN)
            .weight_decay(f64::INFINITY)
            .step()
    });
    p.run("Adam betas 1", || {
        let l = Linear::new(3, 2);
        l.forward(&x(&[4, 3]))?.sum()?.backward()?;
        let mut o = Adam::new(l.parameters(), 0.1).betas(1.0, 1.0).eps(0.0);
        o.step()?;
        o.step()
    });
    p.run("Adam with no parameters", || Adam::new(vec![], 0.1).step());

    // Optimiser, schedule, scaler and model state from odd dicts: odd names, shapes, dtypes,
    // values (a step of NaN, -1, 2^40, a bool moment, an empty tensor).
    let t = |v: Vec<f64>, shape: Vec<usize>| Tensor::from_vec(v, shape, CPU).unwrap();
    let odd: Vec<(&str, Tensor)> = vec![
        ("state.0.step", t(vec![f64::NAN], vec![])),
        ("state.0.step", t(vec![-1.0], vec![])),
        ("state.0.step", t(vec![2f64.powi(40)], vec![])),
        ("state.0.step", t(vec![1.0, 2.0], vec![2])),
        (
            "state.0.exp_avg",
            Tensor::zeros_dtype([2, 3], DType::Bool, CPU).unwrap(),
        ),
        ("state.0.exp_avg", t(vec![], vec![0])),
        ("state.0.momentum_buffer", t(vec![], vec![2, 0])),
        ("state.99.exp_avg", t(vec![1.0], vec![1])),
        ("state.x.exp_avg", t(vec![1.0], vec![1])),
        ("state", t(vec![1.0], vec![1])),
        ("", t(vec![1.0], vec![1])),
        ("param_groups.0.betas", t(vec![0.9], vec![])),
        ("param_groups.0.lr", t(vec![], vec![0])),
        ("param_groups.0.lr", t(vec![f64::INFINITY], vec![])),
        ("last_epoch", t(vec![-3.0], vec![])),
        ("step_size", t(vec![0.0], vec![])),
        ("T_max", t(vec![1e300], vec![])),
        ("growth_interval", t(vec![0.5], vec![])),
        ("scale", t(vec![f64::NAN], vec![])),
        ("0.weight", t(vec![1.0], vec![1])),
    ];
    for (name, value) in &odd {
        let state = vec![(name.to_string(), value.clone())];
        let l = Linear::new(3, 2);
        p.run(
            &format!("Adam load_state_dict {name} {:?}", value.shape()),
            || Adam::new(l.parameters(), 0.1).load_state_dict(&state),
        );
        p.run(
            &format!("SGD load_state_dict {name} {:?}", value.shape()),
            || SGD::new(l.parameters(), 0.1).load_state_dict(&state),
        );
        p.run(&format!("RMSprop load_state_dict {name}"), || {
            gpulab::optim::RMSprop::new(l.parameters(), 0.1).load_state_dict(&state)
        });
        p.run(&format!("StepLR load_state_dict {name}"), || {
            use gpulab::optim::lr_scheduler::{CosineAnnealingLR, LRScheduler, StepLR};
            let o = SGD::new(vec![], 0.1);
            StepLR::new(&o, 2, 0.5).load_state_dict(&state)?;
            CosineAnnealingLR::new(&o, 3, 0.0).load_state_dict(&state)
        });
        p.run(&format!("GradScaler load_state_dict {name}"), || {
            gpulab::amp::GradScaler::new().load_state_dict(&state)
        });
        p.run(&format!("Linear load_state_dict {name}"), || {
            l.load_state_dict(&state)
        });
    }
    p.run("optim::load_safetensors of a missing file", || {
        gpulab::optim::load_safetensors(
            &mut Adam::new(vec![], 0.1),
            dir.join("no-such-file.safetensors"),
        )
    });

    // Data.
    p.run("TensorDataset of mismatched lengths", || {
        TensorDataset::new(x(&[3, 2]), labels(4, 2))
    });
    p.run("TensorDataset of 0-d tensors", || {
        TensorDataset::new(x(&[]), x(&[]))
    });
    let ds = TensorDataset::new(x(&[10, 2]), labels(10, 2)).unwrap();
    p.run("select out of range", || ds.select(&[3, 99]));
    p.run("narrow past the end", || ds.narrow(8, 5));
    p.run("narrow at usize::MAX", || ds.narrow(usize::MAX, 2));
    for f in [0.0, 1.0, 1.5, -0.5, f64::NAN] {
        p.run(&format!("split({f})"), || ds.split(f, 1));
    }
    p.run("DataLoader batch 0", || DataLoader::new(ds.clone(), 0));
    p.run("DataLoader batch > len", || {
        let l = DataLoader::new(ds.clone(), 64)?
            .drop_last(true)
            .shuffle(true);
        Ok::<_, Error>(l.iter().count() + l.len())
    });
    p.run("DataLoader of an empty dataset", || {
        let empty = ds.narrow(0, 0)?;
        let l = DataLoader::new(empty, 4)?.shuffle(true);
        Ok::<_, Error>(l.iter().count() + l.len())
    });
    p.run("synthetic_mnist(0, 0)", || synthetic_mnist(0, 0, 1));
    p.run("synthetic_cats_dogs(0, 0)", || synthetic_cats_dogs(0, 0, 1));
    p.run("synthetic_cats_dogs(3, 1)", || synthetic_cats_dogs(3, 1, 1));
    p.run("image_folder missing", || {
        image_folder(dir.join("nowhere"), 32)
    });
    p.run("image_folder size 0", || image_folder(&dir, 0));
    p.run("image_folder with a garbage picture", || {
        let class = dir.join("pictures").join("cat");
        std::fs::create_dir_all(&class).unwrap();
        std::fs::write(class.join("a.jpg"), b"\xff\xd8\xff garbage").unwrap();
        std::fs::write(class.join("b.png"), b"\x89PNG\r\n\x1a\n").unwrap();
        image_folder(dir.join("pictures"), 16)
    });
    for (name, bytes) in [
        ("empty", &b""[..]),
        ("short header", &b"\x00\x00\x08"[..]),
        (
            "huge dims",
            &b"\x00\x00\x08\x03\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"[..],
        ),
        ("bad type", &b"\x00\x00\x77\x01\x00\x00\x00\x02\x01\x02"[..]),
        ("rank 255", &b"\x00\x00\x08\xff\x00\x00\x00\x01"[..]),
        (
            "truncated data",
            &b"\x00\x00\x08\x01\x00\x00\x00\x09\x01\x02"[..],
        ),
        ("gzip garbage", &b"\x1f\x8b\x08\x00garbage"[..]),
    ] {
        let path = dir.join(format!("{}.idx", name.replace(' ', "-")));
        std::fs::write(&path, bytes).unwrap();
        p.run(&format!("read_idx {name}"), || read_idx(&path));
    }
    p.run("mnist on an empty folder", || gpulab::data::mnist(&dir));
    let batch = x(&[2, 1, 0, 0]);
    let tiny = x(&[2, 1, 1, 1]);
    let transforms: Vec<(&str, Box<dyn Transform>)> = vec![
        ("flip p=NaN", Box::new(RandomHorizontalFlip::new(f32::NAN))),
        ("shift -1", Box::new(RandomShift::new(-1.0, 2.0))),
        (
            "shift NaN",
            Box::new(RandomShift::new(f32::NAN, f32::INFINITY)),
        ),
        ("zoom NaN", Box::new(RandomZoom::new(f32::NAN))),
        ("zoom 5", Box::new(RandomZoom::new(5.0))),
        ("shear 1e9", Box::new(RandomShear::new(1e9))),
        ("empty Compose", Box::new(Compose::new(vec![]))),
    ];
    for (name, t) in &transforms {
        for (what, b) in [
            ("empty images", &batch),
            ("1x1 images", &tiny),
            ("[3]", &x(&[3])),
        ] {
            p.run(&format!("{name} on {what}"), || {
                t.apply(b, &mut Rng::new(1))
            });
        }
    }

    // Training.
    let mut model = Sequential::new().add(Linear::new(2, 2));
    p.run("fit with 0 epochs", || {
        let mut o = SGD::new(model.parameters(), 0.1);
        model
            .fit(&mut o, Loss::CrossEntropy, &ds)
            .epochs(0)
            .verbose(0)
            .run()
    });
    p.run("fit with batch 0", || {
        let mut o = SGD::new(model.parameters(), 0.1);
        model
            .fit(&mut o, Loss::CrossEntropy, &ds)
            .batch_size(0)
            .verbose(0)
            .run()
    });
    p.run("fit on an empty dataset", || {
        let mut o = SGD::new(model.parameters(), 0.1);
        let empty = ds.narrow(0, 0)?;
        model
            .fit(&mut o, Loss::CrossEntropy, &empty)
            .verbose(0)
            .run()
    });
    p.run("fit with labels out of range", || {
        let mut o = SGD::new(model.parameters(), 0.1);
        let bad = TensorDataset::new(x(&[4, 2]), labels(4, 7))?;
        model.fit(&mut o, Loss::CrossEntropy, &bad).verbose(0).run()
    });
    p.run("fit with the wrong loss", || {
        let mut o = SGD::new(model.parameters(), 0.1);
        model.fit(&mut o, Loss::Mse, &ds).verbose(0).run()
    });
    p.run("evaluate an empty dataset", || {
        let empty = ds.narrow(0, 0)?;
        model.evaluate(&empty, Loss::CrossEntropy)
    });
    p.run("predict on nothing", || model.predict(&x(&[0, 2])));
    p.run("predict on a 0-d", || model.predict(&x(&[])));
    p.run("save_safetensors to a folder", || {
        nn::save_safetensors(&model, &dir)
    });
    for (name, bytes) in [
        ("empty", &b""[..]),
        ("huge header", &b"\xff\xff\xff\xff\xff\xff\xff\x7f{}"[..]),
        ("header past the end", &b"\x10\x00\x00\x00\x00\x00\x00\x00{}"[..]),
        ("not json", &b"\x04\x00\x00\x00\x00\x00\x00\x00nope"[..]),
        (
            "offsets past the data",
            &b"\x3c\x00\x00\x00\x00\x00\x00\x00{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,99]}}"[..],
        ),
    ] {
        let path = dir.join(format!("{}.safetensors", name.replace(' ', "-")));
        std::fs::write(&path, bytes).unwrap();
        p.run(&format!("load {name} safetensors"), || nn::safetensors::load(&path));
        p.run(&format!("load_safetensors {name}"), || nn::load_safetensors(&model, &path));
    }

    // Plots, images, Mandelbrot.
    let nan = [f64::NAN, f64::INFINITY, -1.0, 0.0];
    p.run("Figure of NaN and inf on log axes", || {
        Figure::new("t")
            .log_x()
            .log_y()
            .line("a", &nan, &nan)
            .to_svg()
    });
    p.run("Figure of an empty series", || {
        Figure::new("t")
            .scatter::<f64, f64>("a", &[], &[])
            .vline(f64::NAN, "v")
            .to_svg()
    });
    p.run("Figure of size 0", || {
        Figure::new("")
            .size(0, 0)
            .line("a", &[1.0], &[2.0])
            .to_svg()
    });
    p.run("Figure with nothing", || Figure::new("t").to_svg());
    p.run("bar_chart of nothing", || {
        bar_chart::<&str, f64>("t", &[], &[]).to_svg()
    });
    p.run("bar_chart of NaN on a log axis", || {
        bar_chart("t", &["a", "b", "c"], &[f64::NAN, 0.0, -5.0])
            .log_y()
            .to_svg()
    });
    p.run("crossover_plot of nothing", || {
        crossover_plot::<f64, f64>(&[], &[], &[]).to_svg()
    });
    p.run("short_number of odd values", || {
        [f64::NAN, f64::INFINITY, -f64::INFINITY, 1e300, -1e-300, 0.0]
            .map(short_number)
            .join(" ")
    });
    p.run("RgbImage 0x0 to PNG", || RgbImage::new(0, 0).to_png());
    p.run("RgbImage 0x5 to PNG", || RgbImage::new(0, 5).to_png());
    p.run("RgbImage of NaN values", || {
        RgbImage::from_values(
            2,
            1,
            &[f64::NAN, f64::INFINITY],
            f64::NAN,
            0.0,
            Colormap::Viridis,
        )
        .to_png()
    });
    p.run("Colormap at NaN", || Colormap::Viridis.color(f64::NAN));
    p.run("make_grid with a huge padding", || {
        vision::make_grid(&x(&[2, 1, 3, 3]), 2, usize::MAX / 2, 0.0)
    });
    p.run("make_grid with a huge nrow", || {
        vision::make_grid(&x(&[2, 3, 3, 3]), usize::MAX, 2, 0.0)
    });
    p.run("make_grid of empty images", || {
        vision::make_grid(&x(&[3, 1, 0, 0]), 2, 0, 0.0)
    });
    p.run("make_grid of a transposed view", || {
        vision::make_grid(&x(&[2, 1, 3, 4]).transpose(2, 3)?, 2, 1, 0.0)
    });
    p.run("to_image of an empty picture", || {
        vision::to_image(&x(&[3, 0, 4]))?.scaled(0).to_png();
        Ok::<(), Error>(())
    });
    p.run("RgbImage scaled by a huge factor", || {
        assert_eq!(RgbImage::new(3, 2).scaled(usize::MAX).width, 3 * 5461);
        RgbImage::new(0, 0).scaled(usize::MAX).to_png()
    });
    p.run("Mandelbrot 0x0", || {
        Mandelbrot::new()
            .size(0, 0)
            .cpu_serial()
            .map(|m| m.to_png())
    });
    p.run("Mandelbrot 0 iterations", || {
        Mandelbrot::new()
            .size(8, 8)
            .iterations(0)
            .cpu_parallel()
            .map(|m| (m.to_png(), m.inside_fraction()))
    });
    p.run("Mandelbrot NaN region", || {
        Mandelbrot::new()
            .size(4, 4)
            .region(f64::NAN, 1.0, 2.0, -2.0)
            .cpu_serial()
            .map(|m| m.to_png())
    });
    p.run("Mandelbrot zoom 0", || {
        Mandelbrot::new()
            .size(4, 4)
            .zoom(0.0, 0.0, 0.0)
            .cpu_serial()
    });
    p.run("Mandelbrot differences of other sizes", || {
        let a = Mandelbrot::new().size(4, 4).cpu_serial()?;
        let b = Mandelbrot::new().size(2, 3).cpu_serial()?;
        Ok::<_, Error>(a.differences(&b).len())
    });

    // Mixed precision.
    p.run("autocast in float64", || {
        amp::Autocast::new(CPU)
            .dtype(DType::F64)
            .run(|| x(&[2, 2]).matmul(&x(&[2, 2])))
    });
    p.run("autocast in int64", || {
        amp::Autocast::new(CPU)
            .dtype(DType::I64)
            .run(|| Linear::new(3, 2).forward(&x(&[2, 3])))
    });
    p.run("autocast of mismatched matmul", || {
        amp::autocast(CPU, || x(&[2, 3]).matmul(&x(&[2, 3])))
    });
    p.run("autocast of an int64 matmul with a float one", || {
        amp::autocast(CPU, || {
            Tensor::zeros_dtype([2, 2], DType::I64, CPU)?.matmul(&x(&[2, 2]))
        })
    });
    p.run("autocast of a loss on int64 input", || {
        amp::autocast(CPU, || {
            F::mse_loss(&Tensor::zeros_dtype([3], DType::I64, CPU)?, &x(&[3]))
        })
    });
    p.run("autocast of an empty conv", || {
        amp::autocast(CPU, || Conv2d::new(1, 2, 3).forward(&x(&[0, 1, 5, 5])))
    });
    p.run("autocast of an LSTM on bad input", || {
        amp::autocast(CPU, || nn::LSTM::new(3, 4).forward(&x(&[2, 5])))
    });
    for (name, scale) in [
        ("NaN", f64::NAN),
        ("0", 0.0),
        ("inf", f64::INFINITY),
        ("-1", -1.0),
    ] {
        p.run(&format!("GradScaler with scale {name}"), || {
            let w = nn::Parameter::new(x(&[2])).unwrap();
            let mut opt = SGD::new(vec![w.clone()], 0.1);
            let mut s = amp::GradScaler::new().init_scale(scale).growth_interval(0);
            s.scale(&w.tensor().sum()?)?.backward()?;
            s.step(&mut opt)?;
            s.update()?;
            s.update_to(f64::NAN);
            Ok::<_, Error>(s.get_scale())
        });
    }
    p.run("GradScaler with no gradients", || {
        let w = nn::Parameter::new(x(&[2])).unwrap();
        let mut opt = Adam::new(vec![w], 0.1);
        let mut s = amp::GradScaler::new();
        s.step(&mut opt)?;
        s.update()
    });
    p.run("GradScaler on an int64 loss and an empty one", || {
        let s = amp::GradScaler::new();
        (
            s.scale(&Tensor::zeros_dtype([2], DType::I64, CPU).unwrap()),
            s.scale(&x(&[0])),
        )
    });

    // Timing and progress.
    p.run("bench with 0 repeats", || {
        Bench::new("b").warmup(0).repeats(0).run(|| 1).summary()
    });
    p.run("bench with no time", || {
        Bench::new("b").max_time(Duration::ZERO).run(|| 1).median()
    });
    p.run("bench of a failing step", || {
        Bench::new("b")
            .run(|| Err::<(), _>(Error::Invalid("no".into())))
            .summary()
    });
    p.run("compare nothing", || {
        let c = compare::<BenchResult>(&[]);
        (c.table(), c.speedups(), c.chart().to_svg())
    });
    p.run("compare failed runs", || {
        let a = Bench::new("a").run(|| Err::<(), _>(Error::Invalid("no".into())));
        let b = Bench::new("b").repeats(2).run(|| 1);
        let c = compare(&[a, b]);
        (c.table(), c.speedups(), c.chart().to_svg())
    });
    p.run("Stats of nothing", || Stats::of(&[]).is_none());
    p.run("format_duration of the longest", || {
        format_duration(Duration::MAX)
    });
    p.run("progress over nothing", || {
        progress(Vec::<u8>::new()).total(0).sink(|_| {}).count()
    });
    p.run("progress with a wrong total", || {
        progress(0..10).total(3).sink(|_| {}).count()
    });

    std::panic::set_hook(hook);
    let _ = std::fs::remove_dir_all(&dir);
    println!("{} probes, {} panics", p.count, p.panics.len());
    assert!(p.count > 100, "{}", p.count);
    assert!(p.panics.is_empty(), "panics:\n{}", p.panics.join("\n"));
}
