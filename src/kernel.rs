//! What the running kernel offers, asked of the kernel itself (sysfs and
//! tracefs), and the mounting of tracefs when it is missing.

use std::{ffi::CString, path::Path, sync::Mutex};

use crate::error::{err, BpfResult, Code};

const TRACEFS: &str = "/sys/kernel/tracing";
const DEBUGFS_TRACING: &str = "/sys/kernel/debug/tracing";

static TRACEFS_ROOT: Mutex<Option<&'static str>> = Mutex::new(None);

/// The tracefs root, mounting tracefs at /sys/kernel/tracing when neither
/// place has it and we are root (once, quietly).
pub fn tracefs_root() -> BpfResult<&'static str> {
  let mut cached = TRACEFS_ROOT.lock().unwrap();
  if let Some(root) = *cached {
    return Ok(root);
  }
  for root in [TRACEFS, DEBUGFS_TRACING] {
    if Path::new(root).join("events").is_dir() {
      *cached = Some(root);
      return Ok(root);
    }
  }
  let target = CString::new(TRACEFS).unwrap();
  let fstype = CString::new("tracefs").unwrap();
  // SAFETY: valid NUL-terminated strings, no data argument.
  let rc = unsafe {
    libc::mount(fstype.as_ptr(), target.as_ptr(), fstype.as_ptr(), 0, std::ptr::null())
  };
  if rc == 0 && Path::new(TRACEFS).join("events").is_dir() {
    *cached = Some(TRACEFS);
    return Ok(TRACEFS);
  }
  let why = std::io::Error::last_os_error();
  err(
    Code::Tracefs,
    format!(
      "tracefs is not mounted and mounting it at {TRACEFS} failed ({why}); run as root: mount -t tracefs tracefs {TRACEFS}"
    ),
  )
}

/// Whether the tracepoint `category:name` exists on this kernel.
pub fn tracepoint_exists(category: &str, name: &str) -> BpfResult<bool> {
  let root = tracefs_root()?;
  Ok(Path::new(root).join("events").join(category).join(name).is_dir())
}

/// Whether the kernel can do kprobes: the kprobe PMU (perf_event based
/// kprobes, what libbpf uses) or the legacy kprobe_events file.
pub fn kprobes_available() -> bool {
  Path::new("/sys/bus/event_source/devices/kprobe/type").exists()
    || tracefs_root()
      .map(|root| Path::new(root).join("kprobe_events").exists())
      .unwrap_or(false)
}

/// The syscall a kprobe name refers to: the article's `sys_enter_openat`,
/// `sys_exit_openat`, `sys_openat`, or the wrappers `__x64_sys_openat`,
/// `__arm64_sys_openat`, `__se_sys_openat`, `__do_sys_openat`.
pub fn syscall_of_kprobe_name(func: &str) -> Option<&str> {
  for prefix in ["sys_enter_", "sys_exit_", "__x64_sys_", "__arm64_sys_", "__se_sys_", "__do_sys_", "__ia32_sys_", "sys_"] {
    if let Some(rest) = func.strip_prefix(prefix) {
      if !rest.is_empty() {
        return Some(rest);
      }
    }
  }
  None
}

/// The kernel function behind a syscall on this architecture.
pub fn syscall_function(syscall: &str) -> String {
  #[cfg(target_arch = "x86_64")]
  return format!("__x64_sys_{syscall}");
  #[cfg(target_arch = "aarch64")]
  return format!("__arm64_sys_{syscall}");
  #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
  return format!("sys_{syscall}");
}

/// The tracepoint to use instead of a kprobe on `func`, if one exists:
/// `syscalls:sys_enter_X`/`sys_exit_X` for a syscall, else any tracepoint
/// named like the function.
pub fn tracepoint_instead_of(func: &str, retprobe: bool) -> Option<(String, String)> {
  let root = tracefs_root().ok()?;
  if let Some(sc) = syscall_of_kprobe_name(func) {
    let name = format!("sys_{}_{sc}", if retprobe { "exit" } else { "enter" });
    if Path::new(root).join("events/syscalls").join(&name).is_dir() {
      return Some(("syscalls".into(), name));
    }
  }
  let events = std::fs::read_dir(Path::new(root).join("events")).ok()?;
  for category in events.flatten() {
    if category.path().join(func).is_dir() {
      return Some((category.file_name().to_string_lossy().into_owned(), func.to_string()));
    }
  }
  None
}
