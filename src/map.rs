//! Maps, typed by their own BTF key and value types (raw Buffers for maps
//! declared without them), and the ring and perf buffers opened on
//! ring-buffer and perf-event-array maps.

use libbpf_rs::{AsRawLibbpf, MapCore, MapFlags, MapType};
use napi::{
  bindgen_prelude::{Buffer, FromNapiValue},
  Env, JsValue, Unknown,
};
use napi_derive::napi;
use serde_json::{json, Value};

use crate::{
  btf,
  buffer::{self, BufferConfig, EventBuffer, OpenRequest, PerfBufferOptions, RingBufferOptions},
  error::{err, BpfError, BpfResult, Code, Result},
  object::{BpfObject, Shared},
  runtime::{self, DecodeOptions, TypeId},
};

/// A map of a loaded object. Keys and values are JavaScript values decoded
/// from the map's BTF types (numbers, bigints, strings, plain objects,
/// arrays); a map declared without BTF types (`__uint(key_size, ...)`) uses
/// Buffers of its sizes. Per-CPU maps give an array with one value per
/// possible CPU; stack-trace maps give arrays of instruction addresses.
#[napi]
pub struct BpfMap {
  state: Shared,
  name: String,
  map_type: MapType,
  key_size: u32,
  value_size: u32,
  max_entries: u32,
  key: Option<(TypeId, Value)>,
  value: Option<(TypeId, Value)>,
}

#[napi]
impl BpfObject {
  /// A map by name (loads the object if it is not loaded yet). `options`
  /// say how its values decode (64-bit integers, enums).
  #[napi]
  pub fn get_map(&self, env: Env, name: String, options: Option<DecodeOptions>) -> Result<BpfMap> {
    let options = options.unwrap_or_default();
    options.check()?;
    let mut state = self.state.borrow_mut();
    let (map_type, key_size, value_size, max_entries, key_id, value_id) = {
      let map = state.map(&name)?;
      let raw = map.as_libbpf_object().as_ptr();
      // SAFETY: a valid map of a loaded object.
      let (key_id, value_id) =
        unsafe { (libbpf_sys::bpf_map__btf_key_type_id(raw), libbpf_sys::bpf_map__btf_value_type_id(raw)) };
      (map.map_type(), map.key_size(), map.value_size(), map.max_entries(), key_id, value_id)
    };
    let (key_layout, value_layout) = layouts(&state, map_type, value_size, key_id, value_id);
    let register = |layout: Option<Value>| -> BpfResult<Option<(TypeId, Value)>> {
      layout.map(|l| Ok((runtime::register(&env, &l, &options)?, l))).transpose()
    };
    Ok(BpfMap {
      state: self.state.clone(),
      name,
      map_type,
      key_size,
      value_size,
      max_entries,
      key: register(key_layout)?,
      value: register(value_layout)?,
    })
  }
}

/// A map of an object, as `obj.maps` lists it.
#[napi(object)]
pub struct MapInfo {
  pub name: String,
  /// libbpf's name of the map type: `hash`, `array`, `percpu_array`,
  /// `ringbuf`, `perf_event_array`, `stack_trace`, ...
  pub r#type: String,
  pub key_size: u32,
  pub value_size: u32,
  pub max_entries: u32,
  /// How keys decode (null: raw Buffers).
  #[napi(ts_type = "TypeLayout | null")]
  pub key_layout: Option<Value>,
  /// How values decode (null: raw Buffers).
  #[napi(ts_type = "TypeLayout | null")]
  pub value_layout: Option<Value>,
}

#[napi]
impl BpfObject {
  /// The object's maps (data-section maps excluded) with their types and
  /// layouts; no load needed.
  #[napi(getter)]
  pub fn maps(&self) -> Result<Vec<MapInfo>> {
    let state = self.state.borrow();
    state.check_open()?;
    let mut out = Vec::new();
    for name in &state.maps {
      let Some(raw) = state.raw_map(name) else { continue };
      // SAFETY: a map of the live object.
      let (t, key_size, value_size, max_entries, key_id, value_id) = unsafe {
        (
          libbpf_sys::bpf_map__type(raw),
          libbpf_sys::bpf_map__key_size(raw),
          libbpf_sys::bpf_map__value_size(raw),
          libbpf_sys::bpf_map__max_entries(raw),
          libbpf_sys::bpf_map__btf_key_type_id(raw),
          libbpf_sys::bpf_map__btf_value_type_id(raw),
        )
      };
      let (key_layout, value_layout) = layouts(&state, MapType::from(t), value_size, key_id, value_id);
      out.push(MapInfo {
        name: name.clone(),
        r#type: map_type_name(MapType::from(t)),
        key_size,
        value_size,
        max_entries,
        key_layout,
        value_layout,
      });
    }
    Ok(out)
  }
}

