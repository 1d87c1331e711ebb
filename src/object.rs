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
  let (label, source) = match &source {
    Either::A(path) => {
      check_elf_file(path)?;
      (path.clone(), Either::A(path.as_str()))
    }
    Either::B(bytes) => {
      check_elf_bytes("<buffer>", bytes)?;
      ("<buffer>".to_string(), Either::B(&bytes[..]))
    }
  };
  let open = open_checked(&builder, &label, source)?;
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

/// bpf_object__open_file / __open_mem with `builder`'s options, as libbpf-rs
/// calls them, but the pointer returned is checked for what libbpf-rs
/// trusts: libbpf encodes an error as a pointer in the last 4095 bytes of the
/// address space, and an error code it computed wrong (a size past 2^31 in an
/// `int`, from a forged object) fell outside that range and passed as an
/// object, which the first use faulted on. No user-space pointer has the top
/// bit set (x86_64 and arm64), so any such pointer is an error.
fn open_checked(builder: &ObjectBuilder, label: &str, source: Either<&str, &[u8]>) -> BpfResult<libbpf_rs::OpenObject> {
  use libbpf_rs::AsRawLibbpf;
  let opts = builder.as_libbpf_object().as_ptr();
  let ptr = match source {
    Either::A(path) => {
      let path = std::ffi::CString::new(path).map_err(|_| {
        BpfError::new(Code::InvalidValue, format!("{label}: a NUL byte in the path; give the object's file path"))
      })?;
      // SAFETY: a NUL-terminated path and the builder's open options, both alive for the call.
      unsafe { libbpf_sys::bpf_object__open_file(path.as_ptr(), opts) }
    }
    // SAFETY: the bytes and their length, alive for the call (libbpf copies what it keeps), and the options.
    Either::B(bytes) => unsafe { libbpf_sys::bpf_object__open_mem(bytes.as_ptr().cast(), bytes.len() as _, opts) },
  };
  if (ptr as isize) < -4095 {
    return Err(BpfError::new(
      Code::InvalidObject,
      format!(
        "{label} is not a valid BPF object: libbpf returned the error code {} in place of an object; recompile it: npx node-libbpf build prog.bpf.c -o prog.bpf.o",
        ptr as isize
      ),
    ));
  }
  // SAFETY: libbpf_get_error may be called on any pointer an open returns.
  match unsafe { libbpf_sys::libbpf_get_error(ptr as *const _) } {
    // SAFETY: no error: libbpf returned a valid, non-null object, ours to own.
    0 => Ok(unsafe { libbpf_rs::OpenObject::from_ptr(std::ptr::NonNull::new_unchecked(ptr)) }),
    e => Err(diagnose::open_error(label, &libbpf_rs::Error::from_raw_os_error(-e as i32))),
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

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn an_error_code_passed_off_as_an_object_is_an_error() {
    // the shipped bashreadline.bpf.o with five bits flipped: a .kconfig extern's BTF int of 2^31 + 4
    // bytes, which libbpf's open returned as an error code outside its error range (the ELF check
    // refuses the file before libbpf sees it; here libbpf gets it, unchecked)
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/__test__/fixtures/fuzz/sigsegv-kcfg-extern-size--bashreadline.bpf.o");
    let bytes = std::fs::read(path).unwrap();
    let builder = ObjectBuilder::default();
    let e = open_checked(&builder, "<buffer>", Either::B(&bytes)).err().expect("an error, not an object");
    assert_eq!(e.code, Code::InvalidObject, "{}", e.message);
    assert!(e.message.contains("in place of an object"), "{}", e.message);
  }
}
