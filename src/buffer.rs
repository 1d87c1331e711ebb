//! Ring and perf buffers: libbpf consumers driven by the object's poller,
//! and the `EventBuffer` handle JavaScript gets for each.

use std::{
  os::raw::{c_int, c_void},
  sync::{atomic::Ordering, Arc},
  time::Duration,
};

use napi::{
  bindgen_prelude::{Buffer, Uint32Array},
  Env, Unknown,
};
use napi_derive::napi;

use crate::{
  error::{err, BpfError, BpfResult, Code, Result},
  object::Shared,
  poller::{Batch, Collector, Poller, Sink, Source},
  runtime::{self, DecodeOptions, DispatchTo},
  tsfn::DispatchArgs,
};

/// Default time between passes over buffers that did not wake us.
const DEFAULT_POLL_INTERVAL_MS: u32 = 10;
/// Default pages of each CPU's perf buffer: 1 MiB, 23 ms of 24-byte records
/// at 1 M/s on one CPU. With 64 pages (256 KiB, 6 ms) the poller, sharing
/// two CPUs with the traced process and the JS thread, was sometimes late
/// and the kernel dropped records (bench: 0.05-3% of 2 M).
pub(crate) const DEFAULT_PERF_PAGES: u32 = 256;
/// Default bound of the queue to JavaScript, in batches (a batch is at most
/// 1 MiB; a pass over a buffer makes one).
const DEFAULT_QUEUE_BATCHES: u32 = 64;

/// Options of `openRingBuffer`.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct RingBufferOptions<'a> {
  /// Decode each record as this struct of the object's BTF (`'event'` or
  /// `'struct event'`): the callback gets a plain object instead of a Buffer.
  pub r#type: Option<String>,
  /// 64-bit integers as `'bigint'` (default) or `'number'`.
  #[napi(ts_type = "'bigint' | 'number'")]
  pub int64: Option<String>,
  /// Enums as `'name'` (default) or `'number'`.
  #[napi(ts_type = "'name' | 'number'")]
  pub enums: Option<String>,
  /// Called with an Error (code ERR_BPF_SHORT_RECORD) for a record shorter
  /// than `type`; it is skipped (default: one process warning).
  #[napi(ts_type = "(error: Error) => void")]
  pub error: Option<Unknown<'a>>,
  /// Milliseconds between passes when the program submits without wakeups
  /// (BPF_RB_NO_WAKEUP) or while events stream in (default 10).
  pub poll_interval: Option<u32>,
  /// How many batches may wait for JavaScript before records are dropped
  /// and counted as lost (default 64; and never more than 16 MiB of records).
  pub queue_size: Option<u32>,
  /// Raw records a batch at a time: the callback gets `(data, ends)`, one
  /// Buffer holding every record of the batch and the end offset of each
  /// (record i is `data.subarray(ends[i - 1] ?? 0, ends[i])`), instead of one
  /// call per record. Not with `type`.
  pub batch: Option<bool>,
  /// Called with the number of records dropped because JavaScript fell
  /// behind.
  #[napi(ts_type = "(count: number) => void")]
  pub lost: Option<Unknown<'a>>,
}

/// Options of `openPerfBuffer`.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct PerfBufferOptions<'a> {
  /// Decode each record as this struct (see `RingBufferOptions.type`).
  /// Perf records carry up to 7 bytes of padding after the struct.
  pub r#type: Option<String>,
  /// 64-bit integers as `'bigint'` (default) or `'number'`.
  #[napi(ts_type = "'bigint' | 'number'")]
  pub int64: Option<String>,
  /// Enums as `'name'` (default) or `'number'`.
  #[napi(ts_type = "'name' | 'number'")]
  pub enums: Option<String>,
  /// Called with an Error for a record shorter than `type` (see
  /// `RingBufferOptions.error`).
  #[napi(ts_type = "(error: Error) => void")]
  pub error: Option<Unknown<'a>>,
  /// Pages of the buffer of each CPU, a power of two (default 256: 1 MiB).
  pub page_count: Option<u32>,
  /// The reader is woken when a CPU's buffer holds this many bytes (default:
  /// a quarter of it); smaller batches are read every `pollInterval`.
  pub wakeup_bytes: Option<u32>,
  /// Milliseconds between passes (default 10).
  pub poll_interval: Option<u32>,
  /// How many batches may wait for JavaScript (default 64; and never more
  /// than 16 MiB of records).
  pub queue_size: Option<u32>,
  /// Raw records a batch at a time: the callback gets `(data, ends, cpus)`
  /// (see `RingBufferOptions.batch`). Not with `type`.
  pub batch: Option<bool>,
  /// Called with the CPU and the number of records lost there (by the
  /// kernel when the buffer was full, or here when JavaScript fell behind).
  #[napi(ts_type = "(cpu: number, count: number) => void")]
  pub lost: Option<Unknown<'a>>,
}

