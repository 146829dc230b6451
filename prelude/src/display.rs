//! Rich output from session code, modelled on IPython.display.
//!
//! A value that knows how to show itself implements [`Rich`] and returns a [`MimeBundle`].
//! [`display`] sends the bundle to the kernel as a `display_data` message through the
//! one-line stdout protocol in ARCHITECTURE.md (contract 1); the returned [`DisplayHandle`]
//! can replace that output later ([`DisplayHandle::update`]), which is how progress bars and
//! live plots redraw in place. A `Rich` value left as a cell's last expression is shown as
//! the cell's result through evcxr's own `EVCXR_BEGIN_CONTENT` convention ([`EvcxrDisplay`]).
//!
//! The functions that build the protocol text (`*_line`, [`evcxr_content`]) are pure so tests
//! can check the exact bytes without capturing stdout.

use base64::Engine as _;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// Prefix of a display-channel line: ASCII record separator, then `gpulab:`.
pub const LINE_PREFIX: &str = "\x1egpulab:";

/// One piece of rich output: MIME type → content (binary types base64-encoded), plus the
/// optional metadata Jupyter accepts (e.g. key `image/png`, value `{"width": 640}`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MimeBundle {
    pub data: BTreeMap<String, String>,
    /// Metadata key → value as JSON text (inserted into the message verbatim).
    pub metadata: BTreeMap<String, String>,
}

impl MimeBundle {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) one representation; text types are stored as given.
    pub fn with(mut self, mime: &str, content: impl Into<String>) -> Self {
        self.data.insert(mime.to_string(), content.into());
        self
    }

    /// Adds a binary representation, base64-encoding it as Jupyter expects.
    pub fn with_binary(self, mime: &str, bytes: &[u8]) -> Self {
        self.with(
            mime,
            base64::engine::general_purpose::STANDARD.encode(bytes),
        )
    }

    /// A PNG image with its plain-text stand-in (what a terminal or a text-only front end shows).
    pub fn png(png: &[u8], text: impl Into<String>) -> Self {
        Self::new()
            .with_binary("image/png", png)
            .with("text/plain", text)
    }

    /// Adds a metadata entry; `json` must be valid JSON text, e.g. `r#"{"width": 640}"#`.
    pub fn with_metadata(mut self, key: &str, json: impl Into<String>) -> Self {
        self.metadata.insert(key.to_string(), json.into());
        self
    }

    pub fn get(&self, mime: &str) -> Option<&str> {
        self.data.get(mime).map(String::as_str)
    }
}

/// Anything that can show itself in a notebook as one or more MIME representations.
///
/// Always include `text/plain`: it is what consoles and `nbconvert --to script` fall back on.
pub trait Rich {
    fn mime_bundle(&self) -> MimeBundle;
}

impl<T: Rich + ?Sized> Rich for &T {
    fn mime_bundle(&self) -> MimeBundle {
        (**self).mime_bundle()
    }
}

impl<T: Rich + ?Sized> Rich for Box<T> {
    fn mime_bundle(&self) -> MimeBundle {
        (**self).mime_bundle()
    }
}

impl Rich for MimeBundle {
    fn mime_bundle(&self) -> MimeBundle {
        self.clone()
    }
}

// ---------------------------------------------------------------------------------------
// Protocol text (pure)

// The messages are a handful of fixed shapes (strings and one bool), so they are written by
// hand: it keeps serde out of the prelude's build, which every fresh session compiles.

/// `s` as a JSON string literal, escaped so that it stays on one line (contract 1). Public
/// for programs that write display-channel lines themselves (`notebooks/program_rt.rs`).
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_json_str(&mut out, s);
    out
}

/// Appends `s` as a JSON string literal. Control characters (newlines included) are
/// escaped, so a message never holds a raw newline and stays on one line (contract 1).
fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn push_bundle(out: &mut String, bundle: &MimeBundle) {
    out.push_str(",\"data\":{");
    for (i, (k, v)) in bundle.data.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_json_str(out, k);
        out.push(':');
        push_json_str(out, v);
    }
    out.push_str("},\"metadata\":{");
    for (i, (k, v)) in bundle.metadata.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_json_str(out, k);
        out.push(':');
        // Raw JSON text; newlines in it are insignificant whitespace, so flatten them.
        out.push_str(&v.replace(['\n', '\r'], " "));
    }
    out.push('}');
}

