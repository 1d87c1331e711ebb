//! BTF: the object's own type information, turned into layouts that the
//! codec (lib/core/codec.js) compiles into decoders and encoders. A layout is
//! plain JSON:
//!
//! - `{kind:"int", size, signed}`, `{kind:"bool", size}`, `{kind:"float", size}`
//! - `{kind:"enum", name, size, signed, values:[[name, value], ...]}`
//! - `{kind:"ptr", size:8}`
//! - `{kind:"string", size}` (a `char` array), `{kind:"bytes", size}` (other
//!   byte arrays, opaque types)
//! - `{kind:"array", size, len, elem}`
//! - `{kind:"struct"|"union", name, size, fields:[{name, offset, type,
//!   bitOffset?, bitSize?}]}` (offsets in bytes; bitfields also in bits;
//!   anonymous members are flattened into their parent, as C reads them)
//! - `{kind:"flex", size:0, elem}` (a zero-length trailing array: the rest of
//!   the record, as a Buffer)

use std::ffi::OsStr;

use libbpf_rs::btf::{types, BtfKind, BtfType, HasSize, TypeId};
use libbpf_rs::Btf;
use serde_json::{json, Value};

/// One global variable of a data section (`.rodata`, `.data`, `.bss`, ...).
#[derive(Debug, Clone)]
pub struct GlobalVar {
  pub name: String,
  /// The ELF section (the DATASEC name), e.g. `.rodata`.
  pub section: String,
  pub offset: usize,
  pub size: usize,
  /// A C spelling of the type for messages (`u32`, `s64`, `char[16]`).
  pub type_name: String,
  /// The codec layout of the variable's type.
  pub layout: Value,
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

/// The BTF of an object, if it has any.
pub fn of_object(obj: &libbpf_sys::bpf_object) -> Option<Btf<'_>> {
  Btf::from_bpf_object(obj).ok().flatten()
}

/// Every global variable the object's BTF declares in a data section.
pub fn globals(btf: &Btf<'_>) -> Vec<GlobalVar> {
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
      out.push(GlobalVar {
        name: name_of(var.name()),
        section: section.clone(),
        offset: info.offset as usize,
        size: info.size,
        type_name: c_name(ty),
        layout: layout(btf, ty),
      });
    }
  }
  out
}

/// A named struct, union or enum, by `name` or `struct name`/`union name`/`enum name`.
pub fn find_named<'b>(btf: &'b Btf<'_>, name: &str) -> Option<BtfType<'b>> {
  let (kinds, bare): (&[BtfKind], &str) = match name.split_once(' ') {
    Some(("struct", n)) => (&[BtfKind::Struct], n),
    Some(("union", n)) => (&[BtfKind::Union], n),
    Some(("enum", n)) => (&[BtfKind::Enum, BtfKind::Enum64], n),
    _ => (&[BtfKind::Struct, BtfKind::Union, BtfKind::Typedef, BtfKind::Enum, BtfKind::Enum64], name),
  };
  named_types(btf).find(|t| kinds.contains(&t.kind()) && t.name().is_some_and(|n| n == bare))
}

/// The struct, union, enum and typedef types that have a name.
pub fn named_types<'b>(btf: &'b Btf<'_>) -> impl Iterator<Item = BtfType<'b>> + 'b {
  (1..btf.len() as u32).filter_map(move |id| btf.type_by_id::<BtfType<'_>>(TypeId::from(id))).filter(|t| {
    matches!(t.kind(), BtfKind::Struct | BtfKind::Union | BtfKind::Enum | BtfKind::Enum64 | BtfKind::Typedef)
      && t.name().is_some_and(|n| !n.is_empty())
  })
}

/// The names of the object's structs (for error messages).
pub fn struct_names(btf: &Btf<'_>) -> Vec<String> {
  let mut names: Vec<String> = named_types(btf).filter(|t| t.kind() == BtfKind::Struct).map(|t| name_of(t.name())).collect();
  names.sort();
  names.dedup();
  names
}

