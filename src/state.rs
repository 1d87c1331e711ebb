//! The state model of a BPF object, with no N-API in it: where the object
//! is in its life (`Stage`), what its JavaScript handles share
//! (`ObjectState`), and how a call borrows it (`borrow`). The N-API class
//! is src/object.rs.

use std::{
  cell::{RefCell, RefMut},
  collections::BTreeMap,
  rc::Rc,
  sync::Arc,
};

use libbpf_rs::{AsRawLibbpf, Link, Map, MapCore, Object, OpenObject, ProgramMut};

use crate::{
  btf::{self, GlobalVar},
  diagnose,
  error::{err, BpfError, BpfResult, Code},
  libbpf_log,
  queue::Sink,
  release::{self, Garbage},
  signals,
};

/// Where the object is in its life.
pub(crate) enum Stage {
  /// Opened, not yet in the kernel: `.rodata` can still be set.
  Open(OpenObject),
  /// In the kernel.
  Loaded(Object),
  /// The kernel refused it; the message says why.
  Failed(String),
  Closed,
}

/// What JavaScript handles of one object share.
pub(crate) struct ObjectState {
  /// The file name, or `<buffer>`, for messages.
  pub source: String,
  pub stage: Stage,
  pub globals: Vec<GlobalVar>,
  /// (name, section) of each program, in ELF order.
  pub programs: Vec<(String, String)>,
  pub maps: Vec<String>,
  /// Attachments by link id; a perf-event attach on every CPU is one entry.
  pub links: BTreeMap<u32, Vec<Link>>,
  /// The ring and perf buffers opened on its maps (closed ones are pruned
  /// when the next one opens).
  pub buffers: Vec<Arc<Sink>>,
  /// BPF_F_MMAPABLE array maps mapped into this process (`readMapped`),
  /// unmapped at close: a mapping holds its map in the kernel.
  pub mapped: BTreeMap<String, crate::mmap::array::Mapped>,
  next_id: u32,
}

pub(crate) type Shared = Rc<RefCell<ObjectState>>;

impl ObjectState {
  pub fn open(source: String, open: OpenObject) -> Self {
    // SAFETY: the pointer is valid for as long as `open` lives.
    let raw = unsafe { open.as_libbpf_object().as_ref() };
    let globals = btf::of_object(raw).map(|b| btf::globals(&b)).unwrap_or_default();
    let programs =
      open.progs().map(|p| (p.name().to_string_lossy().into_owned(), p.section().to_string_lossy().into_owned())).collect();
    let maps = open
      .maps()
      .filter(|m| !is_internal(&m.name().to_string_lossy()))
      .map(|m| m.name().to_string_lossy().into_owned())
      .collect();
    ObjectState {
      source,
      stage: Stage::Open(open),
      globals,
      programs,
      maps,
      links: BTreeMap::new(),
      buffers: Vec::new(),
      mapped: BTreeMap::new(),
      next_id: 1,
    }
  }

  /// Loads the object into the kernel if it is not there yet.
  pub fn ensure_loaded(&mut self) -> BpfResult<&mut Object> {
    if let Stage::Open(_) = self.stage {
      let Stage::Open(open) = std::mem::replace(&mut self.stage, Stage::Closed) else { unreachable!() };
      libbpf_log::clear();
      // (the verifier gives up on a pending signal: another profiler's SIGPROF every millisecond)
      match signals::held(|| open.load()) {
        Ok(obj) => self.stage = Stage::Loaded(obj),
        Err(e) => {
          let error = diagnose::load_error(&self.source, &self.programs, &e);
          self.stage = Stage::Failed(error.message.clone());
          return Err(error);
        }
      }
    }
    match &self.stage {
      Stage::Failed(why) => return err(Code::Load, format!("{} could not be loaded earlier: {why}", self.source)),
      Stage::Closed => return self.closed(),
      Stage::Loaded(_) | Stage::Open(_) => {}
    }
    match &mut self.stage {
      Stage::Loaded(obj) => Ok(obj),
      _ => unreachable!(),
    }
  }

  pub fn closed<T>(&self) -> BpfResult<T> {
    err(Code::Closed, format!("{} is closed: load it again with loadBpfProgram()", self.source))
  }

  pub fn check_open(&self) -> BpfResult<()> {
    match self.stage {
      Stage::Closed => self.closed(),
      _ => Ok(()),
    }
  }

