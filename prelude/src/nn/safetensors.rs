//! A model's weights in the safetensors format (what PyTorch, Hugging Face and the Rust ML
//! crates exchange weights in), written by hand so the prelude takes no dependency for it:
//! an 8-byte little-endian header length, a JSON header mapping each name to
//! `{"dtype", "shape", "data_offsets": [begin, end]}`, then the raw little-endian data.
//!
//! Names follow torch's `state_dict`: `weight`, `bias`, and `0.weight`, `3.bias`, ... inside a
//! `Sequential`, so `torch.nn.Sequential(...).load_state_dict(safetensors.torch.load_file(p))`
//! reads a file saved here for the same architecture, and the other way round.

use super::Module;
use crate::error::{Error, Result};
use crate::tensor::{bf16, f16, DType, Tensor};
use crate::Device;
use std::path::Path;

fn io_err(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::Invalid(format!("{what} {}: {e}", path.display()))
}

fn dtype_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "F32",
        DType::F64 => "F64",
        DType::F16 => "F16",
        DType::BF16 => "BF16",
        DType::I32 => "I32",
        DType::I64 => "I64",
        DType::U8 => "U8",
        DType::Bool => "BOOL",
    }
}

fn le_bytes(t: &Tensor) -> Result<Vec<u8>> {
    macro_rules! bytes {
        ($ty:ty, $f:expr) => {
            t.to_vec::<$ty>()?.iter().flat_map($f).collect()
        };
    }
    Ok(match t.dtype() {
        DType::F32 => bytes!(f32, |v| v.to_le_bytes()),
        DType::F64 => bytes!(f64, |v| v.to_le_bytes()),
        DType::F16 => bytes!(f16, |v| v.to_bits().to_le_bytes()),
        DType::BF16 => bytes!(bf16, |v| v.to_bits().to_le_bytes()),
        DType::I32 => bytes!(i32, |v| v.to_le_bytes()),
        DType::I64 => bytes!(i64, |v| v.to_le_bytes()),
        DType::U8 => t.to_vec::<u8>()?,
        DType::Bool => bytes!(bool, |v| [*v as u8]),
    })
}

fn from_le_bytes(name: &str, dtype: &str, shape: Vec<usize>, b: &[u8]) -> Result<Tensor> {
    macro_rules! parse {
        ($n:expr, $f:expr) => {{
            let n: usize = $n;
            if b.len() != shape.iter().product::<usize>() * n {
                return Err(Error::Invalid(format!(
                    "safetensors: {name}: {} bytes do not hold a {dtype} tensor of shape {shape:?}",
                    b.len()
                )));
            }
            Tensor::from_vec(
                b.chunks_exact(n).map($f).collect::<Vec<_>>(),
                shape,
                Device::Cpu,
            )
        }};
    }
    match dtype {
        "F32" => parse!(4, |c| f32::from_le_bytes(c.try_into().unwrap())),
        "F64" => parse!(8, |c| f64::from_le_bytes(c.try_into().unwrap())),
        "F16" => parse!(2, |c| f16::from_bits(u16::from_le_bytes(
            c.try_into().unwrap()
        ))),
        "BF16" => parse!(2, |c| bf16::from_bits(u16::from_le_bytes(
            c.try_into().unwrap()
        ))),
        "I32" => parse!(4, |c| i32::from_le_bytes(c.try_into().unwrap())),
        "I64" => parse!(8, |c| i64::from_le_bytes(c.try_into().unwrap())),
        "U8" => parse!(1, |c| c[0]),
        "BOOL" => parse!(1, |c| c[0] != 0),
        other => Err(Error::Invalid(format!(
            "safetensors: {name} has dtype {other}, which gpulab does not read"
        ))),
    }
}

