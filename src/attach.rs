//! Attaching programs to kernel and user-space events. Every attach returns
//! a `BpfLink`; the object keeps the link until `detach()`, `detachAll()` or
//! `close()`.

use std::path::Path;

use libbpf_rs::{AsRawLibbpf, Link, ProgramMut, ProgramType, TracepointCategory, TracepointOpts, UprobeOpts, UsdtOpts};
use napi::bindgen_prelude::{BigInt, Either};
use napi_derive::napi;

use crate::{
  error::{err, guard, BpfError, BpfResult, Code, Result},
  kernel,
  object::{program_name, ObjectHandle, ProgramArg},
  options, perf_event,
  program::BpfProgram,
  state::{borrow, Shared},
};

/// An attachment of a program; `detach()` removes it from the kernel.
#[napi]
pub struct BpfLink {
  state: Shared,
  id: u32,
  target: String,
}

#[napi]
impl BpfLink {
  /// Detaches (idempotent; `obj.close()` and `obj.detachAll()` detach too).
  #[napi]
  pub fn detach(&self) -> Result<()> {
    guard(|| {
      let link = borrow(&self.state)?.links.remove(&self.id);
      let _hooks = crate::release::hooks();
      drop(link);
      Ok(())
    })
  }

  /// Whether the link is still in the kernel.
  #[napi(getter)]
  pub fn attached(&self) -> Result<bool> {
    guard(|| Ok(borrow(&self.state)?.links.contains_key(&self.id)))
  }

  /// What the program is attached to, e.g. `tracepoint syscalls:sys_enter_openat`.
  #[napi(getter)]
  pub fn target(&self) -> Result<String> {
    guard(|| Ok(self.target.clone()))
  }
}

/// Options of `attachKprobe`, `attachKretprobe`, `attachTracepoint` and
/// `attachRawTracepoint`.
#[napi(object)]
#[derive(Default)]
pub struct AttachOptions {
  /// Value for `bpf_get_attach_cookie()`: a bigint from 0n to 2n ** 64n - 1n,
  /// or a safe integer number (default 0).
  // (lib/core/object.js turns a number into a bigint: the addon takes bigints)
  #[napi(ts_type = "bigint | number")]
  pub cookie: Option<BigInt>,
}

/// Options of `attachUprobe`/`attachUretprobe`/`attachUsdt`.
#[napi(object)]
#[derive(Default)]
pub struct UprobeOptions {
  /// Only this process, 1 to 4194304 (default: every process running the
  /// binary).
  pub pid: Option<f64>,
  /// Value for `bpf_get_attach_cookie()` (`bpf_usdt_cookie()` for USDT): a
  /// bigint from 0n to 2n ** 64n - 1n, or a safe integer number.
  #[napi(ts_type = "bigint | number")]
  pub cookie: Option<BigInt>,
}

/// Options of `attachUprobeMulti`.
#[napi(object)]
#[derive(Default)]
pub struct UprobeMultiOptions {
  /// Only this process, 1 to 4194304 (default: every process running the
  /// binary).
  pub pid: Option<f64>,
  /// Attach at the functions' returns (a `SEC("uretprobe.multi")` program).
  pub retprobe: Option<bool>,
  /// One `bpf_get_attach_cookie()` value per symbol (with a list of
  /// symbols), each from 0n to 2n ** 64n - 1n (or a safe integer number).
  #[napi(ts_type = "Array<bigint | number>")]
  pub cookies: Option<Vec<BigInt>>,
}

