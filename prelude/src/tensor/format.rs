//! Printing like torch: `tensor([[1., 2.],\n        [3., 4.]], device='cuda:0')`, with
//! large tensors cut to their first and last three entries per dimension. Integer tensors
//! print as `tensor([1, 2, 3])`, bool ones as `tensor([ True, False])`, and a
//! `dtype=torch.float16`-style suffix follows where torch prints one (not for float32,
//! int64 or bool, torch's defaults).

use super::{DType, Tensor};
use std::fmt;
use std::sync::RwLock;

/// How tensors print (torch's `set_printoptions`): digits after the point, how many elements
/// before a tensor is summarised, how many kept at each edge then, the line width, and
/// scientific notation forced on or off (`None`: torch's choice from the values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrintOptions {
    pub precision: usize,
    pub threshold: usize,
    pub edgeitems: usize,
    pub linewidth: usize,
    pub sci_mode: Option<bool>,
}

impl PrintOptions {
    /// torch's defaults (its `profile="default"`): 4 digits, summarised past 1000 elements with
    /// 3 at each edge, 80 columns.
    pub const DEFAULT: PrintOptions = PrintOptions {
        precision: 4,
        threshold: 1000,
        edgeitems: 3,
        linewidth: 80,
        sci_mode: None,
    };
    /// torch's `profile="short"`: 2 digits, 2 elements at each edge.
    pub const SHORT: PrintOptions = PrintOptions {
        precision: 2,
        edgeitems: 2,
        ..PrintOptions::DEFAULT
    };
    /// torch's `profile="full"`: never summarised.
    pub const FULL: PrintOptions = PrintOptions {
        threshold: usize::MAX,
        ..PrintOptions::DEFAULT
    };
}

impl Default for PrintOptions {
    fn default() -> PrintOptions {
        PrintOptions::DEFAULT
    }
}

/// For the whole process, as torch's (a notebook sets it once for every later cell).
static OPTIONS: RwLock<PrintOptions> = RwLock::new(PrintOptions::DEFAULT);

/// Sets how every tensor prints from now on (torch's `torch.set_printoptions`):
/// `set_printoptions(PrintOptions { precision: 2, ..get_printoptions() })`, or a profile,
/// `set_printoptions(PrintOptions::SHORT)`.
pub fn set_printoptions(options: PrintOptions) {
    *OPTIONS.write().unwrap_or_else(|e| e.into_inner()) = options;
}

/// The current print options.
pub fn get_printoptions() -> PrintOptions {
    *OPTIONS.read().unwrap_or_else(|e| e.into_inner())
}

#[derive(Clone, Copy)]
enum Mode {
    /// All values are whole numbers: `1.`, `-20.`
    Int,
    /// An integer dtype: `1`, `-20`
    Integer,
    /// `True`, `False`
    Bool,
    Fixed,
    Sci,
}

struct Style {
    mode: Mode,
    width: usize,
    precision: usize,
    linewidth: usize,
}

fn sci(v: f64, precision: usize) -> String {
    // Rust writes 1.2345e5; torch writes 1.2345e+05.
    let s = format!("{v:.precision$e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = if let Some(d) = e.strip_prefix('-') {
                ('-', d)
            } else {
                ('+', e)
            };
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

fn one(v: f64, mode: Mode, precision: usize) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    match mode {
        Mode::Int => format!("{v:.0}."),
        Mode::Integer => format!("{}", v as i64),
        Mode::Bool => (if v != 0.0 { "True" } else { "False" }).into(),
        Mode::Fixed => format!("{v:.precision$}"),
        Mode::Sci => sci(v, precision),
    }
}

fn style(shown: &[f64], dtype: DType, opts: &PrintOptions) -> Style {
    let precision = opts.precision;
    if !dtype.is_float() {
        let mode = if dtype == DType::Bool {
            Mode::Bool
        } else {
            Mode::Integer
        };
        let width = shown
            .iter()
            .map(|&v| one(v, mode, precision).len())
            .max()
            .unwrap_or(1);
        return Style {
            mode,
            width,
            precision,
            linewidth: opts.linewidth,
        };
    }
    let finite: Vec<f64> = shown.iter().copied().filter(|v| v.is_finite()).collect();
    let nonzero: Vec<f64> = finite
        .iter()
        .map(|v| v.abs())
        .filter(|&v| v > 0.0)
        .collect();
    let max = nonzero.iter().copied().fold(0.0f64, f64::max);
    let min = nonzero.iter().copied().fold(f64::INFINITY, f64::min);
    // torch's rule (_tensor_str._Formatter): whole numbers print as `1.` unless they span more
    // than three orders of magnitude or pass 1e8; other values print fixed unless, besides
    // that, the smallest is under 1e-4. Zeros, nan and inf take no part.
    let wide = !nonzero.is_empty() && (max / min > 1000.0 || max > 1e8);
    let mode = if finite.iter().all(|v| v.fract() == 0.0) {
        if wide {
            Mode::Sci
        } else {
            Mode::Int
        }
    } else if wide || (!nonzero.is_empty() && min < 1e-4) {
        Mode::Sci
    } else {
        Mode::Fixed
    };
    // A forced choice wins, as torch's `sci_mode`.
    let mode = match (opts.sci_mode, mode) {
        (Some(true), _) => Mode::Sci,
        (Some(false), Mode::Sci) if finite.iter().all(|v| v.fract() == 0.0) => Mode::Int,
        (Some(false), Mode::Sci) => Mode::Fixed,
        (_, m) => m,
    };
    // Like torch, only nonzero finite values set the width: nan, inf and zeros are padded to
    // it but never widen it (`tensor([-0., 1.])`, `tensor([1., nan])`).
    let width = finite
        .iter()
        .filter(|&&v| v != 0.0)
        .map(|&v| one(v, mode, precision).len())
        .max()
        .unwrap_or(1);
    Style {
        mode,
        width,
        precision,
        linewidth: opts.linewidth,
    }
}

