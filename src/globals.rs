//! Global variables: `const volatile` (`.rodata`) before load, `.data` and
//! `.bss` before and after load (through the kernel's mmapped map), located
//! by name, offset and size from the object's BTF. Their bytes cross to
//! JavaScript, where the codec (lib/core/codec.js) reads and writes them.

use libbpf_rs::{AsRawLibbpf, MapCore, MapFlags};
use napi::bindgen_prelude::Buffer;
use napi_derive::napi;

use crate::{
  btf::GlobalVar,
  error::{err, guard, BpfError, BpfResult, Code, Result},
  object::ObjectHandle,
  state::{ObjectState, Stage},
};

#[napi]
impl ObjectHandle {
  /// Writes the bytes of a global variable (lib/core/object.js encodes them from
  /// its layout). `const volatile` globals (`.rodata`) only before load;
  /// `.data`/`.bss` globals any time.
  #[napi]
  pub fn write_global(&self, name: String, bytes: Buffer) -> Result<()> {
    guard(|| {
      let mut state = self.state()?;
      let var = find_global(&state, &name)?;
      if bytes.len() != var.size {
        return err(
          Code::InvalidValue,
          format!("global '{name}' ({}) has {} bytes; got {}", var.type_name, var.size, bytes.len()),
        );
      }
      with_section(&mut state, &var, |section| {
        section[var.offset..var.offset + var.size].copy_from_slice(&bytes);
        true
      })
    })
  }

  /// The bytes of a global variable (after load: the kernel's current value).
  #[napi]
  pub fn read_global(&self, name: String) -> Result<Buffer> {
    guard(|| {
      let mut state = self.state()?;
      let var = find_global(&state, &name)?;
      let mut bytes = Vec::new();
      with_section(&mut state, &var, |section| {
        bytes.extend_from_slice(&section[var.offset..var.offset + var.size]);
        false
      })?;
      Ok(bytes.into())
    })
  }

  /// The object's global variables: name, ELF section, size, type and
  /// layout.
  #[napi(getter)]
  pub fn globals(&self) -> Result<Vec<GlobalInfo>> {
    guard(|| {
      Ok(
        self
          .state()?
          .globals
          .iter()
          .map(|g| GlobalInfo {
            name: g.name.clone(),
            section: g.section.clone(),
            size: g.size as u32,
            r#type: g.type_name.clone(),
            layout: g.layout.clone(),
          })
          .collect(),
      )
    })
  }
}

/// A global variable of the object.
#[napi(object)]
pub struct GlobalInfo {
  pub name: String,
  /// `.rodata`, `.data`, `.bss`, ...
  pub section: String,
  pub size: u32,
  /// A C spelling of the type: `u32`, `s64`, `bool`, `char[16]`, ...
  pub r#type: String,
  /// How the codec reads it.
  #[napi(ts_type = "TypeLayout")]
  pub layout: serde_json::Value,
}

fn find_global(state: &ObjectState, name: &str) -> BpfResult<GlobalVar> {
  state.check_open()?;
  if let Some(var) = state.globals.iter().find(|g| g.name == name) {
    return Ok(var.clone());
  }
  let known: Vec<_> = state.globals.iter().map(|g| g.name.as_str()).collect();
  err(
    Code::UnknownName,
    format!(
      "{} has no global variable '{name}'; its globals are: {} (a global needs BTF: compile with clang -g)",
      state.source,
      if known.is_empty() { "(none)".to_string() } else { known.join(", ") }
    ),
  )
}

/// Runs `f` on the bytes of the global's section: the ELF's initial image
/// before load, the kernel's map after. `f` returns whether it wrote.
fn with_section(state: &mut ObjectState, var: &GlobalVar, f: impl FnOnce(&mut [u8]) -> bool) -> BpfResult<()> {
  let source = state.source.clone();
  let missing =
    || BpfError::new(Code::UnknownName, format!("{source}: no map for section {} of global '{}'", var.section, var.name));
  match &mut state.stage {
    Stage::Open(open) => {
      let mut map = open.maps_mut().find(|m| m.name().to_string_lossy().ends_with(&var.section)).ok_or_else(missing)?;
      let section = map.initial_value_mut().ok_or_else(missing)?;
      f(section);
      Ok(())
    }
    Stage::Loaded(obj) => {
      let map = obj.maps().find(|m| m.name().to_string_lossy().ends_with(&var.section)).ok_or_else(missing)?;
      let raw = map.as_libbpf_object().as_ptr();
      // SAFETY: a valid map of a loaded object.
      let mmapped = unsafe { libbpf_sys::bpf_map__map_flags(raw) } & libbpf_sys::BPF_F_MMAPABLE != 0;
      if mmapped {
        let mut size = 0u64;
        // SAFETY: for a loaded mmapable map libbpf returns its live mapping,
        // `size` bytes long, valid while the object is loaded. Read-only
        // (.rodata) mappings are only read: the writer path refuses them.
        let ptr = unsafe { libbpf_sys::bpf_map__initial_value(raw, &mut size) };
        if ptr.is_null() {
          return Err(missing());
        }
        // SAFETY: as above: `size` bytes of the live mapping.
        let section = unsafe { std::slice::from_raw_parts_mut(ptr.cast::<u8>(), size as usize) };
        if var.read_only() {
          let mut copy = section.to_vec();
          if f(&mut copy) {
            return read_only_error(state, var);
          }
          return Ok(());
        }
        f(section);
        return Ok(());
      }
      let key = 0u32.to_ne_bytes();
      let map_error = |e: libbpf_rs::Error| BpfError::libbpf(Code::Map, format!("{source}: section {}", var.section), &e);
      let mut section = map.lookup(&key, MapFlags::ANY).map_err(map_error)?.ok_or_else(missing)?;
      if f(&mut section) {
        if var.read_only() {
          return read_only_error(state, var);
        }
        map.update(&key, &section, MapFlags::ANY).map_err(map_error)?;
      }
      Ok(())
    }
    Stage::Failed(_) | Stage::Closed => state.ensure_loaded().map(|_| ()),
  }
}

fn read_only_error(state: &ObjectState, var: &GlobalVar) -> BpfResult<()> {
  err(
    Code::ReadOnly,
    format!(
      "{}: global '{}' is const volatile ({}), frozen by the kernel at load; set it before obj.load() and before the first attach or getMap()",
      state.source, var.name, var.section
    ),
  )
}