/// Options of `attachPerfEvent`.
#[napi(object)]
#[derive(Default)]
pub struct PerfEventOptions {
  /// `cpu-clock` (default), `task-clock`, `page-faults`, `context-switches`,
  /// `cpu-migrations`, or the hardware events `cycles`, `instructions`,
  /// `cache-references`, `cache-misses`, `branch-instructions`, `branch-misses`
  /// (not available in most VMs).
  pub event: Option<String>,
  /// Samples per second, from 1 to the kernel's
  /// `perf_event_max_sample_rate` (default 99 when `period` is not given).
  pub frequency: Option<f64>,
  /// One sample every `period` events (1 to 2^53 - 1), instead of `frequency`.
  pub period: Option<f64>,
  /// Only this thread, 1 to 4194304 (default: all): a process's pid is its
  /// main thread, and its other threads are not sampled (one event each,
  /// by tid, samples them; or sample every CPU and filter in the program).
  pub pid: Option<f64>,
  /// Only this CPU, 0 to the possible CPUs - 1 (default: one event per
  /// online CPU, or for `pid` one event that follows that thread).
  pub cpu: Option<f64>,
}

/// The cookie option of call `what` (0 when not given).
fn cookie(what: &str, c: &Option<BigInt>) -> BpfResult<u64> {
  options::cookie(what, "cookie", c.as_ref())
}

/// The program types an attach call takes, and the SEC() that makes one.
struct Expect(&'static [ProgramType], &'static str);

const KPROBE: Expect = Expect(&[ProgramType::Kprobe], "SEC(\"kprobe/...\") or SEC(\"kretprobe/...\")");
const UPROBE: Expect = Expect(&[ProgramType::Kprobe], "SEC(\"uprobe\") or SEC(\"uretprobe\")");
const USDT: Expect = Expect(&[ProgramType::Kprobe], "SEC(\"usdt\")");
const TRACEPOINT: Expect = Expect(&[ProgramType::Tracepoint], "SEC(\"tp/<category>/<name>\")");
const RAW_TRACEPOINT: Expect = Expect(
  &[ProgramType::RawTracepoint, ProgramType::RawTracepointWritable, ProgramType::Tracing],
  "SEC(\"raw_tp/<name>\") or SEC(\"tp_btf/<name>\")",
);
const PERF_EVENT: Expect = Expect(&[ProgramType::PerfEvent], "SEC(\"perf_event\")");
const ANY: Expect = Expect(&[], "");

