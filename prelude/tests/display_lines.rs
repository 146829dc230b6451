//! The display channel's line format (ARCHITECTURE.md, contract 1).
use base64::Engine as _;
use gpulab::display::{clear_line, display_line, evcxr_content, update_line, LINE_PREFIX};
use gpulab::*;
use serde_json::Value;

fn parse(line: &str) -> Value {
    assert!(line.starts_with("\x1egpulab:"), "prefix missing: {line:?}");
    assert!(line.ends_with('\n'));
    let body = &line[LINE_PREFIX.len()..line.len() - 1];
    assert!(!body.contains('\n'), "raw newline inside the JSON");
    serde_json::from_str(body).expect("JSON parses")
}

#[test]
fn display_line_has_op_data_and_id() {
    let html = Html::new("<b>multi\nline</b>");
    let v = parse(&display_line(&html.mime_bundle(), Some("id-1")));
    assert_eq!(v["op"], "display");
    assert_eq!(v["display_id"], "id-1");
    assert_eq!(v["data"]["text/html"], "<b>multi\nline</b>");
    assert!(v["data"]["text/plain"].is_string());
    assert!(v["metadata"].is_object());
}

#[test]
fn display_line_without_id_omits_it() {
    let v = parse(&display_line(&Text::new("hi").mime_bundle(), None));
    assert!(v.get("display_id").is_none());
    assert_eq!(v["data"]["text/plain"], "hi");
}

#[test]
fn update_and_clear_lines() {
    let v = parse(&update_line(&Markdown::new("# t").mime_bundle(), "abc"));
    assert_eq!(v["op"], "update");
    assert_eq!(v["display_id"], "abc");
    assert_eq!(v["data"]["text/markdown"], "# t");
    let c = parse(&clear_line(true));
    assert_eq!(c["op"], "clear");
    assert_eq!(c["wait"], true);
    assert_eq!(parse(&clear_line(false))["wait"], false);
}

#[test]
fn png_is_base64_and_round_trips() {
    // A real 3x2 PNG made with the png crate.
    let mut bytes = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut bytes, 3, 2);
        enc.set_color(png::ColorType::Grayscale);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header().unwrap();
        w.write_image_data(&[0, 50, 100, 150, 200, 250]).unwrap();
    }
    let p = Png::new(bytes.clone());
    assert_eq!(p.dimensions(), Some((3, 2)));
    let v = parse(&display_line(&p.mime_bundle(), Some("x")));
    let b64 = v["data"]["image/png"].as_str().unwrap();
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    assert_eq!(decoded, bytes);
    assert!(v["data"]["text/plain"].as_str().unwrap().contains("3x2"));
}

#[test]
fn metadata_travels() {
    let b = MimeBundle::new()
        .with("text/plain", "x")
        .with_metadata("image/png", "{\"width\": 10,\n \"height\": 5}");
    let v = parse(&display_line(&b, None));
    assert_eq!(v["metadata"]["image/png"]["width"], 10);
    assert_eq!(v["metadata"]["image/png"]["height"], 5);
}

#[test]
fn evcxr_blocks_one_per_mime() {
    let s = evcxr_content(&Svg::new("<svg/>").mime_bundle());
    assert!(s.contains("EVCXR_BEGIN_CONTENT image/svg+xml\n<svg/>\nEVCXR_END_CONTENT\n"));
    assert!(s.contains("EVCXR_BEGIN_CONTENT text/plain\n"));
    assert_eq!(s.matches("EVCXR_BEGIN_CONTENT").count(), 2);
}

#[test]
fn handles_have_distinct_ids() {
    let a = gpulab::display::fresh_display_id();
    let b = gpulab::display::fresh_display_id();
    assert_ne!(a, b);
    assert_eq!(DisplayHandle::from_id("q").id(), "q");
}

#[test]
fn every_awkward_character_survives_the_round_trip() {
    let nasty = "quote \" backslash \\ nl \n cr \r tab \t nul \u{0} esc \u{1b} rs \u{1e} ls \u{2028} é 漢 🚀";
    let line = display_line(&Text::new(nasty).mime_bundle(), Some("id \"x\""));
    let v = parse(&line);
    assert_eq!(v["data"]["text/plain"], nasty);
    assert_eq!(v["display_id"], "id \"x\"");
    // Only the prefix's record separator is raw; the one in the text is escaped.
    assert_eq!(line.matches('\u{1e}').count(), 1);
}
