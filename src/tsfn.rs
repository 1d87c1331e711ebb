//! The one place that decides how we call into JavaScript from the poller:
//! a non-blocking, callee-unhandled (`(...args)`, no error-first) napi
//! threadsafe function used as a doorbell, with ref/unref and release.

use std::sync::Mutex;

use napi::{
  bindgen_prelude::Function,
  threadsafe_function::{ThreadsafeCallContext, ThreadsafeFunction, ThreadsafeFunctionCallMode},
  Env, Status,
};

use crate::queue::Notify;

/// What one doorbell call hands the JS dispatcher (lib/core/dispatch.js): the
/// losses to report as `[cpu, count, ...]` pairs, if any. The dispatcher
/// then pulls the records itself (`NativeBuffer.fill`).
pub type DispatchArgs = Option<Vec<f64>>;

/// The dispatcher's return value is ignored.
type Tsfn = ThreadsafeFunction<(), (), DispatchArgs, Status, false, false, 0>;

/// A doorbell that runs a drain callback on the JS thread.
#[derive(Default)]
pub struct Doorbell {
  tsfn: Mutex<Option<Tsfn>>,
}

impl Doorbell {
  fn tsfn(&self) -> std::sync::MutexGuard<'_, Option<Tsfn>> {
    self.tsfn.lock().unwrap_or_else(|e| e.into_inner())
  }

  /// Binds the doorbell to `dispatcher`. `drain` runs on the JS thread for
  /// each ring and returns the arguments to call `dispatcher` with; napi-rs
  /// also drops it on the JS thread, when the function is released.
  pub fn bind(
    &self,
    dispatcher: &Function<'_, DispatchArgs, ()>,
    drain: impl FnMut(ThreadsafeCallContext<()>) -> napi::Result<DispatchArgs> + Send + 'static,
  ) -> napi::Result<()> {
    let tsfn = dispatcher.build_threadsafe_function::<()>().callee_handled::<false>().weak::<false>().build_callback(drain)?;
    *self.tsfn() = Some(tsfn);
    Ok(())
  }

  /// Whether an open buffer keeps the Node.js process alive.
  #[allow(deprecated)]
  pub fn set_ref(&self, env: &Env, keep_alive: bool) -> napi::Result<()> {
    if let Some(tsfn) = self.tsfn().as_mut() {
      if keep_alive {
        tsfn.refer(env)?;
      } else {
        tsfn.unref(env)?;
      }
    }
    Ok(())
  }
}

impl Notify for Doorbell {
  /// Queues one drain call (never blocks; ignored once released).
  fn notify(&self) {
    if let Some(tsfn) = self.tsfn().as_ref() {
      tsfn.call((), ThreadsafeFunctionCallMode::NonBlocking);
    }
  }

  /// Releases the threadsafe function: no more calls, the loop may exit.
  fn release(&self) {
    let tsfn = self.tsfn().take();
    drop(tsfn);
  }
}
