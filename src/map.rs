//! Maps: raw key/value access with Buffers, and the ring and perf buffers
//! opened on ring-buffer and perf-event-array maps.

use libbpf_rs::{MapCore, MapFlags, MapType};
use napi::{bindgen_prelude::Buffer, Env, Unknown};
use napi_derive::napi;

use crate::{
  buffer::{self, EventBuffer, OpenRequest, PerfBufferOptions, RingBufferOptions},
  error::{err, BpfError, BpfResult, Code, Result},
  object::{BpfObject, Shared},
};

/// A map of a loaded object. Keys and values are Buffers of the map's key
/// and value sizes (typed access from BTF comes later); per-CPU maps give an
/// array with one value per possible CPU.
#[napi]
pub struct BpfMap {
  state: Shared,
  name: String,
  map_type: MapType,
  key_size: u32,
  value_size: u32,
  max_entries: u32,
}

#[napi]
impl BpfObject {
  /// A map by name (loads the object if it is not loaded yet).
  #[napi]
  pub fn get_map(&self, name: String) -> Result<BpfMap> {
    let mut state = self.state.borrow_mut();
    let map = state.map(&name)?;
    Ok(BpfMap {
      state: self.state.clone(),
      name,
      map_type: map.map_type(),
      key_size: map.key_size(),
      value_size: map.value_size(),
      max_entries: map.max_entries(),
    })
  }
}

fn is_per_cpu(t: MapType) -> bool {
  matches!(t, MapType::PercpuArray | MapType::PercpuHash | MapType::LruPercpuHash | MapType::PercpuCgroupStorage)
}

impl BpfMap {
  /// Runs `f` on the live map.
  fn with_map<T>(&self, f: impl FnOnce(&libbpf_rs::Map<'_>) -> BpfResult<T>) -> BpfResult<T> {
    let mut state = self.state.borrow_mut();
    let map = state.map(&self.name)?;
    f(&map)
  }

  fn check_key(&self, key: &[u8]) -> BpfResult<()> {
    if matches!(self.map_type, MapType::RingBuf | MapType::PerfEventArray) {
      return err(
        Code::InvalidArg,
        format!("map '{}' is a {} map: read it with openRingBuffer()/openPerfBuffer(), not get/set", self.name, self.type_name()),
      );
    }
    if key.len() != self.key_size as usize {
      return err(
        Code::InvalidValue,
        format!("map '{}' has {}-byte keys; got a {}-byte Buffer", self.name, self.key_size, key.len()),
      );
    }
    Ok(())
  }

  fn type_name(&self) -> String {
    format!("{:?}", self.map_type).to_lowercase()
  }

  fn map_error(&self, op: &str, e: libbpf_rs::Error) -> BpfError {
    BpfError::libbpf(Code::Map, format!("map '{}': {op}", self.name), &e)
  }

  fn lookup(&self, map: &libbpf_rs::Map<'_>, key: &[u8]) -> BpfResult<Option<Vec<Buffer>>> {
    if is_per_cpu(self.map_type) {
      let values = map.lookup_percpu(key, MapFlags::ANY).map_err(|e| self.map_error("lookup", e))?;
      return Ok(values.map(|v| v.into_iter().map(Buffer::from).collect()));
    }
    let value = map.lookup(key, MapFlags::ANY).map_err(|e| self.map_error("lookup", e))?;
    Ok(value.map(|v| vec![Buffer::from(v)]))
  }
}

/// One value, or one value per CPU.
fn one_or_per_cpu(per_cpu: bool, mut values: Vec<Buffer>) -> napi::Either<Buffer, Vec<Buffer>> {
  if per_cpu {
    napi::Either::B(values)
  } else {
    napi::Either::A(values.remove(0))
  }
}

#[napi]
impl BpfMap {
  /// The map's name.
  #[napi(getter)]
  pub fn name(&self) -> String {
    self.name.clone()
  }

  /// The map type: `hash`, `array`, `percpuhash`, `ringbuf`, ...
  #[napi(getter, js_name = "type")]
  pub fn kind(&self) -> String {
    self.type_name()
  }

  #[napi(getter)]
  pub fn key_size(&self) -> u32 {
    self.key_size
  }

  #[napi(getter)]
  pub fn value_size(&self) -> u32 {
    self.value_size
  }

  #[napi(getter)]
  pub fn max_entries(&self) -> u32 {
    self.max_entries
  }

  /// The value at `key`, or undefined; for per-CPU maps an array of values,
  /// one per possible CPU.
  #[napi]
  pub fn get(&self, key: Buffer) -> Result<Option<napi::Either<Buffer, Vec<Buffer>>>> {
    self.check_key(&key)?;
    let per_cpu = is_per_cpu(self.map_type);
    let values = self.with_map(|map| self.lookup(map, &key))?;
    Ok(values.map(|v| one_or_per_cpu(per_cpu, v)))
  }

