//! Ring and perf buffers: consumers driven by the process's poller (ring
//! buffers read in place, src/mmap/ring.rs; perf buffers through libbpf), and
//! the `EventBuffer` handle JavaScript gets for each. Records reach
//! JavaScript through a dispatcher function made by lib/core/dispatch.js.

use std::{
  os::fd::{AsFd, AsRawFd},
  os::raw::{c_int, c_void},
  sync::Arc,
  time::Duration,
};

use libbpf_rs::MapHandle;
use napi::{
  bindgen_prelude::{Function, Uint32ArraySlice, Uint8ArraySlice},
  Env,
};
use napi_derive::napi;

use crate::{
  error::{err, guard, BpfResult, Code, Result},
  mmap::ring::Ring,
  options,
  poller::{poller, Pass, Poller, Source},
  queue::{Collected, Collector, Consumer, Filled, Sink},
  tsfn::{DispatchArgs, Doorbell},
};

/// Default time between passes over buffers that did not wake us.
const DEFAULT_POLL_INTERVAL_MS: u64 = 10;
/// Default pages of each CPU's perf buffer: 1 MiB, 23 ms of 24-byte records
/// at 1 M/s on one CPU. With 64 pages (256 KiB, 6 ms) the poller, sharing
/// two CPUs with the traced process and the JS thread, was sometimes late
/// and the kernel dropped records (bench: 0.05-3% of 2 M).
const DEFAULT_PERF_PAGES: u64 = 256;
/// Default bound of the queue to JavaScript, in batches (a batch is at most
/// 1 MiB; a pass over a buffer makes one).
const DEFAULT_QUEUE_BATCHES: u64 = 64;

/// How the addon consumes a buffer (lib/core/map.js passes these on from the
/// options of `openRingBuffer`/`openPerfBuffer`). Numbers, checked here
/// (src/options.rs has the ranges), never wrapped by a u32 conversion.
#[napi(object)]
#[derive(Default)]
pub struct BufferOptions {
  /// Milliseconds between passes when the program submits without wakeups
  /// (BPF_RB_NO_WAKEUP) or while events stream in (default 10; 1 to 60000).
  pub poll_interval: Option<f64>,
  /// How many batches may wait for JavaScript before records are dropped
  /// and counted as lost (default 64, at most 65536; and never more than
  /// 16 MiB).
  pub queue_size: Option<f64>,
  /// Perf buffers: pages of the buffer of each CPU, a power of two
  /// (default 256: 1 MiB; at most 8192).
  pub page_count: Option<f64>,
  /// Perf buffers: the reader is woken when a CPU's buffer holds this many
  /// bytes (default: a quarter of it; at most all of it).
  pub wakeup_bytes: Option<f64>,
}

/// The native side of an open ring or perf buffer (lib/core/buffer.js wraps it).
#[napi]
pub struct NativeBuffer {
  sink: Arc<Sink>,
  doorbell: Arc<Doorbell>,
}

#[napi]
impl NativeBuffer {
  /// Stops delivery and frees the buffer (idempotent; returns at once).
  #[napi]
  pub fn close(&self) -> Result<()> {
    guard(|| {
      self.sink.close();
      Ok(())
    })
  }

  /// Whether an open buffer keeps the process alive.
  #[napi(js_name = "setRef")]
  pub fn set_ref(&self, env: Env, keep_alive: bool) -> Result<()> {
    guard(|| Ok(self.doorbell.set_ref(&env, keep_alive)?))
  }

  /// The dispatcher yields to the event loop with records left: no more
  /// doorbell calls until `resume()` (records wait in the ring, then in the
  /// poller's queue, then are dropped and counted).
  #[napi]
  pub fn pause(&self) -> Result<()> {
    guard(|| {
      self.sink.pause();
      Ok(())
    })
  }

  /// The dispatcher has caught up: hand it what is queued.
  #[napi]
  pub fn resume(&self) -> Result<()> {
    guard(|| {
      self.sink.resume();
      Ok(())
    })
  }

  /// Copies the records waiting for JavaScript into the dispatcher's own
  /// buffers, which it reuses from call to call: their bytes into `data`,
  /// the end offset of each into `ends`, their CPUs into `cpus` (perf
  /// buffers). Returns how many records it copied (0: none wait), or,
  /// negative, minus the bytes `data` needs to hold the next record.
  #[napi]
  pub fn fill(
    &self,
    mut data: Uint8ArraySlice<'_>,
    mut ends: Uint32ArraySlice<'_>,
    mut cpus: Option<Uint32ArraySlice<'_>>,
  ) -> Result<f64> {
    // SAFETY: three distinct ArrayBuffers of the dispatcher's own
    // (lib/core/dispatch.js; this class is not exported to users), written here
    // on the JS thread, which runs no JavaScript until this call returns.
    let (data, ends, cpus) = unsafe { (data.as_mut(), ends.as_mut(), cpus.as_mut().map(|c| c.as_mut())) };
    guard(|| {
      Ok(match self.sink.fill(data, ends, cpus)? {
        Filled::Records(n) => f64::from(n),
        Filled::NeedBytes(b) => -f64::from(b),
      })
    })
  }

