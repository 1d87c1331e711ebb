//! The poller: one thread per process that consumes every open ring and perf
//! buffer, of every object, and hands batches of records to JavaScript.
//!
//! Ring buffers are read in place by JavaScript: when the poller finds
//! records in one it rings the doorbell, and the JS thread copies them
//! straight from the mapped ring into the dispatcher's buffers
//! (`Sink::fill`, src/ring.rs). Only when JavaScript falls behind (the ring
//! more than half full) does the poller move them out, as it does for perf
//! buffers, whose records are always copied out by the poller (libbpf's
//! perf reader).
//!
//! Records copied out go into `Batch`es (one flat byte vector and the end
//! offset of each record) and through a bounded crossbeam channel per buffer
//! (its `Sink`). When the channel is full the batch is dropped and counted:
//! memory stays bounded and the traced process is never slowed by a slow
//! JavaScript callback. One threadsafe call (the doorbell) tells JavaScript
//! to drain; it is rung only when no call is pending, so there is one
//! crossing per batch or fewer, never one per record. JavaScript pulls the
//! records into buffers of its own (`Sink::fill`): the queued batches first,
//! then the ring. The emptied batches go back to the poller (`spare`): the
//! same memory is written again and again. (A new vector per batch, handed
//! to JavaScript as an external Buffer, cost a page fault per 4 KiB of
//! records on each side, about half of the consumer's CPU: the bench's 2 M
//! records made 13,000 faults in the poller thread alone.)
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
  sync::{
    atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering},
    Arc, Mutex,
  },
  time::{Duration, Instant},
};

use crossbeam_channel::{Receiver, Sender, TrySendError};

use crate::{
  error::{BpfError, BpfResult, Code},
  ring::Ring,
  tsfn::Doorbell,
};

/// Records of one consume pass, flattened.
#[derive(Default)]
pub(crate) struct Batch {
  pub data: Vec<u8>,
  /// End offset of each record in `data`.
  pub ends: Vec<u32>,
  /// The CPU of each record (perf buffers only).
  pub cpus: Vec<u32>,
}

impl Batch {
  fn clear(&mut self) {
    self.data.clear();
    self.ends.clear();
    self.cpus.clear();
  }
}

/// A batch is sent when it reaches this size, even mid-pass.
const BATCH_BYTES: usize = 1 << 20;

/// Emptied batches kept for the poller to fill again, per buffer: with one
/// being filled and one being read, a steady stream needs two or three.
const SPARE_BATCHES: usize = 4;

/// What `Sink::fill` copied into JavaScript's buffers.
pub(crate) enum Filled {
  /// This many records (0: none waiting).
  Records(u32),
  /// The next record is larger than JavaScript's data buffer: it needs at
  /// least this many bytes.
  NeedBytes(u32),
}

/// At most this many record bytes wait for JavaScript, whatever the number
/// of batches: `queueSize` batches of up to 1 MiB let a slow callback hold
/// 64 MiB (bench: RSS +88 MB with a 20 µs callback); this keeps it to 16.
pub(crate) const QUEUE_BYTES: usize = 16 << 20;

