//! The threads node-libbpf starts in the process (the poller, the release
//! thread), with their kernel thread ids, so that programs tracing their own
//! process can leave them out: the poller's wakeups of the event loop are
//! not the service's own writes. Each thread records its `gettid()` as it
//! starts.

use std::sync::Mutex;

use napi_derive::napi;

use crate::error::{guard, Result};

/// A thread node-libbpf runs in this process.
#[napi(object)]
#[derive(Clone)]
pub struct LibraryThread {
  /// `node-libbpf-poller`, `node-libbpf-release` (the thread's comm).
  pub name: String,
  /// The thread id (`gettid()`) in this process's pid namespace: on the
  /// host what BPF's `bpf_get_current_pid_tgid()` has in its low 32 bits;
  /// in a container `bpf.kernelIds(process.pid).tids.get(tid)` is that.
  pub tid: u32,
}

static THREADS: Mutex<Vec<LibraryThread>> = Mutex::new(Vec::new());

/// Called first thing on every thread the library starts.
pub(crate) fn register(name: &str) {
  // SAFETY: gettid has no preconditions.
  let tid = unsafe { libc::gettid() } as u32;
  THREADS.lock().unwrap_or_else(|e| e.into_inner()).push(LibraryThread { name: name.to_string(), tid });
}

/// The threads node-libbpf runs in this process, each with its kernel
/// thread id. Starts them first if they are not running yet (they sleep
/// until needed), so that the list is complete and does not change later:
/// a program that leaves these tids out never counts the library's own
/// work (`bpf/node_libbpf.bpf.h` does it on the BPF side).
#[napi]
pub fn library_threads() -> Result<Vec<LibraryThread>> {
  guard(|| {
    crate::poller::poller()?;
    crate::release::start();
    // each thread records itself as it starts: wait for both
    for _ in 0..1000 {
      let threads = THREADS.lock().unwrap_or_else(|e| e.into_inner()).clone();
      if threads.len() >= 2 {
        return Ok(threads);
      }
      std::thread::sleep(std::time::Duration::from_millis(1));
    }
    Ok(THREADS.lock().unwrap_or_else(|e| e.into_inner()).clone())
  })
}
