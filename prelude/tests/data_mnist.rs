//! The MNIST loader on tiny IDX files written here (plain and gzipped), its errors, and the
//! real files when a folder of them is named by GPULAB_MNIST_DIR.

use flate2::{write::GzEncoder, Compression};
use gpulab::data::{self, MNIST_FILES};
use gpulab::DType;
use std::io::Write;
use std::path::{Path, PathBuf};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gpulab-data-mnist-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn idx(dims: &[u32], data: &[u8]) -> Vec<u8> {
    let mut v = vec![0, 0, 8, dims.len() as u8];
    for d in dims {
        v.extend_from_slice(&d.to_be_bytes());
    }
    v.extend_from_slice(data);
    v
}

fn write(dir: &Path, name: &str, bytes: &[u8], gz: bool) {
    if gz {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(bytes).unwrap();
        std::fs::write(dir.join(format!("{name}.gz")), e.finish().unwrap()).unwrap();
    } else {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

/// Train: 3 images of 4x5 (pixel k of image i = 20 i + k), labels 7, 0, 9; test: 2 images,
/// labels 1, 2.
fn tiny_mnist(dir: &Path, gz: bool) {
    let px = |n: usize| -> Vec<u8> { (0..n * 20).map(|k| k as u8).collect() };
    write(dir, MNIST_FILES[0], &idx(&[3, 4, 5], &px(3)), gz);
    write(dir, MNIST_FILES[1], &idx(&[3], &[7, 0, 9]), gz);
    write(dir, MNIST_FILES[2], &idx(&[2, 4, 5], &px(2)), gz);
    write(dir, MNIST_FILES[3], &idx(&[2], &[1, 2]), gz);
}

fn check_tiny(dir: &Path) {
    let (train, test) = data::mnist_u8(dir).unwrap();
    assert_eq!(train.x.shape(), &[3, 1, 4, 5]);
    assert_eq!(train.x.dtype(), DType::U8);
    assert_eq!(train.y.dtype(), DType::I64);
    assert_eq!(train.y.to_vec::<i64>().unwrap(), vec![7, 0, 9]);
    assert_eq!(test.y.to_vec::<i64>().unwrap(), vec![1, 2]);
    let raw = train.x.to_vec::<u8>().unwrap();
    assert_eq!(raw[20 + 7], 27);
    let (train, test) = data::mnist(dir).unwrap();
    assert_eq!(train.x.dtype(), DType::F32);
    assert_eq!(test.x.shape(), &[2, 1, 4, 5]);
    let v = train.x.to_vec::<f32>().unwrap();
    assert!((v[20 + 7] - 27.0 / 255.0).abs() < 1e-7);
    assert!(v.iter().all(|&p| (0.0..=1.0).contains(&p)));
}

#[test]
fn idx_round_trip_plain_and_gzipped() {
    let plain = scratch("plain");
    tiny_mnist(&plain, false);
    check_tiny(&plain);
    let gz = scratch("gz");
    tiny_mnist(&gz, true);
    check_tiny(&gz);
    assert!(data::mnist_files_present(&gz));
    // read_idx gives the file's own shape.
    let t = data::read_idx(gz.join("train-images-idx3-ubyte.gz")).unwrap();
    assert_eq!(t.shape(), &[3, 4, 5]);
}

#[test]
fn a_missing_folder_or_file_says_how_to_download() {
    let nowhere = std::env::temp_dir().join("gpulab-no-such-mnist-folder");
    let err = data::mnist(&nowhere).unwrap_err().to_string();
    assert!(err.contains("does not exist"), "{err}");
    assert!(err.contains(&nowhere.display().to_string()), "{err}");
    assert!(
        err.contains("https://ossci-datasets.s3.amazonaws.com/mnist/"),
        "{err}"
    );
    assert!(err.contains("curl"), "{err}");
    for f in MNIST_FILES {
        assert!(err.contains(f), "{err}");
    }

    let dir = scratch("missing-one");
    tiny_mnist(&dir, false);
    std::fs::remove_file(dir.join("t10k-labels-idx1-ubyte")).unwrap();
    let err = data::mnist(&dir).unwrap_err().to_string();
    assert!(
        err.contains("t10k-labels-idx1-ubyte (or t10k-labels-idx1-ubyte.gz) is missing"),
        "{err}"
    );
    assert!(!data::mnist_files_present(&dir));
}

#[test]
fn bad_idx_files_are_named_in_the_error() {
    // Bad magic.
    let dir = scratch("magic");
    tiny_mnist(&dir, false);
    std::fs::write(dir.join(MNIST_FILES[0]), b"PK\x03\x04 not an idx file").unwrap();
    let err = data::mnist(&dir).unwrap_err().to_string();
    assert!(err.contains("train-images-idx3-ubyte"), "{err}");
    assert!(err.contains("magic"), "{err}");

    // Truncated data.
    let dir = scratch("truncated");
    tiny_mnist(&dir, false);
    let mut bytes = idx(&[3, 4, 5], &[0; 60]);
    bytes.truncate(bytes.len() - 7);
    std::fs::write(dir.join(MNIST_FILES[0]), bytes).unwrap();
    let err = data::mnist(&dir).unwrap_err().to_string();
    assert!(err.contains("train-images-idx3-ubyte"), "{err}");
    assert!(err.contains("truncated"), "{err}");
    assert!(err.contains("53"), "{err}");

    // Counts that disagree between images and labels.
    let dir = scratch("count");
    tiny_mnist(&dir, true);
    write(&dir, MNIST_FILES[3], &idx(&[3], &[1, 2, 3]), true);
    let err = data::mnist(&dir).unwrap_err().to_string();
    assert!(
        err.contains("holds 2 images but") && err.contains("holds 3 labels"),
        "{err}"
    );
    assert!(err.contains("t10k-labels-idx1-ubyte.gz"), "{err}");

    // A broken gzip stream.
    let dir = scratch("badgz");
    tiny_mnist(&dir, true);
    let p = dir.join("train-labels-idx1-ubyte.gz");
    let mut b = std::fs::read(&p).unwrap();
    b.truncate(12);
    std::fs::write(&p, b).unwrap();
    let err = data::mnist(&dir).unwrap_err().to_string();
    assert!(
        err.contains("train-labels-idx1-ubyte.gz") && err.contains("gzip"),
        "{err}"
    );
}

#[test]
fn mnist_or_synthetic_falls_back_only_when_files_are_absent() {
    let nowhere = std::env::temp_dir().join("gpulab-no-such-mnist-folder-2");
    let (train, test) = data::mnist_or_synthetic(&nowhere, 50, 20, 1).unwrap();
    assert_eq!(train.x.shape(), &[50, 1, 28, 28]);
    assert_eq!(test.len(), 20);
    let dir = scratch("present");
    tiny_mnist(&dir, false);
    let (train, _) = data::mnist_or_synthetic(&dir, 50, 20, 1).unwrap();
    assert_eq!(train.x.shape(), &[3, 1, 4, 5]);
    // Present but broken is an error, not a silent fallback.
    std::fs::write(dir.join(MNIST_FILES[1]), b"junk").unwrap();
    assert!(data::mnist_or_synthetic(&dir, 50, 20, 1).is_err());
}

/// The real files, when GPULAB_MNIST_DIR names a folder holding them.
#[test]
#[ignore = "needs the MNIST files: set GPULAB_MNIST_DIR and run with --ignored"]
fn real_mnist_has_its_known_shapes() {
    let dir = std::env::var("GPULAB_MNIST_DIR").expect("GPULAB_MNIST_DIR");
    let (train, test) = data::mnist(dir).unwrap();
    assert_eq!(train.x.shape(), &[60000, 1, 28, 28]);
    assert_eq!(test.x.shape(), &[10000, 1, 28, 28]);
    assert_eq!(train.y.to_vec::<i64>().unwrap()[..5], [5, 0, 4, 1, 9]);
}