/// What the poller thread and the JavaScript side of one buffer share.
pub(crate) struct Sink {
  /// The buffer's id in the poller.
  pub id: u32,
  pub queue_tx: Sender<Batch>,
  pub queue_rx: Receiver<Batch>,
  /// Record bytes in the queue (bounded by QUEUE_BYTES).
  pub queued_bytes: AtomicUsize,
  /// A doorbell call is queued and has not started draining yet.
  pub scheduled: AtomicBool,
  /// JavaScript has records left from the last batch (its dispatcher
  /// yielded to the event loop): no doorbell until it resumes.
  pub paused: AtomicBool,
  closed: AtomicBool,
  /// Records lost: dropped here (queue full) or by the kernel (perf).
  pub lost: AtomicU64,
  /// The part of `lost` dropped here, because JavaScript fell behind.
  pub dropped: AtomicU64,
  /// Losses not yet reported to the `lost` callback, per CPU (index 0 for
  /// ring buffers).
  pub unreported_lost: Mutex<Vec<u64>>,
  pub doorbell: Doorbell,
  /// Set by `close()`: hears when the poller has freed the consumer.
  freed: Mutex<Option<Receiver<()>>>,
  /// Emptied batches, for the poller to fill again.
  spare: Mutex<Vec<Batch>>,
  /// A batch taken off the queue whose records from this index on did not
  /// fit in JavaScript's buffers yet.
  carry: Mutex<Option<(Batch, usize)>>,
  /// A ring buffer's ring, which `fill` reads in place once the queue is
  /// empty (None: a perf buffer, or closed).
  direct: Mutex<Option<Arc<Ring>>>,
  /// `fill` reads the ring up to this position: where the producer was
  /// when the doorbell's call began. Without it, the dispatcher chased the
  /// producer, each fill taking the few records written since the last
  /// (bench: 4x the JS thread's CPU per record).
  read_until: AtomicU64,
}

impl Sink {
  pub fn new(queue_batches: usize, cpus: usize) -> Self {
    static NEXT_ID: AtomicU32 = AtomicU32::new(1);
    let (queue_tx, queue_rx) = crossbeam_channel::bounded(queue_batches);
    Sink {
      id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
      queue_tx,
      queue_rx,
      queued_bytes: AtomicUsize::new(0),
      scheduled: AtomicBool::new(false),
      paused: AtomicBool::new(false),
      closed: AtomicBool::new(false),
      lost: AtomicU64::new(0),
      dropped: AtomicU64::new(0),
      unreported_lost: Mutex::new(vec![0; cpus.max(1)]),
      doorbell: Doorbell::default(),
      freed: Mutex::new(None),
      spare: Mutex::new(Vec::new()),
      carry: Mutex::new(None),
      direct: Mutex::new(None),
      read_until: AtomicU64::new(0),
    }
  }

  /// Lets `fill` read `ring` in place.
  pub fn read_in_place(&self, ring: Arc<Ring>) {
    *lock(&self.direct) = Some(ring);
  }

  /// On the JS thread, as a doorbell call begins: its fills read the ring
  /// up to where the producer is now (later records wait for the next call).
  pub fn begin_delivery(&self) {
    self.scheduled.store(false, Ordering::Release);
    if let Some(ring) = lock(&self.direct).as_ref() {
      self.read_until.store(ring.producer_pos(), Ordering::Release);
    }
  }

  pub fn is_closed(&self) -> bool {
    self.closed.load(Ordering::Acquire)
  }

  /// Whether the poller has freed the consumer (after `close()`).
  pub fn is_freed(&self) -> bool {
    self.freed.lock().unwrap_or_else(|e| e.into_inner()).as_ref().is_none_or(|rx| !rx.is_empty())
  }

  /// The one close path of a buffer (its own `close()`, its object's, or
  /// the object's garbage collection): nothing more is handed to JavaScript
  /// from here on, the threadsafe function is released (the event loop may
  /// exit) and the poller frees the consumer on its next turn, without
  /// making the caller wait for it (`freed()` says when it has).
  pub fn close(&self) {
    if self.closed.swap(true, Ordering::AcqRel) {
      return;
    }
    self.doorbell.release();
    // what waited for JavaScript is dropped now, not when the last handle
    // of the buffer is garbage-collected
    while let Ok(batch) = self.queue_rx.try_recv() {
      self.queued_bytes.fetch_sub(batch.data.len(), Ordering::AcqRel);
    }
    lock(&self.carry).take();
    lock(&self.spare).clear();
    lock(&self.direct).take();
    if let Some(poller) = POLLER.get() {
      let (freed, done) = crossbeam_channel::bounded(1);
      *self.freed.lock().unwrap_or_else(|e| e.into_inner()) = Some(done);
      poller.send(Command::Remove(self.id, freed));
    }
  }