impl ObjectHandle {
  /// Resolves the program, checks its type, runs `attach` on it and records
  /// the links.
  fn attach_with(
    &self,
    prog: &ProgramArg<'_>,
    target: String,
    expect: Expect,
    attach: impl FnOnce(&ProgramMut<'_>) -> BpfResult<Vec<Link>>,
  ) -> BpfResult<BpfLink> {
    let name = program_name(&self.state, prog)?;
    let mut state = self.state()?;
    let links = {
      let program = state.program(&name)?;
      if !expect.0.is_empty() && !expect.0.contains(&program.prog_type()) {
        let section = program.section().to_string_lossy().into_owned();
        return err(
          Code::InvalidArg,
          format!("program '{name}' is a SEC(\"{section}\") program; attaching it to {target} needs a {} program", expect.1),
        );
      }
      let _hooks = crate::release::hooks();
      attach(&program).map_err(|mut e| {
        e.message = format!("attaching program '{name}' to {target}: {}", e.message);
        e
      })?
    };
    let id = state.add_link(links);
    Ok(BpfLink { state: self.state.clone(), id, target })
  }

  fn kprobe(&self, func: String, prog: ProgramArg<'_>, retprobe: bool, options: Option<AttachOptions>) -> BpfResult<BpfLink> {
    let kind = if retprobe { "kretprobe" } else { "kprobe" };
    let cookie = cookie(if retprobe { "attachKretprobe" } else { "attachKprobe" }, &options.unwrap_or_default().cookie)?;
    // the article's names (sys_enter_openat) are tracepoints, not functions:
    // libbpf's ksyscall finds the syscall's function on this kernel
    if let Some(syscall) = func.strip_prefix("sys_enter_").or_else(|| func.strip_prefix("sys_exit_")) {
      return self.ksyscall(&func, syscall, prog, retprobe, cookie);
    }
    let opts = libbpf_rs::KprobeOpts { cookie, ..Default::default() };
    self.attach_with(&prog, format!("{kind} {func}"), KPROBE, |p| match p.attach_kprobe_with_opts(retprobe, &func, opts) {
      Ok(link) => Ok(vec![link]),
      Err(e) if !kernel::kprobes_available() => Err(kprobes_unavailable(&func, &format!("{kind} {func}"), retprobe, &e)),
      Err(e) => Err(match crate::error::errno_of(&e) {
        Some(libc::ENOENT) | Some(libc::EINVAL) => BpfError::new(
          Code::UnknownName,
          format!(
            "{func} is not a kernel function that can be probed (see /proc/kallsyms and {}/available_filter_functions)",
            kernel::tracefs_root().unwrap_or("/sys/kernel/tracing")
          ),
        ),
        _ => BpfError::libbpf(Code::Attach, kind, &e),
      }),
    })
  }

  /// A kprobe on the entry or return of `syscall`, through libbpf's
  /// `bpf_program__attach_ksyscall`: it probes the kernel for the syscall
  /// wrappers and their prefix (`__x64_sys_`, `__arm64_sys_`, ..., or
  /// `sys_` where there are none). `func`: the name the caller gave.
  fn ksyscall(&self, func: &str, syscall: &str, prog: ProgramArg<'_>, retprobe: bool, cookie: u64) -> BpfResult<BpfLink> {
    let what = format!("{} {syscall}", if retprobe { "kretsyscall" } else { "ksyscall" });
    let name = std::ffi::CString::new(syscall)
      .map_err(|_| BpfError::new(Code::InvalidValue, format!("attachKprobe: {func:?} has a NUL byte")))?;
    self.attach_with(&prog, what.clone(), KPROBE, |p| {
      let opts = libbpf_sys::bpf_ksyscall_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_ksyscall_opts>() as _,
        bpf_cookie: cookie,
        retprobe,
        ..Default::default()
      };
      // SAFETY: a program of a loaded object (the state lock is held), a
      // NUL-terminated name and options that outlive the call.
      let link = unsafe { libbpf_sys::bpf_program__attach_ksyscall(p.as_libbpf_object().as_ptr(), name.as_ptr(), &opts) };
      match std::ptr::NonNull::new(link) {
        // SAFETY: a link libbpf made and gave to us, owned by the Link from here on.
        Some(link) => Ok(vec![unsafe { Link::from_ptr(link) }]),
        None => {
          let e = libbpf_rs::Error::from(std::io::Error::last_os_error());
          Err(if !kernel::kprobes_available() {
            kprobes_unavailable(func, &what, retprobe, &e)
          } else {
            match crate::error::errno_of(&e) {
              Some(libc::ENOENT) | Some(libc::EINVAL) => BpfError::new(
                Code::UnknownName,
                format!("{syscall} is not a syscall of this kernel that can be probed ({func}; see /proc/kallsyms)"),
              ),
              _ => BpfError::libbpf(Code::Attach, &what, &e),
            }
          })
        }
      }
    })
  }

  fn uprobe(
    &self,
    binary: String,
    target: Either<String, f64>,
    prog: ProgramArg<'_>,
    retprobe: bool,
    options: Option<UprobeOptions>,
  ) -> BpfResult<BpfLink> {
    let options = options.unwrap_or_default();
    let (kind, call) = if retprobe { ("uretprobe", "attachUretprobe") } else { ("uprobe", "attachUprobe") };
    let (offset, func_name, what) = match &target {
      Either::A(symbol) => (0usize, Some(symbol.clone()), symbol.clone()),
      Either::B(offset) => {
        let offset = options::integer(call, "offset", *offset, options::OFFSET)?;
        let at = usize::try_from(offset).map_err(|_| {
          BpfError::new(Code::InvalidValue, format!("{call}: offset {offset} is beyond this machine's addresses"))
        })?;
        (at, None, format!("0x{offset:x}"))
      }
    };
    let pid = options::pid(call, options.pid)?;
    let cookie = cookie(call, &options.cookie)?;
    let binary = resolve_binary(&binary)?;
    let opts = UprobeOpts { retprobe, func_name: func_name.clone(), cookie, ..Default::default() };
    let description = format!("{kind} {binary}:{what}{}", if pid >= 0 { format!(" (pid {pid})") } else { String::new() });
    self.attach_with(&prog, description, UPROBE, |p| match p.attach_uprobe_with_opts(pid, &binary, offset, opts) {
      Ok(link) => Ok(vec![link]),
      Err(e) => Err(match (crate::error::errno_of(&e), &func_name) {
        (Some(libc::ENOENT), Some(symbol)) => BpfError::new(
          Code::UnknownName,
          format!("{binary} has no function symbol '{symbol}' (check with: nm -D {binary} | grep {symbol}, or nm {binary})"),
        ),
        (Some(libc::ESRCH), _) => BpfError::new(Code::NotFound, format!("process {pid} does not exist")),
        _ => BpfError::libbpf(Code::Attach, kind, &e),
      }),
    })
  }
}

