//! BTF: what the object's own type information says about its globals.
//! (Typed decoding of events and maps will grow from here.)

use std::ffi::OsStr;

use libbpf_rs::btf::{types, BtfKind, BtfType};
use libbpf_rs::Btf;

/// How a global's bytes read as a JavaScript value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarKind {
  /// An integer (char included) of 1, 2, 4 or 8 bytes.
  Int { signed: bool },
  Bool,
  /// An enum, read as its number.
  Enum { signed: bool },
  /// A pointer, read as a BigInt address.
  Ptr,
  /// Anything else (arrays, structs, floats): a Buffer.
  Bytes,
}

/// One global variable of a data section (`.rodata`, `.data`, `.bss`, ...).
#[derive(Debug, Clone)]
pub struct GlobalVar {
  pub name: String,
  /// The ELF section (the DATASEC name), e.g. `.rodata`.
  pub section: String,
  pub offset: usize,
  pub size: usize,
  pub kind: ScalarKind,
  /// A C-like spelling of the type for messages (`u32`, `s64`, `char[16]`).
  pub type_name: String,
}

impl GlobalVar {
  /// `.rodata` globals (`const volatile`) are frozen by the kernel at load.
  pub fn read_only(&self) -> bool {
    self.section.starts_with(".rodata")
  }
}

fn name_of(name: Option<&OsStr>) -> String {
  name.map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Every global variable the object's BTF declares in a data section.
pub fn globals(obj: &libbpf_sys::bpf_object) -> Vec<GlobalVar> {
  let Ok(Some(btf)) = Btf::from_bpf_object(obj) else {
    return Vec::new();
  };
  let mut out = Vec::new();
  for sec in btf.type_by_kind::<types::DataSec<'_>>() {
    let section = name_of(sec.name());
    if ![".rodata", ".data", ".bss"].iter().any(|s| section.starts_with(s)) {
      continue;
    }
    for info in sec.iter() {
      let Some(var) = btf.type_by_id::<types::Var<'_>>(info.ty) else {
        continue;
      };
      // function-local statics (`prog.zero`) are not the user's globals
      if var.linkage() == types::Linkage::Static || name_of(var.name()).contains('.') {
        continue;
      }
      let Some(ty) = var.next_type() else { continue };
      let (kind, type_name) = scalar_kind(ty, info.size);
      out.push(GlobalVar {
        name: name_of(var.name()),
        section: section.clone(),
        offset: info.offset as usize,
        size: info.size,
        kind,
        type_name,
      });
    }
  }
  out
}

fn scalar_kind(ty: BtfType<'_>, size: usize) -> (ScalarKind, String) {
  let ty = ty.skip_mods_and_typedefs();
  match ty.kind() {
    BtfKind::Int => {
      let int = types::Int::try_from(ty).expect("kind checked");
      match int.encoding {
        types::IntEncoding::Bool => (ScalarKind::Bool, "bool".into()),
        types::IntEncoding::Signed => (ScalarKind::Int { signed: true }, format!("s{}", size * 8)),
        types::IntEncoding::Char => (ScalarKind::Int { signed: true }, "char".into()),
        types::IntEncoding::None => (ScalarKind::Int { signed: false }, format!("u{}", size * 8)),
      }
    }
    BtfKind::Enum => {
      let e = types::Enum::try_from(ty).expect("kind checked");
      (ScalarKind::Enum { signed: e.is_signed() }, format!("enum {}", name_of(ty.name())))
    }
    BtfKind::Enum64 => {
      let e = types::Enum64::try_from(ty).expect("kind checked");
      (ScalarKind::Enum { signed: e.is_signed() }, format!("enum {}", name_of(ty.name())))
    }
    BtfKind::Ptr => (ScalarKind::Ptr, "pointer".into()),
    BtfKind::Array => {
      let arr = types::Array::try_from(ty).expect("kind checked");
      let elem = arr.contained_type().skip_mods_and_typedefs();
      let elem_name = match elem.name() {
        Some(n) => n.to_string_lossy().into_owned(),
        None => "?".into(),
      };
      (ScalarKind::Bytes, format!("{elem_name}[{}]", arr.capacity()))
    }
    BtfKind::Struct => (ScalarKind::Bytes, format!("struct {}", name_of(ty.name()))),
    BtfKind::Union => (ScalarKind::Bytes, format!("union {}", name_of(ty.name()))),
    _ => (ScalarKind::Bytes, format!("{} bytes", size)),
  }
}
