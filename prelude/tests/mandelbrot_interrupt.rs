//! Mandelbrot renders stop with Error::Interrupted once the kernel raises the flag.
use gpulab::*;

#[test]
fn raised_flag_stops_both_cpu_paths() {
    let path = std::env::temp_dir().join(format!("gpulab-mflag-{}", std::process::id()));
    std::fs::write(&path, b"1").unwrap();
    std::env::set_var(gpulab::interrupt::ENV_VAR, &path);
    let m = Mandelbrot::default().size(64, 64);
    assert!(matches!(m.cpu_serial(), Err(gpulab::Error::Interrupted)));
    assert!(matches!(m.cpu_parallel(), Err(gpulab::Error::Interrupted)));
    std::fs::write(&path, b"0").unwrap();
    assert!(m.cpu_serial().is_ok());
    assert!(m.cpu_parallel().is_ok());
    std::fs::remove_file(&path).ok();
}