/// The ENOTSUP error of a kprobe on a kernel without kprobes.
/// `probe`: what could not attach (`kprobe do_sys_openat2`, `ksyscall openat`).
fn kprobes_unavailable(func: &str, probe: &str, retprobe: bool, e: &libbpf_rs::Error) -> BpfError {
  let instead = match kernel::tracepoint_instead_of(func, retprobe) {
    Some((category, name)) => format!(
      "; use the tracepoint {category}:{name} instead: obj.attachTracepoint('{category}', '{name}', prog) with a SEC(\"tp/{category}/{name}\") program"
    ),
    None => "; use a tracepoint (obj.attachTracepoint), a raw tracepoint or a tp_btf program instead".to_string(),
  };
  BpfError::new(
    Code::NotSupported,
    format!(
      "kprobes are not available on this kernel (built without CONFIG_KPROBES: no kprobe PMU in /sys/bus/event_source/devices), so {probe} cannot attach (libbpf: {e}){instead}"
    ),
  )
}

/// A binary by path, or by name on $PATH (as `bpftrace` accepts `bash`).
fn resolve_binary(binary: &str) -> BpfResult<String> {
  if Path::new(binary).exists() {
    return Ok(binary.to_string());
  }
  if !binary.contains('/') {
    if let Some(found) =
      std::env::var_os("PATH").iter().flat_map(std::env::split_paths).map(|dir| dir.join(binary)).find(|p| p.is_file())
    {
      return Ok(found.to_string_lossy().into_owned());
    }
  }
  err(Code::NotFound, format!("binary {binary} does not exist; give the path of an ELF executable or library"))
}

#[napi]
impl ObjectHandle {
  /// Attaches a program to the entry of kernel function `funcName`. The
  /// article's names (`sys_enter_openat`, `sys_exit_openat`) attach to the
  /// syscall's function through libbpf's ksyscall, which finds its name on
  /// this kernel (`__x64_sys_openat`, `__arm64_sys_openat`, ...): the link's
  /// target is then `ksyscall openat`. On a kernel without kprobes this
  /// throws ENOTSUP naming the tracepoint to use instead.
  #[napi]
  pub fn attach_kprobe(
    &self,
    func_name: String,
    #[napi(ts_arg_type = "BpfProgram | string")] prog: ProgramArg<'_>,
    options: Option<AttachOptions>,
  ) -> Result<BpfLink> {
    guard(|| self.kprobe(func_name, prog, false, options))
  }

  /// Attaches a program to the return of kernel function `funcName` (see
  /// `attachKprobe`).
  #[napi]
  pub fn attach_kretprobe(
    &self,
    func_name: String,
    #[napi(ts_arg_type = "BpfProgram | string")] prog: ProgramArg<'_>,
    options: Option<AttachOptions>,
  ) -> Result<BpfLink> {
    guard(|| self.kprobe(func_name, prog, true, options))
  }

