//! What the running kernel offers, asked of the kernel itself (sysfs and
//! tracefs). Nothing here changes the system: tracefs is looked for where
//! /proc/self/mounts says it is mounted, never mounted.

use std::{ffi::CString, path::Path, sync::Mutex};

use crate::error::{err, guard, BpfResult, Code, Result};

const TRACEFS: &str = "/sys/kernel/tracing";
const DEBUGFS_TRACING: &str = "/sys/kernel/debug/tracing";

static TRACEFS_ROOT: Mutex<Option<&'static str>> = Mutex::new(None);

/// The tracefs root that libbpf's tracepoint attach reads (/sys/kernel/tracing,
/// or /sys/kernel/debug/tracing), if mounted and readable by this process.
/// Never mounts it: EPERM when it is root's (mode 0700), ERR_BPF_TRACEFS
/// naming the mount command when it is not mounted.
pub fn tracefs_root() -> BpfResult<&'static str> {
  let mut cached = TRACEFS_ROOT.lock().unwrap_or_else(|e| e.into_inner());
  if let Some(root) = *cached {
    return Ok(root);
  }
  // only where a tracefs is mounted: a path walk into debugfs's tracing
  // directory would automount one there
  let mounted = mounted_tracefs();
  for root in [TRACEFS, DEBUGFS_TRACING] {
    if mounted.contains(&root) && Path::new(root).join("events").is_dir() {
      *cached = Some(root);
      return Ok(root);
    }
  }
  // mounted, but not readable by this user (tracefs is mode 0700, root's)
  if let Some(root) = mounted.first() {
    return err(
      Code::Permission,
      format!(
        "tracefs is mounted at {root} but this process may not read it (it is root's, mode 0700): tracepoints (SEC(\"tp/...\")) \
         need it; use raw tracepoints instead (SEC(\"raw_tp/...\") or SEC(\"tp_btf/...\"), attachRawTracepoint), which need only \
         CAP_BPF + CAP_PERFMON, or run as root, or let this user read tracefs (mount -o remount,mode=755 {root})"
      ),
    );
  }
  let kernel =
    if tracefs_in_kernel() { "" } else { " (and this kernel lists no tracefs in /proc/filesystems: built without tracing?)" };
  err(
    Code::Tracefs,
    format!(
      "tracefs is not mounted{kernel}: tracepoints (SEC(\"tp/...\")) need it, and node-libbpf does not mount it; mount it \
       (as root: mount -t tracefs tracefs {TRACEFS}), or use raw tracepoints (SEC(\"raw_tp/...\") or SEC(\"tp_btf/...\"), \
       attachRawTracepoint), which need none"
    ),
  )
}

/// The tracefs root tracepoints are read from: `/sys/kernel/tracing` (or
/// `/sys/kernel/debug/tracing`). Mounts nothing: throws `ERR_BPF_TRACEFS`
/// (naming the mount command) when tracefs is not mounted, `EPERM` when
/// this process may not read it.
#[napi_derive::napi(js_name = "tracefsRoot")]
pub fn tracefs_root_js() -> Result<String> {
  guard(|| tracefs_root().map(str::to_string))
}

/// The places of [TRACEFS, DEBUGFS_TRACING] where a tracefs is mounted
/// (/proc/self/mounts), readable or not, in that order.
fn mounted_tracefs() -> Vec<&'static str> {
  let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
  let dirs: Vec<&str> = mounts
    .lines()
    .filter_map(|line| {
      let mut fields = line.split(' ');
      let (_, dir, fstype) = (fields.next()?, fields.next()?, fields.next()?);
      (fstype == "tracefs").then_some(dir)
    })
    .collect();
  [TRACEFS, DEBUGFS_TRACING].into_iter().filter(|root| dirs.contains(root)).collect()
}

/// Whether the kernel has tracefs (/proc/filesystems lists it), mounted or not.
fn tracefs_in_kernel() -> bool {
  std::fs::read_to_string("/proc/filesystems")
    .map(|text| text.lines().any(|line| line.split_whitespace().last() == Some("tracefs")))
    .unwrap_or(false)
}

