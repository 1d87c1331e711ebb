//! The poller: one thread per process that consumes every open ring and perf
//! buffer, of every object. It drives `Source`s (src/buffer.rs), which put
//! records into their delivery queues (src/queue.rs); it knows neither the
//! queues nor JavaScript.
//!
//! Wakeups: the thread waits in epoll on every buffer and on its own wake
//! eventfd, with a timeout (the shortest poll interval) so that programs
//! submitting with BPF_RB_NO_WAKEUP and perf buffers below their watermark
//! are still drained. After a pass that found records it naps instead of
//! waiting on the buffers (it waits on the wake fd alone): the ring buffer's
//! adaptive notification then stops waking us (and stops costing the traced
//! process an interrupt per record), and a program that traces this very
//! process (its event loop wakes for each delivery) is delivered to at most
//! once per interval instead of feeding itself in a tight loop. The nap is
//! the poll interval, shortened so that at the rate just measured no buffer
//! gets more than a quarter full before the next pass, and at most twice
//! the buffer's last nap: one pass that found few records (the producer
//! descheduled for a moment) must not set a nap the next burst overflows.
//! (It did: the bench's perf buffer, 1 MiB per CPU, found 29 KB in one
//! pass, napped the whole 10 ms, and 1.15 MB came meanwhile; the kernel
//! dropped records in 4 runs of 6.) A command (a buffer
//! added or removed) ends a nap at once. The first record after a quiet
//! spell is delivered at once.
//!
//! The thread lives as long as the process; with no buffer open it sleeps in
//! epoll without a timeout.

use std::{
  os::fd::{AsRawFd, FromRawFd, OwnedFd},
  sync::{Arc, Mutex},
  time::{Duration, Instant},
};

use crossbeam_channel::{Receiver, Sender};

use crate::error::{BpfError, BpfResult, Code};

/// What one pass over a source found.
pub(crate) struct Pass {
  /// Records were there (copied out, or left for JavaScript to read).
  pub found: bool,
  /// Bytes the kernel wrote since the last pass, for the fill rate.
  pub bytes: usize,
}

/// A libbpf consumer the poller drives.
pub(crate) trait Source: Send {
  /// The epoll fd that becomes readable when records are there.
  fn epoll_fd(&self) -> i32;
  /// Consumes every available record into the collector, then ends the pass.
  fn consume(&mut self) -> Pass;
  /// Bytes the kernel buffer holds (per CPU for perf buffers).
  fn capacity(&self) -> usize;
}

enum Command {
  Add(u32, Box<dyn Source>, Duration),
  /// Frees a source, then says so.
  Remove(u32, Sender<()>),
}

/// The process's polling thread.
pub(crate) struct Poller {
  commands: Sender<Command>,
  wake: Arc<OwnedFd>,
}

static POLLER: std::sync::OnceLock<Poller> = std::sync::OnceLock::new();
static START: Mutex<()> = Mutex::new(());

/// The process's poller, started on first use.
pub(crate) fn poller() -> BpfResult<&'static Poller> {
  if let Some(poller) = POLLER.get() {
    return Ok(poller);
  }
  let _once = START.lock().unwrap_or_else(|e| e.into_inner());
  if let Some(poller) = POLLER.get() {
    return Ok(poller);
  }
  let poller = Poller::start().map_err(|e| BpfError::new(Code::Buffer, format!("starting the poller thread: {e}")))?;
  Ok(POLLER.get_or_init(|| poller))
}

