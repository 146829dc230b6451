//! nvidia_smi() and cpu_info(): the real calls on this machine, and the formatting of a
//! report built by hand (there may be no GPU to read one from).

use gpulab::smi::{GpuProcess, GpuStatus};
use gpulab::{cpu_info, cuda, nvidia_smi, Error, SmiReport};

fn sample() -> SmiReport {
    SmiReport {
        driver_version: "580.95.05".into(),
        cuda_version: "13.0".into(),
        gpus: vec![GpuStatus {
            cuda_index: Some(0),
            index: 0,
            name: "NVIDIA H200".into(),
            bus_id: "00000000:18:00.0".into(),
            memory_used: 1 << 30,
            memory_total: 141 << 30,
            utilization: Some(37),
            temperature_c: Some(41),
            power_draw_w: Some(120.4),
            power_cap_w: None,
            processes: vec![GpuProcess {
                gpu: 0,
                pid: 4242,
                name: "evcxr <child>".into(),
                used_memory: Some(512 << 20),
                kernel: Some("alice · kernel 3f2a9c1e (this notebook)".into()),
            }],
        }],
    }
}

#[test]
fn smi_text_is_an_aligned_table() {
    let text = sample().to_string();
    println!("{text}");
    assert!(text.starts_with("Driver Version: 580.95.05    CUDA Version: 13.0\n"));
    let table: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with('|') || l.starts_with('+'))
        .collect();
    let width = table[0].chars().count();
    assert!(
        table[..5].iter().all(|l| l.chars().count() == width),
        "ragged rows:\n{text}"
    );
    for cell in [
        "NVIDIA H200",
        "cuda:0",
        "1.0 GiB / 141.0 GiB",
        "37%",
        "41C",
        "120W / N/A",
        "4242",
        "512.0 MiB",
        "alice · kernel 3f2a9c1e (this notebook)",
    ] {
        assert!(text.contains(cell), "missing {cell:?}:\n{text}");
    }
}

#[test]
fn smi_html_escapes() {
    let html = sample().to_html();
    assert!(html.contains("<td>NVIDIA H200</td>"));
    assert!(html.contains("evcxr &lt;child&gt;") && !html.contains("<child>"));
    let mut idle = sample();
    idle.gpus[0].processes.clear();
    assert!(idle.to_html().contains("No running processes found"));
}

#[test]
fn nvidia_smi_here() {
    match nvidia_smi() {
        Ok(r) => {
            println!("{r}");
            // NVML counts every board and ignores CUDA_VISIBLE_DEVICES; under MIG, CUDA counts
            // instances. The counts agree only without either (G7).
            let mig = (0..cuda::device_count())
                .any(|i| cuda::get_device_name(i).is_ok_and(|n| n.contains("MIG")));
            if std::env::var_os("CUDA_VISIBLE_DEVICES").is_none() && !mig {
                assert_eq!(r.gpus.len(), cuda::device_count());
                // Then every board has its own CUDA ordinal (matched by PCI bus id).
                let mut ordinals: Vec<usize> = r.gpus.iter().filter_map(|g| g.cuda_index).collect();
                ordinals.sort();
                assert_eq!(
                    ordinals,
                    (0..cuda::device_count()).collect::<Vec<_>>(),
                    "{r:?}"
                );
            } else {
                println!(
                    "CUDA_VISIBLE_DEVICES or MIG: NVML sees {} boards",
                    r.gpus.len()
                );
            }
            assert!(r
                .gpus
                .iter()
                .all(|g| g.memory_total > 0 && g.memory_used <= g.memory_total));
        }
        Err(e) => {
            println!("no NVML: {e}");
            assert!(matches!(e, Error::LibraryNotFound { .. }), "{e:?}");
            assert!(e.to_string().contains("libnvidia-ml.so.1"), "{e}");
            assert!(!cuda::is_available());
        }
    }
}

#[test]
fn cpu_info_here() {
    let c = cpu_info();
    println!("{c}");
    assert!(c.logical_cores >= 1 && c.physical_cores >= 1 && c.physical_cores <= c.logical_cores);
    assert_eq!(
        c.logical_cores,
        std::thread::available_parallelism().unwrap().get()
    );
    if cfg!(target_os = "linux") {
        assert!(c.memory_total > 0 && c.memory_available <= c.memory_total);
    }
    assert!(c.to_string().contains(&c.model));
    assert!(c.to_html().starts_with("<div><b>CPU</b><table>"));
}

#[test]
fn reports_are_rich_with_html_and_text() {
    use gpulab::display::display_line;
    use gpulab::Rich;
    let lines = [
        display_line(&cpu_info().mime_bundle(), None),
        display_line(&sample().mime_bundle(), Some("smi")),
    ];
    for line in lines {
        let body = line
            .trim_start_matches(gpulab::display::LINE_PREFIX)
            .trim_end();
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        let html = v["data"]["text/html"].as_str().expect("text/html");
        let text = v["data"]["text/plain"].as_str().expect("text/plain");
        assert!(html.starts_with("<div>") && text.contains('+'), "{v}");
    }
    assert_eq!(
        sample().mime_bundle().get("text/plain"),
        Some(sample().to_string().as_str())
    );
}