/// libbpf's name of a map type (`percpu_array`).
fn map_type_name(t: MapType) -> String {
  // SAFETY: libbpf returns a static string or NULL.
  let name = unsafe { libbpf_sys::libbpf_bpf_map_type_str(t as u32) };
  if name.is_null() {
    return format!("{t:?}").to_lowercase();
  }
  unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy().into_owned()
}

/// The key and value layouts of a map, by its BTF type ids.
fn layouts(state: &crate::object::ObjectState, t: MapType, value_size: u32, key_id: u32, value_id: u32) -> (Option<Value>, Option<Value>) {
  match t {
    // an array of instruction addresses, up to the first zero
    MapType::StackTrace => (
      Some(json!({"kind": "int", "size": 4, "signed": false})),
      Some(json!({"kind": "stack", "size": value_size, "len": value_size / 8})),
    ),
    _ => state.with_btf(|b| (btf::layout_by_id(b, key_id), btf::layout_by_id(b, value_id))).unwrap_or((None, None)),
  }
}

fn is_per_cpu(t: MapType) -> bool {
  matches!(t, MapType::PercpuArray | MapType::PercpuHash | MapType::LruPercpuHash | MapType::PercpuCgroupStorage)
}

fn is_array(t: MapType) -> bool {
  matches!(t, MapType::Array | MapType::PercpuArray)
}

impl BpfMap {
  /// Runs `f` on the live map.
  fn with_map<T>(&self, f: impl FnOnce(&libbpf_rs::Map<'_>) -> BpfResult<T>) -> BpfResult<T> {
    let mut state = self.state.borrow_mut();
    let map = state.map(&self.name)?;
    f(&map)
  }

  fn type_name(&self) -> String {
    map_type_name(self.map_type)
  }

  fn map_error(&self, op: &str, e: libbpf_rs::Error) -> BpfError {
    BpfError::libbpf(Code::Map, format!("map '{}': {op}", self.name), &e)
  }

  fn check_keyed(&self) -> BpfResult<()> {
    if matches!(self.map_type, MapType::RingBuf | MapType::PerfEventArray) {
      return err(
        Code::InvalidArg,
        format!(
          "map '{}' is a {} map: read it with openRingBuffer()/openPerfBuffer(), not with key/value calls",
          self.name,
          self.type_name()
        ),
      );
    }
    Ok(())
  }

  /// `value` as bytes of `size`: through the codec, or a Buffer of that size.
  fn encode(&self, env: &Env, ty: &Option<(TypeId, Value)>, value: Unknown<'_>, size: u32, what: &str) -> BpfResult<Vec<u8>> {
    if let Some((id, _)) = ty {
      return runtime::encode(env, *id, value, &format!("map '{}' {what}", self.name));
    }
    // SAFETY: validating the JS type is what from_unknown does.
    let bytes = unsafe { Buffer::from_napi_value(env.raw(), value.raw()) }.map_err(|_| {
      BpfError::new(
        Code::InvalidValue,
        format!("map '{}' has no BTF {what} type: give the {what} as a Buffer of {size} bytes", self.name),
      )
    })?;
    if bytes.len() != size as usize {
      return err(
        Code::InvalidValue,
        format!("map '{}' has {size}-byte {what}s; got a {}-byte Buffer", self.name, bytes.len()),
      );
    }
    Ok(bytes.to_vec())
  }

  fn encode_key(&self, env: &Env, key: Unknown<'_>) -> BpfResult<Vec<u8>> {
    self.check_keyed()?;
    self.encode(env, &self.key, key, self.key_size, "key")
  }

  fn decode<'e>(&self, env: &'e Env, ty: &Option<(TypeId, Value)>, bytes: Vec<u8>) -> BpfResult<Unknown<'e>> {
    match ty {
      Some((id, _)) => runtime::decode(env, *id, bytes),
      None => Ok(Buffer::from(bytes).into_unknown(env)?),
    }
  }

  /// The value(s) stored for `key`: one, or one per CPU.
  fn lookup(&self, map: &libbpf_rs::Map<'_>, key: &[u8]) -> BpfResult<Option<Vec<Vec<u8>>>> {
    if is_per_cpu(self.map_type) {
      return map.lookup_percpu(key, MapFlags::ANY).map_err(|e| self.map_error("lookup", e));
    }
    Ok(map.lookup(key, MapFlags::ANY).map_err(|e| self.map_error("lookup", e))?.map(|v| vec![v]))
  }

  fn decode_values<'e>(&self, env: &'e Env, mut values: Vec<Vec<u8>>) -> BpfResult<Unknown<'e>> {
    if !is_per_cpu(self.map_type) {
      return self.decode(env, &self.value, values.remove(0));
    }
    let decoded = values.into_iter().map(|v| self.decode(env, &self.value, v)).collect::<BpfResult<Vec<_>>>()?;
    Ok(decoded.into_unknown(env)?)
  }

  fn all_keys(&self) -> BpfResult<Vec<Vec<u8>>> {
    self.check_keyed()?;
    self.with_map(|map| Ok(map.keys().collect()))
  }

  fn entries_raw(&self) -> BpfResult<Vec<(Vec<u8>, Vec<Vec<u8>>)>> {
    self.check_keyed()?;
    self.with_map(|map| {
      let mut out = Vec::new();
      for key in map.keys() {
        if let Some(values) = self.lookup(map, &key)? {
          out.push((key, values));
        }
      }
      Ok(out)
    })
  }

  fn to_entries<'e>(&self, env: &'e Env, raw: Vec<(Vec<u8>, Vec<Vec<u8>>)>) -> BpfResult<Vec<Vec<Unknown<'e>>>> {
    raw
      .into_iter()
      .map(|(k, v)| Ok(vec![self.decode(env, &self.key, k)?, self.decode_values(env, v)?]))
      .collect()
  }

  fn batch<'e>(&self, env: &'e Env, delete: bool) -> BpfResult<Vec<Vec<Unknown<'e>>>> {
    self.check_keyed()?;
    if !matches!(self.map_type, MapType::Hash | MapType::LruHash) {
      return err(
        Code::InvalidArg,
        format!("batch operations need a hash or LRU hash map; map '{}' is a {} map", self.name, self.type_name()),
      );
    }
    let raw = self.with_map(|map| {
      let batch = if delete {
        map.lookup_and_delete_batch(256, MapFlags::ANY, MapFlags::ANY)
      } else {
        map.lookup_batch(256, MapFlags::ANY, MapFlags::ANY)
      };
      Ok(batch.map_err(|e| self.map_error("batch lookup", e))?.map(|(k, v)| (k, vec![v])).collect())
    })?;
    self.to_entries(env, raw)
  }
}