  /// After `close()`: a receiver that hears when the poller has freed the
  /// consumer (None: asked already, or there was no consumer).
  pub fn freed(&self) -> Option<Receiver<()>> {
    self.freed.lock().unwrap_or_else(|e| e.into_inner()).take()
  }

  /// An emptied batch to fill, or a new one.
  fn spare_batch(&self) -> Batch {
    lock(&self.spare).pop().unwrap_or_default()
  }

  /// Keeps an emptied batch for the poller (up to SPARE_BATCHES).
  fn recycle(&self, mut batch: Batch) {
    batch.clear();
    let mut spare = lock(&self.spare);
    if spare.len() < SPARE_BATCHES && !self.is_closed() {
      spare.push(batch);
    }
  }

  /// On the JS thread: copies the waiting records, in order, into
  /// JavaScript's buffers (`data`, the end offset of each record in `ends`,
  /// their CPUs in `cpus` for perf buffers), as many as fit: the queued
  /// batches first, then (ring buffers) the ring. Nothing while closed or
  /// paused.
  pub fn fill(&self, data: &mut [u8], ends: &mut [u32], mut cpus: Option<&mut [u32]>) -> Filled {
    let mut bytes = 0usize;
    let mut n = 0usize;
    if self.is_closed() || self.paused.load(Ordering::Acquire) {
      return Filled::Records(0);
    }
    // the ring's lock, held throughout: the poller queues records from the
    // ring only under it, so none older than the ring's can be queued
    // between our look at the queue and our read of the ring
    let direct = lock(&self.direct).clone();
    let ring_lock = direct.as_ref().map(|ring| ring.lock());
    let mut queue_empty = false;
    let mut carry = lock(&self.carry);
    while n < ends.len() {
      let (batch, from) = match carry.take() {
        Some(c) => c,
        None => match self.queue_rx.try_recv() {
          Ok(batch) => {
            self.queued_bytes.fetch_sub(batch.data.len(), Ordering::AcqRel);
            (batch, 0)
          }
          Err(_) => {
            queue_empty = true;
            break;
          }
        },
      };
      let base = if from == 0 { 0 } else { batch.ends[from - 1] as usize };
      // the records from `from` that fit, in bytes and in count
      let room = data.len() - bytes;
      let most = (ends.len() - n).min(batch.ends.len() - from);
      let fit = batch.ends[from..from + most].partition_point(|&end| end as usize - base <= room);
      if fit == 0 {
        let need = batch.ends[from] as usize - base;
        *carry = Some((batch, from));
        if n == 0 {
          return Filled::NeedBytes(need as u32);
        }
        break;
      }
      let to = from + fit;
      let end = batch.ends[to - 1] as usize;
      data[bytes..bytes + end - base].copy_from_slice(&batch.data[base..end]);
      for (slot, &e) in ends[n..n + fit].iter_mut().zip(&batch.ends[from..to]) {
        *slot = (bytes + e as usize - base) as u32;
      }
      if let Some(cpus) = cpus.as_deref_mut() {
        if let (Some(out), Some(src)) = (cpus.get_mut(n..n + fit), batch.cpus.get(from..to)) {
          out.copy_from_slice(src);
        }
      }
      bytes += end - base;
      n += fit;
      if to < batch.ends.len() {
        *carry = Some((batch, to));
        break;
      }
      self.recycle(batch);
    }
    if let (Some(ring), Some(ring_lock), true) = (&direct, &ring_lock, queue_empty) {
      let mut need = 0;
      ring.read(ring_lock, self.read_until.load(Ordering::Acquire), |record| {
        if n == ends.len() || record.len() > data.len() - bytes {
          if n == 0 {
            need = record.len();
          }
          return false;
        }
        data[bytes..bytes + record.len()].copy_from_slice(record);
        bytes += record.len();
        ends[n] = bytes as u32;
        n += 1;
        true
      });
      if n == 0 && need > 0 {
        return Filled::NeedBytes(need as u32);
      }
    }
    Filled::Records(n as u32)
  }

