//! `cpu_info()`: the CPU side of a CPU-vs-GPU comparison: model, cores, memory and vector
//! extensions, read from /proc on Linux.

use crate::display::html_escape;
use crate::display::{MimeBundle, Rich};
use crate::error::human_bytes;
use crate::table::{html_table, text_table};
use std::collections::HashSet;
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub struct CpuInfo {
    pub model: String,
    /// Distinct cores; on a VM that hides its topology, the logical count.
    pub physical_cores: usize,
    /// Hardware threads the OS schedules on (what rayon uses).
    pub logical_cores: usize,
    pub memory_total: u64,
    pub memory_available: u64,
    /// The SIMD extensions that matter for f32 throughput: sse4.2, avx, avx2, fma, avx512f, neon.
    pub simd: Vec<String>,
}

impl CpuInfo {
    fn rows(&self) -> Vec<Vec<String>> {
        vec![
            vec!["Model".into(), self.model.clone()],
            vec![
                "Cores".into(),
                format!(
                    "{} physical, {} logical",
                    self.physical_cores, self.logical_cores
                ),
            ],
            vec![
                "Memory".into(),
                format!(
                    "{} total, {} available",
                    human_bytes(self.memory_total),
                    human_bytes(self.memory_available)
                ),
            ],
            vec![
                "SIMD".into(),
                if self.simd.is_empty() {
                    "none found".into()
                } else {
                    self.simd.join(" ")
                },
            ],
        ]
    }

    pub fn to_html(&self) -> String {
        format!(
            "<div><b>CPU</b>{}</div>",
            html_table(&["", ""], &self.rows())
        )
        .replace(
            "<th></th><th></th>",
            &format!("<th colspan=\"2\">{}</th>", html_escape(&self.model)),
        )
    }
}

impl fmt::Display for CpuInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", text_table(&["CPU", ""], &self.rows()))
    }
}

impl Rich for CpuInfo {
    fn mime_bundle(&self) -> MimeBundle {
        MimeBundle::new()
            .with("text/html", self.to_html())
            .with("text/plain", self.to_string())
    }
}

// `display(&cpu_info())` needs Rich; the inherent evcxr_display keeps a cell ending in
// `cpu_info()` showing the table.
crate::rich_evcxr_display!(CpuInfo);

/// Parses /proc/cpuinfo and /proc/meminfo text (kept separate so it can be tested).
pub(crate) fn parse(cpuinfo: &str, meminfo: &str, logical_fallback: usize) -> CpuInfo {
    let mut model = None;
    let mut logical = 0;
    let mut cores = HashSet::new();
    let mut phys_id = String::new();
    let mut flags = String::new();
    for line in cpuinfo.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        match k {
            "processor" => logical += 1,
            "model name" | "Model" | "cpu model" if model.is_none() => model = Some(v.to_string()),
            "physical id" => phys_id = v.to_string(),
            "core id" => {
                cores.insert((phys_id.clone(), v.to_string()));
            }
            "flags" | "Features" if flags.is_empty() => flags = v.to_string(),
            _ => {}
        }
    }
    let logical = if logical == 0 {
        logical_fallback
    } else {
        logical
    };
    let mem = |key: &str| -> u64 {
        meminfo
            .lines()
            .find_map(|l| {
                l.strip_prefix(key).and_then(|r| {
                    r.trim_start_matches(':')
                        .split_whitespace()
                        .next()?
                        .parse::<u64>()
                        .ok()
                })
            })
            .map(|kib| kib * 1024)
            .unwrap_or(0)
    };
    let have: HashSet<&str> = flags.split_whitespace().collect();
    let simd = ["sse4_2", "avx", "avx2", "fma", "avx512f", "asimd", "neon"]
        .iter()
        .filter(|f| have.contains(*f))
        .map(|f| f.replace('_', "."))
        .collect();
    CpuInfo {
        model: model.unwrap_or_else(|| std::env::consts::ARCH.to_string()),
        physical_cores: if cores.is_empty() {
            logical
        } else {
            cores.len()
        },
        logical_cores: logical,
        memory_total: mem("MemTotal"),
        memory_available: mem("MemAvailable"),
        simd,
    }
}

/// This machine's CPU and memory.
pub fn cpu_info() -> CpuInfo {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let logical = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    parse(&read("/proc/cpuinfo"), &read("/proc/meminfo"), logical)
}