trait IntoUnknown {
  fn into_unknown(self, env: &Env) -> napi::Result<Unknown<'_>>;
}

impl<T: napi::bindgen_prelude::ToNapiValue> IntoUnknown for T {
  fn into_unknown(self, env: &Env) -> napi::Result<Unknown<'_>> {
    // SAFETY: a value just created in this env.
    unsafe { Ok(Unknown::from_raw_unchecked(env.raw(), T::to_napi_value(env.raw(), self)?)) }
  }
}

#[napi]
impl BpfMap {
  /// The map's name.
  #[napi(getter)]
  pub fn name(&self) -> String {
    self.name.clone()
  }

  /// libbpf's name of the map type: `hash`, `array`, `percpu_array`,
  /// `ringbuf`, ...
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

  /// How keys decode (null: raw Buffers).
  #[napi(getter, ts_return_type = "TypeLayout | null")]
  pub fn key_layout(&self) -> Option<Value> {
    self.key.as_ref().map(|(_, l)| l.clone())
  }

  /// How values decode (null: raw Buffers).
  #[napi(getter, ts_return_type = "TypeLayout | null")]
  pub fn value_layout(&self) -> Option<Value> {
    self.value.as_ref().map(|(_, l)| l.clone())
  }

  /// The value at `key`, or undefined; for per-CPU maps an array with one
  /// value per possible CPU.
  #[napi(ts_args_type = "key: any", ts_return_type = "any")]
  pub fn get<'e>(&self, env: &'e Env, key: Unknown<'_>) -> Result<Unknown<'e>> {
    let key = self.encode_key(env, key)?;
    Ok(match self.with_map(|map| self.lookup(map, &key))? {
      Some(values) => self.decode_values(env, values)?,
      None => ().into_unknown(env).map_err(BpfError::from)?,
    })
  }