/// The capabilities that matter to BPF that this process holds (effective
/// set): `CAP_BPF`, `CAP_PERFMON`, `CAP_SYS_ADMIN`.
fn bpf_capabilities() -> Vec<String> {
  let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
  let eff =
    status.lines().find_map(|l| l.strip_prefix("CapEff:")).and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok()).unwrap_or(0);
  [(39, "CAP_BPF"), (38, "CAP_PERFMON"), (21, "CAP_SYS_ADMIN")]
    .iter()
    .filter(|(bit, _)| eff & (1u64 << bit) != 0)
    .map(|(_, name)| name.to_string())
    .collect()
}

/// Whether the kernel's BTF has the struct `name` (readable by anyone:
/// tells what the kernel has when this process may not try it).
fn kernel_has_struct(name: &str) -> bool {
  let name = CString::new(name).unwrap();
  // SAFETY: libbpf parses the kernel's BTF; we free it.
  unsafe {
    let btf = libbpf_sys::btf__load_vmlinux_btf();
    if btf.is_null() {
      return false;
    }
    let found = libbpf_sys::btf__find_by_name_kind(btf, name.as_ptr(), libbpf_sys::BTF_KIND_STRUCT) > 0;
    libbpf_sys::btf__free(btf);
    found
  }
}

/// Whether the tracepoint `category:name` exists on this kernel.
pub fn tracepoint_exists(category: &str, name: &str) -> BpfResult<bool> {
  let root = tracefs_root().map_err(|mut e| {
    e.message = format!("tracepoint {category}:{name}: {}", e.message);
    e
  })?;
  Ok(Path::new(root).join("events").join(category).join(name).is_dir())
}

