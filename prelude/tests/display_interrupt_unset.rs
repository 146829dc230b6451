//! Without a usable flag file the flag reads as "not requested" and nothing panics.
//! Each case needs a fresh process (the flag is mapped once), so the parent test re-runs
//! this binary with `probe` selected and the variable set as the case requires.

#[test]
fn probe() {
    if std::env::var_os("GPULAB_TEST_PROBE").is_none() {
        return; // only meaningful inside the child processes below
    }
    assert!(!gpulab::interrupt::available());
    assert!(!gpulab::interrupt::requested());
    assert!(gpulab::interrupt::check().is_ok());
}

fn run_probe(var: Option<&std::path::Path>) {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "probe", "--nocapture"])
        .env("GPULAB_TEST_PROBE", "1");
    match var {
        Some(p) => cmd.env(gpulab::interrupt::ENV_VAR, p),
        None => cmd.env_remove(gpulab::interrupt::ENV_VAR),
    };
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "probe failed for {var:?}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"));
}

#[test]
fn unset_missing_empty_and_directory() {
    run_probe(None);
    run_probe(Some(std::path::Path::new("/nonexistent/gpulab-flag")));
    let dir = std::env::temp_dir().join(format!("gpulab-unset-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("empty");
    std::fs::write(&empty, b"").unwrap();
    run_probe(Some(&empty));
    run_probe(Some(&dir));
    std::fs::remove_dir_all(&dir).ok();
}
