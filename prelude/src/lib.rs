//! The gpulab prelude, preloaded into every gpulab-kernel session with `use gpulab::*;`.
//!
//! Everything exported at the crate root lands in the user's namespace, so the root
//! exports only names that cannot shadow std's prelude (no `Result`, no `Option`).
//!
//! Module ownership while the crate is being built (keep edits inside your own files):
//! - devices & tensors: `error`, `device`, `cuda`, `tensor`, `smi`, `cpu`
//! - display & teaching: `display`, `interrupt`, `image`, `mandelbrot`, `timing`, `timeit`, `plot`,
//!   `progress`
//! - training: `autograd`, `nn`, `optim`, `data`, `train` (and `tensor/grad.rs`, `tensor/gather.rs`)

// --- devices & tensors (error, device, cuda, tensor, smi, cpu) ---
pub mod cpu;
pub mod cuda;
pub mod device;
pub mod error;
pub mod smi;
mod table;
pub mod tensor;
pub use cpu::{cpu_info, CpuInfo};
pub use cuda::{Event, KernelArg, LaunchConfig};
pub use device::Device;
pub use error::Error;
pub use smi::{nvidia_smi, SmiReport};
// `f16` and `bf16` are the `half` crate's element types (what `Tensor::from_vec`, `item` and
// `to_vec` take for DType::F16 and DType::BF16). Exported at the root so that a cell can write
// `f16::from_f32(0.5)`: without it the name found rustc's own primitive `f16`, which is
// unstable, and the student got "the type `f16` is unstable".
pub use tensor::{
    bf16, f16, fork_rng, get_float32_matmul_precision, get_printoptions, manual_seed,
    set_float32_matmul_precision, set_printoptions, DType, Ellipsis, Idx, NewAxis, PrintOptions,
    Shape, Tensor, WithDType,
};

/// torch's `torch.backends` switches: `backends::cuda::matmul::set_allow_tf32(true)`.
pub mod backends {
    pub mod cuda {
        pub mod matmul {
            pub use crate::tensor::precision::{allow_tf32, set_allow_tf32};
        }
    }
}
// --- end devices & tensors ---

// --- training: autograd, nn, optim ---
pub mod amp;
pub mod autograd;
pub mod data;
pub mod nn;
pub mod optim;
pub mod train;
pub use autograd::{enable_grad, is_grad_enabled, no_grad, set_grad_enabled};
pub mod func;
pub use data::{DataLoader, TensorDataset};
pub use nn::{functional as F, Module};
pub use optim::Optimizer;
pub use train::{Fit, History, Loss, ModelExt};
// --- end training ---

// --- display & teaching -------------------------------------------------------------------
mod colorbar;
pub mod display;
mod image;
pub mod interrupt;
pub mod linalg;
pub mod machine;
pub mod mandelbrot;
pub use colorbar::ScaledImage;
pub use image::{Colormap, RgbImage};
pub use machine::{machine, Machine};
pub use mandelbrot::{Mandelbrot, MandelbrotImage};
pub mod plot;
pub mod special;
pub use plot::{bar_chart, crossover_plot, BarChart, Figure};
pub mod timing;
pub use timing::{bench, compare, time, Bench, BenchResult, Comparison};
pub mod timeit;
pub use timeit::{timeit, TimeIt};
pub mod progress;
/// Tensors as pictures: torchvision's `make_grid` and `to_pil_image` (`vision::to_image`).
pub mod vision;
pub use display::{
    clear_output, clear_output_wait, display, DisplayHandle, EvcxrDisplay, Html, Markdown,
    MimeBundle, Png, Rich, Svg, Text,
};
pub use progress::{progress, Progress, ProgressExt};
pub mod input;
pub use input::{input, input_password};
// --- end display & teaching ---------------------------------------------------------------
