//! libbpf's own messages: kept (the last few hundred lines) so that an error
//! can quote what libbpf and the verifier said, and printed to stderr only
//! when `NODE_LIBBPF_DEBUG` is set.

use std::{
  collections::VecDeque,
  sync::{Mutex, Once},
};

use libbpf_rs::PrintLevel;

const KEPT_LINES: usize = 400;

static LINES: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());
static INSTALL: Once = Once::new();

fn on_print(level: PrintLevel, msg: String) {
  if std::env::var_os("NODE_LIBBPF_DEBUG").is_some() {
    eprint!("libbpf: {msg}");
  }
  if level == PrintLevel::Debug {
    return;
  }
  let mut lines = LINES.lock().unwrap();
  for line in msg.lines() {
    if lines.len() == KEPT_LINES {
      lines.pop_front();
    }
    lines.push_back(line.to_string());
  }
}

/// Routes libbpf's messages here (once per process).
pub fn install() {
  INSTALL.call_once(|| {
    let level = if std::env::var_os("NODE_LIBBPF_DEBUG").is_some() {
      PrintLevel::Debug
    } else {
      PrintLevel::Info
    };
    libbpf_rs::set_print(Some((level, on_print)));
  });
}

/// Forgets what was kept: call before an operation whose log you want.
pub fn clear() {
  LINES.lock().unwrap().clear();
}

/// What libbpf said since the last `clear()`, the last `max` lines.
pub fn tail(max: usize) -> Vec<String> {
  let lines = LINES.lock().unwrap();
  lines.iter().skip(lines.len().saturating_sub(max)).cloned().collect()
}
