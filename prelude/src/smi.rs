//! `nvidia_smi()`: the GPU status table nvidia-smi prints, read from NVML (the library
//! nvidia-smi itself uses, `libnvidia-ml.so.1`, part of the driver). We load the dozen
//! functions we need ourselves rather than pull in a wrapper crate and its proc macros.

use crate::display::{html_escape, MimeBundle, Rich};
use crate::error::{human_bytes, Error, Result};
use crate::table::{html_table, text_table};
use libloading::Library;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub struct SmiReport {
    pub driver_version: String,
    /// Newest CUDA version the driver supports, e.g. "13.0".
    pub cuda_version: String,
    pub gpus: Vec<GpuStatus>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GpuStatus {
    /// NVML's index, the one `nvidia-smi` prints (PCI order, every board in the machine).
    pub index: u32,
    /// This GPU's CUDA ordinal in this process (`cuda:N`), matched by PCI bus id: CUDA orders
    /// devices fastest first and `CUDA_VISIBLE_DEVICES` renumbers or hides them, so it can differ
    /// from `index`. `None` when CUDA cannot see this GPU (hidden, or CUDA unavailable).
    pub cuda_index: Option<usize>,
    pub name: String,
    pub bus_id: String,
    pub memory_used: u64,
    pub memory_total: u64,
    /// Percent of time a kernel was running over the last sample period.
    pub utilization: Option<u32>,
    pub temperature_c: Option<u32>,
    pub power_draw_w: Option<f64>,
    pub power_cap_w: Option<f64>,
    pub processes: Vec<GpuProcess>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GpuProcess {
    pub gpu: u32,
    pub pid: u32,
    pub name: String,
    /// Not available in some containers and under some drivers.
    pub used_memory: Option<u64>,
    /// The Jupyter kernel the process belongs to, for a class sharing one GPU:
    /// "alice · kernel 3f2a9c1e (this notebook)", from the process's (or its parent's)
    /// `--connection-file` and its owner, read in /proc. `None` for any other process, or when
    /// /proc shows nothing (another PID namespace, such as a container).
    pub kernel: Option<String>,
}

type Dev = *mut c_void;

#[repr(C)]
struct Memory {
    total: u64,
    free: u64,
    used: u64,
}
/// `nvmlMemory_v2_t`: `used` leaves out what the driver reserves, as nvidia-smi shows it.
#[repr(C)]
struct MemoryV2 {
    version: c_uint,
    total: u64,
    reserved: u64,
    free: u64,
    used: u64,
}
/// `nvmlMemory_v2`: NVML_STRUCT_VERSION(Memory, 2).
const MEMORY_V2: c_uint = std::mem::size_of::<MemoryV2>() as c_uint | (2 << 24);
/// NVML_ERROR_INSUFFICIENT_SIZE: the process list has more entries than the buffer.
const NVML_INSUFFICIENT_SIZE: c_int = 7;
#[repr(C)]
struct Utilization {
    gpu: c_uint,
    memory: c_uint,
}
#[repr(C)]
struct PciInfo {
    bus_id_legacy: [c_char; 16],
    domain: c_uint,
    bus: c_uint,
    device: c_uint,
    pci_device_id: c_uint,
    pci_subsystem_id: c_uint,
    bus_id: [c_char; 32],
}
#[repr(C)]
#[derive(Clone, Copy)]
struct ProcessInfo {
    pid: c_uint,
    used_gpu_memory: u64,
    gpu_instance_id: c_uint,
    compute_instance_id: c_uint,
}

/// NVML's "not available" value for a process's memory.
const NVML_VALUE_NOT_AVAILABLE: u64 = u64::MAX;

struct Nvml {
    lib: Library,
}

impl Nvml {
    fn open() -> Result<Nvml> {
        // SAFETY: NVML's initialisers have no preconditions.
        let lib = unsafe { Library::new("libnvidia-ml.so.1") }.map_err(|e| Error::LibraryNotFound {
            library: "NVML (libnvidia-ml.so.1)",
            detail: format!("{e}; it ships with the NVIDIA driver, so this machine has no NVIDIA driver installed"),
        })?;
        let n = Nvml { lib };
        // SAFETY: nvmlInit_v2 takes no arguments; the signature is NVML's.
        n.check("nvmlInit_v2", unsafe {
            n.sym::<unsafe extern "C" fn() -> c_int>("nvmlInit_v2")?()
        })?;
        Ok(n)
    }

    fn sym<T: Copy>(&self, name: &str) -> Result<T> {
        // SAFETY: T is the function's C signature, written out at each call site.
        unsafe { self.lib.get::<T>(name.as_bytes()) }
            .map(|s| *s)
            .map_err(|e| Error::Cuda {
                op: format!("NVML symbol {name}"),
                detail: e.to_string(),
            })
    }

    fn check(&self, op: &str, ret: c_int) -> Result<()> {
        if ret == 0 {
            return Ok(());
        }
        let text = self
            .sym::<unsafe extern "C" fn(c_int) -> *const c_char>("nvmlErrorString")
            .ok()
            .map(|f| {
                // SAFETY: nvmlErrorString returns a static NUL-terminated string for any code.
                unsafe { CStr::from_ptr(f(ret)) }
                    .to_string_lossy()
                    .into_owned()
            })
            .unwrap_or_else(|| format!("error {ret}"));
        Err(Error::Cuda {
            op: op.to_string(),
            detail: text,
        })
    }

    fn string(&self, op: &str, f: impl FnOnce(*mut c_char, c_uint) -> c_int) -> Result<String> {
        let mut buf = [0 as c_char; 256];
        self.check(op, f(buf.as_mut_ptr(), buf.len() as c_uint))?;
        // SAFETY: on success NVML wrote a NUL-terminated string of at most `buf.len()` bytes; the
        // buffer starts zeroed, so it is terminated even if NVML wrote nothing.
        Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned())
    }

    fn report(&self) -> Result<SmiReport> {
        type StrFn = unsafe extern "C" fn(*mut c_char, c_uint) -> c_int;
        // SAFETY (each NVML call below): the symbol's type is NVML's C signature for that name;
        // every pointer passed is to a live local of the declared `#[repr(C)]` type, or a buffer
        // whose length is passed alongside; the device handle comes from NVML in this session.
        let driver_version = self.string("nvmlSystemGetDriverVersion", |p, n| unsafe {
            self.sym::<StrFn>("nvmlSystemGetDriverVersion")
                .map(|f| f(p, n))
                .unwrap_or(-1)
        })?;
        let mut cuda = 0;
        let get_cuda = self.sym::<unsafe extern "C" fn(*mut c_int) -> c_int>(
            "nvmlSystemGetCudaDriverVersion_v2",
        )?;
        // SAFETY: see the note at the top of this function.
        self.check("nvmlSystemGetCudaDriverVersion", unsafe {
            get_cuda(&mut cuda)
        })?;
        let mut count: c_uint = 0;
        let get_count =
            self.sym::<unsafe extern "C" fn(*mut c_uint) -> c_int>("nvmlDeviceGetCount_v2")?;
        // SAFETY: see the note at the top of this function.
        self.check("nvmlDeviceGetCount", unsafe { get_count(&mut count) })?;
        let mut gpus = (0..count)
            .map(|i| self.gpu(i))
            .collect::<Result<Vec<_>>>()?;
        let cuda_buses: Vec<String> = (0..crate::cuda::device_count())
            .map(|i| {
                crate::cuda::get_device_properties(i)
                    .map(|p| p.pci_bus_id)
                    .unwrap_or_default()
            })
            .collect();
        let nvml_buses: Vec<&str> = gpus.iter().map(|g| g.bus_id.as_str()).collect();
        let ordinals = cuda_ordinals(&nvml_buses, &cuda_buses);
        for (g, ordinal) in gpus.iter_mut().zip(ordinals) {
            g.cuda_index = ordinal;
        }
        Ok(SmiReport {
            driver_version,
            cuda_version: format!("{}.{}", cuda / 1000, (cuda % 1000) / 10),
            gpus,
        })
    }

    fn gpu(&self, index: u32) -> Result<GpuStatus> {
        let mut dev: Dev = std::ptr::null_mut();
        let by_index = self.sym::<unsafe extern "C" fn(c_uint, *mut Dev) -> c_int>(
            "nvmlDeviceGetHandleByIndex_v2",
        )?;
        // SAFETY (each NVML call in this function): the symbol's type is NVML's C signature;
        // pointers are to live locals of the declared `#[repr(C)]` types (or a buffer with its
        // length); `dev` is the handle NVML returned here for `index`.
        self.check("nvmlDeviceGetHandleByIndex", unsafe {
            by_index(index, &mut dev)
        })?;
        // SAFETY: see the note above.
        let name = self.string("nvmlDeviceGetName", |p, n| unsafe {
            self.sym::<unsafe extern "C" fn(Dev, *mut c_char, c_uint) -> c_int>("nvmlDeviceGetName")
                .map(|f| f(dev, p, n))
                .unwrap_or(-1)
        })?;
        // SAFETY: PciInfo is plain integers and byte arrays, for which all zeroes is valid.
        let mut pci: PciInfo = unsafe { std::mem::zeroed() };
        let bus_id = match self
            .sym::<unsafe extern "C" fn(Dev, *mut PciInfo) -> c_int>("nvmlDeviceGetPciInfo_v3")
        {
            // SAFETY: see the note above; on success `bus_id` is NUL-terminated within its 32
            // bytes (it starts zeroed in any case).
            Ok(f) if unsafe { f(dev, &mut pci) } == 0 => {
                // SAFETY: as just said, a NUL-terminated string inside `pci`.
                unsafe { CStr::from_ptr(pci.bus_id.as_ptr()) }
                    .to_string_lossy()
                    .into_owned()
            }
            _ => "unknown".into(),
        };
        let mut mem = Memory {
            total: 0,
            free: 0,
            used: 0,
        };
        // v2 first (G7): v1's "used" includes the driver's reservation, hundreds of MiB more
        // than nvidia-smi reports on an idle board. Drivers before R510 have only v1.
        let mut v2 = MemoryV2 {
            version: MEMORY_V2,
            total: 0,
            reserved: 0,
            free: 0,
            used: 0,
        };
        let got_v2 = self
            .sym::<unsafe extern "C" fn(Dev, *mut MemoryV2) -> c_int>("nvmlDeviceGetMemoryInfo_v2")
            // SAFETY: `v2` is a correctly versioned nvmlMemory_v2_t.
            .is_ok_and(|f| unsafe { f(dev, &mut v2) } == 0);
        if got_v2 {
            mem = Memory {
                total: v2.total,
                free: v2.free,
                used: v2.used,
            };
        } else {
            let get_mem = self.sym::<unsafe extern "C" fn(Dev, *mut Memory) -> c_int>(
                "nvmlDeviceGetMemoryInfo",
            )?;
            // SAFETY: see the note above; `mem` is an nvmlMemory_t.
            self.check("nvmlDeviceGetMemoryInfo", unsafe { get_mem(dev, &mut mem) })?;
        }
        // The rest is optional: NVML answers "not supported" for some of it on some boards.
        let u32_query = |f: &dyn Fn(Dev, *mut c_uint) -> c_int| -> Option<u32> {
            let mut v: c_uint = 0;
            (f(dev, &mut v) == 0).then_some(v)
        };
        let utilization = self
            .sym::<unsafe extern "C" fn(Dev, *mut Utilization) -> c_int>(
                "nvmlDeviceGetUtilizationRates",
            )
            .ok()
            .and_then(|f| {
                let mut u = Utilization { gpu: 0, memory: 0 };
                // SAFETY: see the note above; `u` is an nvmlUtilization_t.
                (unsafe { f(dev, &mut u) } == 0).then_some(u.gpu)
            });
        let temp_fn = self
            .sym::<unsafe extern "C" fn(Dev, c_int, *mut c_uint) -> c_int>(
                "nvmlDeviceGetTemperature",
            )
            .ok();
        // SAFETY: see the note above; 0 is NVML_TEMPERATURE_GPU and `v` points to a c_uint.
        let temperature_c = temp_fn.and_then(|f| u32_query(&|d, v| unsafe { f(d, 0, v) }));
        let milliwatts = |sym: &str| -> Option<f64> {
            let f = self
                .sym::<unsafe extern "C" fn(Dev, *mut c_uint) -> c_int>(sym)
                .ok()?;
            // SAFETY: see the note above; `v` points to a c_uint.
            u32_query(&|d, v| unsafe { f(d, v) }).map(|mw| mw as f64 / 1000.0)
        };
        let processes = self.processes(index, dev);
        Ok(GpuStatus {
            index,
            cuda_index: None,
            name,
            bus_id,
            memory_used: mem.used,
            memory_total: mem.total,
            utilization,
            temperature_c,
            power_draw_w: milliwatts("nvmlDeviceGetPowerUsage"),
            power_cap_w: milliwatts("nvmlDeviceGetEnforcedPowerLimit"),
            processes,
        })
    }

    fn processes(&self, gpu: u32, dev: Dev) -> Vec<GpuProcess> {
        let Ok(list) = self
            .sym::<unsafe extern "C" fn(Dev, *mut c_uint, *mut ProcessInfo) -> c_int>(
                "nvmlDeviceGetComputeRunningProcesses_v3",
            )
        else {
            return vec![];
        };
        let mut n: c_uint = 64;
        let mut buf = vec![
            ProcessInfo {
                pid: 0,
                used_gpu_memory: 0,
                gpu_instance_id: 0,
                compute_instance_id: 0
            };
            // Twice the entries NVML is told about: some R535 drivers write a 32-byte
            // struct per process instead of the 24-byte one declared here, and must not
            // write past the buffer.
            2 * n as usize
        ];
        // SAFETY: `n` tells NVML how many entries it may write; the buffer holds twice as many
        // (see above), and `dev` is a handle NVML returned.
        let mut ret = unsafe { list(dev, &mut n, buf.as_mut_ptr()) };
        if ret == NVML_INSUFFICIENT_SIZE {
            // More processes than the buffer holds: NVML said how many; ask again with room
            // for a few that may start meanwhile.
            n += 8;
            buf.resize(2 * n as usize, buf[0]);
            // SAFETY: as above, with the buffer resized to twice the new `n`.
            ret = unsafe { list(dev, &mut n, buf.as_mut_ptr()) };
        }
        if ret != 0 {
            return vec![];
        }
        buf.truncate(n as usize);
        let name_fn = self
            .sym::<unsafe extern "C" fn(c_uint, *mut c_char, c_uint) -> c_int>(
                "nvmlSystemGetProcessName",
            )
            .ok();
        buf.iter()
            .take(n as usize)
            .map(|p| GpuProcess {
                gpu,
                pid: p.pid,
                name: name_fn
                    .and_then(|f| {
                        // SAFETY: `b` is a buffer of `l` bytes (`Nvml::string`), the signature NVML's.
                        self.string("nvmlSystemGetProcessName", |b, l| unsafe { f(p.pid, b, l) })
                            .ok()
                    })
                    .unwrap_or_else(|| "?".into()),
                used_memory: (p.used_gpu_memory != NVML_VALUE_NOT_AVAILABLE)
                    .then_some(p.used_gpu_memory),
                kernel: owning_kernel(p.pid),
            })
            .collect()
    }
}

impl Drop for Nvml {
    fn drop(&mut self) {
        if let Ok(f) = self.sym::<unsafe extern "C" fn() -> c_int>("nvmlShutdown") {
            // SAFETY: balances the nvmlInit_v2 of `open`; no NVML handle outlives `self`.
            unsafe { f() };
        }
    }
}

/// The state of every NVIDIA GPU, like the `nvidia-smi` command: driver and CUDA versions,
/// and per GPU its memory, utilisation, temperature, power and running processes.
pub fn nvidia_smi() -> Result<SmiReport> {
    Nvml::open()?.report()
}

fn opt<T: fmt::Display>(v: Option<T>, unit: &str) -> String {
    v.map(|v| format!("{v}{unit}"))
        .unwrap_or_else(|| "N/A".into())
}

impl SmiReport {
    fn rows(&self) -> Vec<Vec<String>> {
        self.gpus
            .iter()
            .map(|g| {
                vec![
                    g.index.to_string(),
                    g.cuda_index
                        .map(|i| format!("cuda:{i}"))
                        .unwrap_or_else(|| "-".into()),
                    g.name.clone(),
                    g.bus_id.clone(),
                    format!(
                        "{} / {}",
                        human_bytes(g.memory_used),
                        human_bytes(g.memory_total)
                    ),
                    opt(g.utilization, "%"),
                    opt(g.temperature_c, "C"),
                    format!(
                        "{} / {}",
                        opt(g.power_draw_w.map(|w| format!("{w:.0}")), "W"),
                        opt(g.power_cap_w.map(|w| format!("{w:.0}")), "W")
                    ),
                ]
            })
            .collect()
    }

    fn process_rows(&self) -> Vec<Vec<String>> {
        self.gpus
            .iter()
            .flat_map(|g| &g.processes)
            .map(|p| {
                vec![
                    p.gpu.to_string(),
                    p.pid.to_string(),
                    p.name.clone(),
                    p.used_memory
                        .map(human_bytes)
                        .unwrap_or_else(|| "N/A".into()),
                    p.kernel.clone().unwrap_or_else(|| "-".into()),
                ]
            })
            .collect()
    }

    fn title(&self) -> String {
        format!(
            "Driver Version: {}    CUDA Version: {}",
            self.driver_version, self.cuda_version
        )
    }

    pub fn to_html(&self) -> String {
        let mut s = format!(
            "<div><b>NVIDIA GPUs</b> &mdash; {}",
            html_escape(&self.title())
        );
        s += &html_table(GPU_HEADER, &self.rows());
        if self.gpus.iter().any(|g| !g.processes.is_empty()) {
            s += &html_table(PROC_HEADER, &self.process_rows());
        } else {
            s += "<p>No running processes found</p>";
        }
        s + "</div>"
    }
}

const GPU_HEADER: &[&str] = &[
    "GPU",
    "CUDA",
    "Name",
    "Bus-Id",
    "Memory-Usage",
    "GPU-Util",
    "Temp",
    "Power (draw / cap)",
];
const PROC_HEADER: &[&str] = &["GPU", "PID", "Process name", "GPU Memory", "Kernel"];

/// The connection file a kernel's command line names (`--connection-file F`, `-f F`, or a
/// bare `...kernel-ID.json` as some launchers pass it).
fn connection_file(args: &[String]) -> Option<&str> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--connection-file" || a == "-f" {
            return it.next().map(String::as_str);
        }
        if let Some(f) = a.strip_prefix("--connection-file=") {
            return Some(f);
        }
        if a.ends_with(".json") && a.contains("kernel") {
            return Some(a);
        }
    }
    None
}