impl Poller {
  fn start() -> std::io::Result<Self> {
    // SAFETY: plain syscalls; each fd is owned right away.
    let epoll = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if epoll < 0 {
      return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new fd that nothing else owns.
    let epoll = unsafe { OwnedFd::from_raw_fd(epoll) };
    // SAFETY: as above.
    let wake = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if wake < 0 {
      return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new fd that nothing else owns.
    let wake = Arc::new(unsafe { OwnedFd::from_raw_fd(wake) });
    epoll_ctl(&epoll, libc::EPOLL_CTL_ADD, wake.as_raw_fd(), WAKE)?;
    let (commands, rx) = crossbeam_channel::unbounded();
    let thread_wake = wake.clone();
    std::thread::Builder::new().name("node-libbpf-poller".into()).spawn(move || {
      crate::tids::register("node-libbpf-poller");
      run(epoll, thread_wake, rx)
    })?;
    Ok(Poller { commands, wake })
  }

  fn send(&self, command: Command) {
    let _ = self.commands.send(command);
    let one = 1u64.to_ne_bytes();
    // SAFETY: writing 8 bytes to our eventfd.
    unsafe { libc::write(self.wake.as_raw_fd(), one.as_ptr().cast(), 8) };
  }

  /// Starts polling `source` for the sink `id`.
  pub fn add(&self, id: u32, source: Box<dyn Source>, interval: Duration) {
    self.send(Command::Add(id, source, interval));
  }

  /// Stops polling the source of sink `id` and frees it, then says so on
  /// `freed`.
  pub fn remove(&self, id: u32, freed: Sender<()>) {
    self.send(Command::Remove(id, freed));
  }
}

/// The epoll data of the wake fd (sources use their sink id).
const WAKE: u64 = u64::MAX;

fn epoll_ctl(epoll: &OwnedFd, op: i32, fd: i32, data: u64) -> std::io::Result<()> {
  let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: data };
  // SAFETY: valid fds and event.
  if unsafe { libc::epoll_ctl(epoll.as_raw_fd(), op, fd, &mut ev) } < 0 {
    return Err(std::io::Error::last_os_error());
  }
  Ok(())
}

/// Waits up to `timeout` for the wake fd alone (a command), not the buffers.
fn nap(wake: &OwnedFd, timeout: Duration) {
  let mut fds = [libc::pollfd { fd: wake.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
  let ts = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as libc::c_long };
  // SAFETY: one valid pollfd, a valid timespec, no signal mask.
  unsafe { libc::ppoll(fds.as_mut_ptr(), 1, &ts, std::ptr::null()) };
}

/// The nap after a pass that found `bytes` written in `elapsed`: the time
/// for a buffer of `capacity` bytes to fill a quarter at that rate, at most
/// `interval`, and at most twice `last` (the nap after the pass before).
fn nap_after(capacity: usize, elapsed: Duration, bytes: usize, interval: Duration, last: Option<Duration>) -> Duration {
  let quarter = capacity as f64 / 4.0;
  let sleep = match bytes {
    0 => interval,
    // (try_: a rate out of Duration's range must not panic the poller thread)
    bytes => Duration::try_from_secs_f64(quarter * elapsed.as_secs_f64() / bytes as f64).map_or(interval, |d| d.min(interval)),
  };
  last.map_or(sleep, |last| sleep.min(last * 2))
}

struct Entry {
  id: u32,
  source: Box<dyn Source>,
  interval: Duration,
  /// The nap after this buffer's last pass, if that pass found records
  /// and followed a nap.
  last_nap: Option<Duration>,
}

fn run(epoll: OwnedFd, wake: Arc<OwnedFd>, commands: Receiver<Command>) {
  let mut entries: Vec<Entry> = Vec::new();
  let mut events = [libc::epoll_event { events: 0, u64: 0 }; 32];
  // Some(d): the last pass found records; nap d instead of waiting in epoll
  let mut next_nap: Option<Duration> = None;
  let mut last_pass = Instant::now();
  loop {
    // a pass after a nap rates the buffers over the nap; one after a wait
    // in epoll over the moment since the wakeup, too short to cap the next
    let after_nap = next_nap.is_some();
    if let Some(d) = next_nap {
      nap(&wake, d);
    } else {
      // (saturating: an interval past i32::MAX ms must not wrap to a negative, endless, wait)
      let timeout =
        entries.iter().map(|e| e.interval).min().map_or(-1, |d| i32::try_from(d.as_millis().max(1)).unwrap_or(i32::MAX));
      // SAFETY: valid epoll fd and event array.
      unsafe { libc::epoll_wait(epoll.as_raw_fd(), events.as_mut_ptr(), events.len() as i32, timeout) };
      // what is there now came in since the wakeup: rate it from here
      last_pass = Instant::now();
    }
    let mut counter = [0u8; 8];
    // SAFETY: reading 8 bytes from our non-blocking eventfd.
    unsafe { libc::read(wake.as_raw_fd(), counter.as_mut_ptr().cast(), 8) };
    loop {
      match commands.try_recv() {
        Ok(Command::Add(id, source, interval)) => {
          let _ = epoll_ctl(&epoll, libc::EPOLL_CTL_ADD, source.epoll_fd(), u64::from(id));
          entries.push(Entry { id, source, interval, last_nap: None });
        }
        Ok(Command::Remove(id, freed)) => {
          if let Some(i) = entries.iter().position(|e| e.id == id) {
            let entry = entries.swap_remove(i);
            let _ = epoll_ctl(&epoll, libc::EPOLL_CTL_DEL, entry.source.epoll_fd(), 0);
          }
          let _ = freed.send(());
        }
        Err(crossbeam_channel::TryRecvError::Empty) => break,
        // nobody can send any more: nothing will be added or removed
        Err(crossbeam_channel::TryRecvError::Disconnected) => return,
      }
    }
    let elapsed = last_pass.elapsed().max(Duration::from_micros(1));
    last_pass = Instant::now();
    next_nap = None;
    for entry in &mut entries {
      let pass = entry.source.consume();
      if pass.found {
        let sleep = nap_after(entry.source.capacity(), elapsed, pass.bytes, entry.interval, entry.last_nap);
        entry.last_nap = after_nap.then_some(sleep);
        next_nap = Some(next_nap.map_or(sleep, |n: Duration| n.min(sleep)));
      } else {
        entry.last_nap = None;
      }
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn one_pass_that_finds_few_records_does_not_set_a_nap_the_next_burst_overflows() {
    let (mib, ms) = (1 << 20, Duration::from_millis);
    let interval = ms(10);
    // a steady stream, 150 MB/s into a 1 MiB buffer: a quarter fills in ~1.7 ms
    let steady = nap_after(mib, ms(2), 300_000, interval, Some(ms(2)));
    assert!(steady > ms(1) && steady < ms(2), "{steady:?}");
    // the producer paused: 29 KB in 1.7 ms would mean a 15 ms nap; at most twice the last
    assert_eq!(nap_after(mib, ms(2), 29_000, interval, Some(steady)), steady * 2);
    // a stream that really stopped reaches the interval in a few passes
    let mut nap = steady;
    for _ in 0..3 {
      nap = nap_after(mib, nap, 1_000, interval, Some(nap));
    }
    assert_eq!(nap, interval);
    // with no nap before (the pass after a wait in epoll), the rate alone
    assert_eq!(nap_after(mib, ms(2), 29_000, interval, None), interval);
    assert_eq!(nap_after(mib, ms(2), 0, interval, None), interval);
  }
}