  /// Attaches a `SEC("tp/...")` program to the tracepoint `category:name`
  /// (e.g. `syscalls`, `sys_enter_openat`). tracefs must be mounted
  /// (node-libbpf never mounts it; ERR_BPF_TRACEFS says how). The
  /// `cookie` tells attachments of one program apart
  /// (`bpf_get_attach_cookie()`).
  #[napi]
  pub fn attach_tracepoint(
    &self,
    category: String,
    name: String,
    #[napi(ts_arg_type = "BpfProgram | string")] prog: ProgramArg<'_>,
    options: Option<AttachOptions>,
  ) -> Result<BpfLink> {
    guard(|| {
      let opts =
        TracepointOpts { cookie: cookie("attachTracepoint", &options.unwrap_or_default().cookie)?, ..Default::default() };
      if !kernel::tracepoint_exists(&category, &name)? {
        let root = kernel::tracefs_root()?;
        return Err(BpfError::new(
          Code::UnknownName,
          format!("tracepoint {category}:{name} does not exist on this kernel (see {root}/events/{category}/)"),
        ));
      }
      self.attach_with(&prog, format!("tracepoint {category}:{name}"), TRACEPOINT, |p| {
        p.attach_tracepoint_with_opts(TracepointCategory::Custom(category.clone()), &name, opts)
          .map(|l| vec![l])
          .map_err(|e| match crate::error::errno_of(&e) {
            Some(libc::EEXIST) => BpfError::new(
              Code::Attach,
              "the program is already attached to this tracepoint (the kernel takes a program once per tracepoint)",
            ),
            Some(libc::E2BIG) => BpfError::new(
              Code::Attach,
              format!(
                "tracepoint {category}:{name} already has 64 BPF programs attached, the kernel's limit (BPF_TRACE_MAX_PROGS): \
                 close the objects you no longer need (a closed object's links go a moment after close(); await obj.closeAsync() to wait for them)"
              ),
            ),
            _ => BpfError::libbpf(Code::Attach, "tracepoint", &e),
          })
      })
    })
  }

  /// Attaches a `SEC("raw_tp/...")` program to the raw tracepoint `name`
  /// (e.g. `sys_enter`, `sched_switch`); `cookie` needs kernel 6.10+.
  #[napi]
  pub fn attach_raw_tracepoint(
    &self,
    name: String,
    #[napi(ts_arg_type = "BpfProgram | string")] prog: ProgramArg<'_>,
    options: Option<AttachOptions>,
  ) -> Result<BpfLink> {
    guard(|| {
      let cookie = cookie("attachRawTracepoint", &options.unwrap_or_default().cookie)?;
      let opts = libbpf_rs::RawTracepointOpts { cookie, ..Default::default() };
      self.attach_with(&prog, format!("raw tracepoint {name}"), RAW_TRACEPOINT, |p| {
        // a tp_btf program names its tracepoint in its SEC() and attaches through BTF
        if p.prog_type() == ProgramType::Tracing {
          let section = p.section().to_string_lossy().into_owned();
          let target = section.strip_prefix("tp_btf/").unwrap_or(&section);
          if target != name {
            return err(
              Code::InvalidArg,
              format!("a SEC(\"{section}\") program attaches to the raw tracepoint {target}, not {name}"),
            );
          }
          if cookie != 0 {
            return err(
              Code::NotSupported,
              format!("a SEC(\"{section}\") program takes no cookie; use a SEC(\"raw_tp/{name}\") program for one"),
            );
          }
          return p.attach_trace().map(|l| vec![l]).map_err(|e| BpfError::libbpf(Code::Attach, "tp_btf tracepoint", &e));
        }
        p.attach_raw_tracepoint_with_opts(&name, opts).map(|l| vec![l]).map_err(|e| match crate::error::errno_of(&e) {
          Some(libc::ENOENT) => BpfError::new(Code::UnknownName, format!("raw tracepoint {name} does not exist on this kernel")),
          _ => BpfError::libbpf(Code::Attach, "raw tracepoint", &e),
        })
      })
    })
  }

