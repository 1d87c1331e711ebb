//! Maps, byte-level: lookups, updates, deletes and whole-map reads with
//! Buffers, one crossing per call. lib/core/map.js turns JavaScript keys and
//! values into those bytes and back with the map's BTF layouts (listed here
//! as data). Ring and perf buffers are opened on their maps from here.

// libbpf-rs's ErrorKind is the errno, as a number: TooBig is E2BIG, NotFound ENOENT
use libbpf_rs::{ErrorKind, MapCore, MapFlags, MapHandle, MapType};
use napi::bindgen_prelude::{Buffer, Function};
use napi_derive::napi;
use serde_json::{json, Value};

use crate::{
  btf,
  buffer::{self, BufferOptions, NativeBuffer, OpenRequest},
  error::{err, guard, BpfError, BpfResult, Code, Result},
  mmap::array::Mapped,
  object::ObjectHandle,
  state::{borrow, ObjectState, Shared, Stage},
  tsfn::DispatchArgs,
};

/// A map of an object, as `obj.maps` lists it and `obj.getMap()` describes
/// it.
#[napi(object)]
#[derive(Clone)]
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

/// The native side of a map of a loaded object (lib/core/map.js wraps it in
/// `BpfMap`). Per-CPU values cross as one Buffer of one value per possible
/// CPU, back to back.
#[napi]
pub struct NativeMap {
  state: Shared,
  info: MapInfo,
  map_type: MapType,
}

#[napi]
impl ObjectHandle {
  /// A map by name (loads the object if it is not loaded yet).
  #[napi]
  pub fn map(&self, name: String) -> Result<NativeMap> {
    guard(|| {
      let mut state = self.state()?;
      state.ensure_loaded()?;
      let raw = state.raw_map(&name).filter(|_| state.maps.contains(&name)).ok_or_else(|| unknown_map(&state, &name))?;
      let info = info(&state, &name, raw);
      // SAFETY: a map of the live object.
      let map_type = MapType::from(unsafe { libbpf_sys::bpf_map__type(raw) });
      Ok(NativeMap { state: self.state.clone(), info, map_type })
    })
  }

  /// Whether the map is made when the object loads (default true). A map
  /// of a type the kernel lacks (task storage before 5.11) is left out this
  /// way, with the programs that use it left out or branching around it.
  /// Only before load (ERR_BPF_READ_ONLY after).
  #[napi]
  pub fn set_map_autocreate(&self, name: String, autocreate: bool) -> Result<()> {
    guard(|| {
      let mut state = self.state()?;
      if !state.maps.contains(&name) {
        return Err(unknown_map(&state, &name));
      }
      let source = state.source.clone();
      match &mut state.stage {
        Stage::Open(open) => {
          let mut map = open.maps_mut().find(|m| m.name() == name.as_str()).expect("listed at open");
          map.set_autocreate(autocreate).map_err(|e| BpfError::libbpf(Code::InvalidValue, format!("map '{name}'"), &e))
        }
        Stage::Closed => state.closed(),
        _ => err(Code::ReadOnly, format!("{source} is loaded already: call setMapAutocreate('{name}', ...) before load() and before the first attach or getMap()")),
      }
    })
  }

  /// The object's maps (data-section maps excluded) with their types and
  /// layouts; no load needed.
  #[napi(getter)]
  pub fn maps(&self) -> Result<Vec<MapInfo>> {
    guard(|| {
      let state = self.state()?;
      state.check_open()?;
      Ok(state.maps.iter().filter_map(|name| Some(info(&state, name, state.raw_map(name)?))).collect())
    })
  }
}

fn unknown_map(state: &ObjectState, name: &str) -> BpfError {
  BpfError::new(Code::UnknownName, format!("{} has no map named '{name}'; its maps are: {}", state.source, state.maps.join(", ")))
}