/// `ty` without its typedefs and modifiers (const, volatile, ...), at most
/// MAX_DEPTH of them: a broken object's BTF can make a `const` refer to
/// itself, and libbpf-rs's `skip_mods_and_typedefs()` then never returns.
fn resolve(ty: BtfType<'_>) -> BtfType<'_> {
  let mut t = ty;
  for _ in 0..MAX_DEPTH {
    match t.kind() {
      BtfKind::Typedef | BtfKind::Volatile | BtfKind::Const | BtfKind::Restrict | BtfKind::TypeTag => match t.next_type() {
        Some(next) => t = next,
        None => return t,
      },
      _ => return t,
    }
  }
  t
}

/// A C-like spelling of a type: `u32`, `s64`, `char[16]`, `struct event`.
pub fn c_name(ty: BtfType<'_>) -> String {
  c_name_at(ty, 0)
}

fn c_name_at(ty: BtfType<'_>, depth: usize) -> String {
  let ty = resolve(ty);
  if depth > MAX_DEPTH {
    return "?".into();
  }
  match ty.kind() {
    BtfKind::Int => {
      let int = types::Int::try_from(ty).expect("kind checked");
      let size = int.size();
      match int.encoding {
        types::IntEncoding::Bool => "bool".into(),
        _ if name_of(ty.name()) == "char" => "char".into(),
        types::IntEncoding::Signed => format!("s{}", size * 8),
        _ => format!("u{}", size * 8),
      }
    }
    BtfKind::Enum | BtfKind::Enum64 => format!("enum {}", name_of(ty.name())),
    BtfKind::Ptr => "pointer".into(),
    BtfKind::Float => format!("float{}", size_of(ty) * 8),
    BtfKind::Array => {
      let arr = types::Array::try_from(ty).expect("kind checked");
      format!("{}[{}]", c_name_at(arr.contained_type(), depth + 1), arr.capacity())
    }
    BtfKind::Struct => format!("struct {}", name_of(ty.name())),
    BtfKind::Union => format!("union {}", name_of(ty.name())),
    _ => format!("{:?}", ty.kind()).to_lowercase(),
  }
}

fn size_of(ty: BtfType<'_>) -> usize {
  size_at(ty, 0)
}

fn size_at(ty: BtfType<'_>, depth: usize) -> usize {
  let ty = resolve(ty);
  if depth > MAX_DEPTH {
    return 0;
  }
  match ty.kind() {
    BtfKind::Int => types::Int::try_from(ty).map(|t| t.size()).unwrap_or(0),
    BtfKind::Struct | BtfKind::Union => types::Composite::try_from(ty).map(|t| t.size()).unwrap_or(0),
    BtfKind::Enum => types::Enum::try_from(ty).map(|t| t.size()).unwrap_or(0),
    BtfKind::Enum64 => types::Enum64::try_from(ty).map(|t| t.size()).unwrap_or(0),
    BtfKind::Float => types::Float::try_from(ty).map(|t| t.size()).unwrap_or(0),
    BtfKind::Ptr => 8,
    BtfKind::Array => {
      let arr = types::Array::try_from(ty).expect("kind checked");
      arr.capacity().saturating_mul(size_at(arr.contained_type(), depth + 1))
    }
    _ => 0,
  }
}

/// The codec layout of a type.
pub fn layout(btf: &Btf<'_>, ty: BtfType<'_>) -> Value {
  layout_at(btf, ty, 0)
}

const MAX_DEPTH: usize = 32;

fn layout_at(btf: &Btf<'_>, ty: BtfType<'_>, depth: usize) -> Value {
  let ty = resolve(ty);
  let size = size_of(ty);
  if depth > MAX_DEPTH {
    return json!({"kind": "bytes", "size": size});
  }
  match ty.kind() {
    BtfKind::Int => int_layout(types::Int::try_from(ty).expect("kind checked"), size),
    BtfKind::Enum => {
      let e = types::Enum::try_from(ty).expect("kind checked");
      let values = e.iter().map(|m| json!([name_of(m.name), m.value])).collect();
      enum_layout(name_of(ty.name()), size, e.is_signed(), values)
    }
    BtfKind::Enum64 => {
      let e = types::Enum64::try_from(ty).expect("kind checked");
      // JSON numbers beyond 2^53 lose precision: such enumerators are rare
      let values = e.iter().map(|m| json!([name_of(m.name), m.value as f64])).collect();
      enum_layout(name_of(ty.name()), size, e.is_signed(), values)
    }
    BtfKind::Ptr => json!({"kind": "ptr", "size": 8}),
    BtfKind::Float => json!({"kind": "float", "size": size}),
    BtfKind::Array => array_layout(btf, types::Array::try_from(ty).expect("kind checked"), size, depth),
    BtfKind::Struct | BtfKind::Union => {
      composite_layout(btf, types::Composite::try_from(ty).expect("kind checked"), name_of(ty.name()), size, depth)
    }
    _ => json!({"kind": "bytes", "size": size}),
  }
}

fn int_layout(int: types::Int<'_>, size: usize) -> Value {
  match int.encoding {
    types::IntEncoding::Bool => json!({"kind": "bool", "size": size}),
    types::IntEncoding::Signed => json!({"kind": "int", "size": size, "signed": true}),
    // a lone `char` (CHAR encoding): signed on x86-64 Linux, unsigned on arm64
    types::IntEncoding::Char => json!({"kind": "int", "size": size, "signed": cfg!(target_arch = "x86_64")}),
    types::IntEncoding::None => json!({"kind": "int", "size": size, "signed": false}),
  }
}

/// `values`: the enumerators, as `[name, value]` pairs.
fn enum_layout(name: String, size: usize, signed: bool, values: Vec<Value>) -> Value {
  json!({"kind": "enum", "name": name, "size": size, "signed": signed, "values": values})
}

/// An array; one of bytes is a `string` if its element is `char`, else `bytes`.
fn array_layout(btf: &Btf<'_>, arr: types::Array<'_>, size: usize, depth: usize) -> Value {
  let elem = resolve(arr.contained_type());
  let len = arr.capacity();
  let elem_size = size_of(elem);
  if elem_size == 1 && elem.kind() == BtfKind::Int {
    let kind = if name_of(elem.name()) == "char" { "string" } else { "bytes" };
    return json!({"kind": kind, "size": len});
  }
  json!({"kind": "array", "size": size, "len": len, "elem": layout_at(btf, elem, depth + 1)})
}

/// A struct or union: a field per member, a zero-length trailing array as
/// `flex`, bitfields as ints with their bits, anonymous members flattened.
fn composite_layout(btf: &Btf<'_>, comp: types::Composite<'_>, name: String, size: usize, depth: usize) -> Value {
  let mut fields = Vec::new();
  let count = comp.len();
  for (i, member) in comp.iter().enumerate() {
    let Some(member_ty) = btf.type_by_id::<BtfType<'_>>(member.ty) else { continue };
    let resolved = resolve(member_ty);
    let name = name_of(member.name);
    let (bit_offset, bit_size) = member_bits(&member.attr, resolved);
    // a zero-length trailing array: the rest of the record
    if i + 1 == count && resolved.kind() == BtfKind::Array && size_of(resolved) == 0 {
      let arr = types::Array::try_from(resolved).expect("kind checked");
      fields.push(json!({"name": name, "offset": bit_offset / 8,
        "type": {"kind": "flex", "size": 0, "elem": layout_at(btf, arr.contained_type(), depth + 1)}}));
      continue;
    }
    let member_layout = layout_at(btf, member_ty, depth + 1);
    if name.is_empty() && matches!(resolved.kind(), BtfKind::Struct | BtfKind::Union) {
      flatten_into(&mut fields, member_layout, bit_offset);
    } else {
      fields.push(field(name, bit_offset, bit_size, member_layout, resolved));
    }
  }
  let kind = if comp.is_struct { "struct" } else { "union" };
  json!({"kind": kind, "name": name, "size": size, "fields": fields})
}

/// A member's offset and size in bits (size 0: not a bitfield). `resolved`
/// is its type: old-style int bitfields carry their bits in the INT type.
fn member_bits(attr: &types::MemberAttr, resolved: BtfType<'_>) -> (usize, usize) {
  let (bit_offset, bit_size) = match *attr {
    types::MemberAttr::Normal { offset } => (offset as usize, 0usize),
    types::MemberAttr::BitField { size, offset } => (offset as usize, size as usize),
  };
  match (bit_size, resolved.kind()) {
    (0, BtfKind::Int) => {
      let int = types::Int::try_from(resolved).expect("kind checked");
      if int.offset != 0 || usize::from(int.bits) != int.size() * 8 {
        (bit_offset + usize::from(int.offset), usize::from(int.bits))
      } else {
        (bit_offset, 0)
      }
    }
    other => (bit_offset, other.0),
  }
}

/// An anonymous struct or union member: its fields belong to the parent, at
/// the member's offset (`bit_offset`).
fn flatten_into(fields: &mut Vec<Value>, mut member_layout: Value, bit_offset: usize) {
  if let Some(inner) = member_layout["fields"].as_array_mut() {
    for f in inner.iter_mut() {
      let off = f["offset"].as_u64().unwrap_or(0) as usize + bit_offset / 8;
      f["offset"] = json!(off);
      if let Some(b) = f.get("bitOffset").and_then(Value::as_u64) {
        f["bitOffset"] = json!(b as usize + bit_offset);
      }
      fields.push(f.take());
    }
  }
}

/// The field of a named member; a bitfield's type is an int of its
/// storage unit's size and signedness.
fn field(name: String, bit_offset: usize, bit_size: usize, member_layout: Value, resolved: BtfType<'_>) -> Value {
  if bit_size == 0 {
    return json!({"name": name, "offset": bit_offset / 8, "type": member_layout});
  }
  let int = json!({"kind": "int", "size": size_of(resolved).max(1),
    "signed": member_layout["signed"].as_bool().unwrap_or(false)});
  json!({"name": name, "offset": bit_offset / 8, "bitOffset": bit_offset, "bitSize": bit_size, "type": int})
}

/// The layout of a map's key or value type, by BTF type id (0: none).
pub fn layout_by_id(btf: &Btf<'_>, id: u32) -> Option<Value> {
  if id == 0 {
    return None;
  }
  btf.type_by_id::<BtfType<'_>>(TypeId::from(id)).map(|t| layout(btf, t))
}

/// The byte offset of member `path` (`self.parent`: names joined by `.`)
/// in the struct or union `ty`, looking into anonymous members as C does.
/// None: no such member, or a bitfield on the way.
pub fn member_offset(btf: &Btf<'_>, ty: BtfType<'_>, path: &str) -> Option<usize> {
  let mut ty = resolve(ty);
  let mut offset = 0;
  for name in path.split('.') {
    let (bits, member_ty) = find_member(btf, ty, name, 0)?;
    offset += bits / 8;
    ty = resolve(member_ty);
  }
  Some(offset)
}

/// Member `name` of the struct or union `ty` (or of an anonymous member of
/// it): its offset in bits and its type.
fn find_member<'b>(btf: &'b Btf<'_>, ty: BtfType<'b>, name: &str, depth: usize) -> Option<(usize, BtfType<'b>)> {
  if depth > MAX_DEPTH || !matches!(ty.kind(), BtfKind::Struct | BtfKind::Union) {
    return None;
  }
  let comp = types::Composite::try_from(ty).ok()?;
  for member in comp.iter() {
    let Some(member_ty) = btf.type_by_id::<BtfType<'_>>(member.ty) else { continue };
    let resolved = resolve(member_ty);
    let (bit_offset, bit_size) = member_bits(&member.attr, resolved);
    let member_name = name_of(member.name);
    if member_name == name {
      return (bit_size == 0 && bit_offset % 8 == 0).then_some((bit_offset, member_ty));
    }
    if member_name.is_empty() {
      if let Some((bits, t)) = find_member(btf, resolved, name, depth + 1) {
        return Some((bit_offset + bits, t));
      }
    }
  }
  None
}

