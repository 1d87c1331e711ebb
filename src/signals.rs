//! Signals held off the calling thread while the kernel verifies a program.
//! The verifier gives up with EAGAIN when a signal is pending for the
//! loading thread, and libbpf tries a load five times: in a process that
//! another profiler samples with signals (V8's CpuProfiler, as
//! `@datadog/pprof` and `--cpu-prof` run it, sends SIGPROF every
//! millisecond), a program that takes longer than that to verify never
//! loaded. The signals held are delivered when the load returns. The ones a
//! fault raises (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGABRT) are
//! never held: held, the kernel would kill the process for them.

/// Runs `f` with the thread's asynchronous signals held (pending until it returns).
pub(crate) fn held<T>(f: impl FnOnce() -> T) -> T {
  let _mask = Held::new();
  f()
}

/// The thread's signal mask before: put back on drop (also when `f` panics).
struct Held(Option<libc::sigset_t>);

impl Held {
  fn new() -> Held {
    // SAFETY: sigset_t is plain data, filled by sigfillset before use; pthread_sigmask
    // changes only the calling thread's mask, and `old` receives the mask it had.
    unsafe {
      let mut set: libc::sigset_t = std::mem::zeroed();
      let mut old: libc::sigset_t = std::mem::zeroed();
      libc::sigfillset(&mut set);
      for sig in [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE, libc::SIGTRAP, libc::SIGABRT] {
        libc::sigdelset(&mut set, sig);
      }
      if libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) == 0 {
        Held(Some(old))
      } else {
        Held(None)
      }
    }
  }
}

impl Drop for Held {
  fn drop(&mut self) {
    if let Some(old) = self.0.as_ref() {
      // SAFETY: puts back the mask pthread_sigmask returned for this thread.
      unsafe {
        libc::pthread_sigmask(libc::SIG_SETMASK, old, std::ptr::null_mut());
      }
    }
  }
}