  /// A loaded program by name.
  pub fn program(&mut self, name: &str) -> BpfResult<ProgramMut<'_>> {
    if !self.programs.iter().any(|(n, _)| n == name) {
      let known: Vec<_> = self.programs.iter().map(|(n, _)| n.as_str()).collect();
      return err(
        Code::UnknownName,
        format!("{} has no program named '{name}'; its programs are: {}", self.source, known.join(", ")),
      );
    }
    let source = self.source.clone();
    let obj = self.ensure_loaded()?;
    let prog = obj.progs_mut().find(|p| p.name() == name).expect("listed at open");
    if !prog.autoload() {
      return err(
        Code::Load,
        format!(
          "{source}: program '{name}' was not loaded (its autoload is false): set programs.{name}.autoload = true before load"
        ),
      );
    }
    Ok(prog)
  }

  /// A loaded map by name.
  pub fn map(&mut self, name: &str) -> BpfResult<Map<'_>> {
    if !self.maps.iter().any(|n| n == name) && !is_internal(name) {
      let names = self.maps.join(", ");
      return err(Code::UnknownName, format!("{} has no map named '{name}'; its maps are: {names}", self.source));
    }
    let source = self.source.clone();
    let obj = self.ensure_loaded()?;
    obj
      .maps()
      .find(|m| m.name() == name)
      .ok_or_else(|| BpfError::new(Code::UnknownName, format!("{source} has no map named '{name}'")))
  }

  /// A new id for a link or a buffer.
  pub fn next_id(&mut self) -> u32 {
    let id = self.next_id;
    self.next_id += 1;
    id
  }

  /// Runs `f` on the object's BTF (None: closed, or compiled without -g).
  pub fn with_btf<T>(&self, f: impl FnOnce(&libbpf_rs::Btf<'_>) -> T) -> Option<T> {
    let raw = match &self.stage {
      Stage::Open(open) => open.as_libbpf_object(),
      Stage::Loaded(obj) => obj.as_libbpf_object(),
      Stage::Failed(_) | Stage::Closed => return None,
    };
    // SAFETY: the object outlives this call.
    btf::of_object(unsafe { raw.as_ref() }).map(|b| f(&b))
  }

  /// A map of the object by name, opened or loaded.
  pub fn raw_map(&self, name: &str) -> Option<*mut libbpf_sys::bpf_map> {
    let raw = match &self.stage {
      Stage::Open(open) => open.as_libbpf_object(),
      Stage::Loaded(obj) => obj.as_libbpf_object(),
      Stage::Failed(_) | Stage::Closed => return None,
    };
    let name = std::ffi::CString::new(name).ok()?;
    // SAFETY: a live object; libbpf returns NULL when there is no such map.
    let map = unsafe { libbpf_sys::bpf_object__find_map_by_name(raw.as_ptr(), name.as_ptr()) };
    (!map.is_null()).then_some(map)
  }

  /// The codec layout of a named struct, union, enum or typedef.
  pub fn type_layout(&self, name: &str) -> BpfResult<serde_json::Value> {
    self.check_open()?;
    let found = self.with_btf(|b| btf::find_named(b, name).map(|t| btf::layout(b, t)).ok_or_else(|| btf::struct_names(b)));
    match found {
      Some(Ok(layout)) => Ok(layout),
      Some(Err(names)) => err(
        Code::UnknownName,
        format!(
          "{} has no type named '{name}'; its structs are: {} (clang keeps a struct in BTF only when a map, a global or \
           a function signature uses it: to keep one used only through local pointers, declare \
           `struct {bare} *unused_{bare} __attribute__((unused));`)",
          self.source,
          if names.is_empty() { "(none)".to_string() } else { names.join(", ") },
          bare = name.rsplit(' ').next().unwrap_or(name),
        ),
      ),
      None => err(Code::UnknownName, format!("{} has no BTF type information: compile it with clang -g", self.source)),
    }
  }

  pub fn add_link(&mut self, links: Vec<Link>) -> u32 {
    let id = self.next_id();
    self.links.insert(id, links);
    id
  }

  /// Keeps a buffer opened on one of the object's maps, to close with it.
  pub fn add_buffer(&mut self, sink: Arc<Sink>) {
    // closed ones whose consumer is freed already are done with
    self.buffers.retain(|s| !s.is_closed() || !s.is_freed());
    self.buffers.push(sink);
  }

  /// The one close path of an object: its buffers stop delivering at once,
  /// and what the kernel holds (links, programs, maps) is returned, to be
  /// released off the JS thread (see src/release.rs).
  pub fn close(&mut self) -> Garbage {
    self.mapped.clear();
    // buffers closed before (by their own close()) are waited for too
    let consumers = std::mem::take(&mut self.buffers)
      .iter()
      .filter_map(|sink| {
        sink.close();
        sink.freed()
      })
      .collect();
    Garbage::new(consumers, std::mem::take(&mut self.links), std::mem::replace(&mut self.stage, Stage::Closed))
  }
}

impl Drop for ObjectState {
  fn drop(&mut self) {
    release::later(self.close(), None);
  }
}

/// libbpf's maps for data sections (`name.rodata`, `.bss`, `.kconfig`, ...).
pub(crate) fn is_internal(name: &str) -> bool {
  name.contains('.')
}

/// The state of an object for one call. JavaScript cannot run while it is
/// borrowed (values cross as bytes, converted before the borrow); should a
/// call still come back in (a getter of an argument calling the object), it
/// gets a coded error instead of a panic.
pub(crate) fn borrow(state: &Shared) -> BpfResult<RefMut<'_, ObjectState>> {
  state.try_borrow_mut().map_err(|_| {
    BpfError::new(
      Code::Reentrant,
      "a BPF object was called from inside another call on it (a getter or Proxy trap of a value passed to it?); \
       make the call after the first one returns",
    )
  })
}