/// The indices shown along a dimension of `size`: all, or the edges with `None` for "...".
fn shown_indices(size: usize, summarise: Option<usize>) -> Vec<Option<usize>> {
    match summarise {
        Some(edge) if size > 2 * edge => (0..edge)
            .map(Some)
            .chain([None])
            .chain((size - edge..size).map(Some))
            .collect(),
        _ => (0..size).map(Some).collect(),
    }
}

/// Every value that will be printed, to choose one format for all of them.
fn collect_shown(
    data: &[f64],
    dims: &[usize],
    off: usize,
    stride: usize,
    summarise: Option<usize>,
    out: &mut Vec<f64>,
) {
    if dims.is_empty() {
        out.push(data[off]);
        return;
    }
    let inner = stride / dims[0].max(1);
    for i in shown_indices(dims[0], summarise).into_iter().flatten() {
        collect_shown(data, &dims[1..], off + i * inner, inner, summarise, out);
    }
}

/// One bracketed level; `col` is the column of its `[`.
fn render(
    data: &[f64],
    dims: &[usize],
    off: usize,
    col: usize,
    st: &Style,
    summarise: Option<usize>,
) -> String {
    let inner: usize = dims[1..].iter().product();
    let idx = shown_indices(dims[0], summarise);
    if dims.len() == 1 {
        let items: Vec<String> = idx
            .iter()
            .map(|i| match i {
                Some(i) => format!(
                    "{:>w$}",
                    one(data[off + i], st.mode, st.precision),
                    w = st.width
                ),
                // torch's summarised rows read "2.,  ..., 97." (the marker carries a space).
                None => " ...".into(),
            })
            .collect();
        // torch's _vector_str: (linewidth - indent) // (width + 2), the indent being the column
        // of this row's `[`.
        let per_line = (st.linewidth.saturating_sub(col) / (st.width + 2)).max(1);
        let lines: Vec<String> = items.chunks(per_line).map(|c| c.join(", ")).collect();
        return format!("[{}]", lines.join(&format!(",\n{}", " ".repeat(col + 1))));
    }
    let sep = format!(",{}{}", "\n".repeat(dims.len() - 1), " ".repeat(col + 1));
    let parts: Vec<String> = idx
        .iter()
        .map(|i| match i {
            Some(i) => render(data, &dims[1..], off + i * inner, col + 1, st, summarise),
            None => "...".into(),
        })
        .collect();
    format!("[{}]", parts.join(&sep))
}

impl fmt::Display for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let data = match self.to_f64_vec() {
            Ok(d) => d,
            Err(e) => return write!(f, "tensor(<unreadable: {e}>, device='{}')", self.device()),
        };
        let mut suffix = if self.is_cuda() {
            format!(", device='{}'", self.device())
        } else {
            String::new()
        };
        let dtype = self.dtype();
        let dims = self.shape();
        let empty = data.is_empty() && !dims.is_empty();
        if empty {
            // As torch (and NumPy): the shape unless it is (0,), and the dtype unless it is
            // float32, since an empty tensor has no values to tell an int64 or bool one apart.
            if dims.len() != 1 {
                let sizes: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
                suffix += &format!(", size=({})", sizes.join(", "));
            }
            if dtype != DType::F32 {
                suffix += &format!(", dtype=torch.{}", dtype.name());
            }
        } else if !matches!(dtype, DType::F32 | DType::I64 | DType::Bool) {
            suffix += &format!(", dtype=torch.{}", dtype.name());
        }
        // torch shows autograd state last: `grad_fn=<MulBackward0>` or `requires_grad=True`.
        match self.grad_fn() {
            Some(op) => suffix += &format!(", grad_fn=<{op}>"),
            None if self.requires_grad() => suffix += ", requires_grad=True",
            None => {}
        }
        let opts = get_printoptions();
        if dims.is_empty() {
            let st = style(&data, dtype, &opts);
            return write!(f, "tensor({}{suffix})", one(data[0], st.mode, st.precision));
        }
        if empty {
            return write!(f, "tensor([]{suffix})");
        }
        let summarise = (data.len() > opts.threshold).then_some(opts.edgeitems);
        let mut shown = Vec::new();
        collect_shown(&data, dims, 0, data.len(), summarise, &mut shown);
        let st = style(&shown, dtype, &opts);
        write!(
            f,
            "tensor({}{suffix})",
            render(&data, dims, 0, "tensor(".len(), &st, summarise)
        )
    }
}

/// evcxr shows a cell's last expression with `{:?}`, so Debug prints like Display.
impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
