//! The connection file Jupyter hands a kernel on start.

use anyhow::{Context, Result};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
pub struct ConnectionInfo {
    #[serde(default = "default_transport")]
    pub transport: String,
    pub ip: String,
    pub shell_port: u16,
    pub iopub_port: u16,
    pub stdin_port: u16,
    pub control_port: u16,
    pub hb_port: u16,
    #[serde(default)]
    pub key: String,
    #[serde(default = "default_scheme")]
    pub signature_scheme: String,
}

fn default_transport() -> String {
    "tcp".into()
}

fn default_scheme() -> String {
    "hmac-sha256".into()
}

impl ConnectionInfo {
    pub fn from_file(path: &std::path::Path) -> Result<ConnectionInfo> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading connection file {}", path.display()))?;
        serde_json::from_str(&text)
            .with_context(|| format!("parsing connection file {}", path.display()))
    }

    pub fn endpoint(&self, port: u16) -> String {
        format!("{}://{}:{}", self.transport, self.ip, port)
    }
}
