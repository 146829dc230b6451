//! Stand-in for `crate::Error` until the tensor branch's `error.rs` is merged.
#[derive(Debug)]
pub enum Error {
    Interrupted,
    Io(std::io::Error),
    Other(String),
}
impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Interrupted => write!(f, "interrupted"),
            Error::Io(e) => write!(f, "{e}"),
            Error::Other(s) => write!(f, "{s}"),
        }
    }
}
impl std::error::Error for Error {}
impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e)
    }
}