/// What the object says of one of its maps.
fn info(state: &ObjectState, name: &str, raw: *mut libbpf_sys::bpf_map) -> MapInfo {
  // SAFETY: a map of the live object.
  let (t, key_size, value_size, max_entries, key_id, value_id) = unsafe {
    (
      MapType::from(libbpf_sys::bpf_map__type(raw)),
      libbpf_sys::bpf_map__key_size(raw),
      libbpf_sys::bpf_map__value_size(raw),
      libbpf_sys::bpf_map__max_entries(raw),
      libbpf_sys::bpf_map__btf_key_type_id(raw),
      libbpf_sys::bpf_map__btf_value_type_id(raw),
    )
  };
  let (key_layout, value_layout) = match t {
    // an array of instruction addresses, up to the first zero
    MapType::StackTrace => (
      Some(json!({"kind": "int", "size": 4, "signed": false})),
      Some(json!({"kind": "stack", "size": value_size, "len": value_size / 8})),
    ),
    _ => state.with_btf(|b| (btf::layout_by_id(b, key_id), btf::layout_by_id(b, value_id))).unwrap_or((None, None)),
  };
  MapInfo { name: name.to_string(), r#type: map_type_name(t), key_size, value_size, max_entries, key_layout, value_layout }
}

/// libbpf's name of a map type (`percpu_array`).
fn map_type_name(t: MapType) -> String {
  // SAFETY: libbpf returns a static string or NULL.
  let name = unsafe { libbpf_sys::libbpf_bpf_map_type_str(t as u32) };
  if name.is_null() {
    return format!("{t:?}").to_lowercase();
  }
  // SAFETY: a NUL-terminated static string.
  unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy().into_owned()
}

fn is_per_cpu(t: MapType) -> bool {
  matches!(t, MapType::PercpuArray | MapType::PercpuHash | MapType::LruPercpuHash | MapType::PercpuCgroupStorage)
}

fn is_array(t: MapType) -> bool {
  matches!(t, MapType::Array | MapType::PercpuArray)
}

fn possible_cpus() -> BpfResult<usize> {
  libbpf_rs::num_possible_cpus().map_err(|e| BpfError::libbpf(Code::Map, "counting the possible CPUs", &e))
}

impl NativeMap {
  /// Runs `f` on the live map.
  fn with_map<T>(&self, f: impl FnOnce(&libbpf_rs::Map<'_>) -> BpfResult<T>) -> BpfResult<T> {
    let mut state = borrow(&self.state)?;
    let map = state.map(&self.info.name)?;
    f(&map)
  }

  fn name(&self) -> &str {
    &self.info.name
  }

  fn map_error(&self, op: &str, e: libbpf_rs::Error) -> BpfError {
    BpfError::libbpf(Code::Map, format!("map '{}': {op}", self.name()), &e)
  }

  fn check_keyed(&self) -> BpfResult<()> {
    if matches!(self.map_type, MapType::RingBuf | MapType::PerfEventArray) {
      return err(
        Code::InvalidArg,
        format!(
          "map '{}' is a {} map: read it with openRingBuffer()/openPerfBuffer(), not with key/value calls",
          self.name(),
          self.info.r#type
        ),
      );
    }
    Ok(())
  }

  fn check_key(&self, key: &[u8]) -> BpfResult<()> {
    self.check_keyed()?;
    if key.len() != self.info.key_size as usize {
      return err(
        Code::InvalidValue,
        format!("map '{}' has {}-byte keys; got {} bytes", self.name(), self.info.key_size, key.len()),
      );
    }
    Ok(())
  }

  /// The value(s) stored for `key`, back to back (one per CPU for per-CPU maps).
  fn lookup_raw(&self, map: &libbpf_rs::Map<'_>, key: &[u8]) -> BpfResult<Option<Vec<u8>>> {
    if is_per_cpu(self.map_type) {
      let values = map.lookup_percpu(key, MapFlags::ANY).map_err(|e| self.map_error("lookup", e))?;
      return Ok(values.map(|v| v.concat()));
    }
    map.lookup(key, MapFlags::ANY).map_err(|e| self.map_error("lookup", e))
  }

  fn keys_raw(&self) -> BpfResult<Vec<Vec<u8>>> {
    self.check_keyed()?;
    self.with_map(|map| Ok(map.keys().collect()))
  }
}

#[napi]
impl NativeMap {
  /// The map's name, type, sizes and layouts.
  #[napi(getter)]
  pub fn info(&self) -> Result<MapInfo> {
    guard(|| Ok(self.info.clone()))
  }

  /// Whether values are per CPU (one per possible CPU).
  #[napi(getter)]
  pub fn per_cpu(&self) -> Result<bool> {
    guard(|| Ok(is_per_cpu(self.map_type)))
  }

  /// Whether entries cannot be deleted (array maps).
  #[napi(getter)]
  pub fn is_array(&self) -> Result<bool> {
    guard(|| Ok(is_array(self.map_type)))
  }

  /// The bytes stored at `key`, or null.
  #[napi]
  pub fn lookup(&self, key: Buffer) -> Result<Option<Buffer>> {
    guard(|| {
      self.check_key(&key)?;
      Ok(self.with_map(|map| self.lookup_raw(map, &key))?.map(Buffer::from))
    })
  }

  /// Stores `value` (for per-CPU maps: one value per possible CPU, back to
  /// back) at `key`.
  #[napi]
  pub fn update(&self, key: Buffer, value: Buffer) -> Result<()> {
    guard(|| {
      self.check_key(&key)?;
      let size = self.info.value_size as usize;
      let per_cpu = is_per_cpu(self.map_type);
      let expected = if per_cpu { size * possible_cpus()? } else { size };
      if value.len() != expected {
        return err(
          Code::InvalidValue,
          format!("map '{}': a value of {} bytes where {expected} are needed", self.name(), value.len()),
        );
      }
      self.with_map(|map| {
        if per_cpu {
          let values: Vec<Vec<u8>> = value.chunks(size).map(<[u8]>::to_vec).collect();
          map.update_percpu(&key, &values, MapFlags::ANY)
        } else {
          map.update(&key, &value, MapFlags::ANY)
        }
        .map_err(|e| match e.kind() {
          ErrorKind::TooBig => {
            BpfError::new(Code::Map, format!("map '{}' is full ({} entries)", self.name(), self.info.max_entries))
          }
          _ => self.map_error("update", e),
        })
      })
    })
  }

  /// Deletes `key`; returns whether it was there.
  #[napi]
  pub fn delete(&self, key: Buffer) -> Result<bool> {
    guard(|| {
      self.check_key(&key)?;
      if is_array(self.map_type) {
        return err(
          Code::InvalidArg,
          format!("map '{}' is an array map: its entries cannot be deleted; set them to zero or clear()", self.name()),
        );
      }
      self.with_map(|map| match map.delete(&key) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) => Err(self.map_error("delete", e)),
      })
    })
  }

  /// Every key, back to back in one Buffer.
  #[napi]
  pub fn keys(&self) -> Result<Buffer> {
    guard(|| Ok(self.keys_raw()?.concat().into()))
  }

  /// Every entry: `[keys, values]`, each back to back in one Buffer.
  #[napi(ts_return_type = "[Buffer, Buffer]")]
  pub fn entries(&self) -> Result<Vec<Buffer>> {
    guard(|| {
      self.check_keyed()?;
      self.with_map(|map| {
        let (mut keys, mut values) = (Vec::new(), Vec::new());
        for key in map.keys() {
          if let Some(value) = self.lookup_raw(map, &key)? {
            keys.extend_from_slice(&key);
            values.extend_from_slice(&value);
          }
        }
        Ok(vec![keys.into(), values.into()])
      })
    })
  }

  /// How many keys the map holds.
  #[napi]
  pub fn count(&self) -> Result<u32> {
    guard(|| Ok(self.keys_raw()?.len() as u32))
  }

  /// Removes every entry (array maps: sets every value to zero).
  #[napi]
  pub fn clear(&self) -> Result<()> {
    guard(|| {
      let keys = self.keys_raw()?;
      let zero = vec![0u8; self.info.value_size as usize];
      let cpus = possible_cpus()?;
      self.with_map(|map| {
        for key in keys {
          let done = match (is_array(self.map_type), is_per_cpu(self.map_type)) {
            (true, true) => map.update_percpu(&key, &vec![zero.clone(); cpus], MapFlags::ANY),
            (true, false) => map.update(&key, &zero, MapFlags::ANY),
            (false, _) => map.delete(&key),
          };
          match done {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(self.map_error("clear", e)),
          }
        }
        Ok(())
      })
    })
  }

  /// Every entry of a hash map read with the batch syscall: `[keys,
  /// values]`; with `remove`, emptied as it is read.
  #[napi(ts_return_type = "[Buffer, Buffer]")]
  pub fn batch(&self, remove: bool) -> Result<Vec<Buffer>> {
    guard(|| {
      self.check_keyed()?;
      if !matches!(self.map_type, MapType::Hash | MapType::LruHash) {
        return err(
          Code::InvalidArg,
          format!("batch operations need a hash or LRU hash map; map '{}' is a {} map", self.name(), self.info.r#type),
        );
      }
      self.with_map(|map| {
        let (keys, values) = read_batches(map, remove).map_err(|e| self.map_error("batch lookup", e.into()))?;
        Ok(vec![keys.into(), values.into()])
      })
    })
  }

  /// Streams the records of a BPF_MAP_TYPE_RINGBUF map to `dispatch`
  /// (lib/core/dispatch.js), a batch per call.
  #[napi(
    ts_args_type = "dispatch: (data: Buffer, ends: Uint32Array, cpus: Uint32Array | null, losses: number[] | null) => void, options?: BufferOptions"
  )]
  pub fn open_ring_buffer(
    &self,
    dispatch: Function<'_, DispatchArgs, ()>,
    options: Option<BufferOptions>,
  ) -> Result<NativeBuffer> {
    guard(|| self.open_buffer(MapType::RingBuf, "openRingBuffer", "BPF_MAP_TYPE_RINGBUF", dispatch, options, buffer::open_ring))
  }

  /// Streams the records of a BPF_MAP_TYPE_PERF_EVENT_ARRAY map to
  /// `dispatch`, a batch per call, with the CPU of each record.
  #[napi(
    ts_args_type = "dispatch: (data: Buffer, ends: Uint32Array, cpus: Uint32Array | null, losses: number[] | null) => void, options?: BufferOptions"
  )]
  pub fn open_perf_buffer(
    &self,
    dispatch: Function<'_, DispatchArgs, ()>,
    options: Option<BufferOptions>,
  ) -> Result<NativeBuffer> {
    guard(|| {
      self.open_buffer(
        MapType::PerfEventArray,
        "openPerfBuffer",
        "BPF_MAP_TYPE_PERF_EVENT_ARRAY",
        dispatch,
        options,
        buffer::open_perf,
      )
    })
  }
}