/// "alice · kernel 3f2a9c1e (this notebook)": the owner, the first 8 characters of the kernel
/// id Jupyter put in the connection file's name (what the notebook's URL and the server's
/// kernels API show), and whether it is the kernel asking.
fn kernel_label(user: Option<&str>, connection_file: &str, ours: bool) -> String {
    let stem = std::path::Path::new(connection_file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let id = stem.strip_prefix("kernel-").unwrap_or(&stem);
    let id: String = id.chars().take(8).collect();
    let mut s = user.map(|u| format!("{u} · ")).unwrap_or_default();
    s += &format!("kernel {id}");
    if ours {
        s += " (this notebook)";
    }
    s
}

/// The process's command line, and its parent's pid, from /proc.
fn proc_info(pid: u32) -> Option<(Vec<String>, u32)> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args = raw
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
    let ppid = stat
        .rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some((args, ppid))
}

/// The kernel process at or above `pid` (evcxr's cell child, which holds the CUDA context, is
/// the kernel's child) and its connection file.
fn kernel_process(pid: u32) -> Option<(u32, String)> {
    let mut p = pid;
    for _ in 0..4 {
        let (args, ppid) = proc_info(p)?;
        if let Some(f) = connection_file(&args) {
            return Some((p, f.to_string()));
        }
        if ppid <= 1 {
            return None;
        }
        p = ppid;
    }
    None
}