  /// Sets `key` to `value` (per-CPU maps: one value for every CPU, or an
  /// array with one value per possible CPU).
  #[napi]
  pub fn set(&self, key: Buffer, value: napi::Either<Buffer, Vec<Buffer>>) -> Result<()> {
    self.check_key(&key)?;
    let values: Vec<Vec<u8>> = match value {
      napi::Either::A(v) => vec![v.to_vec()],
      napi::Either::B(vs) => vs.iter().map(|v| v.to_vec()).collect(),
    };
    for v in &values {
      if v.len() != self.value_size as usize {
        return Err(
          BpfError::new(
            Code::InvalidValue,
            format!("map '{}' has {}-byte values; got a {}-byte Buffer", self.name, self.value_size, v.len()),
          )
          .into(),
        );
      }
    }
    Ok(self.with_map(|map| {
      if is_per_cpu(self.map_type) {
        let cpus = libbpf_rs::num_possible_cpus().map_err(|e| self.map_error("update", e))?;
        let values = match values.len() {
          1 => vec![values[0].clone(); cpus],
          n if n == cpus => values,
          n => {
            return err(
              Code::InvalidValue,
              format!("map '{}' is per-CPU: give one value or {cpus} (one per possible CPU), not {n}", self.name),
            )
          }
        };
        return map.update_percpu(&key, &values, MapFlags::ANY).map_err(|e| self.map_error("update", e));
      }
      if values.len() != 1 {
        return err(Code::InvalidValue, format!("map '{}' is not per-CPU: give one Buffer", self.name));
      }
      map.update(&key, &values[0], MapFlags::ANY).map_err(|e| self.map_error("update", e))
    })?)
  }

  /// Deletes `key`; returns whether it was there.
  #[napi]
  pub fn delete(&self, key: Buffer) -> Result<bool> {
    self.check_key(&key)?;
    Ok(self.with_map(|map| match map.delete(&key) {
      Ok(()) => Ok(true),
      Err(e) if crate::error::errno_of(&e) == Some(libc::ENOENT) => Ok(false),
      Err(e) => Err(self.map_error("delete", e)),
    })?)
  }

  /// Every key.
  #[napi]
  pub fn keys(&self) -> Result<Vec<Buffer>> {
    Ok(self.with_map(|map| Ok(map.keys().map(Buffer::from).collect()))?)
  }

  /// Every `[key, value]` pair (per-CPU maps: `[key, values]`).
  #[napi(ts_return_type = "Array<[Buffer, Buffer | Buffer[]]>")]
  pub fn entries(&self) -> Result<Vec<(Buffer, napi::Either<Buffer, Vec<Buffer>>)>> {
    let per_cpu = is_per_cpu(self.map_type);
    Ok(self.with_map(|map| {
      let mut out = Vec::new();
      for key in map.keys() {
        if let Some(values) = self.lookup(map, &key)? {
          out.push((Buffer::from(key), one_or_per_cpu(per_cpu, values)));
        }
      }
      Ok(out)
    })?)
  }

  /// Streams the records of a BPF_MAP_TYPE_RINGBUF map: `callback(data)`
  /// once per record, on the main thread, in order.
  #[napi(ts_args_type = "callback: (data: Buffer) => void, options?: RingBufferOptions")]
  pub fn open_ring_buffer(&self, env: Env, callback: Unknown<'_>, options: Option<RingBufferOptions<'_>>) -> Result<EventBuffer> {
    self.check_kind(MapType::RingBuf, "openRingBuffer", "BPF_MAP_TYPE_RINGBUF")?;
    let fd = self.fd()?;
    let (poll_interval, queue_size, lost) = match options {
      Some(o) => (o.poll_interval, o.queue_size, o.lost),
      None => (None, None, None),
    };
    let req = OpenRequest { env: &env, state: &self.state, map_name: &self.name, map_fd: fd, callback, lost, poll_interval, queue_size };
    Ok(buffer::open_ring(req)?)
  }

  /// Streams the records of a BPF_MAP_TYPE_PERF_EVENT_ARRAY map:
  /// `callback(cpu, data)` once per record, on the main thread.
  #[napi(ts_args_type = "callback: (cpu: number, data: Buffer) => void, options?: PerfBufferOptions")]
  pub fn open_perf_buffer(&self, env: Env, callback: Unknown<'_>, options: Option<PerfBufferOptions<'_>>) -> Result<EventBuffer> {
    self.check_kind(MapType::PerfEventArray, "openPerfBuffer", "BPF_MAP_TYPE_PERF_EVENT_ARRAY")?;
    let fd = self.fd()?;
    let (page_count, wakeup, poll_interval, queue_size, lost) = match options {
      Some(o) => (o.page_count, o.wakeup_bytes, o.poll_interval, o.queue_size, o.lost),
      None => (None, None, None, None, None),
    };
    let req = OpenRequest { env: &env, state: &self.state, map_name: &self.name, map_fd: fd, callback, lost, poll_interval, queue_size };
    Ok(buffer::open_perf(req, page_count.unwrap_or(64), wakeup)?)
  }
}

impl BpfMap {
  fn check_kind(&self, want: MapType, method: &str, c_name: &str) -> BpfResult<()> {
    if self.map_type != want {
      return err(
        Code::InvalidArg,
        format!("{method}() needs a {c_name} map; map '{}' is a {} map", self.name, self.type_name()),
      );
    }
    Ok(())
  }

  fn fd(&self) -> BpfResult<i32> {
    use std::os::fd::{AsFd, AsRawFd};
    self.with_map(|map| Ok(map.as_fd().as_raw_fd()))
  }
}
