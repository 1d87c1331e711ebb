//! The poller: one thread per object that consumes its ring and perf
//! buffers and hands batches of records to JavaScript.
//!
//! Records are copied out of the kernel's buffers into `Batch`es (one flat
//! byte vector and the end offset of each record) and sent through a bounded
//! crossbeam channel per buffer. When the channel is full the batch is
//! dropped and counted: memory stays bounded and the traced process is never
//! slowed by a slow JavaScript callback. One threadsafe call (the doorbell)
//! tells JavaScript to drain the channel; it is rung only when no call is
//! pending, so there is one crossing per batch or fewer, never one per record.
//!
//! Wakeups: the thread waits in epoll on the buffers, with a timeout (the
//! poll interval) so that programs submitting with BPF_RB_NO_WAKEUP and perf
//! buffers below their watermark are still drained. After a pass that found
//! records it sleeps instead of waiting in epoll: the ring buffer's adaptive
//! notification then stops waking us (and stops costing the traced process
//! an interrupt per record), and a program that traces this very process
//! (its event loop wakes for each delivery) is delivered to at most once per
//! interval instead of feeding itself in a tight loop. The sleep is the poll
//! interval, shortened so that at the rate just measured no buffer gets more
//! than a quarter full before the next pass. The first record after a quiet
//! spell is delivered at once.

use std::{
  os::fd::{AsRawFd, FromRawFd, OwnedFd},
  sync::{
    atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    Arc, Mutex,
  },
  thread::JoinHandle,
  time::{Duration, Instant},
};

use crossbeam_channel::{Receiver, Sender, TrySendError};

use crate::tsfn::Doorbell;

/// Records of one consume pass, flattened.
#[derive(Default)]
pub(crate) struct Batch {
  pub data: Vec<u8>,
  /// End offset of each record in `data`.
  pub ends: Vec<u32>,
  /// The CPU of each record (perf buffers only).
  pub cpus: Vec<u32>,
}

/// A batch is sent when it reaches this size, even mid-pass.
const BATCH_BYTES: usize = 1 << 20;

/// At most this many record bytes wait for JavaScript, whatever the number
/// of batches: `queueSize` batches of up to 1 MiB let a slow callback hold
/// 64 MiB (bench: RSS +88 MB with a 20 µs callback); this keeps it to 16.
pub(crate) const QUEUE_BYTES: usize = 16 << 20;

/// What the poller thread and the JavaScript side of one buffer share.
pub(crate) struct Sink {
  pub queue_tx: Sender<Batch>,
  pub queue_rx: Receiver<Batch>,
  /// Record bytes in the queue (bounded by QUEUE_BYTES).
  pub queued_bytes: AtomicUsize,
  /// A doorbell call is queued and has not started draining yet.
  pub scheduled: AtomicBool,
  pub closed: AtomicBool,
  /// Records delivered to JavaScript.
  pub received: AtomicU64,
  /// Records lost: dropped here (queue full) or by the kernel (perf).
  pub lost: AtomicU64,
  /// Losses not yet reported to the `lost` callback, per CPU (index 0 for
  /// ring buffers).
  pub unreported_lost: Mutex<Vec<u64>>,
  pub doorbell: Doorbell,
}

impl Sink {
  pub fn new(queue_batches: usize, cpus: usize, doorbell: Doorbell) -> Self {
    let (queue_tx, queue_rx) = crossbeam_channel::bounded(queue_batches);
    Sink {
      queue_tx,
      queue_rx,
      queued_bytes: AtomicUsize::new(0),
      scheduled: AtomicBool::new(false),
      closed: AtomicBool::new(false),
      received: AtomicU64::new(0),
      lost: AtomicU64::new(0),
      unreported_lost: Mutex::new(vec![0; cpus.max(1)]),
      doorbell,
    }
  }

  fn ring(&self) {
    if !self.scheduled.swap(true, Ordering::AcqRel) {
      self.doorbell.notify();
    }
  }

  fn count_lost(&self, cpu: usize, n: u64) {
    self.lost.fetch_add(n, Ordering::Relaxed);
    let mut unreported = self.unreported_lost.lock().unwrap();
    if let Some(slot) = unreported.get_mut(cpu) {
      *slot += n;
    }
  }
}

