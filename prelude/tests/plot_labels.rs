//! Labels a reader sees: clean tick numbers, every decade on a log axis, bars without a spare
//! slot, bar names and marker labels that do not run into other text.
use gpulab::plot::short_number;
use gpulab::*;

/// One `<text>` element with its anchor point and an estimated extent.
#[derive(Debug, Clone)]
struct Label {
    text: String,
    x: f64,
    y: f64,
    size: f64,
    anchor: String,
    /// plotters' vertical alignment: "0.76em" hangs below y, "-0.5ex" sits on it, "0.5ex" centres.
    dy: String,
    rotated: bool,
}

impl Label {
    /// A generous box: 0.6 em per character is wider than common sans-serif fonts, so a
    /// layout that passes here also passes in the browser.
    fn bbox(&self) -> (f64, f64, f64, f64) {
        let w = self.text.chars().count() as f64 * self.size * 0.6;
        let x0 = match self.anchor.as_str() {
            "middle" => self.x - w / 2.0,
            "end" => self.x - w,
            _ => self.x,
        };
        let y0 = match self.dy.as_str() {
            "0.76em" => self.y,
            "-0.5ex" => self.y - self.size,
            _ => self.y - self.size / 2.0,
        };
        (x0, y0, x0 + w, y0 + self.size)
    }
}

fn labels(svg: &str) -> Vec<Label> {
    let doc = roxmltree::Document::parse(svg).expect("SVG is well-formed XML");
    doc.descendants()
        .filter(|n| n.tag_name().name() == "text")
        .map(|n| Label {
            text: n.text().unwrap_or("").trim().to_string(),
            x: n.attribute("x").unwrap().parse().unwrap(),
            y: n.attribute("y").unwrap().parse().unwrap(),
            size: n.attribute("font-size").unwrap().parse().unwrap(),
            anchor: n.attribute("text-anchor").unwrap_or("start").to_string(),
            dy: n.attribute("dy").unwrap_or("").to_string(),
            rotated: n.attribute("transform").is_some(),
        })
        .collect()
}