/// Whether the kernel can do kprobes: the kprobe PMU (perf_event based
/// kprobes, what libbpf uses) or the legacy kprobe_events file.
pub fn kprobes_available() -> bool {
  Path::new("/sys/bus/event_source/devices/kprobe/type").exists()
    || tracefs_root().map(|root| Path::new(root).join("kprobe_events").exists()).unwrap_or(false)
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

/// What the running kernel supports, found by asking it (loading tiny
/// programs, creating maps, looking at sysfs and tracefs), not from its
/// version number.
#[napi_derive::napi(object)]
pub struct Features {
  /// The kernel's own BTF (/sys/kernel/btf/vmlinux): CO-RE works.
  pub btf: bool,
  /// The kernel has tracepoints (tracefs is mounted, or the kernel has it:
  /// /proc/filesystems); `notPermitted` says when this process may not
  /// attach them, `notes` when tracefs is not mounted.
  pub tracepoints: bool,
  /// Where tracefs is mounted (`/sys/kernel/tracing`), when it is;
  /// undefined when it is not (features() never mounts it).
  pub tracefs: Option<String>,
  /// kprobes and kretprobes (CONFIG_KPROBES).
  pub kprobes: bool,
  /// uprobes and uretprobes.
  pub uprobes: bool,
  /// fentry/fexit programs load (some kernels refuse them with EPERM).
  pub fentry: bool,
  /// uprobe.multi links (`attachUprobeMulti`).
  pub uprobe_multi: bool,
  /// BPF_MAP_TYPE_RINGBUF maps.
  pub ring_buffer: bool,
  /// BPF_MAP_TYPE_PERF_EVENT_ARRAY maps.
  pub perf_buffer: bool,
  /// Features the kernel has that this process may not use, with the
  /// reason (`tracepoints: tracefs is not readable ...`): without CAP_BPF
  /// (maps, programs), CAP_PERFMON (tracing), or where tracefs is root's.
  pub not_permitted: Vec<String>,
  /// What else to know, with what to do: `tracepoints: tracefs is not
  /// mounted ...` (SEC("tp/...") programs need it; node-libbpf never mounts it).
  pub notes: Vec<String>,
  /// The capabilities that matter to BPF held by this process:
  /// `CAP_BPF`, `CAP_PERFMON`, `CAP_SYS_ADMIN` (root holds all three).
  pub capabilities: Vec<String>,
  /// Task storage from tracing programs (BPF_MAP_TYPE_TASK_STORAGE and
  /// `bpf_task_storage_get`, Linux 5.11): without it, the syscall tools keep
  /// a thread's call in a hash keyed by thread.
  pub task_storage: bool,
  /// `bpf_get_attach_cookie` in kprobe, uprobe and tracepoint programs
  /// (Linux 5.15): without it, attach calls take no `cookie`, and funccount
  /// and trace_event_loop tell their probes apart otherwise.
  pub attach_cookie: bool,
  /// `bpf_loop` (Linux 5.17).
  pub bpf_loop: bool,
  /// BPF atomic instructions that return the old value (`x =
  /// __sync_fetch_and_add(...)`, Linux 5.12).
  pub atomic_fetch: bool,
  /// The kernel release (uname -r), for messages.
  pub release: String,
  /// How many values a per-CPU map holds (possible CPUs).
  pub possible_cpus: u32,
}

/// Probes the running kernel for what node-libbpf can use on it.
#[napi_derive::napi]
pub fn features() -> crate::error::Result<Features> {
  crate::error::guard(|| Ok(probe_features()))
}

fn probe_features() -> Features {
  crate::libbpf_log::install();
  // SAFETY: libbpf's probe makes and closes a map of its own; no options.
  let map_type = |t: libbpf_sys::bpf_map_type| unsafe { libbpf_sys::libbpf_probe_bpf_map_type(t, std::ptr::null()) } == 1;
  let capabilities = bpf_capabilities();
  let has = |cap: &str| capabilities.iter().any(|c| c == cap || c == "CAP_SYS_ADMIN");
  let mut not_permitted = Vec::new();
  let mut refused = |feature: &str, why: &str| not_permitted.push(format!("{feature}: {why}"));
  let tracefs = tracefs_root();
  let mounted = mounted_tracefs();
  let tracepoints = tracefs.is_ok() || !mounted.is_empty() || tracefs_in_kernel();
  let mut notes = Vec::new();
  if let Err(e) = &tracefs {
    if e.code == Code::Permission {
      refused("tracepoints", "tracefs is not readable by this process (use raw tracepoints, or run as root)");
    } else if tracepoints {
      notes.push(format!(
        "tracepoints: tracefs is not mounted (node-libbpf does not mount it); SEC(\"tp/...\") programs need it (as root: \
         mount -t tracefs tracefs {TRACEFS}); raw tracepoints and tp_btf do not"
      ));
    }
  }
  // a map type the probe could not make: the kernel's BTF tells whether it has it
  let mut map_feature = |feature: &str, t: libbpf_sys::bpf_map_type, kernel_struct: &str| {
    if map_type(t) {
      return true;
    }
    if has("CAP_BPF") || !kernel_has_struct(kernel_struct) {
      return false;
    }
    refused(feature, "creating BPF maps needs CAP_BPF");
    true
  };
  let ring_buffer = map_feature("ringBuffer", libbpf_sys::BPF_MAP_TYPE_RINGBUF, "bpf_ringbuf");
  let perf_buffer = map_feature("perfBuffer", libbpf_sys::BPF_MAP_TYPE_PERF_EVENT_ARRAY, "bpf_event_entry");
  if !has("CAP_BPF") {
    refused("programs", "loading BPF programs needs CAP_BPF (and CAP_PERFMON to trace)");
  } else if !has("CAP_PERFMON") {
    refused("tracing", "tracing programs (tracepoints, raw tracepoints, uprobes, perf events) need CAP_PERFMON");
  }
  Features {
    btf: Path::new("/sys/kernel/btf/vmlinux").exists(),
    tracepoints,
    tracefs: tracefs.ok().or(mounted.first().copied()).map(str::to_string),
    kprobes: kprobes_available(),
    uprobes: Path::new("/sys/bus/event_source/devices/uprobe/type").exists(),
    fentry: fentry_loads(),
    uprobe_multi: uprobe_multi_available(),
    ring_buffer,
    perf_buffer,
    not_permitted,
    notes,
    capabilities,
    task_storage: task_storage_available(),
    attach_cookie: helper_available(&[TRACEPOINT], libbpf_sys::BPF_FUNC_get_attach_cookie),
    bpf_loop: helper_available(&[TRACEPOINT], libbpf_sys::BPF_FUNC_loop),
    atomic_fetch: atomic_fetch_loads(),
    release: std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string(),
    possible_cpus: libbpf_rs::num_possible_cpus().unwrap_or(1) as u32,
  }
}

/// Whether the kernel makes uprobe.multi links: as libbpf probes it, a
/// link on "/" must fail with EBADF (not a regular file), not EINVAL.
pub fn uprobe_multi_available() -> bool {
  static PROBED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
  *PROBED.get_or_init(|| {
    // SAFETY: plain libbpf calls with valid arguments; fds are closed.
    unsafe {
      let prog = load_return_zero(libbpf_sys::BPF_PROG_TYPE_KPROBE, libbpf_sys::BPF_TRACE_UPROBE_MULTI, 0);
      if prog < 0 {
        return false;
      }
      let path = CString::new("/").unwrap();
      let offset: libbpf_sys::size_t = 0;
      let mut opts: libbpf_sys::bpf_link_create_opts = std::mem::zeroed();
      opts.sz = std::mem::size_of::<libbpf_sys::bpf_link_create_opts>() as _;
      opts.__bindgen_anon_1.uprobe_multi.path = path.as_ptr();
      opts.__bindgen_anon_1.uprobe_multi.offsets = &offset as *const _ as *const _;
      opts.__bindgen_anon_1.uprobe_multi.cnt = 1;
      let link = libbpf_sys::bpf_link_create(prog, -1, libbpf_sys::BPF_TRACE_UPROBE_MULTI, &opts);
      let errno = *libc::__errno_location();
      if link >= 0 {
        libc::close(link);
      }
      libc::close(prog);
      link < 0 && errno == libc::EBADF
    }
  })
}

/// Loads `r0 = 0; exit` as a program of `prog_type`; the fd or -1.
///
/// # Safety
/// `btf_id` must be 0 or a BTF id of the running kernel's vmlinux; the
/// caller owns (and closes) the returned fd.
unsafe fn load_return_zero(prog_type: libbpf_sys::bpf_prog_type, attach_type: libbpf_sys::bpf_attach_type, btf_id: u32) -> i32 {
  let mut insns: [libbpf_sys::bpf_insn; 2] = std::mem::zeroed();
  insns[0].code = 0xb7; // r0 = 0
  insns[1].code = 0x95; // exit
  let mut opts: libbpf_sys::bpf_prog_load_opts = std::mem::zeroed();
  opts.sz = std::mem::size_of::<libbpf_sys::bpf_prog_load_opts>() as _;
  opts.expected_attach_type = attach_type;
  opts.attach_btf_id = btf_id;
  let license = CString::new("GPL").unwrap();
  libbpf_sys::bpf_prog_load(prog_type, std::ptr::null(), license.as_ptr(), insns.as_ptr(), 2, &mut opts)
}

/// Loads `return 0` as an fentry program on a kernel function.
fn fentry_loads() -> bool {
  fentry_can_attach("do_sys_openat2")
}

/// Whether an fentry program can attach to `func`, as libbpf-tools'
/// `fentry_can_attach()` finds out: the kernel's BTF has the function and
/// the kernel loads an fentry program on it (`return 0`, closed at once).
fn fentry_can_attach(func: &str) -> bool {
  let Ok(name) = CString::new(func) else {
    return false;
  };
  crate::libbpf_log::install();
  // SAFETY: plain libbpf calls with valid arguments (a BTF id of vmlinux
  // from libbpf itself); the fd is closed.
  unsafe {
    let btf_id = libbpf_sys::libbpf_find_vmlinux_btf_id(name.as_ptr(), libbpf_sys::BPF_TRACE_FENTRY);
    if btf_id <= 0 {
      return false;
    }
    let fd = load_return_zero(libbpf_sys::BPF_PROG_TYPE_TRACING, libbpf_sys::BPF_TRACE_FENTRY, btf_id as u32);
    if fd >= 0 {
      libc::close(fd);
    }
    fd >= 0
  }
}

/// Whether an fentry (or fexit) program can attach to the kernel function
/// `funcName` (of vmlinux), as libbpf-tools' `fentry_can_attach()` asks:
/// the kernel's BTF has it and the kernel loads a tiny fentry program on it.
/// False on kernels that refuse fentry (`features().fentry`). For choosing,
/// before load, between an fentry program (`prog.setAttachTarget(funcName)`)
/// and a kprobe (`kprobeExists`).
#[napi_derive::napi(js_name = "fentryCanAttach")]
pub fn fentry_can_attach_js(func_name: String) -> Result<bool> {
  guard(|| Ok(fentry_can_attach(&func_name)))
}

/// The kernel functions kprobes can attach to, read once: tracefs's
/// `available_filter_functions` where tracefs is mounted and readable, else
/// the text symbols of /proc/kallsyms (as libbpf-tools' `kprobe_exists()`).
fn kprobe_functions() -> &'static std::collections::HashSet<String> {
  static FUNCTIONS: std::sync::OnceLock<std::collections::HashSet<String>> = std::sync::OnceLock::new();
  FUNCTIONS.get_or_init(|| {
    let listed =
      tracefs_root().ok().and_then(|root| std::fs::read_to_string(Path::new(root).join("available_filter_functions")).ok());
    match listed {
      // "name" or "name [module]"
      Some(text) => text.lines().filter_map(|l| l.split_whitespace().next()).map(str::to_string).collect(),
      // "address type name [module]"
      None => std::fs::read_to_string("/proc/kallsyms")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
          let mut fields = l.split_whitespace();
          let (_, kind, name) = (fields.next()?, fields.next()?, fields.next()?);
          matches!(kind, "t" | "T").then(|| name.to_string())
        })
        .collect(),
    }
  })
}