/// An open ring or perf buffer. Like a listening socket, it keeps the
/// process alive until `close()` or `unref()`.
#[napi]
pub struct EventBuffer {
  state: Shared,
  id: u32,
  sink: Arc<Sink>,
  kind: &'static str,
  map: String,
}

#[napi]
impl EventBuffer {
  /// Stops delivery and frees the buffer (idempotent).
  #[napi]
  pub fn close(&self) {
    close_buffer(&self.state, self.id, &self.sink);
  }

  /// Lets the process exit while the buffer is open.
  #[napi]
  pub fn unref(&self, env: Env) -> Result<()> {
    self.sink.doorbell.set_ref(&env, false).map_err(BpfError::from)?;
    Ok(())
  }

  /// Keeps the process alive while the buffer is open (the default).
  #[napi(js_name = "ref")]
  pub fn set_ref(&self, env: Env) -> Result<()> {
    self.sink.doorbell.set_ref(&env, true).map_err(BpfError::from)?;
    Ok(())
  }

  /// Records delivered to the callback so far.
  #[napi(getter)]
  pub fn received(&self) -> f64 {
    self.sink.received.load(Ordering::Relaxed) as f64
  }

  /// Records lost so far: dropped because JavaScript fell behind, or (perf
  /// buffers) by the kernel because the buffer was full.
  #[napi(getter)]
  pub fn lost(&self) -> f64 {
    self.sink.lost.load(Ordering::Relaxed) as f64
  }

  /// Records skipped because they were shorter than the `type`.
  #[napi(getter)]
  pub fn decode_errors(&self) -> f64 {
    self.sink.doorbell.skipped() as f64
  }

  /// `ring` or `perf`.
  #[napi(getter)]
  pub fn kind(&self) -> String {
    self.kind.to_string()
  }

  /// The map's name.
  #[napi(getter)]
  pub fn map(&self) -> String {
    self.map.clone()
  }

  /// Whether the buffer was closed (by `close()` or its object's).
  #[napi(getter)]
  pub fn closed(&self) -> bool {
    self.sink.closed.load(Ordering::Relaxed)
  }
}

pub(crate) fn close_buffer(state: &Shared, id: u32, sink: &Sink) {
  if sink.closed.swap(true, Ordering::AcqRel) {
    return;
  }
  let mut state = state.borrow_mut();
  if let Some(poller) = &state.poller {
    poller.remove(id);
  }
  state.buffers.remove(&id);
  sink.doorbell.release();
}

/// What both kinds of buffer options say.
pub(crate) struct BufferConfig<'a> {
  pub lost: Option<Unknown<'a>>,
  pub on_error: Option<Unknown<'a>>,
  /// The struct to decode records as, with its options.
  pub decode: Option<(String, DecodeOptions)>,
  pub poll_interval: Option<u32>,
  pub queue_size: Option<u32>,
  pub batch: bool,
}

impl<'a> From<RingBufferOptions<'a>> for BufferConfig<'a> {
  fn from(o: RingBufferOptions<'a>) -> Self {
    let decode = o.r#type.map(|t| (t, DecodeOptions { int64: o.int64, enums: o.enums }));
    BufferConfig { lost: o.lost, on_error: o.error, decode, poll_interval: o.poll_interval, queue_size: o.queue_size, batch: o.batch.unwrap_or(false) }
  }
}