fn message(
    op: &str,
    bundle: Option<&MimeBundle>,
    display_id: Option<&str>,
    wait: Option<bool>,
) -> String {
    let mut out =
        String::with_capacity(64 + bundle.map_or(0, |b| b.data.values().map(String::len).sum()));
    out.push_str(LINE_PREFIX);
    out.push_str("{\"op\":");
    push_json_str(&mut out, op);
    if let Some(b) = bundle {
        push_bundle(&mut out, b);
    }
    if let Some(id) = display_id {
        out.push_str(",\"display_id\":");
        push_json_str(&mut out, id);
    }
    if let Some(w) = wait {
        out.push_str(if w {
            ",\"wait\":true"
        } else {
            ",\"wait\":false"
        });
    }
    out.push_str("}\n");
    out
}

/// The line announcing a new output (`display` op). `display_id` lets it be updated later.
pub fn display_line(bundle: &MimeBundle, display_id: Option<&str>) -> String {
    message("display", Some(bundle), display_id, None)
}

/// The line replacing the output shown under `display_id` (`update` op).
pub fn update_line(bundle: &MimeBundle, display_id: &str) -> String {
    message("update", Some(bundle), Some(display_id), None)
}

/// The line clearing the cell's output (`clear` op); with `wait` the front end clears only
/// when the next output arrives, which avoids flicker in animations.
pub fn clear_line(wait: bool) -> String {
    message("clear", None, None, Some(wait))
}

/// What `evcxr_display` prints: one `EVCXR_BEGIN_CONTENT` block per MIME type.
pub fn evcxr_content(bundle: &MimeBundle) -> String {
    let mut out = String::new();
    for (mime, content) in &bundle.data {
        out.push_str("EVCXR_BEGIN_CONTENT ");
        out.push_str(mime);
        out.push('\n');
        out.push_str(content);
        out.push_str("\nEVCXR_END_CONTENT\n");
    }
    out
}

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// A display id no other output of this kernel session (or of an earlier one whose outputs
/// may still be in the notebook) will reuse: process id, start time and a counter.
pub fn fresh_display_id() -> String {
    use std::sync::OnceLock;
    static STAMP: OnceLock<String> = OnceLock::new();
    let stamp = STAMP.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        format!("{:x}-{:x}", std::process::id(), nanos)
    });
    let n = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    format!("gpulab-{stamp}-{n}")
}

pub(crate) fn emit(line: &str) {
    // One write call per message so threads printing at once cannot interleave inside a line.
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    let _ = lock.write_all(line.as_bytes());
    let _ = lock.flush();
}

// ---------------------------------------------------------------------------------------
// Session API

/// Shows `x` now, as its own output, and returns a handle to replace it later.
pub fn display<T: Rich + ?Sized>(x: &T) -> DisplayHandle {
    let id = fresh_display_id();
    emit(&display_line(&x.mime_bundle(), Some(&id)));
    DisplayHandle { id }
}

/// Clears the cell's output now.
pub fn clear_output() {
    emit(&clear_line(false));
}

/// Clears the cell's output when the next output arrives (smooth animation frames).
pub fn clear_output_wait() {
    emit(&clear_line(true));
}

/// Names an output shown by [`display`], so it can be redrawn in place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisplayHandle {
    id: String,
}