  /// Attaches a program to the entry of a function of a user-space binary
  /// or library, by symbol name or by file offset.
  #[napi]
  pub fn attach_uprobe(
    &self,
    binary_path: String,
    #[napi(ts_arg_type = "string | number")] symbol_or_offset: Either<String, f64>,
    #[napi(ts_arg_type = "BpfProgram | string")] prog: ProgramArg<'_>,
    options: Option<UprobeOptions>,
  ) -> Result<BpfLink> {
    guard(|| self.uprobe(binary_path, symbol_or_offset, prog, false, options))
  }

  /// Attaches a program to the return of a user-space function (see
  /// `attachUprobe`).
  #[napi]
  pub fn attach_uretprobe(
    &self,
    binary_path: String,
    #[napi(ts_arg_type = "string | number")] symbol_or_offset: Either<String, f64>,
    #[napi(ts_arg_type = "BpfProgram | string")] prog: ProgramArg<'_>,
    options: Option<UprobeOptions>,
  ) -> Result<BpfLink> {
    guard(|| self.uprobe(binary_path, symbol_or_offset, prog, true, options))
  }

  /// Attaches a `SEC("uprobe.multi")` program to many functions of one
  /// binary at once (kernel 6.6+): those matching a glob (`pthread_mutex_*`)
  /// or a list of symbols, with one cookie per symbol. One link for all of
  /// them: attaching and detaching cost one operation, not one per probe.
  #[napi]
  pub fn attach_uprobe_multi(
    &self,
    binary_path: String,
    #[napi(ts_arg_type = "string | string[]")] symbols: Either<String, Vec<String>>,
    #[napi(ts_arg_type = "BpfProgram | string")] prog: ProgramArg<'_>,
    options: Option<UprobeMultiOptions>,
  ) -> Result<BpfLink> {
    guard(|| {
      let options = options.unwrap_or_default();
      let call = "attachUprobeMulti";
      let cookies = (options.cookies.iter().flatten().enumerate())
        .map(|(i, c)| options::cookie(call, &format!("cookies[{i}]"), Some(c)))
        .collect::<BpfResult<Vec<u64>>>()?;
      let pid = options::pid(call, options.pid)?;
      let binary = resolve_binary(&binary_path)?;
      let (pattern, syms) = match symbols {
        Either::A(pattern) => (pattern, Vec::new()),
        Either::B(list) => (String::new(), list),
      };
      if !cookies.is_empty() && cookies.len() != syms.len() {
        return Err(BpfError::new(
          Code::InvalidValue,
          format!(
            "give one cookie per symbol: {} cookies for {} symbols (cookies need a list of symbols, not a pattern)",
            cookies.len(),
            syms.len()
          ),
        ));
      }
      let what = if pattern.is_empty() { format!("{} functions", syms.len()) } else { pattern.clone() };
      if !kernel::uprobe_multi_available() {
        return Err(BpfError::new(
          Code::NotSupported,
          "this kernel has no uprobe.multi links (Linux 6.6+): attach each function with attachUprobe() instead",
        ));
      }
      let opts = libbpf_rs::UprobeMultiOpts { syms, cookies, retprobe: options.retprobe.unwrap_or(false), ..Default::default() };
      self.attach_with(&prog, format!("uprobe.multi {binary}:{what}"), UPROBE, |p| {
        p.attach_uprobe_multi_with_opts(pid, &binary, &pattern, opts).map(|l| vec![l]).map_err(|e| {
          match crate::error::errno_of(&e) {
            Some(libc::ENOENT) | Some(libc::ESRCH) => BpfError::new(Code::UnknownName, format!("{binary} has no function matching {what}")),
            Some(libc::EINVAL) => BpfError::new(
              Code::Attach,
              format!("uprobe.multi refused ({e}): the program must be SEC(\"uprobe.multi\") (or SEC(\"uretprobe.multi\") with retprobe)"),
            ),
            _ => BpfError::libbpf(Code::Attach, "uprobe.multi", &e),
          }
        })
      })
    })
  }

