//! Charts render to well-formed SVG that carries their text.
use gpulab::plot::{crossover_point, short_number};
use gpulab::*;
use std::time::Duration;

fn parse(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).expect("SVG is well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.tag_name().name() == "text")
        .filter_map(|n| n.text().map(|t| t.trim().to_string()))
        .collect()
}

#[test]
fn line_and_scatter_with_legend() {
    let xs: Vec<f64> = (0..20).map(|i| i as f64).collect();
    let ys: Vec<f64> = xs.iter().map(|x| x * x).collect();
    let fig = Figure::new("Squares & <friends>")
        .xlabel("x")
        .ylabel("x squared")
        .line("square", &xs, &ys)
        .scatter("points", &xs, &ys);
    let svg = fig.to_svg();
    let texts = parse(&svg);
    assert!(
        texts.iter().any(|t| t == "Squares & <friends>"),
        "title missing: {texts:?}"
    );
    assert!(texts.iter().any(|t| t == "x squared"));
    assert!(texts.iter().any(|t| t == "square"));
    assert!(texts.iter().any(|t| t == "points"));
    assert!(svg.contains("<polyline"), "a line series draws a polyline");
    assert!(svg.matches("<circle").count() >= 20, "one marker per point");
    let b = fig.mime_bundle();
    assert_eq!(b.get("image/svg+xml"), Some(svg.as_str()));
}

#[test]
fn log_axes_accept_durations_and_integers() {
    let sizes: Vec<usize> = vec![10, 100, 1000, 10_000, 100_000];
    let times: Vec<Duration> = sizes
        .iter()
        .map(|&n| Duration::from_nanos(50 * n as u64))
        .collect();
    let svg = Figure::new("log-log")
        .log_x()
        .log_y()
        .line_points("t", &sizes, &times)
        .to_svg();
    let texts = parse(&svg);
    // Decade ticks appear as compact labels on the log axis.
    assert!(
        texts.iter().any(|t| t == "1e-6" || t == "1e-5"),
        "{texts:?}"
    );
    assert!(texts.iter().any(|t| t == "100" || t == "1000"), "{texts:?}");
}

#[test]
fn non_positive_values_are_dropped_on_log_axes() {
    let svg = Figure::new("zeros")
        .log_y()
        .scatter("", &[1.0, 2.0, 3.0], &[0.0, 1.0, 10.0])
        .to_svg();
    parse(&svg);
    assert_eq!(svg.matches("<circle").count(), 2);
}

#[test]
fn empty_figure_still_renders() {
    parse(&Figure::new("nothing yet").to_svg());
}

#[test]
fn bar_chart_labels_and_values() {
    let chart = bar_chart(
        "Speed-up",
        &["serial", "parallel", "GPU"],
        &[1.0, 1.9, 880.0],
    )
    .ylabel("x faster")
    .value_labels(&["1x", "1.9x", "880x"]);
    let texts = parse(&chart.to_svg());
    for t in [
        "serial", "parallel", "GPU", "1x", "1.9x", "880x", "Speed-up", "x faster",
    ] {
        assert!(texts.iter().any(|s| s == t), "{t} missing in {texts:?}");
    }
    let log = bar_chart("times", &["a", "b"], &[1e-6, 1.0])
        .log_y()
        .to_svg();
    assert_eq!(
        parse(&log)
            .iter()
            .filter(|t| *t == "a" || *t == "b")
            .count(),
        2
    );
    assert!(chart.mime_bundle().get("image/svg+xml").is_some());
}

#[test]
fn crossover_is_found_and_marked() {
    let sizes = [1e2, 1e3, 1e4, 1e5, 1e6];
    // CPU grows linearly; GPU pays a fixed 1 ms then is 100x cheaper per element.
    let cpu: Vec<f64> = sizes.iter().map(|n| n * 1e-8).collect();
    let gpu: Vec<f64> = sizes.iter().map(|n| 1e-3 + n * 1e-10).collect();
    let x = crossover_point(&sizes, &cpu, &gpu).unwrap();
    assert!(x > 1e4 && x < 1e6, "crossover at {x}");
    let fig = crossover_plot(&sizes, &cpu, &gpu);
    let texts = parse(&fig.to_svg());
    assert!(
        texts.iter().any(|t| t.contains("GPU wins above")),
        "{texts:?}"
    );
    assert!(texts.iter().any(|t| t == "GPU incl. transfers"));
    // GPU never faster: no crossover. Always faster: the first size.
    assert_eq!(crossover_point(&sizes, &cpu, &[1.0; 5]), None);
    assert_eq!(crossover_point(&sizes, &cpu, &[1e-12; 5]), Some(1e2));
}

#[test]
fn several_figures_each_get_their_own_display_line() {
    let a = Figure::new("a").line("x", &[1, 2], &[1, 2]);
    let b = Figure::new("b").line("y", &[1, 2], &[2, 1]);
    let la = gpulab::display::display_line(&a.mime_bundle(), Some("1"));
    let lb = gpulab::display::display_line(&b.mime_bundle(), Some("2"));
    assert_ne!(la, lb);
    assert_eq!(la.matches('\n').count(), 1);
}

#[test]
fn tick_numbers() {
    assert_eq!(short_number(0.001), "0.001");
    assert_eq!(short_number(1e-9), "1e-9");
    assert_eq!(short_number(1.5e-9), "1.5e-9");
}

/// Mismatched lengths in the chained builders stop the cell with a message that counts both
/// sides (the kernel shows a panic as the cell's error and keeps the session's variables).
#[test]
#[should_panic(expected = "series \"gpu\": 3 x values but 2 y values")]
fn a_series_with_fewer_ys_than_xs_names_both_counts() {
    let _ = Figure::new("t").line("gpu", &[1.0, 2.0, 3.0], &[1.0, 2.0]);
}

#[test]
#[should_panic(expected = "bar_chart \"t\": 2 labels but 1 values")]
fn a_bar_chart_with_a_missing_value_names_both_counts() {
    let _ = bar_chart("t", &["cpu", "cuda"], &[1.0]);
}

#[test]
#[should_panic(expected = "image_from_counts: 3 counts for a 4x2 view, which has 8 pixels")]
fn counts_that_do_not_fill_the_view_name_its_size() {
    let _ = Mandelbrot::new().size(4, 2).image_from_counts(vec![0; 3]);
}