  /// Whether records wait for JavaScript.
  pub fn has_records(&self) -> bool {
    !self.queue_rx.is_empty() || lock(&self.carry).is_some() || lock(&self.direct).as_ref().is_some_and(|ring| ring.pending() > 0)
  }

  /// Asks JavaScript to drain the queue, unless a call is pending or the
  /// dispatcher is paused.
  pub fn ring(&self) {
    if !self.paused.load(Ordering::Acquire) && !self.scheduled.swap(true, Ordering::AcqRel) {
      self.doorbell.notify();
    }
  }

  fn count_lost(&self, cpu: usize, n: u64) {
    self.lost.fetch_add(n, Ordering::Relaxed);
    let mut unreported = self.unreported_lost.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(slot) = unreported.get_mut(cpu) {
      *slot += n;
    }
  }

  /// The losses not yet reported, as `[cpu, count, ...]` pairs.
  pub fn take_unreported_lost(&self) -> Option<Vec<f64>> {
    let mut unreported = self.unreported_lost.lock().unwrap_or_else(|e| e.into_inner());
    let pairs: Vec<f64> = unreported
      .iter_mut()
      .enumerate()
      .filter(|(_, n)| **n > 0)
      .flat_map(|(cpu, n)| [cpu as f64, std::mem::take(n) as f64])
      .collect();
    (!pairs.is_empty()).then_some(pairs)
  }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
  m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where a source's callbacks put records.
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
  /// Records were there (copied out, or left for JavaScript to read).
  pub found: bool,
  /// Bytes the kernel wrote since the last pass, for the fill rate.
  pub bytes: usize,
}

/// Kernel-side bytes a record takes beyond its data (ring or perf header,
/// alignment), for the fill-rate estimate.
const RECORD_OVERHEAD: usize = 16;

impl Collector {
  pub fn new(sink: Arc<Sink>, per_cpu: bool) -> Self {
    Collector { sink, batch: Batch::default(), per_cpu, records_this_pass: 0, bytes_this_pass: 0 }
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
    let batch = std::mem::replace(&mut self.batch, self.sink.spare_batch());
    if self.sink.is_closed() {
      return;
    }
    let bytes = batch.data.len();
    let room = self.sink.queued_bytes.load(Ordering::Acquire) + bytes <= QUEUE_BYTES;
    let sent = if room {
      self.sink.queued_bytes.fetch_add(bytes, Ordering::AcqRel);
      self.sink.queue_tx.try_send(batch).inspect_err(|_| {
        self.sink.queued_bytes.fetch_sub(bytes, Ordering::AcqRel);
      })
    } else {
      Err(TrySendError::Full(batch))
    };
    if let Err(TrySendError::Full(batch) | TrySendError::Disconnected(batch)) = sent {
      self.sink.dropped.fetch_add(batch.ends.len() as u64, Ordering::Relaxed);
      if batch.cpus.is_empty() {
        self.sink.count_lost(0, batch.ends.len() as u64);
      } else {
        for cpu in &batch.cpus {
          self.sink.count_lost(*cpu as usize, 1);
        }
      }
      self.sink.recycle(batch);
    }
    self.sink.ring();
  }