  /// Attaches a `SEC("usdt")` program to the USDT probe `provider:name` of a
  /// binary.
  #[napi]
  pub fn attach_usdt(
    &self,
    binary_path: String,
    provider: String,
    name: String,
    #[napi(ts_arg_type = "BpfProgram | string")] prog: ProgramArg<'_>,
    options: Option<UprobeOptions>,
  ) -> Result<BpfLink> {
    guard(|| {
      let options = options.unwrap_or_default();
      let pid = options::pid("attachUsdt", options.pid)?;
      let opts = UsdtOpts { cookie: cookie("attachUsdt", &options.cookie)?, ..Default::default() };
      let binary = resolve_binary(&binary_path)?;
      self.attach_with(&prog, format!("usdt {binary}:{provider}:{name}"), USDT, |p| {
        p.attach_usdt_with_opts(pid, &binary, &provider, &name, opts).map(|l| vec![l]).map_err(|e| {
          match crate::error::errno_of(&e) {
            Some(libc::ENOENT) => BpfError::new(
              Code::UnknownName,
              format!("{binary} has no USDT probe {provider}:{name} (list them with: readelf -n {binary})"),
            ),
            _ => BpfError::libbpf(Code::Attach, "usdt", &e),
          }
        })
      })
    })
  }

  /// Attaches a `SEC("perf_event")` program to a sampling perf event: one
  /// event per online CPU unless `cpu` or `pid` narrows it.
  #[napi]
  pub fn attach_perf_event(
    &self,
    #[napi(ts_arg_type = "BpfProgram | string")] prog: ProgramArg<'_>,
    options: Option<PerfEventOptions>,
  ) -> Result<BpfLink> {
    guard(|| {
      let options = options.unwrap_or_default();
      let call = "attachPerfEvent";
      let event = options.event.clone().unwrap_or_else(|| "cpu-clock".into());
      let (type_, config) = perf_event::config(&event)?;
      let pid = options::pid(call, options.pid)?;
      let cpu = match options.cpu {
        Some(cpu) => Some(options::integer(call, "cpu", cpu, (0, perf_event::possible_cpus()? - 1))? as i32),
        None => None,
      };
      let cpus: Vec<i32> = match (cpu, pid) {
        (Some(cpu), _) => vec![cpu],
        (None, p) if p >= 0 => vec![-1],
        (None, _) => perf_event::online_cpus()?,
      };
      let period = options.period.map(|p| options::integer(call, "period", p, options::PERIOD)).transpose()?;
      let (freq, sample) = match (period, options.frequency) {
        (Some(period), _) => (false, period),
        (None, f) => (true, options::integer_or(call, "frequency", f, 99, (1, perf_event::max_sample_rate()))?),
      };
      let target = format!("perf event {event} at {} {}", sample, if freq { "Hz" } else { "events/sample" });
      self.attach_with(&prog, target, PERF_EVENT, |p| {
        let mut links = Vec::new();
        for cpu in cpus {
          let fd = perf_event::open(type_, config, freq, sample, pid, cpu).map_err(|e| {
            let code = match e.raw_os_error() {
              Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) => Code::NotSupported,
              Some(libc::ESRCH) => Code::NotFound,
              Some(libc::EACCES) | Some(libc::EPERM) => Code::Permission,
              _ => Code::Attach,
            };
            let mut message = format!("perf_event_open({event}, pid {pid}, cpu {cpu}): {e}");
            if code == Code::Permission {
              let fix = crate::privileges::permission_denied();
              message.push_str(&format!(" ({})", fix.as_deref().unwrap_or(crate::privileges::CAPS_FIX)));
            }
            BpfError::new(code, message)
          })?;
          // libbpf's link owns the perf event fd from here
          let link = p.attach_perf_event(fd).map_err(|e| {
            // SAFETY: fd is ours, not taken by libbpf on failure.
            unsafe { libc::close(fd) };
            BpfError::libbpf(Code::Attach, "perf event", &e)
          })?;
          links.push(link);
        }
        Ok(links)
      })
    })
  }

  /// Attaches a program by its `SEC()` name, as libbpf's auto-attach does
  /// (`tp/syscalls/sys_enter_openat`, `uprobe/path:func`, `raw_tp/...`).
  #[napi]
  pub fn attach(&self, #[napi(ts_arg_type = "BpfProgram | string")] prog: ProgramArg<'_>) -> Result<BpfLink> {
    guard(|| {
      let name = program_name(&self.state, &prog)?;
      let section = {
        let state = self.state()?;
        state.programs.iter().find(|(n, _)| *n == name).map(|(_, s)| s.clone()).unwrap_or_default()
      };
      if section.starts_with("tp/") || section.starts_with("tracepoint/") {
        kernel::tracefs_root()?;
      }
      let kprobe = ["kprobe/", "kretprobe/", "ksyscall/", "kretsyscall/", "kprobe.multi/", "kretprobe.multi/"]
        .iter()
        .any(|p| section.starts_with(p));
      self.attach_with(&prog, format!("SEC(\"{section}\")"), ANY, |p| {
        p.attach().map(|l| vec![l]).map_err(|e| {
          if kprobe && !kernel::kprobes_available() {
            let func = section.split_once('/').map(|x| x.1).unwrap_or("");
            let probe = format!("{} {func}", section.split_once('/').map(|x| x.0).unwrap_or("kprobe"));
            return kprobes_unavailable(func, &probe, section.starts_with("kret"), &e);
          }
          BpfError::libbpf(Code::Attach, "auto-attach", &e)
        })
      })
    })
  }
}

