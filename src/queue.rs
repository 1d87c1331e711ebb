//! The delivery queue of one ring or perf buffer (its `Sink`): what the
//! poller thread hands to JavaScript, and how JavaScript takes it.
//!
//! Ring buffers are read in place by JavaScript: when the poller finds
//! records in one it rings the doorbell, and the JS thread copies them
//! straight from the mapped ring into the dispatcher's buffers
//! (`Sink::fill`, src/mmap/ring.rs). Only when JavaScript falls behind (the ring
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

use std::sync::{
  atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering},
  Arc, Mutex,
};

use crossbeam_channel::{Receiver, Sender, TrySendError};

use crate::{error::BpfResult, mmap::ring::Ring};

/// How a sink tells JavaScript that records wait: the N-API doorbell
/// (src/tsfn.rs) in the addon, a counter in the unit tests.
pub(crate) trait Notify: Send + Sync {
  /// Queues one drain call on the JS thread (never blocks; ignored once
  /// released).
  fn notify(&self);
  /// No more calls: JavaScript may let go (the event loop may exit).
  fn release(&self);
}

/// Whoever consumes the kernel buffer into a sink (the poller thread): told
/// when the sink closes, it frees the consumer, then says so on `freed`.
pub(crate) trait Consumer: Sync {
  fn remove(&self, id: u32, freed: Sender<()>);
}

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
  id: u32,
  queue_tx: Sender<Batch>,
  queue_rx: Receiver<Batch>,
  /// Record bytes in the queue (bounded by QUEUE_BYTES).
  queued_bytes: AtomicUsize,
  /// A doorbell call is queued and has not started draining yet.
  scheduled: AtomicBool,
  /// JavaScript has records left from the last batch (its dispatcher
  /// yielded to the event loop): no doorbell until it resumes.
  paused: AtomicBool,
  closed: AtomicBool,
  /// Records lost: dropped here (queue full) or by the kernel (perf).
  lost: AtomicU64,
  /// The part of `lost` dropped here, because JavaScript fell behind.
  dropped: AtomicU64,
  /// Losses not yet reported to the `lost` callback, per CPU (index 0 for
  /// ring buffers).
  unreported_lost: Mutex<Vec<u64>>,
  /// Tells JavaScript that records wait (the doorbell).
  notify: Arc<dyn Notify>,
  /// Frees the consumer at close (None: nobody consumes, as in the unit tests).
  consumer: Option<&'static dyn Consumer>,
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
  pub fn new(queue_batches: usize, cpus: usize, notify: Arc<dyn Notify>, consumer: Option<&'static dyn Consumer>) -> Self {
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
      notify,
      consumer,
      freed: Mutex::new(None),
      spare: Mutex::new(Vec::new()),
      carry: Mutex::new(None),
      direct: Mutex::new(None),
      read_until: AtomicU64::new(0),
    }
  }

  /// The buffer's id in the poller.
  pub fn id(&self) -> u32 {
    self.id
  }

  /// Records lost so far: dropped here (queue full) or by the kernel (perf).
  pub fn lost(&self) -> u64 {
    self.lost.load(Ordering::Relaxed)
  }

  /// The part of `lost` dropped here, because JavaScript fell behind.
  pub fn dropped(&self) -> u64 {
    self.dropped.load(Ordering::Relaxed)
  }

  /// The dispatcher yielded to the event loop with records left: no
  /// doorbell until `resume()`.
  pub fn pause(&self) {
    self.paused.store(true, Ordering::Release);
  }

  /// The dispatcher has caught up: rings if records wait.
  pub fn resume(&self) {
    self.paused.store(false, Ordering::Release);
    if self.has_records() {
      self.ring();
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
    self.notify.release();
    // what waited for JavaScript is dropped now, not when the last handle
    // of the buffer is garbage-collected
    while let Ok(batch) = self.queue_rx.try_recv() {
      self.queued_bytes.fetch_sub(batch.data.len(), Ordering::AcqRel);
    }
    lock(&self.carry).take();
    lock(&self.spare).clear();
    lock(&self.direct).take();
    if let Some(consumer) = self.consumer {
      let (freed, done) = crossbeam_channel::bounded(1);
      *self.freed.lock().unwrap_or_else(|e| e.into_inner()) = Some(done);
      consumer.remove(self.id, freed);
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
  /// paused. An error only for a corrupt ring, once the records before the
  /// corrupt one are taken.
  pub fn fill(&self, data: &mut [u8], ends: &mut [u32], mut cpus: Option<&mut [u32]>) -> BpfResult<Filled> {
    let mut bytes = 0usize;
    let mut n = 0usize;
    if self.is_closed() || self.paused.load(Ordering::Acquire) {
      return Ok(Filled::Records(0));
    }
    // the ring's lock, held throughout: the poller queues records from the
    // ring only under it, so none older than the ring's can be queued
    // between our look at the queue and our read of the ring
    let direct = lock(&self.direct).clone();
    let lease = direct.as_deref().map(Ring::lease);
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
          return Ok(Filled::NeedBytes(need as u32));
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
    if let (Some(lease), true) = (&lease, queue_empty) {
      let mut need = 0;
      let read = lease.read(self.read_until.load(Ordering::Acquire), |record| {
        if n == ends.len() || record.len() > data.len() - bytes {
          if n == 0 {
            need = record.len();
          }
          return false;
        }
        copy_record(&mut data[bytes..bytes + record.len()], record);
        bytes += record.len();
        ends[n] = bytes as u32;
        n += 1;
        true
      });
      // the records taken before a corrupt one are delivered; the next
      // fill, with none before it, reports it
      if let (Err(e), 0) = (read, n) {
        return Err(e);
      }
      if n == 0 && need > 0 {
        return Ok(Filled::NeedBytes(need as u32));
      }
    }
    Ok(Filled::Records(n as u32))
  }

  /// Whether records wait for JavaScript.
  pub fn has_records(&self) -> bool {
    !self.queue_rx.is_empty() || lock(&self.carry).is_some() || lock(&self.direct).as_ref().is_some_and(|ring| ring.pending() > 0)
  }

  /// Asks JavaScript to drain the queue, unless a call is pending or the
  /// dispatcher is paused.
  pub fn ring(&self) {
    if !self.paused.load(Ordering::Acquire) && !self.scheduled.swap(true, Ordering::AcqRel) {
      self.notify.notify();
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

/// Copies a record out of the ring (`dst` and `src` of one length). One of
/// up to 64 bytes is copied with two to four unaligned 16-byte moves that
/// may overlap, not by a call into libc's memmove for each (the bench's
/// 24-byte records: the call was a quarter of the JS thread's time in the
/// ring's read).
#[inline(always)]
fn copy_record(dst: &mut [u8], src: &[u8]) {
  let n = src.len();
  if !(16..=64).contains(&n) || dst.len() != n {
    dst.copy_from_slice(src);
    return;
  }
  let (s, d) = (src.as_ptr(), dst.as_mut_ptr());
  // SAFETY: every move is of 16 bytes at an offset from 0 to n - 16 of
  // `src` and `dst`, both n bytes long (16 <= n <= 64). They cover all n
  // bytes: 0..16 and n-16..n, and for n > 32 also 16..32 and n-32..n-16.
  unsafe {
    let mv = |at: usize| std::ptr::write_unaligned(d.add(at).cast::<u128>(), std::ptr::read_unaligned(s.add(at).cast::<u128>()));
    mv(0);
    mv(n - 16);
    if n > 32 {
      mv(16);
      mv(n - 32);
    }
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

/// What one pass of the poller collected.
pub(crate) struct Collected {
  /// Records were there.
  pub found: bool,
  /// Buffer bytes consumed (records and their headers), for the fill rate.
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
  pub fn end_pass(&mut self, hold: bool) -> Collected {
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
    Collected { found: std::mem::take(&mut self.records_this_pass) > 0, bytes: std::mem::take(&mut self.bytes_this_pass) }
  }

  /// The sink it collects for.
  pub fn sink(&self) -> &Sink {
    &self.sink
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  /// A doorbell that counts its rings and releases.
  #[derive(Default)]
  struct Bell {
    rung: AtomicUsize,
    released: AtomicUsize,
  }

  impl Notify for Bell {
    fn notify(&self) {
      self.rung.fetch_add(1, Ordering::Relaxed);
    }
    fn release(&self) {
      self.released.fetch_add(1, Ordering::Relaxed);
    }
  }

  /// A sink holding `records` queued in batches of `per_batch` records, as
  /// the poller queues them; record i is `len(i)` bytes of the value i, from
  /// CPU i % 2. (Not through a Collector.)
  fn sink_with(records: u32, per_batch: u32, len: impl Fn(u32) -> usize) -> Sink {
    let sink = Sink::new(1024, 2, Arc::new(Bell::default()), None);
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
      match sink.fill(&mut data, &mut ends, Some(&mut cpus)).unwrap() {
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
  fn records_of_every_length_are_copied_exactly() {
    for n in 0..=80usize {
      let src: Vec<u8> = (0..n).map(|i| i as u8 ^ 0xa5).collect();
      let mut dst = vec![0u8; n + 2];
      copy_record(&mut dst[1..=n], &src);
      assert_eq!(&dst[1..=n], &src[..], "{n} bytes");
      assert_eq!((dst[0], dst[n + 1]), (0, 0), "{n} bytes: nothing written around them");
    }
  }

  #[test]
  fn a_record_larger_than_the_data_buffer_asks_for_the_bytes_it_needs() {
    let sink = sink_with(3, 10, |i| if i == 1 { 5000 } else { 10 });
    let (mut data, mut ends) = (vec![0u8; 64], vec![0u32; 8]);
    assert!(matches!(sink.fill(&mut data, &mut ends, None).unwrap(), Filled::Records(1)));
    assert!(matches!(sink.fill(&mut data, &mut ends, None).unwrap(), Filled::NeedBytes(5000)));
    let mut big = vec![0u8; 6000];
    assert!(matches!(sink.fill(&mut big, &mut ends, None).unwrap(), Filled::Records(2)));
    assert_eq!(&ends[..2], &[5000, 5010]);
  }

  #[test]
  fn a_ring_buffer_is_read_in_place_after_the_queued_batches() {
    // two records the poller queued (JavaScript was behind), then three
    // left in the ring, the last larger than JavaScript's buffer
    let sink = sink_with(2, 10, |_| 8);
    let fake = Box::leak(Box::new(crate::mmap::ring::tests::FakeRing::new(4096)));
    fake.write(&[2; 8], 0);
    fake.write(&[3; 8], 0);
    fake.write(&[4; 100], 0);
    sink.read_in_place(fake.ring.clone());
    assert!(sink.has_records());
    sink.begin_delivery();
    let (mut data, mut ends) = (vec![0u8; 64], vec![0u32; 8]);
    assert!(matches!(sink.fill(&mut data, &mut ends, None).unwrap(), Filled::Records(4)));
    assert_eq!(&ends[..4], &[8, 16, 24, 32]);
    assert_eq!(&data[..32], &[[0u8; 8], [1; 8], [2; 8], [3; 8]].concat()[..], "queued first, then the ring, in order");
    assert!(matches!(sink.fill(&mut data, &mut ends, None).unwrap(), Filled::NeedBytes(100)));
    let mut big = vec![0u8; 128];
    assert!(matches!(sink.fill(&mut big, &mut ends, None).unwrap(), Filled::Records(1)));
    assert_eq!(&big[..100], &[4u8; 100][..]);
    assert!(!sink.has_records());
    assert!(matches!(sink.fill(&mut big, &mut ends, None).unwrap(), Filled::Records(0)));
    // a record written after the doorbell's call began waits for the next call
    fake.write(&[5; 8], 0);
    assert!(sink.has_records());
    assert!(matches!(sink.fill(&mut big, &mut ends, None).unwrap(), Filled::Records(0)));
    sink.begin_delivery();
    assert!(matches!(sink.fill(&mut big, &mut ends, None).unwrap(), Filled::Records(1)));
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
    assert!(matches!(sink.fill(&mut data, &mut ends, None).unwrap(), Filled::Records(0)));
    sink.paused.store(true, Ordering::Release);
    sink.closed.store(false, Ordering::Release);
    assert!(matches!(sink.fill(&mut data, &mut ends, None).unwrap(), Filled::Records(0)), "paused: nothing");
  }

  #[test]
  fn the_doorbell_rings_once_per_call_and_a_full_queue_drops_and_counts_per_cpu() {
    let bell = Arc::new(Bell::default());
    let sink = Arc::new(Sink::new(1, 2, bell.clone(), None));
    let mut collector = Collector::new(sink.clone(), true);
    collector.push(0, &[1; 8]);
    collector.push(1, &[2; 8]);
    assert!(collector.end_pass(false).found);
    assert_eq!(bell.rung.load(Ordering::Relaxed), 1);
    // the queue holds one batch: the next pass's records are dropped, counted per CPU
    collector.push(1, &[3; 8]);
    collector.push(1, &[4; 8]);
    collector.push(0, &[5; 8]);
    collector.end_pass(false);
    assert_eq!((sink.lost(), sink.dropped()), (3, 3));
    assert_eq!(bell.rung.load(Ordering::Relaxed), 1, "no second call while one is pending");
    sink.begin_delivery();
    assert_eq!(sink.take_unreported_lost(), Some(vec![0.0, 1.0, 1.0, 2.0]));
    let (out, _) = drain(&sink, 64, 8);
    assert_eq!(out, vec![(0, vec![1; 8]), (1, vec![2; 8])]);
    sink.pause();
    collector.push(0, &[6; 8]);
    collector.end_pass(false);
    assert_eq!(bell.rung.load(Ordering::Relaxed), 1, "paused: no call");
    sink.resume();
    assert_eq!(bell.rung.load(Ordering::Relaxed), 2, "resumed with records waiting: one call");
    sink.close();
    sink.close();
    assert_eq!(bell.released.load(Ordering::Relaxed), 1);
    assert!(!sink.has_records(), "closing drops what waited");
  }

  #[test]
  fn a_corrupt_ring_record_is_an_error_after_the_records_before_it_are_delivered() {
    let sink = sink_with(0, 1, |_| 0);
    let fake = Box::leak(Box::new(crate::mmap::ring::tests::FakeRing::new(4096)));
    fake.write(&[1; 8], 0);
    fake.write_claiming(&[2; 8], 5000);
    sink.read_in_place(fake.ring.clone());
    sink.begin_delivery();
    let (mut data, mut ends) = (vec![0u8; 64], vec![0u32; 8]);
    assert!(matches!(sink.fill(&mut data, &mut ends, None).unwrap(), Filled::Records(1)));
    let e = sink.fill(&mut data, &mut ends, None).err().expect("a corrupt record is an error");
    assert_eq!(e.code, crate::error::Code::Buffer);
    assert!(e.message.contains("claims 5000 bytes"), "{}", e.message);
  }
}
