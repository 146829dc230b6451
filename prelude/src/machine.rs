//! `machine()`: one small table saying which machine ran a notebook (CPU, cores, memory, the
//! CUDA devices or why there are none, the operating system), so every measured number in a
//! saved notebook comes with the hardware that produced it.

use crate::cpu::cpu_info;
use crate::display::{MimeBundle, Rich};
use crate::error::human_bytes;
use crate::table::{html_table, text_table};
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    pub cpu: String,
    pub physical_cores: usize,
    pub logical_cores: usize,
    pub memory_total: u64,
    /// One line per CUDA device ("cuda:0: NVIDIA H100 80GB HBM3, 79.2 GiB, 132 SMs").
    pub gpus: Vec<String>,
    /// Why there is no CUDA device, when `gpus` is empty.
    pub no_gpu_reason: Option<String>,
    /// The distribution's name (`PRETTY_NAME` of /etc/os-release) and the kernel release.
    pub os: String,
}

impl Machine {
    /// Field / value rows, shared by the text and HTML forms.
    pub fn rows(&self) -> Vec<Vec<String>> {
        let gpu = if self.gpus.is_empty() {
            format!(
                "no CUDA device ({})",
                self.no_gpu_reason.as_deref().unwrap_or("none found")
            )
        } else {
            self.gpus.join("; ")
        };
        vec![
            vec!["CPU".into(), self.cpu.clone()],
            vec![
                "cores".into(),
                format!(
                    "{} physical, {} logical",
                    self.physical_cores, self.logical_cores
                ),
            ],
            vec!["memory".into(), human_bytes(self.memory_total)],
            vec!["GPU".into(), gpu],
            vec!["OS".into(), self.os.clone()],
        ]
    }
}

/// Describes the machine this code runs on. Never fails: a part it cannot read says so.
pub fn machine() -> Machine {
    let cpu = cpu_info();
    let mut gpus = Vec::new();
    for i in 0..crate::cuda::device_count() {
        gpus.push(match crate::cuda::get_device_properties(i) {
            Ok(p) => format!(
                "cuda:{i}: {}, {}, {} SMs",
                p.name,
                human_bytes(p.total_memory),
                p.multi_processor_count
            ),
            Err(e) => format!("cuda:{i}: properties unreadable ({e})"),
        });
    }
    Machine {
        cpu: cpu.model,
        physical_cores: cpu.physical_cores,
        logical_cores: cpu.logical_cores,
        memory_total: cpu.memory_total,
        no_gpu_reason: if gpus.is_empty() {
            crate::cuda::unavailable_reason()
        } else {
            None
        },
        gpus,
        os: os_name(),
    }
}

fn os_name() -> String {
    let distro = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|s| pretty_name(&s))
        .unwrap_or_else(|| std::env::consts::OS.to_string());
    match std::fs::read_to_string("/proc/sys/kernel/osrelease") {
        Ok(k) => format!("{distro}, kernel {}", k.trim()),
        Err(_) => distro,
    }
}

/// `PRETTY_NAME="Debian GNU/Linux 13 (trixie)"` -> `Debian GNU/Linux 13 (trixie)`.
fn pretty_name(os_release: &str) -> Option<String> {
    os_release.lines().find_map(|l| {
        let v = l.strip_prefix("PRETTY_NAME=")?;
        Some(v.trim().trim_matches('"').to_string())
    })
}

impl fmt::Display for Machine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&text_table(&["machine", ""], &self.rows()))
    }
}

impl Rich for Machine {
    fn mime_bundle(&self) -> MimeBundle {
        MimeBundle::new()
            .with("text/plain", self.to_string())
            .with("text/html", html_table(&["machine", ""], &self.rows()))
    }
}

crate::rich_evcxr_display!(Machine);

#[cfg(test)]
mod tests {
    use super::{machine, pretty_name};
    use crate::display::Rich;

    #[test]
    fn the_distribution_name_comes_from_os_release() {
        let text =
            "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\nID=debian\n";
        assert_eq!(
            pretty_name(text).as_deref(),
            Some("Debian GNU/Linux 13 (trixie)")
        );
        assert_eq!(pretty_name("ID=debian\n"), None);
    }

    #[test]
    fn the_table_names_cpu_gpu_and_os() {
        let m = machine();
        assert!(m.logical_cores >= 1);
        let html = m
            .mime_bundle()
            .get("text/html")
            .expect("an HTML table")
            .to_string();
        for field in ["CPU", "cores", "memory", "GPU", "OS"] {
            assert!(html.contains(&format!("<td>{field}</td>")), "{html}");
        }
        // Either devices are listed or the reason there are none is.
        if crate::cuda::device_count() == 0 {
            assert!(html.contains("no CUDA device ("), "{html}");
            assert!(m.no_gpu_reason.is_some());
        } else {
            assert!(html.contains("cuda:0: "), "{html}");
        }
    }
}