fn user_name(pid: u32) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let uid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .to_string();
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    Some(
        passwd
            .lines()
            .map(|l| l.split(':').collect::<Vec<_>>())
            .find(|f| f.len() > 2 && f[2] == uid)
            .map(|f| f[0].to_string())
            .unwrap_or_else(|| format!("uid {uid}")),
    )
}

fn owning_kernel(pid: u32) -> Option<String> {
    let (kernel, file) = kernel_process(pid)?;
    let ours = kernel_process(std::process::id()).is_some_and(|(k, _)| k == kernel);
    Some(kernel_label(user_name(pid).as_deref(), &file, ours))
}

impl fmt::Display for SmiReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.title())?;
        write!(f, "{}", text_table(GPU_HEADER, &self.rows()))?;
        writeln!(f, "Processes:")?;
        let procs = self.process_rows();
        if procs.is_empty() {
            writeln!(f, "  No running processes found")
        } else {
            write!(f, "{}", text_table(PROC_HEADER, &procs))
        }
    }
}

/// An HTML table, with the text form for front ends that cannot show HTML.
impl Rich for SmiReport {
    fn mime_bundle(&self) -> MimeBundle {
        MimeBundle::new()
            .with("text/html", self.to_html())
            .with("text/plain", self.to_string())
    }
}

