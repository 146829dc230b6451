//! Images in one subfolder per class, as torchvision's `ImageFolder` and Keras'
//! `flow_from_directory` read them (article 04's `training_set/cats`, `training_set/dogs`).

use super::TensorDataset;
use crate::error::Result;
use crate::{Device, Error, Tensor};
use rayon::prelude::*;
use std::path::{Path, PathBuf};

/// The file extensions read (case-insensitive); other files (`.DS_Store`, notes) are skipped,
/// as torchvision does.
pub const IMAGE_EXTENSIONS: [&str; 3] = ["jpg", "jpeg", "png"];

fn is_image(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .map(|e| IMAGE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
        .unwrap_or(false)
}

fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>> {
    let rd = std::fs::read_dir(dir)
        .map_err(|e| Error::Invalid(format!("cannot list {}: {e}", dir.display())))?;
    let mut v: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    v.sort();
    Ok(v)
}

/// Decodes one JPEG or PNG file (by its content, not its name) to 8-bit RGB:
/// `(width, height, rgb bytes)`. Grey images are spread to three channels; alpha is dropped, as
/// torchvision's `convert("RGB")` does.
fn decode_rgb(path: &Path) -> Result<(usize, usize, Vec<u8>)> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::Invalid(format!("cannot read {}: {e}", path.display())))?;
    let bad = |what: &str, e: &dyn std::fmt::Display| {
        Error::Invalid(format!(
            "cannot decode {} as a {what} image: {e}",
            path.display()
        ))
    };
    if bytes.starts_with(&[0x89, b'P', b'N', b'G']) {
        let mut dec = png::Decoder::new(std::io::Cursor::new(&bytes[..]));
        dec.set_transformations(png::Transformations::normalize_to_color8());
        let mut reader = dec.read_info().map_err(|e| bad("PNG", &e))?;
        let size = reader
            .output_buffer_size()
            .ok_or_else(|| bad("PNG", &"the image is too large"))?;
        let mut buf = vec![0u8; size];
        let info = reader.next_frame(&mut buf).map_err(|e| bad("PNG", &e))?;
        let (w, h) = (info.width as usize, info.height as usize);
        let buf = &buf[..info.buffer_size()];
        let channels = info.color_type.samples();
        let rgb: Vec<u8> = match channels {
            1 | 2 => buf
                .chunks_exact(channels)
                .flat_map(|p| [p[0], p[0], p[0]])
                .collect(),
            3 => buf.to_vec(),
            _ => buf
                .chunks_exact(channels)
                .flat_map(|p| [p[0], p[1], p[2]])
                .collect(),
        };
        Ok((w, h, rgb))
    } else if bytes.starts_with(&[0xFF, 0xD8]) {
        let opts = zune_core::options::DecoderOptions::default()
            .jpeg_set_out_colorspace(zune_core::colorspace::ColorSpace::RGB);
        let mut dec = zune_jpeg::JpegDecoder::new_with_options(
            zune_core::bytestream::ZCursor::new(&bytes[..]),
            opts,
        );
        let rgb = dec.decode().map_err(|e| bad("JPEG", &e))?;
        let info = dec.info().ok_or_else(|| bad("JPEG", &"no image header"))?;
        let (w, h) = (info.width as usize, info.height as usize);
        if rgb.len() != w * h * 3 {
            return Err(bad(
                "JPEG",
                &format!("{} bytes decoded for {w}x{h} RGB", rgb.len()),
            ));
        }
        Ok((w, h, rgb))
    } else {
        Err(Error::Invalid(format!(
            "cannot decode {}: it is neither a PNG nor a JPEG file (by its first bytes)",
            path.display()
        )))
    }
}

/// `rgb` (`w` x `h`, interleaved u8) resized to `size` x `size` as planar f32 in [0, 1]
/// (`[3, size, size]`): each output pixel averages the source area it covers when shrinking
/// (no aliasing), and interpolates bilinearly when growing.
fn resize_planar(rgb: &[u8], w: usize, h: usize, size: usize, out: &mut [f32]) {
    let plane = size * size;
    let (sx, sy) = (w as f32 / size as f32, h as f32 / size as f32);
    for oy in 0..size {
        for ox in 0..size {
            let mut acc = [0f32; 3];
            if sx > 1.0 || sy > 1.0 {
                // Box filter over the covered source pixels.
                let (x0, x1) = (
                    (ox as f32 * sx) as usize,
                    (((ox + 1) as f32 * sx).ceil() as usize).clamp(1, w),
                );
                let (y0, y1) = (
                    (oy as f32 * sy) as usize,
                    (((oy + 1) as f32 * sy).ceil() as usize).clamp(1, h),
                );
                let (x0, y0) = (x0.min(x1 - 1), y0.min(y1 - 1));
                for y in y0..y1 {
                    for x in x0..x1 {
                        for (k, a) in acc.iter_mut().enumerate() {
                            *a += rgb[(y * w + x) * 3 + k] as f32;
                        }
                    }
                }
                let n = ((y1 - y0) * (x1 - x0)) as f32;
                for a in acc.iter_mut() {
                    *a /= n;
                }
            } else {
                let fx = ((ox as f32 + 0.5) * sx - 0.5).clamp(0.0, (w - 1) as f32);
                let fy = ((oy as f32 + 0.5) * sy - 0.5).clamp(0.0, (h - 1) as f32);
                let (x0, y0) = (fx as usize, fy as usize);
                let (x1, y1) = ((x0 + 1).min(w - 1), (y0 + 1).min(h - 1));
                let (tx, ty) = (fx - x0 as f32, fy - y0 as f32);
                for (k, a) in acc.iter_mut().enumerate() {
                    let p = |x: usize, y: usize| rgb[(y * w + x) * 3 + k] as f32;
                    let top = p(x0, y0) * (1.0 - tx) + p(x1, y0) * tx;
                    let bottom = p(x0, y1) * (1.0 - tx) + p(x1, y1) * tx;
                    *a = top * (1.0 - ty) + bottom * ty;
                }
            }
            for (k, a) in acc.iter().enumerate() {
                out[k * plane + oy * size + ox] = a / 255.0;
            }
        }
    }
}