impl DisplayHandle {
    /// A handle for an id chosen elsewhere (e.g. to update an output of an earlier cell).
    pub fn from_id(id: impl Into<String>) -> Self {
        DisplayHandle { id: id.into() }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// Replaces what this handle's output shows with `y`.
    pub fn update<T: Rich + ?Sized>(&self, y: &T) {
        emit(&update_line(&y.mime_bundle(), &self.id));
    }

    /// Shows `y` again as a new output under this handle's id; Jupyter then updates every
    /// output that carries the id together.
    pub fn display_again<T: Rich + ?Sized>(&self, y: &T) {
        emit(&display_line(&y.mime_bundle(), Some(&self.id)));
    }
}

/// Shows a cell's last expression the way evcxr does, in one compile instead of two.
///
/// evcxr first tries to compile `(expr).evcxr_display()` and, when no such method exists, compiles
/// the cell again with `{:?}`. That failed first attempt costs every plain value (`1`, a `Vec`, a
/// `Tensor`) about a third of its cell time. With `use gpulab::*;` in scope this blanket trait
/// makes the first attempt succeed for every `Debug` value, printing what evcxr would print.
/// [`Rich`] types of the prelude have an inherent `evcxr_display` (see `rich_evcxr_display!` below),
/// which Rust prefers over a trait method, so they still show as HTML, PNG or SVG.
pub trait EvcxrDisplay {
    fn evcxr_display(&self);
}

impl<T: std::fmt::Debug + ?Sized> EvcxrDisplay for T {
    fn evcxr_display(&self) {
        // A cell ending in a loop, an `if` or a `match` of statements has the value `()`; like
        // an ended statement, it shows nothing.
        if std::any::type_name::<T>() == "()" {
            return;
        }
        emit(&evcxr_content(
            &MimeBundle::new().with("text/plain", format!("{self:?}")),
        ));
    }
}

/// Shows a [`Rich`] value as a cell's result. Types of your own that implement [`Rich`] get the
/// same treatment as the prelude's with an inherent method calling this:
/// `impl MyType { pub fn evcxr_display(&self) { gpulab::display::show_as_result(self) } }`.
pub fn show_as_result<T: Rich + ?Sized>(x: &T) {
    emit(&evcxr_content(&x.mime_bundle()));
}

/// Gives each listed [`Rich`] type the inherent `evcxr_display` that evcxr calls for a cell's
/// last expression. Inherent methods win over [`EvcxrDisplay`]'s blanket `Debug` form.
#[macro_export]
macro_rules! rich_evcxr_display {
    ($($t:ty),* $(,)?) => {
        $(impl $t {
            #[doc(hidden)]
            pub fn evcxr_display(&self) {
                $crate::display::show_as_result(self)
            }
        })*
    };
}

rich_evcxr_display!(MimeBundle, Html, Svg, Png, Markdown, Text);

// ---------------------------------------------------------------------------------------
// Ready-made rich values

pub(crate) fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A snippet of HTML.
#[derive(Clone, Debug, PartialEq)]
pub struct Html(pub String);

impl Html {
    pub fn new(html: impl Into<String>) -> Self {
        Html(html.into())
    }
}

impl Rich for Html {
    fn mime_bundle(&self) -> MimeBundle {
        MimeBundle::new()
            .with("text/html", self.0.clone())
            .with("text/plain", "<HTML>")
    }
}

/// An SVG document (`<svg ...>...</svg>`).
#[derive(Clone, Debug, PartialEq)]
pub struct Svg(pub String);

impl Svg {
    pub fn new(svg: impl Into<String>) -> Self {
        Svg(svg.into())
    }
}

impl Rich for Svg {
    fn mime_bundle(&self) -> MimeBundle {
        MimeBundle::new()
            .with("image/svg+xml", self.0.clone())
            .with("text/plain", "<SVG image>")
    }
}

/// Encoded PNG bytes.
#[derive(Clone, PartialEq)]
pub struct Png(pub Vec<u8>);

impl Png {
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        Png(bytes.into())
    }

    /// Width and height from the IHDR chunk, if the bytes look like a PNG.
    pub fn dimensions(&self) -> Option<(u32, u32)> {
        let b = &self.0;
        if b.len() < 24 || &b[..8] != b"\x89PNG\r\n\x1a\n" || &b[12..16] != b"IHDR" {
            return None;
        }
        let w = u32::from_be_bytes(b[16..20].try_into().ok()?);
        let h = u32::from_be_bytes(b[20..24].try_into().ok()?);
        Some((w, h))
    }

    pub fn save(&self, path: impl AsRef<std::path::Path>) -> std::io::Result<()> {
        std::fs::write(path, &self.0)
    }
}

impl std::fmt::Debug for Png {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.dimensions() {
            Some((w, h)) => write!(f, "Png({w}x{h}, {} bytes)", self.0.len()),
            None => write!(f, "Png(<not a PNG>, {} bytes)", self.0.len()),
        }
    }
}

impl Rich for Png {
    fn mime_bundle(&self) -> MimeBundle {
        MimeBundle::png(&self.0, format!("{self:?}"))
    }
}

/// Markdown text, rendered by the front end.
#[derive(Clone, Debug, PartialEq)]
pub struct Markdown(pub String);

impl Markdown {
    pub fn new(md: impl Into<String>) -> Self {
        Markdown(md.into())
    }
}

impl Rich for Markdown {
    fn mime_bundle(&self) -> MimeBundle {
        MimeBundle::new()
            .with("text/markdown", self.0.clone())
            .with("text/plain", self.0.clone())
    }
}

/// Plain text shown as an output of its own (unlike `println!`, it can be updated in place).
#[derive(Clone, Debug, PartialEq)]
pub struct Text(pub String);

impl Text {
    pub fn new(text: impl Into<String>) -> Self {
        Text(text.into())
    }
}

impl Rich for Text {
    fn mime_bundle(&self) -> MimeBundle {
        MimeBundle::new().with("text/plain", self.0.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_escaping() {
        assert_eq!(
            html_escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn ids_differ() {
        assert_ne!(fresh_display_id(), fresh_display_id());
    }
}
