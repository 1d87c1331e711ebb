//! The threads node-libbpf starts in the process (the poller, the release
//! thread), with their kernel thread ids, so that programs tracing their own
//! process can leave them out: the poller's wakeups of the event loop are
//! not the service's own writes. Each thread records its `gettid()` as it
//! starts.

use napi_derive::napi;

use crate::{
  error::{guard, Result},
  tids,
};

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

fn registered() -> Vec<LibraryThread> {
  tids::registered().into_iter().map(|(name, tid)| LibraryThread { name, tid }).collect()
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
      let threads = registered();
      if threads.len() >= 2 {
        return Ok(threads);
      }
      std::thread::sleep(std::time::Duration::from_millis(1));
    }
    Ok(registered())
  })
}