impl<'a> From<PerfBufferOptions<'a>> for BufferConfig<'a> {
  fn from(o: PerfBufferOptions<'a>) -> Self {
    let decode = o.r#type.map(|t| (t, DecodeOptions { int64: o.int64, enums: o.enums }));
    BufferConfig { lost: o.lost, on_error: o.error, decode, poll_interval: o.poll_interval, queue_size: o.queue_size, batch: o.batch.unwrap_or(false) }
  }
}

/// What `openRingBuffer`/`openPerfBuffer` need, whichever kind.
pub(crate) struct OpenRequest<'a> {
  pub env: &'a Env,
  pub state: &'a Shared,
  pub map_name: &'a str,
  pub map_fd: i32,
  pub callback: Unknown<'a>,
  pub config: BufferConfig<'a>,
}

/// Opens a ring buffer on `map_fd`.
pub(crate) fn open_ring(req: OpenRequest<'_>) -> BpfResult<EventBuffer> {
  open(req, "ring", |collector| RingSource::new(collector).map(|s| Box::new(s) as Box<dyn Source>))
}

/// Opens a perf buffer on `map_fd`.
pub(crate) fn open_perf(req: OpenRequest<'_>, page_count: u32, wakeup_bytes: Option<u32>) -> BpfResult<EventBuffer> {
  if !page_count.is_power_of_two() {
    return err(Code::InvalidValue, format!("pageCount {page_count} is not a power of two (try 64)"));
  }
  let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
  let size = u64::from(page_count) * page;
  let wakeup = u64::from(wakeup_bytes.unwrap_or((size / 4) as u32)).clamp(1, size / 2);
  open(req, "perf", move |collector| {
    PerfSource::new(collector, page_count, wakeup as u32).map(|s| Box::new(s) as Box<dyn Source>)
  })
}

fn open(
  req: OpenRequest<'_>,
  kind: &'static str,
  make_source: impl FnOnce((i32, Box<Collector>)) -> BpfResult<Box<dyn Source>>,
) -> BpfResult<EventBuffer> {
  let per_cpu = kind == "perf";
  let cpus = if per_cpu { libbpf_rs::num_possible_cpus().unwrap_or(1) } else { 1 };
  let config = req.config;
  let sink = Arc::new(Sink::new(config.queue_size.unwrap_or(DEFAULT_QUEUE_BATCHES).max(1) as usize, cpus, Default::default()));
  let source = make_source((req.map_fd, Collector::new(sink.clone(), per_cpu)))?;

  if config.batch && config.decode.is_some() {
    return err(Code::InvalidValue, "options batch and type do not go together: a batch is raw records (decode each with your own code, or drop batch)".to_string());
  }
  let ty = match &config.decode {
    Some((name, options)) => {
      options.check()?;
      let layout = req.state.borrow().type_layout(name)?;
      if !matches!(layout["kind"].as_str(), Some("struct") | Some("union")) {
        return err(
          Code::InvalidValue,
          format!("type '{name}' is a {}, not a struct: records decode as structs", layout["kind"].as_str().unwrap_or("?")),
        );
      }
      Some(runtime::register(req.env, &layout, options)?)
    }
    None => None,
  };
  let dispatcher = runtime::dispatcher(
    req.env,
    DispatchTo { callback: req.callback, lost: config.lost, on_error: config.on_error, per_cpu, ty, batch: config.batch },
  )?;
  let keep_alive = req.state.clone();
  let drain_sink = sink.clone();
  sink.doorbell.bind(&dispatcher, move |_ctx| {
    let _ = &keep_alive; // an open buffer keeps its object alive
    Ok(drain(&drain_sink, per_cpu))
  })?;

  let mut state = req.state.borrow_mut();
  state.check_open()?;
  if state.poller.is_none() {
    state.poller = Some(Poller::start().map_err(|e| BpfError::new(Code::Buffer, format!("starting the poller thread: {e}")))?);
  }
  let id = state.next_id();
  let interval = Duration::from_millis(u64::from(config.poll_interval.unwrap_or(DEFAULT_POLL_INTERVAL_MS).max(1)));
  state.poller.as_ref().unwrap().add(id, source, interval);
  state.buffers.insert(id, sink.clone());
  Ok(EventBuffer { state: req.state.clone(), id, sink, kind, map: req.map_name.to_string() })
}