/// Whether a kprobe can attach to the kernel function `funcName`, as
/// libbpf-tools' `kprobe_exists()` asks: the kernel has kprobes
/// (`features().kprobes`) and lists the function in tracefs's
/// `available_filter_functions` (where tracefs is mounted and readable;
/// else /proc/kallsyms). The list is read once per process.
#[napi_derive::napi(js_name = "kprobeExists")]
pub fn kprobe_exists_js(func_name: String) -> Result<bool> {
  guard(|| Ok(kprobes_available() && kprobe_functions().contains(&func_name)))
}

/// How many CPUs this machine can have (libbpf's count, from
/// /sys/devices/system/cpu/possible): how many values a per-CPU map holds.
#[napi_derive::napi(js_name = "possibleCpus")]
pub fn possible_cpus_js() -> Result<u32> {
  guard(|| {
    libbpf_rs::num_possible_cpus()
      .map(|n| n as u32)
      .map_err(|e| crate::error::BpfError::libbpf(Code::Internal, "counting the possible CPUs", &e))
  })
}

thread_local! {
  /// The kernel's BTF, parsed once per process (on the thread that asks:
  /// the main thread), for `kernelFieldOffset`.
  static VMLINUX_BTF: std::cell::OnceCell<Option<libbpf_rs::Btf<'static>>> = const { std::cell::OnceCell::new() };
}

