//! The kernel side of closing an object, off the JS thread. Releasing links
//! waits for the kernel's RCU grace periods (about 70 ms per tracepoint link
//! here; 50 objects took 3.4 s), so `close()` hands what the object held to
//! one background thread and returns at once: delivery has already stopped
//! by then. Jobs run in order, so a promise of `closeAsync()` resolves after
//! every release asked for before it. At process exit the thread is simply
//! ended and the kernel frees what is left with the process's fds.

use std::{
  collections::BTreeMap,
  sync::{Mutex, OnceLock},
};

use crossbeam_channel::{Receiver, Sender};
use libbpf_rs::Link;

/// What a closed object held in the kernel. (Send: libbpf-rs 0.27 makes its
/// `Object`, `OpenObject` and `Link` Send; once closed, nothing else refers
/// to them, the poller's consumers holding duplicates of the fds they use,
/// and the release thread only drops them.)
pub(crate) struct Garbage {
  /// Say when the poller has freed the consumers of the object's buffers.
  consumers: Vec<Receiver<()>>,
  links: BTreeMap<u32, Vec<Link>>,
  /// The libbpf object (its programs and maps), whichever stage it was in:
  /// dropped after the links that point at its programs.
  stage: Box<dyn Send>,
}

impl Garbage {
  pub fn new(consumers: Vec<Receiver<()>>, links: BTreeMap<u32, Vec<Link>>, stage: impl Send + 'static) -> Self {
    Garbage { consumers, links, stage: Box::new(stage) }
  }

  fn release(self) {
    // links first: they point at the programs; one at a time, each while
    // no other thread of ours attaches or detaches (see `hooks()`)
    for (_, links) in self.links {
      for link in links {
        let _hooks = hooks();
        drop(link);
      }
    }
    drop(self.stage);
    // the consumers hold duplicates of their maps' fds
    for freed in self.consumers {
      let _ = freed.recv_timeout(std::time::Duration::from_secs(1));
    }
  }
}

/// Held by whoever adds or removes a program's hook in the kernel: an
/// attach on the JS thread, a detach on either thread. Only one thread of
/// ours is in those kernel paths at a time. Turning a tracepoint or perf
/// event on and off patches kernel text and waits for the other CPUs; on
/// 5.10 under qemu TCG, the release thread detaching while the main thread
/// attached left both vCPUs spinning (soft lockups, 2 VM runs in 4). The
/// lock is taken per link, so an attach waits for at most one detach
/// (~70 ms for a tracepoint here), however many objects are being released.
static HOOKS: Mutex<()> = Mutex::new(());

pub(crate) fn hooks() -> std::sync::MutexGuard<'static, ()> {
  HOOKS.lock().unwrap_or_else(|e| e.into_inner())
}

type Done = Box<dyn FnOnce() + Send>;
/// A release to make, and what to call once it is made.
type Job = (Garbage, Option<Done>);

static RELEASER: OnceLock<Option<Sender<Job>>> = OnceLock::new();
static START: Mutex<()> = Mutex::new(());

fn releaser() -> Option<&'static Sender<Job>> {
  if let Some(tx) = RELEASER.get() {
    return tx.as_ref();
  }
  let _once = START.lock().unwrap_or_else(|e| e.into_inner());
  RELEASER
    .get_or_init(|| {
      let (tx, rx) = crossbeam_channel::unbounded::<Job>();
      let spawned = std::thread::Builder::new().name("node-libbpf-release".into()).spawn(move || {
        crate::tids::register("node-libbpf-release");
        for (garbage, done) in rx {
          garbage.release();
          trim();
          if let Some(done) = done {
            done();
          }
        }
      });
      spawned.ok().map(|_| tx)
    })
    .as_ref()
}

/// Starts the release thread now, if it is not running yet.
pub(crate) fn start() {
  releaser();
}

/// Gives the C heap's free pages back to the system (glibc keeps them, and
/// freeing libbpf objects and the poller's batches on other threads than
/// the ones that made them fragments it).
fn trim() {
  #[cfg(target_env = "gnu")]
  // SAFETY: malloc_trim has no preconditions.
  unsafe {
    libc::malloc_trim(0);
  }
}

/// Releases `garbage` on the release thread, then calls `done` there (on
/// this thread, at once, if that thread could not be started). The kernel
/// frees maps a moment after their last program (an RCU grace period).
pub(crate) fn later(garbage: Garbage, done: Option<Done>) {
  let job = (garbage, done);
  let job = match releaser() {
    Some(tx) => match tx.send(job) {
      Ok(()) => return,
      Err(crossbeam_channel::SendError(job)) => job,
    },
    None => job,
  };
  job.0.release();
  if let Some(done) = job.1 {
    done();
  }
}