/// Up to this many bytes are handed to one dispatcher call; the rest waits
/// for the next, so the event loop is never blocked for long.
const DRAIN_BYTES: usize = 8 << 20;

/// On the JS thread: everything queued, as one call's arguments.
fn drain(sink: &Sink, per_cpu: bool) -> DispatchArgs {
  sink.scheduled.store(false, Ordering::Release);
  let mut merged = Batch::default();
  if !sink.closed.load(Ordering::Acquire) {
    while merged.data.len() < DRAIN_BYTES {
      let Ok(batch) = sink.queue_rx.try_recv() else { break };
      sink.queued_bytes.fetch_sub(batch.data.len(), Ordering::AcqRel);
      if merged.ends.is_empty() {
        merged = batch;
        continue;
      }
      let base = merged.data.len() as u32;
      merged.data.extend_from_slice(&batch.data);
      merged.ends.extend(batch.ends.iter().map(|e| e + base));
      merged.cpus.extend_from_slice(&batch.cpus);
    }
    if !sink.queue_rx.is_empty() && !sink.scheduled.swap(true, Ordering::AcqRel) {
      sink.doorbell.notify();
    }
  }
  sink.received.fetch_add(merged.ends.len() as u64, Ordering::Relaxed);
  let losses = {
    let mut unreported = sink.unreported_lost.lock().unwrap();
    let pairs: Vec<f64> = unreported
      .iter_mut()
      .enumerate()
      .filter(|(_, n)| **n > 0)
      .flat_map(|(cpu, n)| [cpu as f64, std::mem::take(n) as f64])
      .collect();
    (!pairs.is_empty()).then_some(pairs)
  };
  let cpus = per_cpu.then(|| Uint32Array::new(merged.cpus));
  (Buffer::from(merged.data), Uint32Array::new(merged.ends), cpus, losses).into()
}

/// A libbpf ring buffer consumer.
struct RingSource {
  rb: *mut libbpf_sys::ring_buffer,
  collector: Box<Collector>,
  capacity: usize,
}

// SAFETY: the ring buffer is used by one thread at a time (created here,
// then owned by the poller thread).
unsafe impl Send for RingSource {}

unsafe extern "C" fn on_ring_record(ctx: *mut c_void, data: *mut c_void, size: libbpf_sys::size_t) -> c_int {
  // SAFETY: ctx is the boxed collector, alive as long as the ring buffer.
  let collector = unsafe { &mut *ctx.cast::<Collector>() };
  collector.push(0, unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size as usize) });
  0
}

impl RingSource {
  fn new((map_fd, mut collector): (i32, Box<Collector>)) -> BpfResult<Self> {
    let ctx = (&mut *collector as *mut Collector).cast();
    // SAFETY: a valid map fd; the callback context outlives the buffer.
    let rb = unsafe { libbpf_sys::ring_buffer__new(map_fd, Some(on_ring_record), ctx, std::ptr::null()) };
    if rb.is_null() {
      let e = std::io::Error::last_os_error();
      return err(Code::Buffer, format!("ring_buffer__new: {e}"));
    }
    let capacity = unsafe { libbpf_sys::ring__size(libbpf_sys::ring_buffer__ring(rb, 0)) } as usize;
    Ok(RingSource { rb, collector, capacity })
  }
}

impl Source for RingSource {
  fn epoll_fd(&self) -> i32 {
    unsafe { libbpf_sys::ring_buffer__epoll_fd(self.rb) }
  }
  fn consume(&mut self) {
    unsafe { libbpf_sys::ring_buffer__consume(self.rb) };
  }
  fn capacity(&self) -> usize {
    self.capacity
  }
  fn collector(&mut self) -> &mut Collector {
    &mut self.collector
  }
}

