//! `gpulab-kernel clean`: removes what earlier versions of the prelude left on disk and no
//! session of this version will use. Each version of gpulab embeds a prelude with its own
//! content hash; its sources (`src-<hash>`) and shared prebuilt build (`prebuilt-<hash>`) stay
//! beside the kernelspec after an update, and every build slot keeps the artifacts of each
//! version it built (a slot that saw six versions measured 880 MB here, its fresh size being
//! about 12 MB). Nothing in use is touched: a prebuilt folder or a slot is removed only while
//! this command holds its lock, the same lock a session or `warm` holds while using it.

use crate::session::{self, CURRENT_HASH};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// What `clean` did (or, with `dry_run`, would do).
#[derive(Debug, Default)]
pub struct Report {
    pub removed: Vec<(PathBuf, u64)>,
    pub kept: Vec<(PathBuf, String)>,
}

impl Report {
    pub fn freed(&self) -> u64 {
        self.removed.iter().map(|(_, b)| b).sum()
    }
}

/// Cleans this machine's prelude folders (the kernelspec's and the user's data folder) and
/// this user's build slots.
pub fn clean(dry_run: bool) -> Result<Report> {
    let mut roots = vec![session::prelude_root(), session::data_dir()];
    roots.dedup();
    let slots = session::cache_dir().join("slots");
    clean_in(
        &roots,
        &slots,
        CURRENT_HASH,
        session::prebuilt_ready(&session::toolchain_id()),
        dry_run,
    )
}

/// The version hash a `src-`/`prebuilt-` folder (or its lock, or an unfinished extraction
/// `.src-<hash>-<pid>`) belongs to.
fn version_of(name: &str) -> Option<&str> {
    let rest = name
        .strip_prefix("src-")
        .or_else(|| name.strip_prefix("prebuilt-"))
        .or_else(|| name.strip_prefix(".src-"))?;
    let rest = rest.strip_suffix(".lock").unwrap_or(rest);
    let hash = rest.split('-').next()?;
    (hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit())).then_some(hash)
}

/// The prelude versions a slot's manifest builds against (the hash of each `src-<hash>` path).
fn manifest_versions(slot: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(slot.join("Cargo.toml")).unwrap_or_default();
    manifest
        .split("/src-")
        .skip(1)
        .map(|rest| rest.chars().take(16).collect())
        .collect()
}

/// Whether an idle slot has built a prelude version other than `current`: it was seeded for
/// one, or its manifest points at another version's sources.
fn built_other_version(slot: &Path, current: &str) -> bool {
    let seeded_other = std::fs::read_dir(slot)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.strip_prefix(".seeded-r2-")
                .is_some_and(|h| h != current)
        });
    seeded_other || manifest_versions(slot).iter().any(|h| h != current)
}

/// The prelude versions the manifests of this user's busy slots point at.
fn versions_in_use(slots: &Path) -> Result<Vec<String>> {
    let mut versions = Vec::new();
    for entry in std::fs::read_dir(slots).into_iter().flatten().flatten() {
        let dir = entry.path();
        if !dir.is_dir() || session::try_lock(&dir.with_extension("lock"))?.is_some() {
            continue;
        }
        versions.extend(manifest_versions(&dir));
    }
    Ok(versions)
}

/// Bytes under `path`, not following symbolic links (a seeded slot links to the prebuilt
/// build; those bytes are not the slot's).
fn disk_usage(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    std::fs::read_dir(path)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| disk_usage(&e.path()))
        .sum()
}

fn remove(path: &Path, dry_run: bool, report: &mut Report) -> Result<()> {
    let bytes = disk_usage(path);
    if !dry_run {
        let meta = std::fs::symlink_metadata(path)?;
        if meta.is_dir() {
            std::fs::remove_dir_all(path)
        } else {
            std::fs::remove_file(path)
        }
        .with_context(|| format!("removing {}", path.display()))?;
    }
    report.removed.push((path.to_path_buf(), bytes));
    Ok(())
}