/// Every `(keys, values)` of a hash map (not per-CPU), in batches of 256
/// entries or more, until the kernel says ENOENT. Not libbpf-rs's
/// `lookup_batch`: its iterator ends at the first short batch, and the
/// kernel hands out whole buckets, so a batch is short wherever the next
/// bucket does not fit (a full map of 4,096 files read as 511). ENOSPC (a
/// bucket bigger than the batch) doubles the batch.
fn read_batches(map: &libbpf_rs::Map<'_>, remove: bool) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
  use std::os::fd::{AsFd, AsRawFd};
  let fd = map.as_fd().as_raw_fd();
  let (key_size, value_size) = (map.key_size() as usize, map.value_size() as usize);
  let (mut keys, mut values) = (Vec::new(), Vec::new());
  // the kernel's cursor (a bucket index for hash maps); key-sized is enough
  let mut cursor = vec![0u8; key_size.max(8)];
  let mut next = cursor.clone();
  let mut first = true;
  let mut batch = 256usize;
  loop {
    let mut count = batch as u32;
    let (at_keys, at_values) = (keys.len(), values.len());
    keys.resize(at_keys + batch * key_size, 0);
    values.resize(at_values + batch * value_size, 0);
    // SAFETY: the opts are zeroed with their size set; the key and value
    // areas hold `count` entries past where this batch goes; the cursors
    // are key-sized, as libbpf asks.
    let ret = unsafe {
      let mut opts: libbpf_sys::bpf_map_batch_opts = std::mem::zeroed();
      opts.sz = std::mem::size_of::<libbpf_sys::bpf_map_batch_opts>() as _;
      let call = if remove { libbpf_sys::bpf_map_lookup_and_delete_batch } else { libbpf_sys::bpf_map_lookup_batch };
      call(
        fd,
        if first { std::ptr::null_mut() } else { cursor.as_mut_ptr().cast() },
        next.as_mut_ptr().cast(),
        keys.as_mut_ptr().add(at_keys).cast(),
        values.as_mut_ptr().add(at_values).cast(),
        &mut count,
        &opts,
      )
    };
    let errno = if ret < 0 { -ret } else { 0 };
    let got = if errno == 0 || errno == libc::ENOENT { count as usize } else { 0 };
    keys.truncate(at_keys + got * key_size);
    values.truncate(at_values + got * value_size);
    match errno {
      0 => {
        std::mem::swap(&mut cursor, &mut next);
        first = false;
      }
      libc::ENOENT => return Ok((keys, values)),
      libc::ENOSPC if batch < 1 << 20 => batch *= 2,
      libc::EINTR => {}
      _ => return Err(std::io::Error::from_raw_os_error(errno)),
    }
  }
}