  /// Sends what this pass collected. With `hold`, while JavaScript has not
  /// taken the last batch, this pass's records stay for the next pass's
  /// batch instead (up to BATCH_BYTES): the queue is bounded in batches as
  /// well as bytes, and a poller passing every millisecond over a slow JS
  /// thread filled its 64 batches with a few MB and dropped records with
  /// memory to spare (a perf buffer under qemu: 15% of 100,000 records).
  /// Not for a ring buffer's records, which must be queued before
  /// JavaScript reads the ring again.
  pub fn end_pass(&mut self, hold: bool) -> Pass {
    if hold && !self.sink.queue_rx.is_empty() {
      self.sink.ring();
    } else {
      self.flush();
    }
    if self.sink.lost.load(Ordering::Relaxed) > 0
      && self.sink.unreported_lost.lock().unwrap_or_else(|e| e.into_inner()).iter().any(|n| *n > 0)
    {
      self.sink.ring();
    }
    Pass { found: std::mem::take(&mut self.records_this_pass) > 0, bytes: std::mem::take(&mut self.bytes_this_pass) }
  }

  /// The sink it collects for.
  pub fn sink(&self) -> &Sink {
    &self.sink
  }
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
      crate::threads::register("node-libbpf-poller");
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
      let timeout = entries.iter().map(|e| e.interval).min().map_or(-1, |d| i32::try_from(d.as_millis().max(1)).unwrap_or(i32::MAX));
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

  /// The unit tests link an executable without Node.js. A Sink's doorbell
  /// is never rung or released here, but its drop code (reachable from an
  /// unwind in `Sink::new`) names this N-API function.
  #[no_mangle]
  extern "C" fn napi_release_threadsafe_function(_: *mut std::ffi::c_void, _: i32) -> i32 {
    unreachable!("N-API called in a unit test")
  }

