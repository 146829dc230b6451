//! The augmentations of article 04's ImageDataGenerator on small known images.

use gpulab::data::augment::{
    Compose, Fill, RandomHorizontalFlip, RandomShear, RandomShift, RandomZoom, Rescale,
};
use gpulab::data::{Rng, Transform};
use gpulab::{Device, Tensor};

const CPU: Device = Device::Cpu;

/// `[n, c, h, w]` with value 1000 i + 100 ch + 10 y + x at (i, ch, y, x).
fn coded(n: usize, c: usize, h: usize, w: usize) -> Tensor {
    let mut v = Vec::new();
    for i in 0..n {
        for ch in 0..c {
            for y in 0..h {
                for x in 0..w {
                    v.push((1000 * i + 100 * ch + 10 * y + x) as f32);
                }
            }
        }
    }
    Tensor::from_vec(v, [n, c, h, w], CPU).unwrap()
}

#[test]
fn flip_with_p_one_mirrors_exactly_and_twice_is_identity() {
    let x = coded(2, 3, 4, 5);
    let f = RandomHorizontalFlip::new(1.0);
    let once = f.apply(&x, &mut Rng::new(0)).unwrap();
    assert_eq!(once.shape(), x.shape());
    let a = x.to_vec::<f32>().unwrap();
    let b = once.to_vec::<f32>().unwrap();
    for row in 0..2 * 3 * 4 {
        for col in 0..5 {
            assert_eq!(b[row * 5 + col], a[row * 5 + 4 - col]);
        }
    }
    let twice = f.apply(&once, &mut Rng::new(1)).unwrap();
    assert_eq!(twice.to_vec::<f32>().unwrap(), a);
    // p = 0 leaves every image alone; p = 0.5 flips some and not others of 64.
    let none = RandomHorizontalFlip::new(0.0)
        .apply(&x, &mut Rng::new(0))
        .unwrap();
    assert_eq!(none.to_vec::<f32>().unwrap(), a);
    let many = coded(64, 1, 2, 3);
    let half = RandomHorizontalFlip::new(0.5)
        .apply(&many, &mut Rng::new(5))
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let flipped = (0..64)
        .filter(|i| half[i * 6] == (1000 * i + 2) as f32)
        .count();
    assert!((16..=48).contains(&flipped), "{flipped} of 64 flipped");
}

#[test]
fn shift_moves_a_known_pixel_by_whole_pixels() {
    // One bright pixel at (y=4, x=4) of a 9x9 image; shifts up to 2 pixels each way.
    let mut v = vec![0f32; 81];
    v[4 * 9 + 4] = 1.0;
    let x = Tensor::from_vec(v, [1, 1, 9, 9], CPU).unwrap();
    let s = RandomShift::new(0.25, 0.25);
    let mut seen = std::collections::HashSet::new();
    let mut rng = Rng::new(3);
    for _ in 0..40 {
        let out = s.apply(&x, &mut rng).unwrap().to_vec::<f32>().unwrap();
        // Exactly one pixel is lit, with its full value (whole-pixel shift, no blur).
        let lit: Vec<usize> = (0..81).filter(|&k| out[k] != 0.0).collect();
        assert_eq!(lit.len(), 1, "{out:?}");
        assert_eq!(out[lit[0]], 1.0);
        let (y, x) = (lit[0] / 9, lit[0] % 9);
        assert!(
            (2..=6).contains(&y) && (2..=6).contains(&x),
            "moved to ({y}, {x})"
        );
        seen.insert((y, x));
    }
    assert!(
        seen.len() > 5,
        "only {} distinct shifts in 40 draws",
        seen.len()
    );
    // Zero fill vs edge fill: shifting a constant image keeps it constant only with Edge.
    let ones = Tensor::ones((4, 1, 6, 6), CPU).unwrap();
    let edge = RandomShift::new(0.4, 0.4).fill(Fill::Edge);
    let out = edge.apply(&ones, &mut Rng::new(9)).unwrap();
    assert!(out.to_vec::<f32>().unwrap().iter().all(|&v| v == 1.0));
    let zero = RandomShift::new(0.4, 0.4)
        .apply(&ones, &mut Rng::new(9))
        .unwrap();
    assert!(zero.to_vec::<f32>().unwrap().contains(&0.0));
}

