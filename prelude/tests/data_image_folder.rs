//! image_folder on small PNG and JPEG files written here: classes from sorted subfolder names,
//! colours and sizes as written, and clear errors for what is missing or broken.

use gpulab::data;
use gpulab::DType;
use std::path::{Path, PathBuf};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gpulab-data-imgf-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write_png(path: &Path, w: u32, h: u32, color: png::ColorType, data: &[u8]) {
    let file = std::fs::File::create(path).unwrap();
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), w, h);
    enc.set_color(color);
    enc.set_depth(png::BitDepth::Eight);
    enc.write_header().unwrap().write_image_data(data).unwrap();
}

fn write_jpeg(path: &Path, w: u16, h: u16, rgb: &[u8]) {
    let enc = jpeg_encoder::Encoder::new_file(path, 95).unwrap();
    enc.encode(rgb, w, h, jpeg_encoder::ColorType::Rgb).unwrap();
}

fn solid(w: usize, h: usize, c: [u8; 3]) -> Vec<u8> {
    (0..w * h).flat_map(|_| c).collect()
}

/// dogs/: a red 16x16 PNG and a grey 8x8 PNG; cats/: a blue 20x12 JPEG and a green RGBA PNG;
/// plus a notes.txt that is skipped.
fn make(root: &Path) {
    for c in ["dogs", "cats"] {
        std::fs::create_dir_all(root.join(c)).unwrap();
    }
    write_png(
        &root.join("dogs/a.png"),
        16,
        16,
        png::ColorType::Rgb,
        &solid(16, 16, [255, 0, 0]),
    );
    write_png(
        &root.join("dogs/b.PNG"),
        8,
        8,
        png::ColorType::Grayscale,
        &[128u8; 64],
    );
    write_jpeg(
        &root.join("cats/x.jpg"),
        20,
        12,
        &solid(20, 12, [0, 0, 255]),
    );
    let rgba: Vec<u8> = (0..10 * 10).flat_map(|_| [0u8, 255, 0, 77]).collect();
    write_png(
        &root.join("cats/y.png"),
        10,
        10,
        png::ColorType::Rgba,
        &rgba,
    );
    std::fs::write(root.join("cats/notes.txt"), "not an image").unwrap();
}

#[test]
fn loads_png_and_jpeg_by_class_in_sorted_order() {
    let root = scratch("ok");
    make(&root);
    let (d, classes) = data::image_folder(&root, 6).unwrap();
    assert_eq!(classes, vec!["cats".to_string(), "dogs".to_string()]);
    assert_eq!(d.x.shape(), &[4, 3, 6, 6]);
    assert_eq!((d.x.dtype(), d.y.dtype()), (DType::F32, DType::I64));
    assert_eq!(d.y.to_vec::<i64>().unwrap(), vec![0, 0, 1, 1]);
    let x = d.x.to_vec::<f32>().unwrap();
    let mean = |i: usize, ch: usize| {
        let s = &x[(i * 3 + ch) * 36..(i * 3 + ch + 1) * 36];
        s.iter().sum::<f32>() / 36.0
    };
    // cats/x.jpg is blue (JPEG is lossy: within 0.05), cats/y.png green (alpha dropped),
    // dogs/a.png red, dogs/b.PNG grey 128/255 on all three channels.
    assert!(mean(0, 0) < 0.05 && mean(0, 1) < 0.05 && mean(0, 2) > 0.95);
    assert_eq!((mean(1, 0), mean(1, 1), mean(1, 2)), (0.0, 1.0, 0.0));
    assert_eq!((mean(2, 0), mean(2, 1), mean(2, 2)), (1.0, 0.0, 0.0));
    for ch in 0..3 {
        assert!((mean(3, ch) - 128.0 / 255.0).abs() < 1e-6);
    }
    assert!(x.iter().all(|&p| (0.0..=1.0).contains(&p)));
}

#[test]
fn missing_or_empty_folders_and_broken_files_are_named() {
    let nowhere = std::env::temp_dir().join("gpulab-no-such-image-root");
    let err = data::image_folder(&nowhere, 8).unwrap_err().to_string();
    assert!(
        err.contains("does not exist") && err.contains("gpulab-no-such-image-root"),
        "{err}"
    );

    let flat = scratch("flat");
    write_png(&flat.join("a.png"), 2, 2, png::ColorType::Rgb, &[0; 12]);
    let err = data::image_folder(&flat, 8).unwrap_err().to_string();
    assert!(err.contains("no subfolders"), "{err}");

    let empty = scratch("empty");
    make(&empty);
    std::fs::create_dir_all(empty.join("birds")).unwrap();
    std::fs::write(empty.join("birds/readme.txt"), "x").unwrap();
    let err = data::image_folder(&empty, 8).unwrap_err().to_string();
    assert!(
        err.contains("birds") && err.contains("holds no images"),
        "{err}"
    );

    let broken = scratch("broken");
    make(&broken);
    std::fs::write(broken.join("dogs/c.jpg"), [0xFF, 0xD8, 0xFF, 0x00, 1, 2, 3]).unwrap();
    let err = data::image_folder(&broken, 8).unwrap_err().to_string();
    assert!(err.contains("c.jpg") && err.contains("JPEG"), "{err}");

    let fake = scratch("fake");
    make(&fake);
    std::fs::write(fake.join("cats/z.png"), "plain text, named .png").unwrap();
    let err = data::image_folder(&fake, 8).unwrap_err().to_string();
    assert!(
        err.contains("z.png") && err.contains("neither a PNG nor a JPEG"),
        "{err}"
    );

    let err = data::image_folder(&fake, 0).unwrap_err().to_string();
    assert!(err.contains("size"), "{err}");
}