  /// A sink holding `records` queued in batches of `per_batch` records, as
  /// the poller queues them; record i is `len(i)` bytes of the value i, from
  /// CPU i % 2. (Not through a Collector, and never dropped: a doorbell
  /// rung or released needs Node.js's N-API, which a test binary lacks.)
  fn sink_with(records: u32, per_batch: u32, len: impl Fn(u32) -> usize) -> &'static Sink {
    let sink = Box::leak(Box::new(Sink::new(1024, 2)));
    let mut batch = Batch::default();
    for i in 0..records {
      batch.data.extend(std::iter::repeat_n(i as u8, len(i)));
      batch.ends.push(batch.data.len() as u32);
      batch.cpus.push(i % 2);
      if (i + 1) % per_batch == 0 || i + 1 == records {
        sink.queued_bytes.fetch_add(batch.data.len(), Ordering::AcqRel);
        sink.queue_tx.try_send(std::mem::take(&mut batch)).unwrap();
      }
    }
    sink
  }

  /// Fills until nothing is left, with buffers of `data_len` bytes and
  /// `ends_len` records: the records as JavaScript would cut them.
  fn drain(sink: &Sink, data_len: usize, ends_len: usize) -> (Vec<(u32, Vec<u8>)>, usize) {
    let (mut data, mut ends, mut cpus) = (vec![0u8; data_len], vec![0u32; ends_len], vec![0u32; ends_len]);
    let (mut out, mut fills) = (Vec::new(), 0);
    loop {
      match sink.fill(&mut data, &mut ends, Some(&mut cpus)) {
        Filled::Records(0) => return (out, fills),
        Filled::Records(n) => {
          fills += 1;
          let mut start = 0;
          for i in 0..n as usize {
            out.push((cpus[i], data[start..ends[i] as usize].to_vec()));
            start = ends[i] as usize;
          }
        }
        Filled::NeedBytes(b) => data = vec![0u8; b as usize],
      }
    }
  }

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

  #[test]
  fn fill_copies_every_record_in_order_across_batches_and_partial_fills() {
    let len = |i: u32| 1 + (i as usize * 7) % 40;
    let sink = sink_with(1000, 37, len);
    // 100 bytes and 16 records at a time: batches are cut and carried over
    let (out, fills) = drain(&sink, 100, 16);
    assert_eq!(out.len(), 1000);
    for (i, (cpu, bytes)) in out.iter().enumerate() {
      assert_eq!(*cpu, i as u32 % 2, "record {i}'s cpu");
      assert_eq!(bytes, &vec![i as u8; len(i as u32)], "record {i}");
    }
    assert!(fills > 1000 / 16, "{fills} fills");
    assert_eq!(sink.queued_bytes.load(Ordering::Acquire), 0);
    assert!(!sink.has_records());
  }

  #[test]
  fn a_record_larger_than_the_data_buffer_asks_for_the_bytes_it_needs() {
    let sink = sink_with(3, 10, |i| if i == 1 { 5000 } else { 10 });
    let (mut data, mut ends) = (vec![0u8; 64], vec![0u32; 8]);
    assert!(matches!(sink.fill(&mut data, &mut ends, None), Filled::Records(1)));
    assert!(matches!(sink.fill(&mut data, &mut ends, None), Filled::NeedBytes(5000)));
    let mut big = vec![0u8; 6000];
    assert!(matches!(sink.fill(&mut big, &mut ends, None), Filled::Records(2)));
    assert_eq!(&ends[..2], &[5000, 5010]);
  }

  #[test]
  fn a_ring_buffer_is_read_in_place_after_the_queued_batches() {
    // two records the poller queued (JavaScript was behind), then three
    // left in the ring, the last larger than JavaScript's buffer
    let sink = sink_with(2, 10, |_| 8);
    let fake = Box::leak(Box::new(crate::ring::tests::FakeRing::new(4096)));
    fake.write(&[2; 8], 0);
    fake.write(&[3; 8], 0);
    fake.write(&[4; 100], 0);
    sink.read_in_place(fake.ring.clone());
    assert!(sink.has_records());
    sink.begin_delivery();
    let (mut data, mut ends) = (vec![0u8; 64], vec![0u32; 8]);
    assert!(matches!(sink.fill(&mut data, &mut ends, None), Filled::Records(4)));
    assert_eq!(&ends[..4], &[8, 16, 24, 32]);
    assert_eq!(&data[..32], &[[0u8; 8], [1; 8], [2; 8], [3; 8]].concat()[..], "queued first, then the ring, in order");
    assert!(matches!(sink.fill(&mut data, &mut ends, None), Filled::NeedBytes(100)));
    let mut big = vec![0u8; 128];
    assert!(matches!(sink.fill(&mut big, &mut ends, None), Filled::Records(1)));
    assert_eq!(&big[..100], &[4u8; 100][..]);
    assert!(!sink.has_records());
    assert!(matches!(sink.fill(&mut big, &mut ends, None), Filled::Records(0)));
    // a record written after the doorbell's call began waits for the next call
    fake.write(&[5; 8], 0);
    assert!(sink.has_records());
    assert!(matches!(sink.fill(&mut big, &mut ends, None), Filled::Records(0)));
    sink.begin_delivery();
    assert!(matches!(sink.fill(&mut big, &mut ends, None), Filled::Records(1)));
  }

  #[test]
  fn emptied_batches_go_back_to_the_poller_and_nothing_is_filled_closed_or_paused() {
    let sink = sink_with(100, 10, |_| 8);
    let (out, _) = drain(&sink, 1 << 16, 1 << 10);
    assert_eq!(out.len(), 100);
    assert_eq!(lock(&sink.spare).len(), SPARE_BATCHES);
    assert!(lock(&sink.spare).iter().all(|b| b.data.is_empty() && b.data.capacity() >= 80));
    assert_eq!(sink.spare_batch().data.capacity(), lock(&sink.spare).last().unwrap().data.capacity());
    let sink = sink_with(10, 10, |_| 8);
    sink.closed.store(true, Ordering::Release);
    let (mut data, mut ends) = (vec![0u8; 64], vec![0u32; 8]);
    assert!(matches!(sink.fill(&mut data, &mut ends, None), Filled::Records(0)));
    sink.paused.store(true, Ordering::Release);
    sink.closed.store(false, Ordering::Release);
    assert!(matches!(sink.fill(&mut data, &mut ends, None), Filled::Records(0)), "paused: nothing");
  }
}
