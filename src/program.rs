//! A program of an object (`obj.programs.<name>`): what attach calls take,
//! and the kernel's counters of it.

use std::os::fd::{AsFd, AsRawFd};

use libbpf_rs::OpenProgramMut;
use napi_derive::napi;

use crate::{
  error::{err, guard, BpfResult, Code, Result},
  state::{borrow, Shared, Stage},
};

/// A program of an object, as `obj.programs.<name>`; attach calls take it
/// (or its name).
#[napi]
pub struct BpfProgram {
  pub(crate) state: Shared,
  pub(crate) name: String,
  section: String,
}

impl BpfProgram {
  pub(crate) fn new(state: Shared, name: String, section: String) -> Self {
    BpfProgram { state, name, section }
  }
}

#[napi]
impl BpfProgram {
  /// The C function name.
  #[napi(getter)]
  pub fn name(&self) -> Result<String> {
    guard(|| Ok(self.name.clone()))
  }

  /// The ELF section (`SEC("...")`), e.g. `tp/syscalls/sys_enter_openat`.
  #[napi(getter)]
  pub fn section(&self) -> Result<String> {
    guard(|| Ok(self.section.clone()))
  }

  /// What the kernel counts for this program (loads the object if it is
  /// not loaded yet).
  #[napi(getter)]
  pub fn stats(&self) -> Result<ProgramStats> {
    guard(|| self.read_stats())
  }

  /// Whether the program goes into the kernel when the object loads
  /// (default true; false for `SEC("?...")` programs). A program that is
  /// not loaded cannot be attached: how an object carries fallbacks for
  /// other kernels, loading only the ones the running kernel can take.
  #[napi(getter)]
  pub fn autoload(&self) -> Result<bool> {
    guard(|| self.read_autoload())
  }

  /// Sets `autoload`, before the object loads (ERR_BPF_READ_ONLY after).
  #[napi(setter)]
  pub fn set_autoload(&self, autoload: bool) -> Result<()> {
    guard(|| {
      self.before_load(&format!("set programs.{}.autoload", self.name), |mut prog| {
        prog.set_autoload(autoload);
        Ok(())
      })
    })
  }
}

impl BpfProgram {
  /// Runs `change` on the program while the object is open (not loaded yet);
  /// after load, ERR_BPF_READ_ONLY saying to `what` before load.
  pub(crate) fn before_load<T>(&self, what: &str, change: impl FnOnce(OpenProgramMut<'_>) -> BpfResult<T>) -> BpfResult<T> {
    let mut state = borrow(&self.state)?;
    let source = state.source.clone();
    match &mut state.stage {
      Stage::Open(open) => change(open.progs_mut().find(|p| p.name() == self.name.as_str()).expect("listed at open")),
      Stage::Closed => state.closed(),
      _ => {
        err(Code::ReadOnly, format!("{source} is loaded already: {what} before load() and before the first attach or getMap()"))
      }
    }
  }

  fn read_autoload(&self) -> BpfResult<bool> {
    let state = borrow(&self.state)?;
    match &state.stage {
      Stage::Open(open) => Ok(open.progs().find(|p| p.name() == self.name.as_str()).expect("listed at open").autoload()),
      Stage::Loaded(obj) => Ok(obj.progs().find(|p| p.name() == self.name.as_str()).expect("listed at open").autoload()),
      Stage::Closed => state.closed(),
      Stage::Failed(why) => err(Code::Load, format!("{} could not be loaded: {why}", state.source)),
    }
  }

  /// The program's `bpf_prog_info`. libbpf-rs reads it only while listing
  /// every program of the system (ProgInfoIter); this asks for one fd.
  fn read_stats(&self) -> BpfResult<ProgramStats> {
    if !self.read_autoload()? {
      return err(
        Code::Load,
        format!("program '{}' was not loaded (its autoload is false), so the kernel has no counters of it", self.name),
      );
    }
    let mut state = borrow(&self.state)?;
    let fd = state.program(&self.name)?.as_fd().as_raw_fd();
    let mut info = libbpf_sys::bpf_prog_info::default();
    let mut len = std::mem::size_of::<libbpf_sys::bpf_prog_info>() as u32;
    // SAFETY: a valid program fd and an info struct of `len` bytes.
    let rc = unsafe { libbpf_sys::bpf_prog_get_info_by_fd(fd, &mut info, &mut len) };
    if rc < 0 {
      let os = std::io::Error::from_raw_os_error(-rc);
      return err(Code::Load, format!("reading the kernel's counters of program '{}': {os}", self.name));
    }
    Ok(ProgramStats {
      id: info.id,
      recursion_misses: info.recursion_misses as f64,
      run_count: info.run_cnt as f64,
      run_time_ns: info.run_time_ns as f64,
    })
  }
}

/// A program's counters in the kernel (`prog.stats`).
#[napi(object)]
pub struct ProgramStats {
  /// The kernel's id of the program (as `bpftool prog show` lists it).
  pub id: u32,
  /// Runs the kernel skipped, each an event that this program did not see:
  /// the program was already running on that CPU, or (kprobes, perf-event
  /// uprobes and tracepoints) a BPF map operation of a syscall or another
  /// BPF program was in progress there. Counted since Linux 5.12, and not
  /// every kind everywhere: 6.1 does not count the perf-event ones.
  pub recursion_misses: f64,
  /// Runs, counted only while the sysctl `kernel.bpf_stats_enabled` is 1.
  pub run_count: f64,
  /// Time spent running, counted only while `kernel.bpf_stats_enabled` is 1.
  pub run_time_ns: f64,
}