/// The byte offset of member `field` (`self.parent`: names joined by `.`)
/// of the struct or union `typeName` in the running kernel, from its BTF
/// (/sys/kernel/btf/vmlinux, parsed once per process): what a BPF program
/// that reads the kernel's memory without a CO-RE relocation is given
/// before load (bpf/filter.bpf.h's cgroup walk).
#[napi_derive::napi(js_name = "kernelFieldOffset")]
pub fn kernel_field_offset_js(type_name: String, field: String) -> Result<u32> {
  guard(|| {
    VMLINUX_BTF.with(|cell| {
      let Some(btf) = cell.get_or_init(|| libbpf_rs::Btf::from_vmlinux().ok()) else {
        return err(
          Code::NotSupported,
          "the kernel's BTF (/sys/kernel/btf/vmlinux) could not be read: a kernel built with CONFIG_DEBUG_INFO_BTF=y has it"
            .to_string(),
        );
      };
      let Some(ty) = crate::btf::find_named(btf, &type_name) else {
        return err(Code::UnknownName, format!("the kernel's BTF has no type '{type_name}'"));
      };
      match crate::btf::member_offset(btf, ty, &field) {
        Some(offset) => Ok(offset as u32),
        None => err(Code::UnknownName, format!("the kernel's {type_name} has no member '{field}' (or it is a bitfield)")),
      }
    })
  })
}