/// Where a source's callbacks put records (the libbpf callback context).
pub(crate) struct Collector {
  sink: Arc<Sink>,
  batch: Batch,
  per_cpu: bool,
  records_this_pass: usize,
  /// Buffer bytes consumed this pass (records and their headers).
  bytes_this_pass: usize,
}

/// What one pass over a source found.
pub(crate) struct Pass {
  pub records: usize,
  pub bytes: usize,
}

/// Kernel-side bytes a record takes beyond its data (ring or perf header,
/// alignment), for the fill-rate estimate.
const RECORD_OVERHEAD: usize = 16;

impl Collector {
  pub fn new(sink: Arc<Sink>, per_cpu: bool) -> Box<Self> {
    Box::new(Collector { sink, batch: Batch::default(), per_cpu, records_this_pass: 0, bytes_this_pass: 0 })
  }

  pub fn push(&mut self, cpu: u32, data: &[u8]) {
    self.batch.data.extend_from_slice(data);
    self.batch.ends.push(self.batch.data.len() as u32);
    if self.per_cpu {
      self.batch.cpus.push(cpu);
    }
    self.records_this_pass += 1;
    self.bytes_this_pass += data.len() + RECORD_OVERHEAD;
    if self.batch.data.len() >= BATCH_BYTES {
      self.flush();
    }
  }

  pub fn kernel_lost(&mut self, cpu: u32, n: u64) {
    self.sink.count_lost(cpu as usize, n);
  }

  fn flush(&mut self) {
    if self.batch.ends.is_empty() {
      return;
    }
    let batch = std::mem::take(&mut self.batch);
    let bytes = batch.data.len();
    let room = self.sink.queued_bytes.load(Ordering::Acquire) + bytes <= QUEUE_BYTES;
    let sent = if room {
      self.sink.queued_bytes.fetch_add(bytes, Ordering::AcqRel);
      self.sink.queue_tx.try_send(batch).map_err(|e| {
        self.sink.queued_bytes.fetch_sub(bytes, Ordering::AcqRel);
        e
      })
    } else {
      Err(TrySendError::Full(batch))
    };
    match sent {
      Ok(()) => {}
      Err(TrySendError::Full(batch)) | Err(TrySendError::Disconnected(batch)) => {
        if batch.cpus.is_empty() {
          self.sink.count_lost(0, batch.ends.len() as u64);
        } else {
          for cpu in &batch.cpus {
            self.sink.count_lost(*cpu as usize, 1);
          }
        }
      }
    }
    self.sink.ring();
  }

  /// Sends what this pass collected.
  fn end_pass(&mut self) -> Pass {
    self.flush();
    if self.sink.lost.load(Ordering::Relaxed) > 0
      && self.sink.unreported_lost.lock().unwrap().iter().any(|n| *n > 0)
    {
      self.sink.ring();
    }
    Pass { records: std::mem::take(&mut self.records_this_pass), bytes: std::mem::take(&mut self.bytes_this_pass) }
  }
}

/// A libbpf consumer the poller drives.
pub(crate) trait Source: Send {
  /// The epoll fd that becomes readable when records are there.
  fn epoll_fd(&self) -> i32;
  /// Consumes every available record into the collector.
  fn consume(&mut self);
  /// Bytes the kernel buffer holds (per CPU for perf buffers).
  fn capacity(&self) -> usize;
  fn collector(&mut self) -> &mut Collector;
}

enum Command {
  Add(u32, Box<dyn Source>, Duration),
  Remove(u32, Sender<()>),
  Stop,
}

/// The polling thread of one object.
pub(crate) struct Poller {
  commands: Sender<Command>,
  wake: Arc<OwnedFd>,
  thread: Option<JoinHandle<()>>,
}

impl Poller {
  pub fn start() -> std::io::Result<Self> {
    // SAFETY: plain syscalls; the fds are owned right away.
    let epoll = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if epoll < 0 {
      return Err(std::io::Error::last_os_error());
    }
    let epoll = unsafe { OwnedFd::from_raw_fd(epoll) };
    let wake = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if wake < 0 {
      return Err(std::io::Error::last_os_error());
    }
    let wake = Arc::new(unsafe { OwnedFd::from_raw_fd(wake) });
    epoll_add(&epoll, wake.as_raw_fd(), u64::MAX)?;
    let (commands, rx) = crossbeam_channel::unbounded();
    let thread_wake = wake.clone();
    let thread = std::thread::Builder::new()
      .name("node-libbpf-poller".into())
      .spawn(move || run(epoll, thread_wake, rx))?;
    Ok(Poller { commands, wake, thread: Some(thread) })
  }