/// `clean` over explicit folders: `roots` hold `src-*`/`prebuilt-*`, `slots` the build
/// slots; `current` is this version's hash, `prebuilt_ready` whether its prebuilt prelude is
/// complete (then a removed slot is re-seeded from it in seconds, so an idle slot that built
/// another version goes; otherwise it stays, since it holds the compiled dependencies).
pub fn clean_in(
    roots: &[PathBuf],
    slots: &Path,
    current: &str,
    prebuilt_ready: bool,
    dry_run: bool,
) -> Result<Report> {
    let mut report = Report::default();
    // Versions whose sources a running kernel of this user builds against (an older kernel
    // still open after an update): their `src-` folders stay.
    let in_use = versions_in_use(slots)?;
    for root in roots {
        let Ok(entries) = std::fs::read_dir(root) else {
            continue;
        };
        let mut names: Vec<String> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in names {
            if version_of(&name).is_none_or(|h| h == current) || name.ends_with(".lock") {
                continue;
            }
            let path = root.join(&name);
            if name.starts_with("prebuilt-") {
                // Held while this folder is removed: no `warm` or seeding reads it meanwhile.
                let lock = path.with_extension("lock");
                let _held = match session::try_lock(&lock)? {
                    Some(held) => held,
                    None => {
                        report.kept.push((path, "in use (locked)".into()));
                        continue;
                    }
                };
                remove(&path, dry_run, &mut report)?;
                if !dry_run {
                    let _ = std::fs::remove_file(&lock);
                }
            } else if version_of(&name).is_some_and(|h| in_use.iter().any(|u| u == h)) {
                report
                    .kept
                    .push((path, "a running kernel builds against it".into()));
            } else {
                remove(&path, dry_run, &mut report)?;
            }
        }
    }
    let Ok(entries) = std::fs::read_dir(slots) else {
        return Ok(report);
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        if !built_other_version(&dir, current) {
            continue;
        }
        if !prebuilt_ready {
            report.kept.push((
                dir,
                "holds compiled dependencies and no prebuilt prelude is ready to re-seed it \
                 (run `gpulab-kernel warm` first)"
                    .into(),
            ));
            continue;
        }
        match session::try_lock(&dir.with_extension("lock"))? {
            Some(_held) => remove(&dir, dry_run, &mut report)?,
            None => report.kept.push((dir, "in use by a running kernel".into())),
        }
    }
    Ok(report)
}

/// Prints the report the way the command line shows it.
pub fn print(report: &Report, dry_run: bool) {
    let verb = if dry_run { "would remove" } else { "removed" };
    for (path, bytes) in &report.removed {
        println!("{verb} {} ({})", path.display(), mib(*bytes));
    }
    for (path, why) in &report.kept {
        println!("kept {}: {why}", path.display());
    }
    println!(
        "{} {} in {} item(s)",
        if dry_run { "would free" } else { "freed" },
        mib(report.freed()),
        report.removed.len()
    );
}