#[test]
fn zoom_and_shear_keep_the_shape_and_change_the_content() {
    let x = Tensor::rand((3, 2, 10, 12), CPU).unwrap();
    for t in [
        Box::new(RandomZoom::new(0.3)) as Box<dyn Transform>,
        Box::new(RandomShear::new(20.0)),
    ] {
        let out = t.apply(&x, &mut Rng::new(4)).unwrap();
        assert_eq!(out.shape(), x.shape(), "{}", t.name());
        assert_ne!(out.to_vec::<f32>().unwrap(), x.to_vec::<f32>().unwrap());
    }
    // Zooming in on a centred square makes it bigger: more bright pixels than before.
    let mut v = vec![0f32; 400];
    for y in 7..13 {
        for x in 7..13 {
            v[y * 20 + x] = 1.0;
        }
    }
    let sq = Tensor::from_vec(v, [1, 1, 20, 20], CPU).unwrap();
    let mut rng = Rng::new(0);
    let mut grew = 0;
    for _ in 0..10 {
        let out = RandomZoom::new(0.5).apply(&sq, &mut rng).unwrap();
        let bright = out
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .filter(|&&p| p > 0.5)
            .count();
        if bright > 36 {
            grew += 1;
        }
    }
    assert!((1..10).contains(&grew), "{grew} of 10 zooms magnified");
}

#[test]
fn the_same_seed_gives_the_same_augmented_batch() {
    let x = Tensor::rand((8, 3, 16, 16), CPU).unwrap();
    let aug = Compose::new(vec![
        Box::new(RandomShear::new(11.0)),
        Box::new(RandomZoom::new(0.2)),
        Box::new(RandomHorizontalFlip::new(0.5)),
    ])
    .add(RandomShift::new(0.1, 0.1));
    assert_eq!(aug.len(), 4);
    assert!(aug.name().contains("RandomZoom(0.2)"), "{}", aug.name());
    let a = aug.apply(&x, &mut Rng::new(42)).unwrap();
    let b = aug.apply(&x, &mut Rng::new(42)).unwrap();
    let c = aug.apply(&x, &mut Rng::new(43)).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
    assert_ne!(a.to_vec::<f32>().unwrap(), c.to_vec::<f32>().unwrap());
    let r = Rescale(0.5).apply(&x, &mut Rng::new(0)).unwrap();
    assert_eq!(
        r.to_vec::<f32>().unwrap()[7],
        x.to_vec::<f32>().unwrap()[7] * 0.5
    );
}

#[test]
fn bad_input_gets_clear_errors() {
    let flat = Tensor::rand((4, 784), CPU).unwrap();
    let err = RandomHorizontalFlip::new(0.5)
        .apply(&flat, &mut Rng::new(0))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("RandomHorizontalFlip")
            && err.contains("[n, c, h, w]")
            && err.contains("[4, 784]"),
        "{err}"
    );
    let ints = Tensor::from_vec(vec![1i64; 16], [1, 1, 4, 4], CPU).unwrap();
    let err = RandomZoom::new(0.1)
        .apply(&ints, &mut Rng::new(0))
        .unwrap_err()
        .to_string();
    assert!(err.contains("float32") && err.contains("int64"), "{err}");
    let img = Tensor::rand((1, 1, 4, 4), CPU).unwrap();
    let err = RandomZoom::new(1.5)
        .apply(&img, &mut Rng::new(0))
        .unwrap_err()
        .to_string();
    assert!(err.contains("RandomZoom") && err.contains("1.5"), "{err}");
    let err = RandomHorizontalFlip::new(2.0)
        .apply(&img, &mut Rng::new(0))
        .unwrap_err()
        .to_string();
    assert!(err.contains("probability") && err.contains('2'), "{err}");
}

#[test]
#[ignore = "needs a CUDA device"]
fn a_batch_on_the_gpu_comes_back_on_the_gpu() {
    let x = coded(2, 1, 3, 4).to(Device::Cuda(0)).unwrap();
    let out = RandomHorizontalFlip::new(1.0)
        .apply(&x, &mut Rng::new(0))
        .unwrap();
    assert_eq!(out.device(), Device::Cuda(0));
    assert_eq!(out.cpu().unwrap().to_vec::<f32>().unwrap()[0], 3.0);
}