  /// Records lost so far: dropped because JavaScript fell behind, or (perf
  /// buffers) by the kernel because the buffer was full.
  #[napi(getter)]
  pub fn lost(&self) -> Result<f64> {
    guard(|| Ok(self.sink.lost() as f64))
  }

  /// The part of `lost` that the library dropped because JavaScript fell
  /// behind (its queue full); the rest the kernel could not write.
  #[napi(getter)]
  pub fn dropped(&self) -> Result<f64> {
    guard(|| Ok(self.sink.dropped() as f64))
  }
}

/// What opening a buffer needs, whichever kind.
pub(crate) struct OpenRequest<'a> {
  /// The JavaScript call, for errors (`openRingBuffer`).
  pub method: &'static str,
  /// The buffer's map, through a duplicate of its fd: the consumer stays
  /// valid whenever the object is freed.
  pub map: MapHandle,
  pub dispatch: Function<'a, DispatchArgs, ()>,
  pub options: BufferOptions,
}

/// Opens a ring buffer consumer; returns the buffer and its sink.
pub(crate) fn open_ring(req: OpenRequest<'_>) -> BpfResult<(NativeBuffer, Arc<Sink>)> {
  if req.options.page_count.is_some() || req.options.wakeup_bytes.is_some() {
    return err(
      Code::InvalidValue,
      format!("{}: pageCount and wakeupBytes are perf buffer options; a ring buffer's size is its map's max_entries", req.method),
    );
  }
  open(req, 1, false, |map, collector| Ok(Box::new(RingSource::new(map, collector)?) as Box<dyn Source>))
}

/// Opens a perf buffer consumer; returns the buffer and its sink.
pub(crate) fn open_perf(req: OpenRequest<'_>) -> BpfResult<(NativeBuffer, Arc<Sink>)> {
  let page_count = options::integer_or(req.method, "pageCount", req.options.page_count, DEFAULT_PERF_PAGES, options::PAGE_COUNT)?;
  if !page_count.is_power_of_two() {
    let (min, max) = options::PAGE_COUNT;
    return err(
      Code::InvalidValue,
      format!("{}: pageCount must be a power of two from {min} to {max} (try 64); got {page_count}", req.method),
    );
  }
  let page_count = page_count as u32; // at most PAGE_COUNT's 8192
  let size = u64::from(page_count) * page_size() as u64;
  let wakeup = options::integer_or(req.method, "wakeupBytes", req.options.wakeup_bytes, size / 4, (1, size))?.min(size / 2);
  let cpus = libbpf_rs::num_possible_cpus().unwrap_or(1);
  open(req, cpus, true, move |map, collector| {
    Ok(Box::new(PerfSource::new(map, collector, page_count, wakeup as u32)?) as Box<dyn Source>)
  })
}

fn open(
  req: OpenRequest<'_>,
  cpus: usize,
  per_cpu: bool,
  make_source: impl FnOnce(MapHandle, Collector) -> BpfResult<Box<dyn Source>>,
) -> BpfResult<(NativeBuffer, Arc<Sink>)> {
  let queue =
    options::integer_or(req.method, "queueSize", req.options.queue_size, DEFAULT_QUEUE_BATCHES, options::QUEUE_SIZE)? as usize;
  let interval =
    options::integer_or(req.method, "pollInterval", req.options.poll_interval, DEFAULT_POLL_INTERVAL_MS, options::POLL_INTERVAL)?;
  let interval = Duration::from_millis(interval);
  let poller = poller()?;
  let doorbell = Arc::new(Doorbell::default());
  let sink = Arc::new(Sink::new(queue, cpus, doorbell.clone(), Some(poller)));
  let source = make_source(req.map, Collector::new(sink.clone(), per_cpu))?;
  let drain_sink = sink.clone();
  doorbell.bind(&req.dispatch, move |_ctx| Ok(drain(&drain_sink)))?;
  poller.add(sink.id(), source, interval);
  Ok((NativeBuffer { sink: sink.clone(), doorbell }, sink))
}

/// The poller frees a closed sink's consumer.
impl Consumer for Poller {
  fn remove(&self, id: u32, freed: crossbeam_channel::Sender<()>) {
    Poller::remove(self, id, freed);
  }
}

