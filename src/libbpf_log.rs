//! libbpf's own messages: kept (the last few hundred lines) so that an error
//! can quote what libbpf and the verifier said, and printed to stderr only
//! when `NODE_LIBBPF_DEBUG` is set.
//!
//! libbpf formats its messages with a C `va_list`, which Rust cannot take
//! apart on stable: src/libbpf_log.c formats them with `vasprintf` and hands
//! the bytes here. libbpf-rs's own print callback panics on messages that are
//! not UTF-8 (a broken ELF's names), and a panic in a C callback aborts the
//! process; here the bytes are decoded lossily and nothing can panic.

use std::{
  collections::VecDeque,
  os::raw::{c_char, c_int},
  sync::{Mutex, Once},
};

const KEPT_LINES: usize = 400;
/// libbpf's LIBBPF_DEBUG print level.
const LEVEL_DEBUG: c_int = 2;

static LINES: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());
static INSTALL: Once = Once::new();

extern "C" {
  fn node_libbpf_log_install(with_debug: c_int);
}

/// Called by src/libbpf_log.c with one formatted message.
#[no_mangle]
extern "C" fn node_libbpf_log_message(level: c_int, msg: *const c_char, len: usize) {
  if msg.is_null() {
    return;
  }
  // SAFETY: libbpf_log.c passes vasprintf's buffer and the length it wrote.
  let bytes = unsafe { std::slice::from_raw_parts(msg.cast::<u8>(), len) };
  // a panic must not unwind into C: whatever happens here, it stops here
  let _ = std::panic::catch_unwind(|| keep(level, &String::from_utf8_lossy(bytes)));
}

fn keep(level: c_int, msg: &str) {
  if debug() {
    eprint!("libbpf: {msg}");
  }
  if level == LEVEL_DEBUG {
    return;
  }
  let mut lines = LINES.lock().unwrap_or_else(|e| e.into_inner());
  for line in msg.lines() {
    if lines.len() == KEPT_LINES {
      lines.pop_front();
    }
    lines.push_back(line.to_string());
  }
}

fn debug() -> bool {
  std::env::var_os("NODE_LIBBPF_DEBUG").is_some()
}

/// Routes libbpf's messages here (once per process).
pub fn install() {
  // SAFETY: sets a process-wide callback that stays valid for the process.
  INSTALL.call_once(|| unsafe { node_libbpf_log_install(c_int::from(debug())) });
}

/// Forgets what was kept: call before an operation whose log you want.
pub fn clear() {
  LINES.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

/// What libbpf said since the last `clear()`, the last `max` lines.
pub fn tail(max: usize) -> Vec<String> {
  let lines = LINES.lock().unwrap_or_else(|e| e.into_inner());
  lines.iter().skip(lines.len().saturating_sub(max)).cloned().collect()
}