/// Writes named tensors to `path` in the safetensors format.
pub fn save(tensors: &[(String, Tensor)], path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    let mut header = String::from("{\"__metadata__\":{\"format\":\"pt\"}");
    let mut data = Vec::new();
    for (name, t) in tensors {
        let bytes = le_bytes(&t.detach().cpu()?)?;
        let shape: Vec<String> = t.shape().iter().map(|d| d.to_string()).collect();
        header += &format!(
            ",{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}",
            crate::display::json_string(name),
            dtype_name(t.dtype()),
            shape.join(","),
            data.len(),
            data.len() + bytes.len()
        );
        data.extend_from_slice(&bytes);
    }
    header.push('}');
    // The format allows padding the header with spaces; 8-byte alignment lets readers map
    // the data without copying.
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let mut out = Vec::with_capacity(8 + header.len() + data.len());
    out.extend_from_slice(&(header.len() as u64).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&data);
    std::fs::write(path, out).map_err(|e| io_err("cannot write", path, e))
}

/// Reads every tensor of a safetensors file (on the CPU), in the file's order.
pub fn load(path: impl AsRef<Path>) -> Result<Vec<(String, Tensor)>> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| io_err("cannot read", path, e))?;
    let bad = |why: String| {
        Error::Invalid(format!(
            "{} is not a safetensors file: {why}",
            path.display()
        ))
    };
    if bytes.len() < 8 {
        return Err(bad(format!("only {} bytes", bytes.len())));
    }
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    if n > bytes.len() - 8 {
        return Err(bad(format!("the header claims {n} bytes")));
    }
    let text = std::str::from_utf8(&bytes[8..8 + n]).map_err(|e| bad(e.to_string()))?;
    let data = &bytes[8 + n..];
    let Json::Obj(entries) = Parser::new(text).parse().map_err(bad)? else {
        return Err(bad("the header is not a JSON object".into()));
    };
    let mut out = Vec::new();
    for (name, v) in entries {
        if name == "__metadata__" {
            continue;
        }
        let (Some(Json::Str(dtype)), Some(Json::Arr(shape)), Some(Json::Arr(offs))) =
            (v.get("dtype"), v.get("shape"), v.get("data_offsets"))
        else {
            return Err(bad(format!(
                "entry {name} lacks dtype, shape or data_offsets"
            )));
        };
        let shape: Vec<usize> = shape.iter().filter_map(Json::as_usize).collect();
        let offs: Vec<usize> = offs.iter().filter_map(Json::as_usize).collect();
        let [a, b] = offs[..] else {
            return Err(bad(format!("entry {name}: bad data_offsets")));
        };
        if a > b || b > data.len() {
            return Err(bad(format!(
                "entry {name}: data_offsets [{a}, {b}] outside the {} data bytes",
                data.len()
            )));
        }
        out.push((
            name.clone(),
            from_le_bytes(&name, dtype, shape, &data[a..b])?,
        ));
    }
    Ok(out)
}

/// Saves a module's parameters and buffers (BatchNorm's running statistics) under torch's
/// `state_dict` names: its [`Module::state_dict`].
pub fn save_safetensors(model: &dyn Module, path: impl AsRef<Path>) -> Result<()> {
    save(&model.state_dict(), path)
}

/// Loads a module's parameters and buffers saved by [`save_safetensors`] (or by torch for
/// the same architecture): every one must be in the file with its shape; values are converted
/// to the parameter's dtype and moved to its device.
pub fn load_safetensors(model: &dyn Module, path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    let file = load(path)?;
    load_into(model, &file, &path.display().to_string())
}

/// [`Module::load_state_dict`], its errors starting with `source` (a file's path).
pub(crate) fn load_into<M: Module + ?Sized>(
    model: &M,
    state: &[(String, Tensor)],
    source: &str,
) -> Result<()> {
    let mut named = model.named_parameters();
    named.extend(model.buffers());
    // Check everything before changing anything, so a bad state leaves the model as it was.
    let mut values = Vec::new();
    for (name, p) in &named {
        let Some((_, t)) = state.iter().find(|(n, _)| n == name) else {
            let have: Vec<&str> = state.iter().map(|(n, _)| n.as_str()).collect();
            return Err(Error::Invalid(format!(
                "{source}: no tensor named {name:?} (the state has {have:?})"
            )));
        };
        if t.shape() != p.shape() {
            return Err(Error::BadShape(format!(
                "{source}: {name} has shape {:?} in the state, the model expects {:?}",
                t.shape(),
                p.shape()
            )));
        }
        let target = p.tensor();
        values.push(t.detach().to_dtype(target.dtype())?.to(target.device())?);
    }
    for ((_, p), v) in named.iter().zip(values) {
        p.set_data(v)?;
    }
    Ok(())
}