impl From<Collected> for Pass {
  fn from(c: Collected) -> Self {
    Pass { found: c.found, bytes: c.bytes }
  }
}

/// On the JS thread, when the doorbell rings: the losses to report. The
/// dispatcher then pulls the records (`fill`).
fn drain(sink: &Sink) -> DispatchArgs {
  sink.begin_delivery();
  sink.take_unreported_lost()
}

fn page_size() -> usize {
  // SAFETY: sysconf has no preconditions.
  unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// A ring buffer, as the poller sees it: records are left in the ring for
/// JavaScript to read in place (`Sink::fill`), and moved out into the queue
/// only when it falls behind.
struct RingSource {
  ring: Arc<Ring>,
  collector: Collector,
  /// The producer position at the last pass.
  last_produced: u64,
}

impl RingSource {
  fn new(map: MapHandle, collector: Collector) -> BpfResult<Self> {
    let ring = Arc::new(Ring::new(map)?);
    collector.sink().read_in_place(ring.clone());
    let last_produced = ring.producer_pos();
    Ok(RingSource { ring, collector, last_produced })
  }
}

impl Source for RingSource {
  fn epoll_fd(&self) -> i32 {
    self.ring.fd()
  }
  fn consume(&mut self) -> Pass {
    let produced = self.ring.producer_pos();
    let bytes = produced.saturating_sub(self.last_produced) as usize;
    self.last_produced = produced;
    let pending = self.ring.pending();
    if pending as usize > self.ring.capacity() / 2 {
      // JavaScript is behind: the records wait in the queue (or are dropped
      // and counted when it is full) rather than fill the ring, where the
      // program could not reserve and nobody would count. Queued and read
      // under the ring's lock: `fill` sees them before what stays behind.
      let collector = &mut self.collector;
      // (a corrupt ring: the records before the corrupt one are queued,
      // and JavaScript's next fill reports it)
      let _ = self.ring.lease().read(u64::MAX, |record| {
        collector.push(0, record);
        true
      });
      self.collector.end_pass(false);
    } else if pending > 0 {
      self.collector.sink().ring();
    }
    Pass { found: pending > 0, bytes }
  }
  fn capacity(&self) -> usize {
    self.ring.capacity()
  }
}

/// A perf buffer consumer with a byte watermark instead of a wakeup per
/// record. libbpf-rs's PerfBuffer has no way to set the watermark
/// (perf_buffer__new_raw): with a wakeup per record the bench's perf row
/// delivers 0.16 M records/s instead of 1.47 M, so this one is ours.
struct PerfSource {
  pb: *mut libbpf_sys::perf_buffer,
  collector: Box<Collector>,
  capacity: usize,
  /// The map (a duplicate fd): perf_buffer__free() deletes the map's
  /// entries through it, so it must not be closed (or reused) first.
  _map: MapHandle,
}

// SAFETY: made on the JS thread, then used by the poller thread alone.
unsafe impl Send for PerfSource {}

/// A record of a perf buffer, as the kernel writes it.
#[derive(Debug, PartialEq)]
enum PerfRecord<'a> {
  /// PERF_RECORD_SAMPLE: header (u32 type, u16 misc, u16 size), u32 size, data.
  Sample(&'a [u8]),
  /// PERF_RECORD_LOST: header, u64 id, u64 lost.
  Lost(u64),
  Other,
}

/// Reads one whole record (`bytes` starts at its header).
fn parse_perf_record(bytes: &[u8]) -> PerfRecord<'_> {
  let u32_at = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_ne_bytes(b.try_into().unwrap()));
  match u32_at(0) {
    Some(libbpf_sys::PERF_RECORD_SAMPLE) => match u32_at(8) {
      Some(size) => bytes.get(12..12 + size as usize).map_or(PerfRecord::Other, PerfRecord::Sample),
      None => PerfRecord::Other,
    },
    Some(libbpf_sys::PERF_RECORD_LOST) => {
      bytes.get(16..24).map_or(PerfRecord::Other, |b| PerfRecord::Lost(u64::from_ne_bytes(b.try_into().unwrap())))
    }
    _ => PerfRecord::Other,
  }
}

/// Called by libbpf for each perf record.
///
/// # Safety
/// `ctx` is the PerfSource's boxed collector and `header` a whole,
/// contiguous record, as perf_buffer__new_raw promises.
unsafe extern "C" fn on_perf_event(
  ctx: *mut c_void,
  cpu: c_int,
  header: *mut libbpf_sys::perf_event_header,
) -> libbpf_sys::bpf_perf_event_ret {
  // SAFETY: see the function's contract; the header's size covers the record.
  let (collector, bytes) =
    unsafe { (&mut *ctx.cast::<Collector>(), std::slice::from_raw_parts(header.cast::<u8>(), usize::from((*header).size))) };
  match parse_perf_record(bytes) {
    PerfRecord::Sample(data) => collector.push(cpu as u32, data),
    PerfRecord::Lost(n) => collector.kernel_lost(cpu as u32, n),
    PerfRecord::Other => {}
  }
  libbpf_sys::LIBBPF_PERF_EVENT_CONT
}

