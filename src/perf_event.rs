//! Sampling perf events (`attachPerfEvent`): the event names, opening one
//! event per CPU, and the online CPUs.

use crate::error::{err, BpfError, BpfResult, Code};

/// The perf type and config of an event name.
pub(crate) fn config(event: &str) -> BpfResult<(u32, u64)> {
  use libbpf_sys::{PERF_TYPE_HARDWARE as HW, PERF_TYPE_SOFTWARE as SW};
  Ok(match event {
    "cpu-clock" => (SW, libbpf_sys::PERF_COUNT_SW_CPU_CLOCK.into()),
    "task-clock" => (SW, libbpf_sys::PERF_COUNT_SW_TASK_CLOCK.into()),
    "page-faults" | "faults" => (SW, libbpf_sys::PERF_COUNT_SW_PAGE_FAULTS.into()),
    "context-switches" | "cs" => (SW, libbpf_sys::PERF_COUNT_SW_CONTEXT_SWITCHES.into()),
    "cpu-migrations" => (SW, libbpf_sys::PERF_COUNT_SW_CPU_MIGRATIONS.into()),
    "cycles" | "cpu-cycles" => (HW, libbpf_sys::PERF_COUNT_HW_CPU_CYCLES.into()),
    "instructions" => (HW, libbpf_sys::PERF_COUNT_HW_INSTRUCTIONS.into()),
    "cache-references" => (HW, libbpf_sys::PERF_COUNT_HW_CACHE_REFERENCES.into()),
    "cache-misses" => (HW, libbpf_sys::PERF_COUNT_HW_CACHE_MISSES.into()),
    "branch-instructions" | "branches" => (HW, libbpf_sys::PERF_COUNT_HW_BRANCH_INSTRUCTIONS.into()),
    "branch-misses" => (HW, libbpf_sys::PERF_COUNT_HW_BRANCH_MISSES.into()),
    other => {
      return err(
        Code::InvalidValue,
        format!("unknown perf event '{other}'; use cpu-clock, task-clock, page-faults, context-switches, cpu-migrations, cycles, instructions, cache-references, cache-misses, branch-instructions or branch-misses"),
      )
    }
  })
}

/// Opens a sampling event (`freq`: `sample` per second, else one sample
/// every `sample` events); returns its fd.
pub(crate) fn open(type_: u32, config: u64, freq: bool, sample: u64, pid: i32, cpu: i32) -> std::io::Result<i32> {
  let mut attr = libbpf_sys::perf_event_attr {
    type_,
    size: std::mem::size_of::<libbpf_sys::perf_event_attr>() as u32,
    config,
    ..Default::default()
  };
  attr.__bindgen_anon_1.sample_freq = sample;
  attr.set_freq(u64::from(freq));
  // SAFETY: a valid attr; the syscall returns a new fd or -1.
  let fd = unsafe {
    libc::syscall(
      libc::SYS_perf_event_open,
      &attr as *const _,
      pid,
      cpu,
      -1i32,
      libc::c_ulong::from(libbpf_sys::PERF_FLAG_FD_CLOEXEC),
    )
  };
  if fd < 0 {
    return Err(std::io::Error::last_os_error());
  }
  Ok(fd as i32)
}

/// How many CPUs the machine can have (`cpu` is below it).
pub(crate) fn possible_cpus() -> BpfResult<u64> {
  let n = libbpf_rs::num_possible_cpus().map_err(|e| BpfError::libbpf(Code::Attach, "counting the possible CPUs", &e))?;
  Ok((n as u64).max(1))
}

/// The most samples per second the kernel takes now
/// (/proc/sys/kernel/perf_event_max_sample_rate, which it lowers when
/// sampling takes too long; 100000, its default, if unreadable).
pub(crate) fn max_sample_rate() -> u64 {
  std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
    .ok()
    .and_then(|t| t.trim().parse::<u64>().ok())
    .filter(|n| *n > 0)
    .unwrap_or(100_000)
}

/// The online CPUs, from /sys/devices/system/cpu/online (`0-3,5`).
pub(crate) fn online_cpus() -> BpfResult<Vec<i32>> {
  let text = std::fs::read_to_string("/sys/devices/system/cpu/online")
    .map_err(|e| BpfError::new(Code::Attach, format!("reading /sys/devices/system/cpu/online: {e}")))?;
  Ok(parse_cpu_list(&text))
}

/// `0-3,5` -> [0, 1, 2, 3, 5].
fn parse_cpu_list(text: &str) -> Vec<i32> {
  let mut cpus = Vec::new();
  for part in text.trim().split(',').filter(|p| !p.is_empty()) {
    let (lo, hi) = part.split_once('-').unwrap_or((part, part));
    if let (Ok(lo), Ok(hi)) = (lo.parse::<i32>(), hi.parse::<i32>()) {
      cpus.extend(lo..=hi);
    }
  }
  cpus
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn cpu_lists() {
    assert_eq!(parse_cpu_list("0-3,5\n"), vec![0, 1, 2, 3, 5]);
    assert_eq!(parse_cpu_list("0"), vec![0]);
    assert_eq!(parse_cpu_list(""), Vec::<i32>::new());
  }

  #[test]
  fn event_names() {
    assert_eq!(config("cpu-clock").unwrap(), (libbpf_sys::PERF_TYPE_SOFTWARE, 0));
    assert_eq!(config("cycles").unwrap().0, libbpf_sys::PERF_TYPE_HARDWARE);
    assert_eq!(config("nope").unwrap_err().code, Code::InvalidValue);
  }
}
