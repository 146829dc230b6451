//! `cuda::libraries()`: where this process found NVIDIA's libraries (the driver, NVRTC,
//! cuBLAS), or why it did not, and which folders the loader searches. The CUDA set-up step
//! of a tutorial made visible: no toolkit install is needed when the pip wheels are present.

use super::loader;
use crate::display::{MimeBundle, Rich};
use crate::table::{html_table, text_table};
use std::fmt;
use std::path::PathBuf;

/// One library: what it is for, and the file loaded or why none was.
#[derive(Debug, Clone, PartialEq)]
pub struct LibraryStatus {
    pub library: &'static str,
    pub purpose: &'static str,
    pub found: Result<String, String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Libraries {
    pub libraries: Vec<LibraryStatus>,
    /// Folders searched when a library is not on the dynamic loader's path, in order.
    pub search_dirs: Vec<PathBuf>,
}

/// Loads (if not yet loaded) the driver, NVRTC and cuBLAS the way tensor operations would,
/// and reports the file each came from (read from the process's memory map) or the error.
pub fn libraries() -> Libraries {
    let loaded = |stem: &str| -> String {
        loaded_files()
            .into_iter()
            .find(|f| {
                f.rsplit('/')
                    .next()
                    .is_some_and(|n| n.starts_with(&format!("{stem}.so")))
            })
            .unwrap_or_else(|| "loaded (file not visible in /proc/self/maps)".into())
    };
    let driver = loader::driver()
        .map(|_| loaded("libcuda"))
        .map_err(|e| e.to_string());
    let nvrtc = loader::nvrtc()
        .map(|_| loaded("libnvrtc"))
        .map_err(|e| e.to_string());
    let cublas = loader::cublas()
        .map(|_| loaded("libcublas"))
        .map_err(|e| e.to_string());
    Libraries {
        libraries: vec![
            LibraryStatus {
                library: "libcuda (driver)",
                purpose: "talks to the GPU; comes with the NVIDIA driver",
                found: driver,
            },
            LibraryStatus {
                library: "libnvrtc (NVRTC)",
                purpose: "compiles CUDA C++ at run time",
                found: nvrtc,
            },
            LibraryStatus {
                library: "libcublas (cuBLAS)",
                purpose: "matrix products on the GPU",
                found: cublas,
            },
        ],
        search_dirs: loader::search_dirs(),
    }
}

/// Shared objects mapped into this process.
fn loaded_files() -> Vec<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut files: Vec<String> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| p.starts_with('/') && p.contains(".so"))
        .map(str::to_string)
        .collect();
    files.dedup();
    files
}

impl Libraries {
    fn rows(&self) -> Vec<Vec<String>> {
        self.libraries
            .iter()
            .map(|l| {
                vec![
                    l.library.to_string(),
                    l.purpose.to_string(),
                    match &l.found {
                        Ok(f) => f.clone(),
                        Err(e) => format!("not loaded: {e}"),
                    },
                ]
            })
            .collect()
    }
}

const HEADER: [&str; 3] = ["library", "what for", "loaded from"];

impl fmt::Display for Libraries {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&text_table(&HEADER, &self.rows()))?;
        writeln!(f, "searched when not on the loader path:")?;
        for d in &self.search_dirs {
            writeln!(f, "  {}", d.display())?;
        }
        Ok(())
    }
}

impl Rich for Libraries {
    fn mime_bundle(&self) -> MimeBundle {
        let dirs: Vec<Vec<String>> = self
            .search_dirs
            .iter()
            .map(|d| vec![d.display().to_string()])
            .collect();
        MimeBundle::new().with("text/plain", self.to_string()).with(
            "text/html",
            format!(
                "{}<details><summary>folders searched when a library is not on the loader \
                 path ({})</summary>{}</details>",
                html_table(&HEADER, &self.rows()),
                dirs.len(),
                html_table(&["folder"], &dirs)
            ),
        )
    }
}

crate::rich_evcxr_display!(Libraries);

#[cfg(test)]
mod tests {
    use super::libraries;

    #[test]
    fn every_library_is_found_or_says_why() {
        let r = libraries();
        assert_eq!(r.libraries.len(), 3);
        for l in &r.libraries {
            match &l.found {
                Ok(f) => assert!(!f.is_empty(), "{l:?}"),
                Err(e) => assert!(e.len() > 20, "a reason, not a bare failure: {l:?}"),
            }
        }
        // The driver's absence and a missing library read differently.
        if crate::cuda::device_count() == 0 {
            assert!(r.libraries[0].found.is_err() || crate::cuda::unavailable_reason().is_some());
        }
        assert!(r
            .search_dirs
            .iter()
            .any(|d| d.starts_with("/usr/local/cuda")));
        let text = r.to_string();
        assert!(text.contains("libnvrtc (NVRTC)"), "{text}");
    }
}