#[cfg(test)]
mod tests {
  use super::*;

  /// The running kernel's BTF (every kernel this project runs on has it).
  fn vmlinux() -> Btf<'static> {
    Btf::from_vmlinux().expect("/sys/kernel/btf/vmlinux")
  }

  #[test]
  fn a_struct_of_pointers() {
    let btf = vmlinux();
    let t = find_named(&btf, "struct list_head").expect("list_head");
    let l = layout(&btf, t);
    assert_eq!(l["kind"], "struct");
    assert_eq!(l["size"], 16);
    assert_eq!(l["fields"][0], json!({"name": "next", "offset": 0, "type": {"kind": "ptr", "size": 8}}));
    assert_eq!(l["fields"][1]["offset"], 8);
  }

  #[test]
  fn signed_and_unsigned_integers_and_typedefs() {
    let btf = vmlinux();
    let t = find_named(&btf, "timespec64").expect("struct timespec64");
    let l = layout(&btf, t);
    // time64_t tv_sec (a typedef of s64), long tv_nsec
    assert_eq!(l["fields"][0]["type"], json!({"kind": "int", "size": 8, "signed": true}));
    assert_eq!(l["fields"][1]["offset"], 8);
    assert_eq!(c_name(t), "struct timespec64");
  }

  #[test]
  fn char_arrays_are_strings_and_enums_have_their_values() {
    let btf = vmlinux();
    let task = find_named(&btf, "struct task_struct").expect("task_struct");
    let l = layout(&btf, task);
    let comm = l["fields"].as_array().unwrap().iter().find(|f| f["name"] == "comm").expect("comm");
    assert_eq!(comm["type"], json!({"kind": "string", "size": 16}));
    let e = layout(&btf, find_named(&btf, "enum bpf_map_type").expect("enum bpf_map_type"));
    assert_eq!(e["kind"], "enum");
    assert!(e["values"].as_array().unwrap().iter().any(|v| v[0] == "BPF_MAP_TYPE_RINGBUF" && v[1] == 27));
  }

  #[test]
  fn member_offsets_through_nested_and_anonymous_members() {
    let btf = vmlinux();
    let l = |name: &str| layout(&btf, find_named(&btf, name).expect(name));
    let offset_in = |l: &Value, name: &str| {
      l["fields"].as_array().unwrap().iter().find(|f| f["name"] == name).expect(name)["offset"].as_u64().unwrap() as usize
    };
    let task = find_named(&btf, "struct task_struct").unwrap();
    // a direct member: the layout's offset (which flattens anonymous members too)
    assert_eq!(member_offset(&btf, task, "comm"), Some(offset_in(&l("struct task_struct"), "comm")));
    // a member of a member: cgroup.self is a struct cgroup_subsys_state, parent in it
    let cgroup = find_named(&btf, "struct cgroup").unwrap();
    let want = offset_in(&l("struct cgroup"), "self") + offset_in(&l("struct cgroup_subsys_state"), "parent");
    assert_eq!(member_offset(&btf, cgroup, "self.parent"), Some(want));
    assert_eq!(member_offset(&btf, task, "no_such_member"), None);
    assert_eq!(member_offset(&btf, task, "comm.x"), None, "comm is no struct");
  }

  #[test]
  fn unknown_names_are_not_found() {
    let btf = vmlinux();
    assert!(find_named(&btf, "struct no_such_struct_here").is_none());
  }
}