// (a block of its own, beside the attach calls, not in program.rs)
#[napi]
impl BpfProgram {
  /// Before load: the kernel function (or, for `tp_btf`, the tracepoint)
  /// an fentry, fexit, fmod_ret, tp_btf or lsm program attaches to, in place
  /// of the one its `SEC()` names (libbpf's `bpf_program__set_attach_target`).
  /// One program then serves whichever of several functions this kernel has,
  /// as libbpf-tools' cachestat does with `fentryCanAttach`. Throws
  /// ERR_BPF_UNKNOWN_NAME when the kernel's BTF has no such function,
  /// ERR_INVALID_ARG_TYPE for other kinds of program (they take their
  /// target when they attach: `attachKprobe(func, prog)`), ERR_BPF_READ_ONLY
  /// once the object is loaded.
  #[napi]
  pub fn set_attach_target(&self, func_name: String) -> Result<()> {
    guard(|| {
      self.before_load(&format!("call programs.{}.setAttachTarget()", self.name), |mut prog| {
        if !matches!(prog.prog_type(), ProgramType::Tracing | ProgramType::Lsm) {
          let section = prog.section().to_string_lossy().into_owned();
          return err(
            Code::InvalidArg,
            format!(
              "program '{}' is a SEC(\"{section}\") program: setAttachTarget('{func_name}') retargets fentry, fexit, fmod_ret, \
               tp_btf and lsm programs; other programs take their target when they attach (attachKprobe('{func_name}', prog), \
               attachTracepoint, attachRawTracepoint, attachUprobe)",
              self.name
            ),
          );
        }
        prog.set_attach_target(0, Some(func_name.clone())).map_err(|e| match crate::error::errno_of(&e) {
          Some(libc::ESRCH) | Some(libc::ENOENT) => BpfError::new(
            Code::UnknownName,
            format!(
              "program '{}': the kernel's BTF (/sys/kernel/btf/vmlinux) has no function or tracepoint '{func_name}' to attach to \
               (bpf.fentryCanAttach(name) tells before)",
              self.name
            ),
          ),
          _ => BpfError::libbpf(Code::InvalidValue, format!("program '{}': setAttachTarget('{func_name}')", self.name), &e),
        })
      })
    })
  }
}