const TRACEPOINT: libbpf_sys::bpf_prog_type = libbpf_sys::BPF_PROG_TYPE_TRACEPOINT;
const RAW_TRACEPOINT: libbpf_sys::bpf_prog_type = libbpf_sys::BPF_PROG_TYPE_RAW_TRACEPOINT;

/// Whether programs of every type of `types` may call the helper: libbpf's
/// probe loads a program that calls it.
fn helper_available(types: &[libbpf_sys::bpf_prog_type], helper: libbpf_sys::bpf_func_id) -> bool {
  crate::libbpf_log::install();
  // SAFETY: libbpf's probe loads and closes a program of its own; no options.
  types.iter().all(|&t| unsafe { libbpf_sys::libbpf_probe_bpf_helper(t, helper, std::ptr::null()) } == 1)
}

/// Task storage as the syscall tools use it: the map type, and
/// `bpf_task_storage_get` with `bpf_get_current_task_btf` in tracing programs.
pub fn task_storage_available() -> bool {
  // SAFETY: libbpf's probe makes and closes a map of its own; no options.
  let map = unsafe { libbpf_sys::libbpf_probe_bpf_map_type(libbpf_sys::BPF_MAP_TYPE_TASK_STORAGE, std::ptr::null()) } == 1;
  let types = [TRACEPOINT, RAW_TRACEPOINT];
  map
    && helper_available(&types, libbpf_sys::BPF_FUNC_task_storage_get)
    && helper_available(&types, libbpf_sys::BPF_FUNC_get_current_task_btf)
}

/// Loads `*(u64 *)(r10 - 8) = 0; r1 = 1; r1 = atomic_fetch_add(r10 - 8, r1);
/// r0 = 0; exit`: kernels before 5.12 refuse the fetch ("BPF_STX uses
/// reserved fields").
fn atomic_fetch_loads() -> bool {
  // SAFETY: plain libbpf calls with valid arguments; the fd is closed.
  unsafe {
    let mut insns: [libbpf_sys::bpf_insn; 5] = std::mem::zeroed();
    insns[0].code = 0x7a; // BPF_ST | BPF_MEM | BPF_DW
    insns[0].set_dst_reg(10);
    insns[0].off = -8;
    insns[1].code = 0xb7; // r1 = 1
    insns[1].set_dst_reg(1);
    insns[1].imm = 1;
    insns[2].code = 0xdb; // BPF_STX | BPF_ATOMIC | BPF_DW
    insns[2].set_dst_reg(10);
    insns[2].set_src_reg(1);
    insns[2].off = -8;
    insns[2].imm = 0x01; // BPF_ADD | BPF_FETCH
    insns[3].code = 0xb7; // r0 = 0
    insns[4].code = 0x95; // exit
    let mut opts: libbpf_sys::bpf_prog_load_opts = std::mem::zeroed();
    opts.sz = std::mem::size_of::<libbpf_sys::bpf_prog_load_opts>() as _;
    let license = CString::new("GPL").unwrap();
    let fd = libbpf_sys::bpf_prog_load(
      libbpf_sys::BPF_PROG_TYPE_SOCKET_FILTER,
      std::ptr::null(),
      license.as_ptr(),
      insns.as_ptr(),
      insns.len() as _,
      &mut opts,
    );
    if fd >= 0 {
      libc::close(fd);
    }
    fd >= 0
  }
}
