//! gpulab-kernel: a Jupyter kernel for Rust (evcxr) with the gpulab prelude preloaded.
//! ARCHITECTURE.md at the repository root explains how the pieces fit.

pub mod child;
pub mod clean;
pub mod connection;
pub mod evcxr_interp;
pub mod forward;
pub mod history;
pub mod hub;
pub mod install;
pub mod interp;
pub mod magics;
pub mod messages;
pub mod server;
pub mod session;
pub mod startup;
pub mod stopper;
pub mod syntax;
pub mod wire;
pub mod worker;

use serde_json::{json, Value};

/// The `kernel_info_reply` content (the server adds status and protocol_version).
pub fn kernel_info() -> Value {
    json!({
        "implementation": "gpulab",
        "implementation_version": env!("CARGO_PKG_VERSION"),
        "language_info": {
            "name": "rust",
            "version": env!("GPULAB_RUSTC_VERSION"),
            "mimetype": "text/rust",
            "file_extension": ".rs",
            "codemirror_mode": "rust",
            "pygments_lexer": "rust",
        },
        "banner": format!("gpulab {}: Rust {} through evcxr, with the gpulab GPU prelude", env!("CARGO_PKG_VERSION"), env!("GPULAB_RUSTC_VERSION")),
        "help_links": [
            {"text": "Rust standard library", "url": "https://doc.rust-lang.org/std/"},
            {"text": "The Rust book", "url": "https://doc.rust-lang.org/book/"},
            {"text": "evcxr commands", "url": "https://github.com/evcxr/evcxr/blob/main/COMMON.md"},
            {"text": "CUDA C++ programming guide", "url": "https://docs.nvidia.com/cuda/cuda-c-programming-guide/"},
        ],
        "debugger": false,
    })
}

/// The server's configuration. `GPULAB_TEST_HOOKS=1` enables test-only requests (a request
/// that panics inside the worker), used by the end-to-end tests.
pub fn config() -> server::KernelConfig {
    let mut config = server::KernelConfig::new(kernel_info(), syntax::is_complete);
    config.test_hooks = std::env::var("GPULAB_TEST_HOOKS").is_ok_and(|v| v == "1");
    config
}
