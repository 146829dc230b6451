//! CPU Mandelbrot: serial and parallel agree; images encode to PNGs of the right size.
use gpulab::*;

fn decode(png_bytes: &[u8]) -> (u32, u32, png::ColorType, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().expect("PNG header decodes");
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).expect("PNG data decodes");
    buf.truncate(info.buffer_size());
    (info.width, info.height, info.color_type, buf)
}

#[test]
fn serial_equals_parallel_in_the_articles_setting() {
    let m = Mandelbrot::default();
    assert_eq!((m.width, m.height, m.max_iter), (1536, 1024, 20));
    let a = m.cpu_serial().unwrap();
    let b = m.cpu_parallel().unwrap();
    assert_eq!(a.counts.len(), 1536 * 1024);
    assert!(a.differences(&b).is_empty());
    assert_eq!(a.counts, b.counts);
    // The picture is neither empty nor full: part of the view is inside the set.
    let inside = a.inside_fraction();
    assert!(inside > 0.1 && inside < 0.5, "inside fraction {inside}");
    assert!(a.counts.iter().all(|&c| c <= 20));
    assert!(a.counts.contains(&0));
}

#[test]
fn serial_equals_parallel_zoomed() {
    let m = Mandelbrot::default()
        .size(300, 200)
        .zoom(-0.7436438870, 0.1318259042, 2000.0)
        .iterations(600);
    let a = m.cpu_serial().unwrap();
    let b = m.cpu_parallel().unwrap();
    assert_eq!(a.counts, b.counts);
    // Deep in the seahorse valley: a spread of counts, not one flat colour.
    let distinct: std::collections::BTreeSet<u32> = a.counts.iter().copied().collect();
    assert!(
        distinct.len() > 50,
        "only {} distinct counts",
        distinct.len()
    );
}

#[test]
fn counts_match_the_direct_formula() {
    let m = Mandelbrot::default().size(48, 32);
    let img = m.cpu_serial().unwrap();
    for &(x, y) in &[(0, 0), (47, 31), (20, 16), (31, 5)] {
        let (cr, ci) = m.point(x, y);
        assert_eq!(
            img.count(x, y),
            gpulab::mandelbrot::escape_count(cr, ci, 20)
        );
    }
    // Row 0 is y_min, column 0 is x_min.
    assert_eq!(m.point(0, 0), (-2.0, -1.0));
}

#[test]
fn png_decodes_to_the_right_size() {
    let img = Mandelbrot::default().size(160, 90).cpu_parallel().unwrap();
    for cmap in [Colormap::Magma, Colormap::Viridis, Colormap::Gray] {
        let bytes = img.clone().colormap(cmap).to_png();
        let (w, h, ct, buf) = decode(&bytes);
        assert_eq!((w, h, ct), (160, 90, png::ColorType::Rgb));
        assert_eq!(buf.len(), 160 * 90 * 3);
    }
    // Gray: inside points are white, points escaping at once are black.
    let gray = img.clone().colormap(Colormap::Gray).to_rgb();
    let (_, _, _, buf) = decode(&gray.to_png());
    assert_eq!(buf, gray.pixels);
    let inside = img
        .counts
        .iter()
        .position(|&c| c == img.params.max_iter)
        .unwrap();
    assert_eq!(&buf[inside * 3..inside * 3 + 3], &[255, 255, 255]);
    let outside = img.counts.iter().position(|&c| c == 0).unwrap();
    assert_eq!(&buf[outside * 3..outside * 3 + 3], &[0, 0, 0]);
}

#[test]
fn shows_as_png_and_saves() {
    let img = Mandelbrot::default()
        .size(64, 40)
        .cpu_serial()
        .unwrap()
        .log_scale(true);
    let b = img.mime_bundle();
    assert!(b.get("image/png").is_some());
    assert!(b.get("text/plain").unwrap().contains("64x40"));
    let path = std::env::temp_dir().join(format!("gpulab-mandel-{}.png", std::process::id()));
    img.save(&path).unwrap();
    let (w, h, _, _) = decode(&std::fs::read(&path).unwrap());
    assert_eq!((w, h), (64, 40));
    std::fs::remove_file(&path).ok();
}

#[test]
fn every_pixel_matches_the_scalar_reference() {
    // Odd width exercises both the 8-lane blocks and the scalar tail of each row.
    let m = Mandelbrot::default()
        .size(203, 61)
        .iterations(300)
        .zoom(-0.5, 0.0, 1.3);
    let img = m.cpu_parallel().unwrap();
    for y in 0..m.height {
        for x in 0..m.width {
            let (cr, ci) = m.point(x, y);
            assert_eq!(
                img.count(x, y),
                gpulab::mandelbrot::escape_count(cr, ci, m.max_iter),
                "pixel ({x}, {y})"
            );
        }
    }
}