fn rects(svg: &str) -> Vec<(f64, f64, f64, f64, String, String)> {
    let doc = roxmltree::Document::parse(svg).unwrap();
    doc.descendants()
        .filter(|n| n.tag_name().name() == "rect")
        .map(|n| {
            let f = |k: &str| n.attribute(k).unwrap().parse::<f64>().unwrap();
            let (x, y) = (f("x"), f("y"));
            (
                x,
                y,
                x + f("width"),
                y + f("height"),
                n.attribute("fill").unwrap_or("").to_string(),
                n.attribute("stroke").unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn overlap(a: (f64, f64, f64, f64), b: (f64, f64, f64, f64)) -> bool {
    a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3
}

/// Tick labels of the y axis: right-aligned text left of the plot.
fn y_ticks(ls: &[Label]) -> Vec<Label> {
    ls.iter()
        .filter(|l| l.anchor == "end" && !l.rotated)
        .cloned()
        .collect()
}

/// Tick labels of the x axis: centred text hanging below the plot (the title comes first).
fn x_ticks(ls: &[Label]) -> Vec<Label> {
    ls[1..]
        .iter()
        .filter(|l| l.anchor == "middle" && l.dy == "0.76em" && !l.rotated)
        .cloned()
        .collect()
}

#[test]
fn linear_ticks_have_no_float_noise() {
    let xs: Vec<f64> = (0..=200)
        .map(|i| i as f64 * std::f64::consts::TAU / 200.0)
        .collect();
    let ys: Vec<f64> = xs.iter().map(|x| x.sin()).collect();
    let ls = labels(
        &Figure::new("sin")
            .xlabel("x")
            .line("sin", &xs, &ys)
            .to_svg(),
    );
    let ticks: Vec<String> = y_ticks(&ls).into_iter().map(|l| l.text).collect();
    assert!(
        ticks.iter().any(|t| t == "0"),
        "no plain zero tick: {ticks:?}"
    );
    for t in &ticks {
        assert!(
            t.len() <= 4 && !t.contains('e') && t != "-0",
            "noisy tick {t:?} in {ticks:?}"
        );
        assert!(t.parse::<f64>().is_ok(), "{t:?}");
    }
    // A range far from zero keeps its digits, and one in the thousands uses the k suffix.
    let ls = labels(
        &Figure::new("r")
            .line("", &[0.0, 1.0], &[1000.3, 1000.9])
            .to_svg(),
    );
    let ticks: Vec<String> = y_ticks(&ls).into_iter().map(|l| l.text).collect();
    let distinct: std::collections::HashSet<&String> = ticks.iter().collect();
    assert_eq!(distinct.len(), ticks.len(), "ticks repeat: {ticks:?}");
    let ls = labels(
        &Figure::new("k")
            .line("", &[0.0, 1.0], &[0.0, 250_000.0])
            .to_svg(),
    );
    let ticks: Vec<String> = y_ticks(&ls).into_iter().map(|l| l.text).collect();
    assert!(
        ticks.iter().any(|t| t == "100k") && ticks.iter().any(|t| t == "0"),
        "{ticks:?}"
    );
}

#[test]
fn log_axes_label_every_decade_including_the_lowest() {
    // The notebook's sweep: 64² … 1024² pixels, times from a millisecond to half a second.
    let n: Vec<f64> = [64.0f64, 128.0, 256.0, 512.0, 1024.0]
        .iter()
        .map(|s| s * s)
        .collect();
    let t: Vec<f64> = n.iter().map(|n| 1e-3 * n / 4096.0 * 1.9).collect();
    let svg = Figure::new("sweep")
        .log_x()
        .log_y()
        .line_points("CPU", &n, &t)
        .to_svg();
    let ls = labels(&svg);
    let ys: Vec<String> = y_ticks(&ls).into_iter().map(|l| l.text).collect();
    assert_eq!(ys, ["1e-3", "0.01", "0.1", "1"], "y decades");
    let xs: Vec<String> = x_ticks(&ls).into_iter().map(|l| l.text).collect();
    assert_eq!(xs, ["1k", "10k", "100k", "1M", "10M"], "x decades");
    // Several decades below one, where 10^k is least exact in binary.
    for lo in -12..0 {
        let svg = Figure::new("d")
            .log_y()
            .line(
                "",
                &[1.0, 2.0],
                &[10f64.powi(lo) * 1.5, 10f64.powi(lo + 3) * 0.9],
            )
            .to_svg();
        let ys: Vec<String> = y_ticks(&labels(&svg)).into_iter().map(|l| l.text).collect();
        assert_eq!(ys.len(), 4, "decade 1e{lo}: {ys:?}");
        assert_eq!(
            ys[0].parse::<f64>().unwrap(),
            10f64.powi(lo),
            "lowest decade 1e{lo}: {ys:?}"
        );
    }
    // Less than a decade of data still gets more than one label.
    let svg = Figure::new("narrow")
        .log_y()
        .line("", &[1.0, 2.0], &[0.3, 0.9])
        .to_svg();
    let ys = y_ticks(&labels(&svg));
    assert!(ys.len() >= 2, "{ys:?}");
}

const LONG: [&str; 4] = [
    "CPU serial (1 thread)",
    "CPU parallel (all cores)",
    "GPU (CUDA) incl. transfers",
    "GPU kernel only",
];

/// Rectangles filled with a palette colour: the bars.
fn bars(svg: &str) -> Vec<(f64, f64, f64, f64)> {
    rects(svg)
        .into_iter()
        .filter(|r| r.4 != "#FFFFFF" && r.4 != "none" && !r.4.is_empty())
        .map(|r| (r.0, r.1, r.2, r.3))
        .collect()
}

#[test]
fn bars_fill_the_axis_without_a_spare_slot() {
    for n in 1..=4 {
        let values: Vec<f64> = (1..=n).map(|i| i as f64).collect();
        let svg = bar_chart("b", &LONG[..n], &values).to_svg();
        let ls = labels(&svg);
        assert!(
            ls.iter().all(|l| !l.text.is_empty()),
            "empty label in {ls:?}"
        );
        let bs = bars(&svg);
        assert_eq!(bs.len(), n);
        let width: Vec<f64> = bs.iter().map(|b| b.2 - b.0).collect();
        let gap = bs.windows(2).map(|w| w[1].0 - w[0].2).fold(0.0, f64::max);
        // Plot area: the horizontal grid lines span it.
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let right = doc
            .descendants()
            .filter(|n| n.tag_name().name() == "line" && n.attribute("y1") == n.attribute("y2"))
            .map(|n| n.attribute("x2").unwrap().parse::<f64>().unwrap())
            .fold(0.0, f64::max);
        let tail = right - bs.last().unwrap().2;
        assert!(
            tail <= gap.max(16.0) + 2.0,
            "{n} bars: {tail}px after the last bar (bars {width:?} wide)"
        );
    }
}

#[test]
fn long_bar_labels_do_not_overlap() {
    for (n, w) in [(4, 640), (3, 400), (4, 400), (8, 640)] {
        let names: Vec<&str> = (0..n).map(|i| LONG[i % 4]).collect();
        let values: Vec<f64> = (1..=n).map(|i| i as f64).collect();
        let svg = bar_chart("Times", &names, &values)
            .ylabel("s")
            .size(w, 400)
            .to_svg();
        let ls = labels(&svg);
        let plot_bottom = bars(&svg).iter().map(|b| b.3).fold(0.0, f64::max);
        let under: Vec<&Label> = ls
            .iter()
            .filter(|l| l.y >= plot_bottom && !l.rotated)
            .collect();
        // Every word of every name is shown somewhere under the bars.
        for name in &names {
            for word in name.split(' ') {
                assert!(
                    under.iter().any(|l| l.text.contains(word)),
                    "{word:?} missing: {under:?}"
                );
            }
        }
        for (i, a) in under.iter().enumerate() {
            let ba = a.bbox();
            assert!(
                ba.0 >= -1.0 && ba.2 <= w as f64 + 1.0,
                "{n} bars at {w}px: {a:?} leaves the picture"
            );
            for b in &under[i + 1..] {
                assert!(
                    !overlap(ba, b.bbox()),
                    "{n} bars at {w}px: {a:?} overlaps {b:?}"
                );
            }
        }
    }
}

#[test]
fn vline_label_avoids_title_and_legend() {
    let sizes = [1e2, 1e3, 1e4, 1e5, 1e6];
    // The GPU wins from the second size on, so the marker sits at the left, under the legend.
    let cpu: Vec<f64> = sizes.iter().map(|n| n * 1e-7).collect();
    let gpu: Vec<f64> = sizes.iter().map(|n| 2e-5 + n * 1e-10).collect();
    for fig in [
        crossover_plot(&sizes, &cpu, &gpu),
        crossover_plot(&sizes, &cpu, &gpu).size(420, 260),
        Figure::new("lines")
            .line("a", &[0.0, 10.0], &[0.0, 1.0])
            .vline(0.5, "left edge marker")
            .vline(9.5, "right edge marker"),
    ] {
        let svg = fig.to_svg();
        let ls = labels(&svg);
        let legend = rects(&svg)
            .into_iter()
            .find(|r| r.5 == "#C8C8C8")
            .map(|r| (r.0, r.1, r.2, r.3))
            .unwrap();
        let marks: Vec<&Label> = ls
            .iter()
            .filter(|l| l.text.contains("GPU wins") || l.text.contains("marker"))
            .collect();
        assert!(!marks.is_empty(), "{ls:?}");
        let title = &ls[0];
        for m in &marks {
            let b = m.bbox();
            assert!(!overlap(b, legend), "{m:?} over the legend {legend:?}");
            assert!(!overlap(b, title.bbox()), "{m:?} over the title {title:?}");
            assert!(b.0 >= 0.0 && b.2 <= 640.0, "{m:?} leaves the picture");
        }
    }
}

#[test]
fn label_numbers_keep_three_significant_digits() {
    for (v, s) in [
        (0.0046, "0.0046"),
        (0.00461234, "0.00461"),
        (35.925, "35.9"),
        (884.8, "885"),
        (999.96, "1k"),
        (1234.5, "1.23k"),
        (101_040.0, "101k"),
        (2.5e6, "2.5M"),
        (0.5, "0.5"),
        (-0.25, "-0.25"),
        (4.07, "4.07"),
        (0.00046, "4.6e-4"),
        (1.0, "1"),
        (0.0, "0"),
    ] {
        assert_eq!(short_number(v), s, "{v}");
    }
    let texts: Vec<String> = labels(&bar_chart("t", &["cpu", "gpu"], &[4.07, 0.0046]).to_svg())
        .into_iter()
        .map(|l| l.text)
        .collect();
    assert!(texts.iter().any(|t| t == "0.0046"), "{texts:?}");
}