impl Drop for RingSource {
  fn drop(&mut self) {
    unsafe { libbpf_sys::ring_buffer__free(self.rb) };
  }
}

/// A libbpf perf buffer consumer with a byte watermark instead of a wakeup
/// per record.
struct PerfSource {
  pb: *mut libbpf_sys::perf_buffer,
  collector: Box<Collector>,
  capacity: usize,
}

// SAFETY: as RingSource.
unsafe impl Send for PerfSource {}

const PERF_RECORD_LOST: u32 = 2;
const PERF_RECORD_SAMPLE: u32 = 9;

unsafe extern "C" fn on_perf_event(
  ctx: *mut c_void,
  cpu: c_int,
  header: *mut libbpf_sys::perf_event_header,
) -> libbpf_sys::bpf_perf_event_ret {
  // SAFETY: ctx is the boxed collector; libbpf hands a whole, contiguous
  // record behind `header`.
  let collector = unsafe { &mut *ctx.cast::<Collector>() };
  let base = header.cast::<u8>();
  match unsafe { (*header).type_ } {
    PERF_RECORD_SAMPLE => {
      let size = unsafe { base.add(8).cast::<u32>().read_unaligned() } as usize;
      collector.push(cpu as u32, unsafe { std::slice::from_raw_parts(base.add(12), size) });
    }
    PERF_RECORD_LOST => {
      let lost = unsafe { base.add(16).cast::<u64>().read_unaligned() };
      collector.kernel_lost(cpu as u32, lost);
    }
    _ => {}
  }
  libbpf_sys::LIBBPF_PERF_EVENT_CONT
}

impl PerfSource {
  fn new((map_fd, mut collector): (i32, Box<Collector>), page_count: u32, wakeup_bytes: u32) -> BpfResult<Self> {
    let mut attr = libbpf_sys::perf_event_attr {
      type_: 1,    // PERF_TYPE_SOFTWARE
      config: 10,  // PERF_COUNT_SW_BPF_OUTPUT
      sample_type: 1 << 10, // PERF_SAMPLE_RAW
      size: std::mem::size_of::<libbpf_sys::perf_event_attr>() as u32,
      ..Default::default()
    };
    attr.__bindgen_anon_1.sample_period = 1;
    attr.set_watermark(1);
    attr.__bindgen_anon_2.wakeup_watermark = wakeup_bytes;
    let ctx = (&mut *collector as *mut Collector).cast();
    let opts = libbpf_sys::perf_buffer_raw_opts {
      sz: std::mem::size_of::<libbpf_sys::perf_buffer_raw_opts>() as _,
      ..Default::default()
    };
    // SAFETY: valid fd, attr and options; the context outlives the buffer.
    let pb = unsafe {
      libbpf_sys::perf_buffer__new_raw(map_fd, page_count as _, &mut attr, Some(on_perf_event), ctx, &opts)
    };
    let code = unsafe { libbpf_sys::libbpf_get_error(pb.cast()) };
    if pb.is_null() || code != 0 {
      let e = std::io::Error::from_raw_os_error((-code as i32).max(1));
      return err(Code::Buffer, format!("perf_buffer__new: {e}"));
    }
    let capacity = page_count as usize * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    Ok(PerfSource { pb, collector, capacity })
  }
}

impl Source for PerfSource {
  fn epoll_fd(&self) -> i32 {
    unsafe { libbpf_sys::perf_buffer__epoll_fd(self.pb) }
  }
  fn consume(&mut self) {
    unsafe { libbpf_sys::perf_buffer__consume(self.pb) };
  }
  fn capacity(&self) -> usize {
    self.capacity
  }
  fn collector(&mut self) -> &mut Collector {
    &mut self.collector
  }
}

impl Drop for PerfSource {
  fn drop(&mut self) {
    unsafe { libbpf_sys::perf_buffer__free(self.pb) };
  }
}
