//! A BPF object: opened from an ELF file or Buffer, configured, loaded into
//! the kernel on first need, and closed with everything it made. The
//! JavaScript `BpfObject` (lib/object.js) wraps an `ObjectHandle`.

use std::{
  cell::{RefCell, RefMut},
  collections::BTreeMap,
  path::Path,
  rc::Rc,
  sync::Arc,
};

use libbpf_rs::{AsRawLibbpf, Link, Map, MapCore, Object, ObjectBuilder, OpenObject, ProgramMut};
use napi::bindgen_prelude::{Buffer, Either, Object as JsObject};
use napi::Env;
use napi_derive::napi;

use crate::{
  btf::{self, GlobalVar},
  error::{err, guard, BpfError, BpfResult, Code, Result},
  libbpf_log,
  poller::Sink,
  program::BpfProgram,
  release::{self, Garbage},
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
  pub mapped: BTreeMap<String, crate::map::Mapped>,
  next_id: u32,
}

pub(crate) type Shared = Rc<RefCell<ObjectState>>;

impl ObjectState {
  fn open(source: String, open: OpenObject) -> Self {
    // SAFETY: the pointer is valid for as long as `open` lives.
    let raw = unsafe { open.as_libbpf_object().as_ref() };
    let globals = btf::of_object(raw).map(|b| btf::globals(&b)).unwrap_or_default();
    let programs = open
      .progs()
      .map(|p| (p.name().to_string_lossy().into_owned(), p.section().to_string_lossy().into_owned()))
      .collect();
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
      let Stage::Open(open) = std::mem::replace(&mut self.stage, Stage::Closed) else {
        unreachable!()
      };
      libbpf_log::clear();
      match open.load() {
        Ok(obj) => self.stage = Stage::Loaded(obj),
        Err(e) => {
          let error = self.load_error(&e);
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

  fn load_error(&self, e: &libbpf_rs::Error) -> BpfError {
    let log = libbpf_log::tail(40);
    let failed_prog = log
      .iter()
      .find_map(|l| l.split("prog '").nth(1).and_then(|r| r.split('\'').next()))
      .map(str::to_string);
    let section = |name: &str| {
      self.programs.iter().find(|(n, _)| n == name).map(|(_, s)| s.clone()).unwrap_or_default()
    };
    if let Some(prog) = &failed_prog {
      let sec = section(prog);
      let kind = sec.split('/').next().unwrap_or("");
      if matches!(kind, "fentry" | "fexit" | "fmod_ret" | "fentry.s" | "fexit.s")
        && crate::error::errno_of(e) == Some(libc::EPERM)
      {
        return BpfError::new(
          Code::NotSupported,
          format!(
            "{}: this kernel refuses {kind} programs at load time (EPERM), so program '{prog}' (SEC(\"{sec}\")) cannot load; \
             use a tracepoint (SEC(\"tp/...\")), raw tracepoint (SEC(\"raw_tp/...\")) or SEC(\"tp_btf/...\") program instead, \
             or a kernel that allows fentry/fexit (see bpf.features())",
            self.source
          ),
        );
      }
    }
    if crate::error::errno_of(e) == Some(libc::ESRCH) && log.iter().any(|l| l.contains("kernel BTF is missing")) {
      if let Some(fix) = crate::diagnose::missing_btf(None) {
        return BpfError::new(Code::NotFound, format!("loading {} into the kernel failed: {fix}", self.source));
      }
    }
    let mut error = BpfError::libbpf(Code::Load, format!("loading {} into the kernel failed", self.source), e);
    if error.code == Code::Permission {
      return error;
    }
    error.code = Code::Load;
    if let Some(prog) = failed_prog {
      error.message.push_str(&format!(" (program '{prog}', SEC(\"{}\"))", section(&prog)));
    }
    let log: Vec<_> = log.into_iter().filter(|l| !l.trim().is_empty()).collect();
    if !log.is_empty() {
      error.message.push_str("\nlibbpf said:\n");
      error.message.push_str(&log.join("\n"));
    }
    error
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
        format!("{source}: program '{name}' was not loaded (its autoload is false): set programs.{name}.autoload = true before load"),
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
fn is_internal(name: &str) -> bool {
  name.contains('.')
}

/// Options of `loadBpfProgram`.
#[napi(object)]
#[derive(Default)]
pub struct LoadOptions {
  /// The object's name in the kernel (prefix of its maps' names); default:
  /// the file name.
  pub name: Option<String>,
  /// A BTF file to use instead of /sys/kernel/btf/vmlinux for CO-RE.
  pub btf_path: Option<String>,
}

/// The native side of a BPF object (lib/object.js wraps it in `BpfObject`).
/// Every method is one crossing; values cross as bytes (Buffers) and
/// layouts as data, and the JavaScript side encodes and decodes them.
#[napi]
pub struct ObjectHandle {
  pub(crate) state: Shared,
}

/// Opens a compiled BPF ELF object (a path or a Buffer holding the file).
/// Nothing enters the kernel until `load()`, an attach or `map()`.
#[napi]
pub fn open_object(source: Either<String, Buffer>, options: Option<LoadOptions>) -> Result<ObjectHandle> {
  guard(|| open(source, options.unwrap_or_default()))
}

fn open(source: Either<String, Buffer>, options: LoadOptions) -> BpfResult<ObjectHandle> {
  libbpf_log::install();
  libbpf_log::clear();
  let mut builder = ObjectBuilder::default();
  if let Some(name) = &options.name {
    builder.name(name).map_err(|e| BpfError::libbpf(Code::InvalidValue, "invalid object name", &e))?;
  }
  if let Some(path) = &options.btf_path {
    if let Some(fix) = crate::diagnose::missing_btf(Some(path)) {
      return err(Code::NotFound, fix);
    }
    builder.btf_custom_path(path).map_err(|e| BpfError::libbpf(Code::InvalidValue, "invalid btfPath", &e))?;
  }
  let (label, opened) = match &source {
    Either::A(path) => {
      check_elf_file(path)?;
      (path.clone(), builder.open_file(path))
    }
    Either::B(bytes) => {
      check_elf_bytes("the Buffer", bytes)?;
      ("<buffer>".to_string(), builder.open_memory(bytes))
    }
  };
  let open = opened.map_err(|e| {
    let mut error = BpfError::libbpf(Code::InvalidObject, format!("{label} is not a valid BPF object"), &e);
    error.code = Code::InvalidObject;
    let log = libbpf_log::tail(5);
    if !log.is_empty() {
      error.message.push_str(&format!(" (libbpf: {})", log.join(" ").trim()));
    }
    error.message.push_str("; compile it with: npx node-libbpf build prog.bpf.c -o prog.bpf.o");
    error
  })?;
  // libbpf crashes loading a struct_ops map that is not in a .struct_ops
  // section (a corrupt object can make one); node-libbpf cannot register
  // struct_ops anyway
  if let Some(map) = open.maps().find(|m| m.map_type() == libbpf_rs::MapType::StructOps) {
    return err(
      Code::NotSupported,
      format!(
        "{label}: map '{}' is a BPF_MAP_TYPE_STRUCT_OPS map; node-libbpf does not load struct_ops (use bpftool struct_ops register)",
        map.name().to_string_lossy()
      ),
    );
  }
  Ok(ObjectHandle { state: Rc::new(RefCell::new(ObjectState::open(label, open))) })
}

fn check_elf_file(path: &str) -> BpfResult<()> {
  use std::io::Read;
  let mut file = std::fs::File::open(path).map_err(|e| match e.kind() {
    std::io::ErrorKind::NotFound => {
      BpfError::new(Code::NotFound, format!("BPF object {path} does not exist (did `npm run build` compile it?)"))
    }
    _ => BpfError::new(Code::InvalidObject, format!("cannot read BPF object {path}: {e}")),
  })?;
  let mut head = [0u8; 64];
  let n = file.read(&mut head).unwrap_or(0);
  check_elf_bytes(path, &head[..n])
}

fn check_elf_bytes(label: &str, bytes: &[u8]) -> BpfResult<()> {
  if bytes.len() < 4 || &bytes[..4] != b"\x7fELF" {
    let what = if Path::new(label).extension().is_some_and(|e| e == "c") { " (a C source?)" } else { "" };
    return err(
      Code::InvalidObject,
      format!(
        "{label} is not an ELF file{what}; compile the BPF program first: npx node-libbpf build prog.bpf.c -o prog.bpf.o"
      ),
    );
  }
  Ok(())
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

impl ObjectHandle {
  pub(crate) fn state(&self) -> BpfResult<RefMut<'_, ObjectState>> {
    borrow(&self.state)
  }
}

#[napi]
impl ObjectHandle {
  /// Loads every program and map into the kernel (the verifier runs here).
  #[napi]
  pub fn load(&self) -> Result<()> {
    guard(|| self.state()?.ensure_loaded().map(|_| ()))
  }

  /// Whether the object is in the kernel.
  #[napi(getter)]
  pub fn loaded(&self) -> Result<bool> {
    guard(|| Ok(matches!(self.state()?.stage, Stage::Loaded(_))))
  }

  /// Whether `close()` was called.
  #[napi(getter)]
  pub fn closed(&self) -> Result<bool> {
    guard(|| Ok(matches!(self.state()?.stage, Stage::Closed)))
  }

  /// The file name, or `<buffer>`.
  #[napi(getter)]
  pub fn source(&self) -> Result<String> {
    guard(|| Ok(self.state()?.source.clone()))
  }

  /// The programs, keyed by their C function name, in ELF order.
  #[napi(getter, ts_return_type = "Record<string, BpfProgram>")]
  pub fn programs<'env>(&self, env: &'env Env) -> Result<JsObject<'env>> {
    guard(|| {
      let list = self.state()?.programs.clone();
      let mut programs = JsObject::new(env)?;
      for (name, section) in list {
        programs.set(&name, BpfProgram::new(self.state.clone(), name.clone(), section))?;
      }
      Ok(programs)
    })
  }

  /// The names of the object's maps (data-section maps excluded).
  #[napi(getter)]
  pub fn map_names(&self) -> Result<Vec<String>> {
    guard(|| Ok(self.state()?.maps.clone()))
  }

  /// The layout of a named struct, union, enum or typedef of the object's
  /// BTF (`'event'` or `'struct event'`).
  #[napi(ts_return_type = "TypeLayout")]
  pub fn type_layout(&self, name: String) -> Result<serde_json::Value> {
    guard(|| self.state()?.type_layout(&name))
  }

  /// The names of the structs, unions, enums and typedefs of the object's
  /// BTF (its own types and the kernel types it uses).
  #[napi]
  pub fn type_names(&self) -> Result<Vec<String>> {
    guard(|| {
      let state = self.state()?;
      let mut names = state
        .with_btf(|b| {
          btf::named_types(b)
            .map(|t| {
              let name = t.name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
              match t.kind() {
                libbpf_rs::btf::BtfKind::Struct => format!("struct {name}"),
                libbpf_rs::btf::BtfKind::Union => format!("union {name}"),
                libbpf_rs::btf::BtfKind::Enum | libbpf_rs::btf::BtfKind::Enum64 => format!("enum {name}"),
                _ => name,
              }
            })
            .collect::<Vec<_>>()
        })
        .unwrap_or_default();
      names.sort();
      names.dedup();
      Ok(names)
    })
  }

  /// Detaches every link this object made; programs and maps stay loaded.
  #[napi]
  pub fn detach_all(&self) -> Result<()> {
    guard(|| {
      let links = std::mem::take(&mut self.state()?.links);
      let _hooks = crate::release::hooks();
      drop(links);
      Ok(())
    })
  }

  /// Stops the object's buffers at once and releases what it holds in the
  /// kernel (links, programs, maps) on another thread: returns at once,
  /// however many links there are. Idempotent.
  #[napi]
  pub fn close(&self) -> Result<()> {
    guard(|| {
      let garbage = self.state()?.close();
      release::later(garbage, None);
      Ok(())
    })
  }

  /// `close()`, and a promise that resolves once the kernel has released
  /// everything the object held (after an earlier `close()` too).
  #[napi(ts_return_type = "Promise<void>")]
  pub fn close_async<'env>(&self, env: &'env Env) -> Result<JsObject<'env>> {
    guard(|| {
      let garbage = self.state()?.close();
      let (deferred, promise) = env.create_deferred::<(), fn(Env) -> napi::Result<()>>()?;
      release::later(garbage, Some(Box::new(move || deferred.resolve(|_| Ok(())))));
      Ok(promise)
    })
  }
}

/// A program argument: a `BpfProgram` of this object or a program name
/// (`None`: the caller passed undefined, typically a misspelled
/// `obj.programs.<name>`).
pub(crate) type ProgramArg<'a> = Option<Either<String, &'a BpfProgram>>;

pub(crate) fn program_name(state: &Shared, prog: &ProgramArg<'_>) -> BpfResult<String> {
  match prog {
    Some(Either::A(name)) => Ok(name.clone()),
    Some(Either::B(p)) if Rc::ptr_eq(&p.state, state) => Ok(p.name.clone()),
    Some(Either::B(p)) => err(
      Code::InvalidArg,
      format!("program '{}' belongs to another BPF object: attach it through that object", p.name),
    ),
    None => {
      let state = borrow(state)?;
      let known: Vec<_> = state.programs.iter().map(|(n, _)| n.as_str()).collect();
      err(
        Code::InvalidArg,
        format!(
          "the program argument is undefined (a misspelled obj.programs.<name>?); {} has the programs: {}",
          state.source,
          known.join(", ")
        ),
      )
    }
  }
}
