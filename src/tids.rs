//! The kernel thread ids of the threads node-libbpf starts (the poller, the
//! release thread): each records its `gettid()` as it starts, and
//! `libraryThreads()` (src/threads.rs) lists them. A leaf module, so that
//! the threads' own modules need not depend on the N-API export.

use std::sync::Mutex;

static THREADS: Mutex<Vec<(String, u32)>> = Mutex::new(Vec::new());

/// Called first thing on every thread the library starts.
pub(crate) fn register(name: &str) {
  // SAFETY: gettid has no preconditions.
  let tid = unsafe { libc::gettid() } as u32;
  THREADS.lock().unwrap_or_else(|e| e.into_inner()).push((name.to_string(), tid));
}

/// The threads registered so far, as (name, tid).
pub(crate) fn registered() -> Vec<(String, u32)> {
  THREADS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}