type Opener = fn(OpenRequest<'_>) -> BpfResult<(NativeBuffer, std::sync::Arc<crate::queue::Sink>)>;

impl NativeMap {
  fn open_buffer(
    &self,
    want: MapType,
    method: &'static str,
    c_name: &str,
    dispatch: Function<'_, DispatchArgs, ()>,
    options: Option<BufferOptions>,
    opener: Opener,
  ) -> BpfResult<NativeBuffer> {
    if self.map_type != want {
      return err(
        Code::InvalidArg,
        format!("{method}() needs a {c_name} map; map '{}' is a {} map", self.name(), self.info.r#type),
      );
    }
    let map = self.with_map(|map| MapHandle::try_from(map).map_err(|e| self.map_error("duplicating its fd", e)))?;
    let (native, sink) = opener(OpenRequest { method, map, dispatch, options: options.unwrap_or_default() })?;
    borrow(&self.state)?.add_buffer(sink);
    Ok(native)
  }
}

#[napi]
impl NativeMap {
  /// Copies the bytes of a BPF_F_MMAPABLE array map from `offset` into
  /// `target` (all of it), through a mapping of the map into this process:
  /// no syscall once mapped (the first call maps it). Values are
  /// `valueSize` rounded up to 8 bytes apart. Counters the kernel is
  /// bumping meanwhile are read as they are at that instant, each 8-byte
  /// word whole. `offset`: an integer from 0 (checked, not wrapped).
  #[napi]
  pub fn read_mapped(&self, target: Buffer, offset: f64) -> Result<()> {
    guard(|| {
      let mut target = target;
      let offset =
        crate::options::integer(&format!("map '{}' readMapped", self.name()), "offset", offset, crate::options::OFFSET)?;
      let mut state = borrow(&self.state)?;
      state.ensure_loaded()?;
      if !state.mapped.contains_key(self.name()) {
        let raw =
          state.raw_map(self.name()).ok_or_else(|| BpfError::new(Code::Closed, format!("map '{}' is closed", self.name())))?;
        // SAFETY: a map of the live, loaded object.
        let (flags, fd) = unsafe { (libbpf_sys::bpf_map__map_flags(raw), libbpf_sys::bpf_map__fd(raw)) };
        if self.map_type != MapType::Array || flags & libbpf_sys::BPF_F_MMAPABLE == 0 {
          return err(
            Code::InvalidArg,
            format!(
              "readMapped() needs an array map declared with __uint(map_flags, BPF_F_MMAPABLE); map '{}' is a {} map",
              self.name(),
              self.info.r#type
            ),
          );
        }
        let len = (self.info.value_size as usize).div_ceil(8) * 8 * self.info.max_entries as usize;
        let mapped = Mapped::new(fd, len)
          .map_err(|e| BpfError::new(Code::Map, format!("map '{}': mapping it into memory: {e}", self.name())))?;
        state.mapped.insert(self.name().to_string(), mapped);
      }
      let mapped = &state.mapped[self.name()];
      let n = target.len();
      if !usize::try_from(offset).is_ok_and(|offset| mapped.read(offset, &mut target)) {
        return err(
          Code::InvalidValue,
          format!("map '{}': bytes {offset}..{} are outside its {} bytes", self.name(), offset + n as u64, mapped.len()),
        );
      }
      Ok(())
    })
  }
}