impl PerfSource {
  fn new(map: MapHandle, collector: Collector, page_count: u32, wakeup_bytes: u32) -> BpfResult<Self> {
    let mut attr = libbpf_sys::perf_event_attr {
      type_: libbpf_sys::PERF_TYPE_SOFTWARE,
      config: u64::from(libbpf_sys::PERF_COUNT_SW_BPF_OUTPUT),
      sample_type: u64::from(libbpf_sys::PERF_SAMPLE_RAW),
      size: std::mem::size_of::<libbpf_sys::perf_event_attr>() as u32,
      ..Default::default()
    };
    attr.__bindgen_anon_1.sample_period = 1;
    attr.set_watermark(1);
    attr.__bindgen_anon_2.wakeup_watermark = wakeup_bytes;
    let mut collector = Box::new(collector);
    let ctx = (&mut *collector as *mut Collector).cast();
    let opts =
      libbpf_sys::perf_buffer_raw_opts { sz: std::mem::size_of::<libbpf_sys::perf_buffer_raw_opts>() as _, ..Default::default() };
    // SAFETY: a valid fd, attr and options; the boxed collector outlives the buffer.
    let pb = unsafe {
      libbpf_sys::perf_buffer__new_raw(map.as_fd().as_raw_fd(), page_count as _, &mut attr, Some(on_perf_event), ctx, &opts)
    };
    // SAFETY: libbpf_get_error takes any pointer libbpf returned.
    let code = unsafe { libbpf_sys::libbpf_get_error(pb.cast()) };
    if pb.is_null() || code != 0 {
      let e = std::io::Error::from_raw_os_error((-code as i32).max(1));
      return err(Code::Buffer, format!("perf_buffer__new: {e}"));
    }
    Ok(PerfSource { pb, collector, capacity: page_count as usize * page_size(), _map: map })
  }
}

impl Source for PerfSource {
  fn epoll_fd(&self) -> i32 {
    // SAFETY: a live perf buffer.
    unsafe { libbpf_sys::perf_buffer__epoll_fd(self.pb) }
  }
  fn consume(&mut self) -> Pass {
    // SAFETY: a live perf buffer; its callback context is our collector.
    unsafe { libbpf_sys::perf_buffer__consume(self.pb) };
    self.collector.end_pass(true).into()
  }
  fn capacity(&self) -> usize {
    self.capacity
  }
}

impl Drop for PerfSource {
  fn drop(&mut self) {
    // SAFETY: freed once, before the collector and the map fd it uses.
    unsafe { libbpf_sys::perf_buffer__free(self.pb) };
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn header(kind: u32, size: usize) -> Vec<u8> {
    let mut b = vec![0u8; size];
    b[0..4].copy_from_slice(&kind.to_ne_bytes());
    b[6..8].copy_from_slice(&(size as u16).to_ne_bytes());
    b
  }

  #[test]
  fn perf_samples_and_losses_are_parsed() {
    let mut sample = header(libbpf_sys::PERF_RECORD_SAMPLE, 20);
    sample[8..12].copy_from_slice(&5u32.to_ne_bytes());
    sample[12..17].copy_from_slice(b"hello");
    assert_eq!(parse_perf_record(&sample), PerfRecord::Sample(b"hello"));
    let mut lost = header(libbpf_sys::PERF_RECORD_LOST, 24);
    lost[16..24].copy_from_slice(&7u64.to_ne_bytes());
    assert_eq!(parse_perf_record(&lost), PerfRecord::Lost(7));
  }

  #[test]
  fn truncated_or_unknown_records_are_skipped() {
    let mut sample = header(libbpf_sys::PERF_RECORD_SAMPLE, 14);
    sample[8..12].copy_from_slice(&100u32.to_ne_bytes()); // claims more than there is
    assert_eq!(parse_perf_record(&sample), PerfRecord::Other);
    assert_eq!(parse_perf_record(&header(libbpf_sys::PERF_RECORD_LOST, 12)), PerfRecord::Other);
    assert_eq!(parse_perf_record(&header(libbpf_sys::PERF_RECORD_COMM, 16)), PerfRecord::Other);
    assert_eq!(parse_perf_record(&[]), PerfRecord::Other);
  }
}