  /// Whether `key` is in the map.
  #[napi(ts_args_type = "key: any")]
  pub fn has(&self, env: Env, key: Unknown<'_>) -> Result<bool> {
    let key = self.encode_key(&env, key)?;
    Ok(self.with_map(|map| self.lookup(map, &key))?.is_some())
  }

  /// Sets `key` to `value`, encoded from the map's value type (plain objects
  /// for structs: missing fields are zero, unknown fields an error). For
  /// per-CPU maps: one value for every CPU, or an array of one per CPU.
  #[napi(ts_args_type = "key: any, value: any")]
  pub fn set(&self, env: Env, key: Unknown<'_>, value: Unknown<'_>) -> Result<()> {
    let key = self.encode_key(&env, key)?;
    let per_cpu = is_per_cpu(self.map_type);
    let cpus = libbpf_rs::num_possible_cpus().map_err(|e| self.map_error("update", e))?;
    let values: Vec<Vec<u8>> = if per_cpu && value.is_array().map_err(BpfError::from)? {
      // SAFETY: checked to be an array.
      let items = unsafe { Vec::<Unknown<'_>>::from_napi_value(env.raw(), value.raw()) }.map_err(BpfError::from)?;
      if items.len() != cpus {
        return Err(
          BpfError::new(
            Code::InvalidValue,
            format!("map '{}' is per-CPU: give one value, or an array of {cpus} (one per possible CPU), not {}", self.name, items.len()),
          )
          .into(),
        );
      }
      items.into_iter().map(|v| self.encode(&env, &self.value, v, self.value_size, "value")).collect::<BpfResult<_>>()?
    } else {
      let one = self.encode(&env, &self.value, value, self.value_size, "value")?;
      vec![one; if per_cpu { cpus } else { 1 }]
    };
    Ok(self.with_map(|map| {
      if per_cpu {
        map.update_percpu(&key, &values, MapFlags::ANY)
      } else {
        map.update(&key, &values[0], MapFlags::ANY)
      }
      .map_err(|e| match crate::error::errno_of(&e) {
        Some(libc::E2BIG) => BpfError::new(Code::Map, format!("map '{}' is full ({} entries)", self.name, self.max_entries)),
        _ => self.map_error("update", e),
      })
    })?)
  }

  /// Deletes `key`; returns whether it was there. (Array maps cannot delete:
  /// set the value to zero instead, or use `clear()`.)
  #[napi(ts_args_type = "key: any")]
  pub fn delete(&self, env: Env, key: Unknown<'_>) -> Result<bool> {
    let key = self.encode_key(&env, key)?;
    if is_array(self.map_type) {
      return Err(BpfError::new(Code::InvalidArg, format!("map '{}' is an array map: its entries cannot be deleted; set them to zero or clear()", self.name)).into());
    }
    Ok(self.with_map(|map| match map.delete(&key) {
      Ok(()) => Ok(true),
      Err(e) if crate::error::errno_of(&e) == Some(libc::ENOENT) => Ok(false),
      Err(e) => Err(self.map_error("delete", e)),
    })?)
  }

  /// Every key.
  #[napi(ts_return_type = "any[]")]
  pub fn keys<'e>(&self, env: &'e Env) -> Result<Vec<Unknown<'e>>> {
    Ok(self.all_keys()?.into_iter().map(|k| self.decode(env, &self.key, k)).collect::<BpfResult<_>>()?)
  }

  /// Every value.
  #[napi(ts_return_type = "any[]")]
  pub fn values<'e>(&self, env: &'e Env) -> Result<Vec<Unknown<'e>>> {
    let raw = self.entries_raw()?;
    Ok(raw.into_iter().map(|(_, v)| self.decode_values(env, v)).collect::<BpfResult<_>>()?)
  }

  /// Every `[key, value]` pair.
  #[napi(ts_return_type = "Array<[any, any]>")]
  pub fn entries<'e>(&self, env: &'e Env) -> Result<Vec<Vec<Unknown<'e>>>> {
    let raw = self.entries_raw()?;
    Ok(self.to_entries(env, raw)?)
  }

  /// Iterates over `[key, value]` pairs (a snapshot of the map).
  #[napi(well_known_symbol = "iterator", ts_return_type = "Iterator<[any, any]>")]
  pub fn iterate<'e>(&self, env: &'e Env) -> Result<Unknown<'e>> {
    let entries = self.entries(env)?.into_unknown(env).map_err(BpfError::from)?;
    Ok(runtime::iterator(env, entries)?)
  }

  /// How many keys the map holds (array maps: always `maxEntries`).
  #[napi]
  pub fn count(&self) -> Result<u32> {
    Ok(self.all_keys()?.len() as u32)
  }

  /// `count()`, as a property.
  #[napi(getter)]
  pub fn size(&self) -> Result<u32> {
    self.count()
  }

  /// Removes every entry (array maps: sets every value to zero).
  #[napi]
  pub fn clear(&self) -> Result<()> {
    let keys = self.all_keys()?;
    let zero = vec![0u8; self.value_size as usize];
    Ok(self.with_map(|map| {
      for key in keys {
        let done = if is_per_cpu(self.map_type) && is_array(self.map_type) {
          let cpus = libbpf_rs::num_possible_cpus().map_err(|e| self.map_error("clear", e))?;
          map.update_percpu(&key, &vec![zero.clone(); cpus], MapFlags::ANY)
        } else if is_array(self.map_type) {
          map.update(&key, &zero, MapFlags::ANY)
        } else {
          map.delete(&key)
        };
        match done {
          Ok(()) => {}
          Err(e) if crate::error::errno_of(&e) == Some(libc::ENOENT) => {}
          Err(e) => return Err(self.map_error("clear", e)),
        }
      }
      Ok(())
    })?)
  }

  /// Every `[key, value]` pair of a hash map, read with the batch syscall
  /// (fewer syscalls than `entries()` on big maps).
  #[napi(ts_return_type = "Array<[any, any]>")]
  pub fn get_batch<'e>(&self, env: &'e Env) -> Result<Vec<Vec<Unknown<'e>>>> {
    Ok(self.batch(env, false)?)
  }

  /// Every `[key, value]` pair of a hash map, removed as it is read: for
  /// counters that the program keeps adding to, nothing is counted twice or
  /// lost between the read and the delete.
  #[napi(ts_return_type = "Array<[any, any]>")]
  pub fn lookup_and_delete_batch<'e>(&self, env: &'e Env) -> Result<Vec<Vec<Unknown<'e>>>> {
    Ok(self.batch(env, true)?)
  }

  /// Streams the records of a BPF_MAP_TYPE_RINGBUF map: `callback(record)`
  /// once per record, on the main thread, in order. With `type`, records
  /// are decoded into objects; without, they are Buffers (views of the
  /// batch: copy one to keep it); with `batch`, `callback(data, ends)` once
  /// per batch.
  #[napi(ts_args_type = "callback: (record: any, ends?: Uint32Array) => void, options?: RingBufferOptions")]
  pub fn open_ring_buffer(&self, env: Env, callback: Unknown<'_>, options: Option<RingBufferOptions<'_>>) -> Result<EventBuffer> {
    self.check_kind(MapType::RingBuf, "openRingBuffer", "BPF_MAP_TYPE_RINGBUF")?;
    let req = self.request(&env, callback, options.unwrap_or_default().into())?;
    Ok(buffer::open_ring(req)?)
  }

  /// Streams the records of a BPF_MAP_TYPE_PERF_EVENT_ARRAY map:
  /// `callback(cpu, record)` once per record, on the main thread.
  #[napi(ts_args_type = "callback: (cpu: number, record: any) => void, options?: PerfBufferOptions")]
  pub fn open_perf_buffer(&self, env: Env, callback: Unknown<'_>, options: Option<PerfBufferOptions<'_>>) -> Result<EventBuffer> {
    self.check_kind(MapType::PerfEventArray, "openPerfBuffer", "BPF_MAP_TYPE_PERF_EVENT_ARRAY")?;
    let options = options.unwrap_or_default();
    let (page_count, wakeup_bytes) = (options.page_count.unwrap_or(buffer::DEFAULT_PERF_PAGES), options.wakeup_bytes);
    let req = self.request(&env, callback, options.into())?;
    Ok(buffer::open_perf(req, page_count, wakeup_bytes)?)
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

  fn request<'a>(&'a self, env: &'a Env, callback: Unknown<'a>, config: BufferConfig<'a>) -> BpfResult<OpenRequest<'a>> {
    use std::os::fd::{AsFd, AsRawFd};
    let map_fd = self.with_map(|map| Ok(map.as_fd().as_raw_fd()))?;
    Ok(OpenRequest { env, state: &self.state, map_name: &self.name, map_fd, callback, config })
  }
}
