//! Global variables: `const volatile` (`.rodata`) before load, `.data` and
//! `.bss` before and after load (through the kernel's mmapped map), located
//! by name, offset and size from the object's BTF.

use libbpf_rs::{AsRawLibbpf, MapCore, MapFlags};
use napi::bindgen_prelude::{BigInt, Buffer, Either4};
use napi_derive::napi;

use crate::{
  btf::{GlobalVar, ScalarKind},
  error::{err, BpfError, BpfResult, Code, Result},
  object::{BpfObject, ObjectState, Stage},
};

/// A global's value in JavaScript: a number (integers up to 32 bits, enums),
/// a bigint (64-bit integers, pointers), a boolean, or a Buffer (arrays,
/// structs; any global takes a Buffer of its exact size).
pub type GlobalValue = Either4<f64, BigInt, bool, Buffer>;

const BPF_F_MMAPABLE: u32 = 1 << 10;

#[napi]
impl BpfObject {
  /// Sets a global variable by name. `const volatile` globals (`.rodata`)
  /// only before load; `.data`/`.bss` globals any time. The value must fit
  /// the variable's BTF type (size and signedness).
  #[napi]
  pub fn set_global_variable(
    &self,
    name: String,
    #[napi(ts_arg_type = "number | bigint | boolean | Buffer")] value: GlobalValue,
  ) -> Result<()> {
    let mut state = self.state.borrow_mut();
    let var = find_global(&state, &name)?;
    let bytes = encode(&var, &value)?;
    Ok(with_section(&mut state, &var, |section| {
      section[var.offset..var.offset + var.size].copy_from_slice(&bytes);
      true
    })?)
  }

  /// Reads a global variable by name (after load: the kernel's current value).
  #[napi(ts_return_type = "number | bigint | boolean | Buffer")]
  pub fn get_global_variable(&self, name: String) -> Result<GlobalValue> {
    let mut state = self.state.borrow_mut();
    let var = find_global(&state, &name)?;
    let mut bytes = Vec::new();
    with_section(&mut state, &var, |section| {
      bytes.extend_from_slice(&section[var.offset..var.offset + var.size]);
      false
    })?;
    Ok(decode(&var, &bytes))
  }

  /// The object's global variables: name, ELF section, size and type.
  #[napi(getter)]
  pub fn globals(&self) -> Vec<GlobalInfo> {
    let state = self.state.borrow();
    state
      .globals
      .iter()
      .map(|g| GlobalInfo {
        name: g.name.clone(),
        section: g.section.clone(),
        size: g.size as u32,
        r#type: g.type_name.clone(),
      })
      .collect()
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
  let missing = || {
    BpfError::new(Code::UnknownName, format!("{source}: no map for section {} of global '{}'", var.section, var.name))
  };
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
      let mmapped = unsafe { libbpf_sys::bpf_map__map_flags(raw) } & BPF_F_MMAPABLE != 0;
      if mmapped {
        let mut size = 0u64;
        // SAFETY: for a loaded mmapable map libbpf returns its live mapping,
        // `size` bytes long, valid while the object is loaded. Read-only
        // (.rodata) mappings are only read: the writer path refuses them.
        let ptr = unsafe { libbpf_sys::bpf_map__initial_value(raw, &mut size) };
        if ptr.is_null() {
          return Err(missing());
        }
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

fn value_kind(value: &GlobalValue) -> &'static str {
  match value {
    Either4::A(_) => "number",
    Either4::B(_) => "bigint",
    Either4::C(_) => "boolean",
    Either4::D(_) => "Buffer",
  }
}

fn encode(var: &GlobalVar, value: &GlobalValue) -> BpfResult<Vec<u8>> {
  let invalid = |why: String| {
    err(Code::InvalidValue, format!("global '{}' is a {} ({} bytes): {why}", var.name, var.type_name, var.size))
  };
  if let Either4::D(buf) = value {
    if buf.len() != var.size {
      return invalid(format!("got a Buffer of {} bytes; pass exactly {}", buf.len(), var.size));
    }
    return Ok(buf.to_vec());
  }
  let (signed, bool_only) = match var.kind {
    ScalarKind::Int { signed } | ScalarKind::Enum { signed } => (signed, false),
    ScalarKind::Ptr => (false, false),
    ScalarKind::Bool => (false, true),
    ScalarKind::Bytes => return invalid(format!("a {} cannot be set from a {}; pass a Buffer", var.type_name, value_kind(value))),
  };
  let n: i128 = match value {
    Either4::A(x) => {
      if !x.is_finite() || x.fract() != 0.0 {
        return invalid(format!("{x} is not an integer"));
      }
      if x.abs() > 9007199254740991.0 {
        return invalid(format!("{x} is beyond Number.MAX_SAFE_INTEGER; pass a BigInt"));
      }
      *x as i128
    }
    Either4::B(b) => bigint_to_i128(b).ok_or_else(|| {
      BpfError::new(Code::InvalidValue, format!("global '{}' is a {}: the BigInt is out of range", var.name, var.type_name))
    })?,
    Either4::C(b) => i128::from(*b),
    Either4::D(_) => unreachable!(),
  };
  if bool_only && !matches!(value, Either4::C(_)) && !(n == 0 || n == 1) {
    return invalid(format!("{n} is not a boolean; pass true or false"));
  }
  let bits = var.size as u32 * 8;
  let (min, max) = if signed { (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1) } else { (0, (1i128 << bits) - 1) };
  if n < min || n > max {
    return invalid(format!("{n} does not fit (range {min}..{max})"));
  }
  Ok(n.to_le_bytes()[..var.size].to_vec())
}

fn bigint_to_i128(b: &BigInt) -> Option<i128> {
  let magnitude = match b.words.as_slice() {
    [] => 0u128,
    [lo] => u128::from(*lo),
    [lo, hi] => u128::from(*lo) | (u128::from(*hi) << 64),
    _ => return None,
  };
  let magnitude = i128::try_from(magnitude).ok()?;
  Some(if b.sign_bit { -magnitude } else { magnitude })
}

fn decode(var: &GlobalVar, bytes: &[u8]) -> GlobalValue {
  let signed = match var.kind {
    ScalarKind::Bytes => return Either4::D(bytes.to_vec().into()),
    ScalarKind::Bool => return Either4::C(bytes.iter().any(|b| *b != 0)),
    ScalarKind::Int { signed } | ScalarKind::Enum { signed } => signed,
    ScalarKind::Ptr => false,
  };
  if !matches!(bytes.len(), 1 | 2 | 4 | 8) {
    return Either4::D(bytes.to_vec().into());
  }
  let mut raw = [0u8; 8];
  raw[..bytes.len()].copy_from_slice(bytes);
  let unsigned = u64::from_le_bytes(raw);
  let shift = 64 - bytes.len() as u32 * 8;
  let value = if signed { ((unsigned << shift) as i64 >> shift) as i128 } else { unsigned as i128 };
  if bytes.len() == 8 || var.kind == ScalarKind::Ptr {
    return Either4::B(if signed { BigInt::from(value as i64) } else { BigInt::from(value as u64) });
  }
  Either4::A(value as f64)
}