  fn send(&self, command: Command) {
    let _ = self.commands.send(command);
    let one = 1u64.to_ne_bytes();
    // SAFETY: writing 8 bytes to our eventfd.
    unsafe { libc::write(self.wake.as_raw_fd(), one.as_ptr().cast(), 8) };
  }

  pub fn add(&self, id: u32, source: Box<dyn Source>, interval: Duration) {
    self.send(Command::Add(id, source, interval));
  }

  /// Stops polling a source and frees it; returns once it is freed.
  pub fn remove(&self, id: u32) {
    let (ack, done) = crossbeam_channel::bounded(1);
    self.send(Command::Remove(id, ack));
    let _ = done.recv();
  }

  /// Frees every source and ends the thread.
  pub fn stop(mut self) {
    self.send(Command::Stop);
    if let Some(thread) = self.thread.take() {
      let _ = thread.join();
    }
  }
}

fn epoll_add(epoll: &OwnedFd, fd: i32, data: u64) -> std::io::Result<()> {
  let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: data };
  // SAFETY: valid fds and event.
  if unsafe { libc::epoll_ctl(epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) } < 0 {
    return Err(std::io::Error::last_os_error());
  }
  Ok(())
}

struct Entry {
  id: u32,
  source: Box<dyn Source>,
  interval: Duration,
}

fn run(epoll: OwnedFd, wake: Arc<OwnedFd>, commands: Receiver<Command>) {
  let mut entries: Vec<Entry> = Vec::new();
  let mut events = [libc::epoll_event { events: 0, u64: 0 }; 16];
  // Some(d): the last pass found records; sleep d instead of waiting in epoll
  let mut nap: Option<Duration> = None;
  let mut last_pass = Instant::now();
  loop {
    let interval = entries.iter().map(|e| e.interval).min();
    if let Some(nap) = nap {
      std::thread::sleep(nap);
    } else {
      let timeout = interval.map(|d| d.as_millis().max(1) as i32).unwrap_or(-1);
      // SAFETY: valid epoll fd and event array.
      unsafe { libc::epoll_wait(epoll.as_raw_fd(), events.as_mut_ptr(), events.len() as i32, timeout) };
      // what is there now came in since the wakeup: rate it from here
      last_pass = Instant::now();
    }
    let mut counter = [0u8; 8];
    // SAFETY: reading 8 bytes from our non-blocking eventfd.
    unsafe { libc::read(wake.as_raw_fd(), counter.as_mut_ptr().cast(), 8) };
    while let Ok(command) = commands.try_recv() {
      match command {
        Command::Add(id, source, interval) => {
          let _ = epoll_add(&epoll, source.epoll_fd(), u64::from(id));
          entries.push(Entry { id, source, interval });
        }
        Command::Remove(id, ack) => {
          if let Some(i) = entries.iter().position(|e| e.id == id) {
            let entry = entries.swap_remove(i);
            // SAFETY: removing a registered fd.
            unsafe {
              libc::epoll_ctl(epoll.as_raw_fd(), libc::EPOLL_CTL_DEL, entry.source.epoll_fd(), std::ptr::null_mut())
            };
          }
          let _ = ack.send(());
        }
        Command::Stop => return,
      }
    }
    let elapsed = last_pass.elapsed().max(Duration::from_micros(1));
    last_pass = Instant::now();
    nap = None;
    for entry in &mut entries {
      entry.source.consume();
      let pass = entry.source.collector().end_pass();
      if pass.records > 0 {
        // time for the buffer to fill a quarter at the rate just seen
        let quarter = entry.source.capacity() as f64 / 4.0;
        let fill = Duration::from_secs_f64(quarter * elapsed.as_secs_f64() / pass.bytes as f64);
        let sleep = fill.min(entry.interval);
        nap = Some(nap.map_or(sleep, |n: Duration| n.min(sleep)));
      }
    }
  }
}
