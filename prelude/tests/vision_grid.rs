//! `vision::make_grid` against torchvision's layout, computed by hand, and `vision::to_image`'s
//! pixel values and errors.

use gpulab::*;

/// A batch [n, c, h, w] whose every pixel holds `100 * image + 10 * channel + (y * w + x)`,
/// so any value in the grid says where it came from.
fn labelled(n: usize, c: usize, h: usize, w: usize) -> Tensor {
    let mut v = Vec::new();
    for k in 0..n {
        for ch in 0..c {
            for p in 0..h * w {
                v.push((100 * k + 10 * ch + p) as f32);
            }
        }
    }
    Tensor::from_vec(v, [n, c, h, w], Device::Cpu).unwrap()
}

#[test]
fn make_grid_lays_images_out_as_torchvision_does() {
    // 5 RGB images of 2 x 3 in rows of 2 with padding 1: 3 rows of 2 cells, each cell 3 x 4,
    // plus the leading padding: [3, 3*3+1, 2*4+1] = [3, 10, 9].
    let (h, w, pad) = (2, 3, 1);
    let grid = vision::make_grid(&labelled(5, 3, h, w), 2, pad, -1.0).unwrap();
    assert_eq!(grid.shape(), &[3, 10, 9]);
    assert_eq!(grid.dtype(), DType::F32);
    let g = grid.to_vec::<f32>().unwrap();
    let at = |ch: usize, y: usize, x: usize| g[(ch * 10 + y) * 9 + x];
    for k in 0..6 {
        let (top, left) = ((k / 2) * (h + pad) + pad, (k % 2) * (w + pad) + pad);
        for ch in 0..3 {
            for y in 0..h {
                for x in 0..w {
                    // The sixth cell is empty: padding.
                    let want = if k < 5 {
                        (100 * k + 10 * ch + y * w + x) as f32
                    } else {
                        -1.0
                    };
                    assert_eq!(
                        at(ch, top + y, left + x),
                        want,
                        "image {k} ch {ch} ({y}, {x})"
                    );
                }
            }
        }
    }
    // The padding rows and columns hold pad_value.
    for ch in 0..3 {
        for x in 0..9 {
            assert_eq!(at(ch, 0, x), -1.0);
            assert_eq!(at(ch, 3, x), -1.0);
        }
        for y in 0..10 {
            assert_eq!(at(ch, y, 0), -1.0);
            assert_eq!(at(ch, y, 4), -1.0);
        }
    }
}