/// The JSON a safetensors header uses: objects, arrays, strings, integers.
enum Json {
    Obj(Vec<(String, Json)>),
    Arr(Vec<Json>),
    Str(String),
    Num(f64),
    Other,
}

impl Json {
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(e) => e.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    fn as_usize(&self) -> Option<usize> {
        match self {
            Json::Num(n) if *n >= 0.0 && n.fract() == 0.0 => Some(*n as usize),
            _ => None,
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Parser<'a> {
    fn new(s: &'a str) -> Self {
        Parser {
            s: s.as_bytes(),
            i: 0,
        }
    }
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn expect(&mut self, c: u8) -> std::result::Result<(), String> {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!(
                "expected '{}' at byte {} of the header",
                c as char, self.i
            ))
        }
    }
    fn parse(&mut self) -> std::result::Result<Json, String> {
        self.ws();
        match self.s.get(self.i) {
            Some(b'{') => {
                self.i += 1;
                let mut e = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Ok(Json::Obj(e));
                }
                loop {
                    self.ws();
                    let Json::Str(k) = self.parse()? else {
                        return Err(format!("expected a key at byte {}", self.i));
                    };
                    self.expect(b':')?;
                    e.push((k, self.parse()?));
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Json::Obj(e));
                        }
                        _ => return Err(format!("expected ',' or '}}' at byte {}", self.i)),
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut a = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(Json::Arr(a));
                }
                loop {
                    a.push(self.parse()?);
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Json::Arr(a));
                        }
                        _ => return Err(format!("expected ',' or ']' at byte {}", self.i)),
                    }
                }
            }
            Some(b'"') => {
                self.i += 1;
                let mut out = String::new();
                loop {
                    let Some(&c) = self.s.get(self.i) else {
                        return Err("unterminated string".into());
                    };
                    self.i += 1;
                    match c {
                        b'"' => return Ok(Json::Str(out)),
                        b'\\' => {
                            let Some(&e) = self.s.get(self.i) else {
                                return Err("unterminated escape".into());
                            };
                            self.i += 1;
                            match e {
                                b'n' => out.push('\n'),
                                b't' => out.push('\t'),
                                b'r' => out.push('\r'),
                                b'b' => out.push('\u{8}'),
                                b'f' => out.push('\u{c}'),
                                b'u' => {
                                    let hex = self
                                        .s
                                        .get(self.i..self.i + 4)
                                        .and_then(|h| std::str::from_utf8(h).ok())
                                        .and_then(|h| u32::from_str_radix(h, 16).ok())
                                        .ok_or("bad \\u escape")?;
                                    self.i += 4;
                                    out.push(char::from_u32(hex).unwrap_or('\u{fffd}'));
                                }
                                other => out.push(other as char),
                            }
                        }
                        _ => {
                            // Copy a whole UTF-8 sequence at once.
                            let start = self.i - 1;
                            while self.i < self.s.len() && self.s[self.i] & 0xC0 == 0x80 {
                                self.i += 1;
                            }
                            out.push_str(
                                std::str::from_utf8(&self.s[start..self.i])
                                    .map_err(|e| e.to_string())?,
                            );
                        }
                    }
                }
            }
            Some(c) if c.is_ascii_digit() || *c == b'-' => {
                let start = self.i;
                while self.i < self.s.len()
                    && matches!(
                        self.s[self.i],
                        b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'
                    )
                {
                    self.i += 1;
                }
                let text = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
                text.parse()
                    .map(Json::Num)
                    .map_err(|_| format!("bad number {text:?}"))
            }
            Some(_) => {
                for word in ["true", "false", "null"] {
                    if self.s[self.i..].starts_with(word.as_bytes()) {
                        self.i += word.len();
                        return Ok(Json::Other);
                    }
                }
                Err(format!("unexpected character at byte {}", self.i))
            }
            None => Err("the header ends early".into()),
        }
    }
}
