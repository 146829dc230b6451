//! The interrupt flag (ARCHITECTURE.md, contract 2). Its own test binary because the
//! environment variable must be set before the flag is first read, once per process.
use std::io::{Seek, SeekFrom, Write};

#[test]
fn flag_follows_the_file() {
    let dir = std::env::temp_dir().join(format!("gpulab-int-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("flag");
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(b"0").unwrap();
    f.flush().unwrap();
    std::env::set_var(gpulab::interrupt::ENV_VAR, &path);

    assert!(gpulab::interrupt::available());
    assert!(!gpulab::interrupt::requested());
    assert!(gpulab::interrupt::check().is_ok());

    let mut set = |b: &[u8]| {
        f.seek(SeekFrom::Start(0)).unwrap();
        f.write_all(b).unwrap();
        f.flush().unwrap();
    };
    set(b"1");
    assert!(gpulab::interrupt::requested());
    assert!(matches!(
        gpulab::interrupt::check(),
        Err(gpulab::Error::Interrupted)
    ));
    set(b"0");
    assert!(!gpulab::interrupt::requested());
    set(&[1]);
    assert!(gpulab::interrupt::requested());
    set(&[0]);
    assert!(!gpulab::interrupt::requested());
    std::fs::remove_dir_all(&dir).ok();
}