/// `bytes` as the command line shows sizes (`12.3 MiB`).
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "0123456789abcdef";
    const NEW: &str = "fedcba9876543210";

    fn write(path: &Path, bytes: usize) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, vec![0u8; bytes]).unwrap();
    }

    fn tree() -> (PathBuf, PathBuf, PathBuf) {
        let base = std::env::temp_dir().join(format!("gpulab-clean-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let (root, slots) = (base.join("spec"), base.join("cache/slots"));
        for h in [OLD, NEW] {
            write(&root.join(format!("src-{h}/prelude/Cargo.toml")), 10);
            write(&root.join(format!("prebuilt-{h}/target/x.rlib")), 1000);
            write(&root.join(format!("prebuilt-{h}.lock")), 0);
        }
        write(&root.join(format!(".src-{OLD}-4242/prelude/lib.rs")), 5);
        write(&root.join("kernel.json"), 3);
        // slot-0 built the old version, then was seeded for the new one; slot-1 only the new
        // one; slot-2 built the old one and is in use.
        for (n, hashes) in [(0, vec![OLD, NEW]), (1, vec![NEW]), (2, vec![OLD])] {
            let slot = slots.join(format!("slot-{n}"));
            for h in &hashes {
                write(&slot.join(format!(".seeded-r2-{h}")), 0);
            }
            let last = hashes.last().unwrap();
            std::fs::write(
                slot.join("Cargo.toml"),
                format!("gpulab = {{ path = \"/x/src-{last}/prelude\" }}\n"),
            )
            .unwrap();
            write(&slot.join("target/debug/deps/libgpulab.so"), 500);
            write(&slots.join(format!("slot-{n}.lock")), 0);
        }
        (base, root, slots)
    }

    #[test]
    fn version_names_are_recognised() {
        assert_eq!(version_of(&format!("src-{OLD}")), Some(OLD));
        assert_eq!(version_of(&format!("prebuilt-{OLD}.lock")), Some(OLD));
        assert_eq!(version_of(&format!(".src-{OLD}-123")), Some(OLD));
        assert_eq!(version_of("kernel.json"), None);
        assert_eq!(version_of("src-notahash"), None);
    }

    #[test]
    fn removes_other_versions_and_idle_old_slots_and_keeps_what_is_in_use() {
        let (base, root, slots) = tree();
        let busy = session::try_lock(&slots.join("slot-2.lock"))
            .unwrap()
            .unwrap();
        let slot0 = disk_usage(&slots.join("slot-0"));
        assert!(slot0 > 500);
        let dry = clean_in(std::slice::from_ref(&root), &slots, NEW, true, true).unwrap();
        assert!(
            root.join(format!("src-{OLD}")).exists(),
            "a dry run removes nothing"
        );
        let report = clean_in(std::slice::from_ref(&root), &slots, NEW, true, false).unwrap();
        assert_eq!(dry.removed, report.removed);
        for gone in [
            root.join(format!("prebuilt-{OLD}")),
            root.join(format!("prebuilt-{OLD}.lock")),
            slots.join("slot-0"),
        ] {
            assert!(!gone.exists(), "{} should be gone", gone.display());
        }
        for kept in [
            // slot-2's running kernel builds against the old sources.
            root.join(format!("src-{OLD}")),
            root.join(format!(".src-{OLD}-4242")),
            root.join(format!("src-{NEW}")),
            root.join(format!("prebuilt-{NEW}")),
            root.join("kernel.json"),
            slots.join("slot-1"),
            slots.join("slot-2"),
        ] {
            assert!(kept.exists(), "{} should stay", kept.display());
        }
        assert_eq!(report.kept.len(), 3, "{:?}", report.kept);
        assert!(report
            .kept
            .iter()
            .all(|(_, why)| why.contains("running") || why.contains("in use")));
        // The 1000-byte prebuilt and slot-0.
        assert_eq!(report.freed(), 1000 + slot0);
        drop(busy);
        // A held prebuilt lock keeps that folder; without a ready prebuilt, old slots stay.
        let (_, root, slots) = tree();
        let _warming = session::try_lock(&root.join(format!("prebuilt-{OLD}.lock")))
            .unwrap()
            .unwrap();
        let report = clean_in(std::slice::from_ref(&root), &slots, NEW, false, false).unwrap();
        assert!(root.join(format!("prebuilt-{OLD}")).exists());
        assert!(slots.join("slot-0").exists() && slots.join("slot-2").exists());
        assert_eq!(report.kept.len(), 3, "{:?}", report.kept);
        assert!(!root.join(format!("src-{OLD}")).exists());
        assert!(!root.join(format!(".src-{OLD}-4242")).exists());
        let _ = std::fs::remove_dir_all(base);
    }
}
