//! A BPF object: opened from an ELF file or Buffer, configured, loaded into
//! the kernel on first need, and closed with everything it made. The
//! JavaScript `BpfObject` (lib/core/object.js) wraps an `ObjectHandle`.

use std::{
  cell::{RefCell, RefMut},
  rc::Rc,
};

use libbpf_rs::ObjectBuilder;
use napi::bindgen_prelude::{Buffer, Either, Object as JsObject};
use napi::Env;
use napi_derive::napi;

use crate::{
  btf,
  diagnose::{self, check_elf_bytes, check_elf_file},
  error::{err, guard, BpfError, BpfResult, Code, Result},
  libbpf_log,
  program::BpfProgram,
  release,
  state::{borrow, ObjectState, Shared, Stage},
};

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

/// The native side of a BPF object (lib/core/object.js wraps it in `BpfObject`).
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
    if let Some(fix) = crate::privileges::missing_btf(Some(path)) {
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
      check_elf_bytes("<buffer>", bytes)?;
      ("<buffer>".to_string(), builder.open_memory(bytes))
    }
  };
  let open = opened.map_err(|e| diagnose::open_error(&label, &e))?;
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
    Some(Either::B(p)) => {
      err(Code::InvalidArg, format!("program '{}' belongs to another BPF object: attach it through that object", p.name))
    }
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
