//! The one place that decides how we call into JavaScript from the poller:
//! a non-blocking, callee-unhandled (`(...args)`, no error-first) napi
//! threadsafe function used as a doorbell, with ref/unref and release.

use std::sync::{
  atomic::{AtomicU64, Ordering},
  Arc, Mutex,
};

use napi::{
  bindgen_prelude::{Buffer, FnArgs, Function, Uint32Array},
  threadsafe_function::{ThreadsafeCallContext, ThreadsafeFunction, ThreadsafeFunctionCallMode},
  Env, Status,
};

/// What one doorbell call hands the JS dispatcher: the records' bytes, the
/// end offset of each record, the CPU of each record (perf buffers) and the
/// losses to report as `[cpu, count, ...]` pairs.
pub type DispatchArgs = FnArgs<(Buffer, Uint32Array, Option<Uint32Array>, Option<Vec<f64>>)>;

/// The dispatcher returns how many records it had to skip.
type Tsfn = ThreadsafeFunction<(), u32, DispatchArgs, Status, false, false, 0>;

/// A doorbell that runs a drain callback on the JS thread.
#[derive(Default)]
pub struct Doorbell {
  tsfn: Mutex<Option<Tsfn>>,
  /// The sum of what the dispatcher returned: records it skipped.
  skipped: Arc<AtomicU64>,
}

impl Doorbell {
  /// Binds the doorbell to `dispatcher`; `drain` runs on the JS thread for
  /// each ring and returns the arguments to call `dispatcher` with.
  pub fn bind(
    &self,
    dispatcher: &Function<'_, DispatchArgs, u32>,
    drain: impl FnMut(ThreadsafeCallContext<()>) -> napi::Result<DispatchArgs> + 'static,
  ) -> napi::Result<()> {
    let tsfn = dispatcher
      .build_threadsafe_function::<()>()
      .callee_handled::<false>()
      .weak::<false>()
      .build_callback(drain)?;
    *self.tsfn.lock().unwrap() = Some(tsfn);
    Ok(())
  }

  /// Queues one drain call (never blocks; ignored once released).
  pub fn notify(&self) {
    if let Some(tsfn) = self.tsfn.lock().unwrap().as_ref() {
      let skipped = self.skipped.clone();
      tsfn.call_with_return_value((), ThreadsafeFunctionCallMode::NonBlocking, move |n, _env| {
        skipped.fetch_add(u64::from(n.unwrap_or(0)), Ordering::Relaxed);
        Ok(())
      });
    }
  }

  /// Records the dispatcher skipped so far.
  pub fn skipped(&self) -> u64 {
    self.skipped.load(Ordering::Relaxed)
  }

  /// Whether an open buffer keeps the Node.js process alive.
  #[allow(deprecated)]
  pub fn set_ref(&self, env: &Env, keep_alive: bool) -> napi::Result<()> {
    if let Some(tsfn) = self.tsfn.lock().unwrap().as_mut() {
      if keep_alive {
        tsfn.refer(env)?;
      } else {
        tsfn.unref(env)?;
      }
    }
    Ok(())
  }

  /// Releases the threadsafe function: no more calls, the loop may exit.
  pub fn release(&self) {
    let tsfn = self.tsfn.lock().unwrap().take();
    drop(tsfn);
  }
}