#[test]
fn make_grid_follows_torchvision_for_grey_single_and_small_batches() {
    // Grey images fill all three channels.
    let grid = vision::make_grid(&labelled(2, 1, 2, 2), 8, 0, 0.0).unwrap();
    assert_eq!(grid.shape(), &[3, 2, 4]); // nrow larger than the batch: one row of 2
    let g = grid.to_vec::<f32>().unwrap();
    assert_eq!(&g[0..8], &g[8..16]);
    assert_eq!(&g[0..8], &[0.0, 1.0, 100.0, 101.0, 2.0, 3.0, 102.0, 103.0]);
    // One image ([C, H, W], [H, W] or a batch of one) comes back unpadded, grey as RGB.
    let one = labelled(1, 3, 2, 2).squeeze(0).unwrap();
    let same = vision::make_grid(&one, 8, 2, 0.0).unwrap();
    assert_eq!(same.shape(), &[3, 2, 2]);
    assert_eq!(same.to_vec::<f32>().unwrap(), one.to_vec::<f32>().unwrap());
    let plane = labelled(1, 1, 2, 3).squeeze(0).unwrap().squeeze(0).unwrap();
    let rgb = vision::make_grid(&plane, 8, 2, 0.0).unwrap();
    assert_eq!(rgb.shape(), &[3, 2, 3]);
    let v = rgb.to_vec::<f32>().unwrap();
    assert_eq!(&v[0..6], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!((&v[6..12], &v[12..18]), (&v[0..6], &v[0..6]));
    let grey = vision::make_grid(&labelled(1, 1, 2, 3), 8, 2, 0.0).unwrap();
    assert_eq!(grey.to_vec::<f32>().unwrap(), v);
    // The dtype is kept (uint8 pictures stay uint8).
    let u8s = Tensor::from_vec(vec![7u8; 8], [2, 1, 2, 2], Device::Cpu).unwrap();
    let grid = vision::make_grid(&u8s, 1, 1, 255.0).unwrap();
    assert_eq!(grid.dtype(), DType::U8);
    assert_eq!(grid.shape(), &[3, 7, 4]);
    // An empty batch is the padding alone.
    let none = Tensor::zeros((0, 3, 4, 4), Device::Cpu).unwrap();
    assert_eq!(
        vision::make_grid(&none, 8, 2, 0.0).unwrap().shape(),
        &[3, 2, 2]
    );
}

#[test]
fn bad_grids_and_pictures_are_clear_errors() {
    let err = |r: Result<Tensor, Error>| r.unwrap_err().to_string();
    let e = err(vision::make_grid(&labelled(2, 2, 3, 3), 8, 2, 0.0));
    assert!(e.contains("1 (grey) or 3 (RGB) channels, got 2"), "{e}");
    let e = err(vision::make_grid(
        &Tensor::ones(5, Device::Cpu).unwrap(),
        8,
        2,
        0.0,
    ));
    assert!(e.contains("[N, C, H, W]") && e.contains("[5]"), "{e}");
    let e = err(vision::make_grid(&labelled(2, 3, 3, 3), 0, 2, 0.0));
    assert!(e.contains("nrow"), "{e}");

    let e = vision::to_image(&labelled(2, 3, 3, 3))
        .unwrap_err()
        .to_string();
    assert!(e.contains("make_grid"), "{e}");
    let ints = Tensor::from_vec(vec![1i64, 2, 3, 4], [2, 2], Device::Cpu).unwrap();
    let e = vision::to_image(&ints).unwrap_err().to_string();
    assert!(e.contains("int64") && e.contains("uint8"), "{e}");
}

#[test]
fn to_image_maps_floats_from_0_to_1_and_uint8_as_they_are() {
    let rgb = Tensor::from_vec(
        vec![0.0f32, 1.0, 0.5, 2.0, -1.0, f32::NAN],
        [3, 1, 2],
        Device::Cpu,
    )
    .unwrap();
    let img = vision::to_image(&rgb).unwrap();
    assert_eq!((img.width, img.height), (2, 1));
    // Pixel 0 takes channel values 0.0, 0.5, -1.0; pixel 1 takes 1.0, 2.0, NaN.
    assert_eq!(img.pixel(0, 0), [0, 128, 0]);
    assert_eq!(img.pixel(1, 0), [255, 255, 0]);

    let grey = Tensor::from_vec(vec![0u8, 9, 200, 255], [1, 2, 2], Device::Cpu).unwrap();
    let img = vision::to_image(&grey).unwrap();
    assert_eq!(img.pixel(1, 0), [9, 9, 9]);
    assert_eq!(img.pixel(0, 1), [200, 200, 200]);
    let big = img.scaled(3);
    assert_eq!((big.width, big.height), (6, 6));
    assert_eq!(big.pixel(5, 2), [9, 9, 9]);
    assert_eq!(big.pixel(2, 3), [200, 200, 200]);

    let mask = Tensor::from_vec(vec![true, false], [1, 2], Device::Cpu).unwrap();
    let img = vision::to_image(&mask).unwrap();
    assert_eq!((img.pixel(0, 0), img.pixel(1, 0)), ([255; 3], [0; 3]));
    // A grid of a float batch goes straight to a picture.
    let batch = Tensor::rand((4, 1, 5, 5), Device::Cpu).unwrap();
    let pic = vision::to_image(&vision::make_grid(&batch, 2, 2, 1.0).unwrap()).unwrap();
    assert_eq!((pic.width, pic.height), (16, 16));
    assert_eq!(pic.pixel(0, 0), [255; 3]); // padding of 1.0 is white
}