// `display(&nvidia_smi()?)` needs Rich; the inherent evcxr_display keeps a cell ending in
// the report showing the table.
crate::rich_evcxr_display!(SmiReport);

/// A PCI bus id as (domain, bus, device, function): NVML writes "00000000:3B:00.0", other tools
/// "0000:3b:00.0"; both name the same slot.
fn parse_bus_id(id: &str) -> Option<(u32, u32, u32, u32)> {
    let (domain, rest) = id.trim().split_once(':')?;
    let (bus, rest) = rest.split_once(':')?;
    let (device, function) = rest.split_once('.').unwrap_or((rest, "0"));
    let hex = |s: &str| u32::from_str_radix(s, 16).ok();
    Some((hex(domain)?, hex(bus)?, hex(device)?, hex(function)?))
}

/// For each NVML device (by bus id), the CUDA ordinal with the same bus id, if any. Functions
/// are ignored: CUDA reports device-level ids and a GPU is one PCI device.
fn cuda_ordinals(nvml: &[&str], cuda: &[String]) -> Vec<Option<usize>> {
    let slot = |id: &str| parse_bus_id(id).map(|(d, b, dev, _)| (d, b, dev));
    nvml.iter()
        .map(|n| {
            let n = slot(n)?;
            cuda.iter().position(|c| slot(c) == Some(n))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_kernels_connection_file_is_found_in_its_command_line() {
        let file =
            "/run/user/1000/jupyter/runtime/kernel-3f2a9c1e-77aa-4c1b-9d2e-0a1b2c3d4e5f.json";
        for cmd in [
            args(&["/k/gpulab-kernel", "--connection-file", file]),
            args(&["/k/gpulab-kernel", "-f", file]),
            args(&["/k/gpulab-kernel", &format!("--connection-file={file}")]),
            args(&["/k/gpulab-kernel", file]),
        ] {
            assert_eq!(connection_file(&cmd), Some(file), "{cmd:?}");
        }
        assert_eq!(connection_file(&args(&["python3", "train.py"])), None);
        // evcxr's cell child: the kernel binary re-run without arguments.
        assert_eq!(connection_file(&args(&["/k/gpulab-kernel"])), None);
    }

    #[test]
    fn kernel_labels_name_the_owner_and_the_short_kernel_id() {
        let file = "/tmp/kernel-3f2a9c1e-77aa-4c1b-9d2e-0a1b2c3d4e5f.json";
        assert_eq!(
            kernel_label(Some("alice"), file, false),
            "alice · kernel 3f2a9c1e"
        );
        assert_eq!(
            kernel_label(Some("bob"), file, true),
            "bob · kernel 3f2a9c1e (this notebook)"
        );
        assert_eq!(
            kernel_label(None, "/tmp/tmpdlrala3d.json", false),
            "kernel tmpdlral"
        );
    }

    #[test]
    fn proc_is_read_for_this_process() {
        // The test binary is no kernel, and its parent chain names no connection file.
        let (args, ppid) = proc_info(std::process::id()).expect("/proc on Linux");
        assert!(!args.is_empty() && ppid > 0);
        assert!(user_name(std::process::id()).is_some());
        assert_eq!(owning_kernel(u32::MAX), None);
    }

    #[test]
    fn nvml_devices_map_to_cuda_ordinals_by_bus_id() {
        // Two boards; CUDA_VISIBLE_DEVICES=1 leaves CUDA only the second, as cuda:0.
        let nvml = ["00000000:1B:00.0", "00000000:3B:00.0"];
        let cuda = vec!["00000000:3B:00.0".to_string()];
        assert_eq!(cuda_ordinals(&nvml, &cuda), vec![None, Some(0)]);
        // CUDA's fastest-first order can reverse NVML's PCI order; formats may differ.
        let cuda = vec!["0000:3b:00.0".to_string(), "0000:1b:00.0".to_string()];
        assert_eq!(cuda_ordinals(&nvml, &cuda), vec![Some(1), Some(0)]);
        // No CUDA (no driver for this process), or an unreadable id.
        assert_eq!(cuda_ordinals(&nvml, &[]), vec![None, None]);
        assert_eq!(cuda_ordinals(&["unknown"], &cuda), vec![None]);
    }
}