/// Loads `root/<class>/<image>` files: one subfolder per class, class index = position of the
/// folder's name in sorted order (torchvision's `ImageFolder`). JPEG and PNG images are decoded,
/// converted to RGB and resized to `size` x `size`: `x` is `[n, 3, size, size]` f32 in [0, 1],
/// `y` is `[n]` i64; returns the class names too. Samples come in class order (shuffle with a
/// `DataLoader` or `split`).
///
/// ```no_run
/// let (train, classes) = gpulab::data::image_folder("dataset/training_set", 64)?;
/// println!("{} images of {:?}", train.len(), classes); // ["cats", "dogs"]
/// # Ok::<(), gpulab::Error>(())
/// ```
pub fn image_folder(root: impl AsRef<Path>, size: usize) -> Result<(TensorDataset, Vec<String>)> {
    let root = root.as_ref();
    if size == 0 {
        return Err(Error::Invalid(
            "image_folder: size must be at least 1 (images are resized to size x size)".into(),
        ));
    }
    if !root.is_dir() {
        return Err(Error::Invalid(format!(
            "image_folder: the folder {} does not exist; it should hold one subfolder per class \
             (e.g. {0}/cats, {0}/dogs) with the JPEG/PNG images inside",
            root.display()
        )));
    }
    let classes: Vec<PathBuf> = sorted_entries(root)?
        .into_iter()
        .filter(|p| p.is_dir())
        .collect();
    if classes.is_empty() {
        return Err(Error::Invalid(format!(
            "image_folder: {} has no subfolders; put the images of each class in a subfolder \
             named after the class (e.g. {0}/cats, {0}/dogs)",
            root.display()
        )));
    }
    let mut files: Vec<(PathBuf, i64)> = Vec::new();
    let mut names = Vec::new();
    for (label, dir) in classes.iter().enumerate() {
        let imgs: Vec<PathBuf> = sorted_entries(dir)?
            .into_iter()
            .filter(|p| p.is_file() && is_image(p))
            .collect();
        if imgs.is_empty() {
            return Err(Error::Invalid(format!(
                "image_folder: the class folder {} holds no images (.jpg, .jpeg or .png)",
                dir.display()
            )));
        }
        names.push(dir.file_name().unwrap().to_string_lossy().into_owned());
        files.extend(imgs.into_iter().map(|p| (p, label as i64)));
    }
    let per = 3 * size * size;
    let mut x = vec![0f32; files.len() * per];
    x.par_chunks_mut(per)
        .zip(files.par_iter())
        .try_for_each(|(out, (path, _))| -> Result<()> {
            let (w, h, rgb) = decode_rgb(path)?;
            if w == 0 || h == 0 {
                return Err(Error::Invalid(format!(
                    "{} is an empty image",
                    path.display()
                )));
            }
            resize_planar(&rgb, w, h, size, out);
            Ok(())
        })?;
    let n = files.len();
    let y: Vec<i64> = files.iter().map(|(_, l)| *l).collect();
    Ok((
        TensorDataset::new(
            Tensor::from_vec(x, [n, 3, size, size], Device::Cpu)?,
            Tensor::from_vec(y, [n], Device::Cpu)?,
        )?,
        names,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resize_keeps_a_flat_colour_and_averages_when_shrinking() {
        let rgb: Vec<u8> = (0..6 * 4).flat_map(|_| [255u8, 0, 51]).collect();
        let mut out = vec![0f32; 3 * 9];
        resize_planar(&rgb, 6, 4, 3, &mut out);
        assert!(out[..9].iter().all(|&v| (v - 1.0).abs() < 1e-6));
        assert!(out[9..18].iter().all(|&v| v.abs() < 1e-6));
        assert!(out[18..].iter().all(|&v| (v - 0.2).abs() < 1e-6));
        // 2x1 black/white shrunk to 1x1 is mid-grey; grown to 4x4 it keeps black and white ends.
        let bw = [0u8, 0, 0, 255, 255, 255];
        let mut one = vec![0f32; 3];
        resize_planar(&bw, 2, 1, 1, &mut one);
        assert!((one[0] - 0.5).abs() < 1e-6);
        let mut big = vec![0f32; 3 * 16];
        resize_planar(&bw, 2, 1, 4, &mut big);
        assert_eq!((big[0], big[3]), (0.0, 1.0));
    }
}
