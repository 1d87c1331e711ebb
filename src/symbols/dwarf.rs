//! `dwarfMemberOffset`: the byte offset of a struct member from the DWARF of
//! an ELF file: C structs, C++ structs and classes (inside namespaces too),
//! Go structs. The offset may be a constant of any form (data1/2/4/8,
//! udata, sdata) or a DWARF-2 location expression (`DW_OP_plus_uconst N`).
//!
//! The file may come from a traced process: the reading is bounded (files.rs),
//! a compressed section may claim at most 256 MiB (and no more than a
//! compression ratio of 1024 allows), nesting deeper than 64 scopes is an
//! error (not a stack overflow), and a location expression runs at most
//! 1000 steps.

use std::borrow::Cow;

use gimli::{AttributeValue, EvaluationResult, Location, Piece};
use napi_derive::napi;
use object::{Object, ObjectSection};

use super::{
  elf::{parse_elf, read_elf},
  files::MAX_SECTION_SIZE,
};
use crate::error::{err, guard, BpfError, BpfResult, Code, Result};

/// The deepest nesting of namespaces, structs and classes searched.
const MAX_DEPTH: usize = 64;
/// The most a compressed section may expand, times its compressed size
/// (zlib's own limit is about 1032).
const MAX_RATIO: u64 = 1024;
/// The most steps a member's location expression runs.
const MAX_STEPS: u32 = 1000;

/// The byte offset of member `member` in struct `structName`, from the DWARF
/// of an ELF file (e.g. `runtime.g` and `goid` in a Go binary). A C++ struct
/// or class is found by its qualified name (`ns::Foo`) or its bare name
/// (`Foo`).
#[napi]
pub fn dwarf_member_offset(path: String, struct_name: String, member: String) -> Result<u32> {
  guard(|| member_offset(&path, &struct_name, &member))
}

fn member_offset(path: &str, struct_name: &str, member: &str) -> BpfResult<u32> {
  let data = read_elf(path)?;
  let file = parse_elf(path, &data)?;
  let endian = if file.is_little_endian() { gimli::RunTimeEndian::Little } else { gimli::RunTimeEndian::Big };
  let load = |id: gimli::SectionId| -> BpfResult<Cow<'_, [u8]>> {
    match file.section_by_name(id.name()) {
      Some(section) => section_data(path, id.name(), &section),
      None => Ok(Cow::Borrowed(&[][..])),
    }
  };
  let sections = gimli::DwarfSections::load(load)?;
  let dwarf = sections.borrow(|s| gimli::EndianSlice::new(s, endian));
  let mut lookup = Lookup { path, struct_name, member, found_struct: false, depth: 0 };
  let mut units = dwarf.units();
  while let Some(header) = units.next().map_err(|e| dwarf_error(path, e))? {
    let unit = dwarf.unit(header).map_err(|e| dwarf_error(path, e))?;
    let mut tree = unit.entries_tree(None).map_err(|e| dwarf_error(path, e))?;
    let root = tree.root().map_err(|e| dwarf_error(path, e))?;
    if let Some(offset) = lookup.scope(&dwarf, &unit, root, "")? {
      return Ok(offset);
    }
  }
  if lookup.found_struct {
    return err(Code::UnknownName, format!("struct {struct_name} in {path} has no member '{member}'"));
  }
  err(
    Code::UnknownName,
    format!(
      "{path} has no DWARF struct '{struct_name}' (built without debug info, or stripped: build with -g; for Go, without -ldflags=-w)"
    ),
  )
}

/// One search for a member of a struct, across the units of a file.
struct Lookup<'a> {
  path: &'a str,
  struct_name: &'a str,
  member: &'a str,
  /// A definition of the struct was seen (without the member).
  found_struct: bool,
  /// How many scopes deep `scope` is.
  depth: usize,
}

impl Lookup<'_> {
  /// Searches the children of `node` (a unit, a namespace, a struct or a
  /// class), named `scope` (`ns::Outer`, or '' at the top).
  fn scope<R: gimli::Reader>(
    &mut self,
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
    node: gimli::EntriesTreeNode<'_, '_, R>,
    scope: &str,
  ) -> BpfResult<Option<u32>> {
    let is_struct = matches!(node.entry().tag(), gimli::DW_TAG_structure_type | gimli::DW_TAG_class_type);
    let is_wanted = is_struct && scope_matches(self.struct_name, scope) && !is_declaration(node.entry());
    self.found_struct |= is_wanted;
    let mut children = node.children();
    while let Some(child) = children.next().map_err(|e| dwarf_error(self.path, e))? {
      let entry = child.entry();
      let tag = entry.tag();
      // DWARF 5 writes a static member as a variable, DWARF 4 as a member
      if matches!(tag, gimli::DW_TAG_member | gimli::DW_TAG_variable) {
        if is_wanted && name_of(dwarf, unit, entry).as_deref() == Some(self.member) {
          return self.location(unit, entry).map(Some);
        }
        continue;
      }
      if !matches!(tag, gimli::DW_TAG_namespace | gimli::DW_TAG_structure_type | gimli::DW_TAG_class_type) {
        continue;
      }
      let name = match name_of(dwarf, unit, entry) {
        Some(name) => name,
        // what c++filt calls it; an unnamed struct has no name to look up
        None if tag == gimli::DW_TAG_namespace => "(anonymous namespace)".to_string(),
        None => continue,
      };
      if self.depth >= MAX_DEPTH {
        return err(
          Code::InvalidObject,
          format!(
            "reading the DWARF of {}: namespaces and structs nested more than {MAX_DEPTH} deep (a corrupt file?)",
            self.path
          ),
        );
      }
      self.depth += 1;
      let found = self.scope(dwarf, unit, child, &qualify(scope, &name));
      self.depth -= 1;
      if let Some(offset) = found? {
        return Ok(Some(offset));
      }
    }
    Ok(None)
  }

  /// The offset of a member (`DW_AT_data_member_location`).
  fn location<R: gimli::Reader>(&self, unit: &gimli::Unit<R>, entry: &gimli::DebuggingInformationEntry<R>) -> BpfResult<u32> {
    let (path, struct_name, member) = (self.path, self.struct_name, self.member);
    if entry.tag() == gimli::DW_TAG_variable || is_declaration(entry) {
      return err(
        Code::InvalidValue,
        format!("member '{member}' of struct {struct_name} in {path} is static: it is not in the struct"),
      );
    }
    if entry.attr(gimli::DW_AT_bit_size).is_some() {
      return err(
        Code::InvalidValue,
        format!("member '{member}' of struct {struct_name} in {path} is a bit-field: it has no byte offset (read the member that holds it)"),
      );
    }
    let offset = match entry.attr_value(gimli::DW_AT_data_member_location) {
      // none: the member starts where the struct does (DWARF 5, 5.7.6)
      None => Some(0),
      // gimli gives every constant form (data1/2/4/8, udata, sdata >= 0) as a u64
      Some(value) if value.udata_value().is_some() => value.udata_value(),
      Some(AttributeValue::Exprloc(expr)) => member_location(expr, unit.encoding()),
      Some(_) => None,
    };
    let Some(offset) = offset else {
      return err(
        Code::InvalidValue,
        format!("member '{member}' of struct {struct_name} in {path} has a location that is not a constant offset"),
      );
    };
    u32::try_from(offset).map_err(|_| {
      BpfError::new(
        Code::InvalidValue,
        format!("member '{member}' of struct {struct_name} in {path} is at {offset}, beyond 4 GiB"),
      )
    })
  }
}

/// The offset that a member's location expression adds to the address of
/// the struct: the expression runs with that address (here 0) on the stack.
/// DWARF 2 writes `DW_OP_plus_uconst N`; anything that needs memory or
/// registers is not a constant offset (None).
fn member_location<R: gimli::Reader>(expr: gimli::Expression<R>, encoding: gimli::Encoding) -> Option<u64> {
  let mut eval = expr.evaluation(encoding);
  eval.set_initial_value(0);
  // DW_OP_skip and DW_OP_bra can loop
  eval.set_max_iterations(MAX_STEPS);
  if !matches!(eval.evaluate().ok()?, EvaluationResult::Complete) {
    return None;
  }
  match eval.result().as_slice() {
    [Piece { location: Location::Address { address }, size_in_bits: None, .. }] => Some(*address),
    _ => None,
  }
}

/// `ns::Name` in scope `ns` (just `Name` at the top).
fn qualify(scope: &str, name: &str) -> String {
  if scope.is_empty() {
    name.to_string()
  } else {
    format!("{scope}::{name}")
  }
}

/// Whether the struct named `qualified` (`a::b::Foo`) is the one asked
/// for: by its full name, its bare name `Foo`, or the end of its name
/// `b::Foo`.
fn scope_matches(wanted: &str, qualified: &str) -> bool {
  !qualified.is_empty() && (qualified == wanted || qualified.strip_suffix(wanted).is_some_and(|scope| scope.ends_with("::")))
}

/// A declaration (`struct Foo;`) has no members: the definition is elsewhere.
fn is_declaration<R: gimli::Reader>(entry: &gimli::DebuggingInformationEntry<R>) -> bool {
  matches!(entry.attr_value(gimli::DW_AT_declaration), Some(AttributeValue::Flag(true)))
}

fn name_of<R: gimli::Reader>(
  dwarf: &gimli::Dwarf<R>,
  unit: &gimli::Unit<R>,
  entry: &gimli::DebuggingInformationEntry<R>,
) -> Option<String> {
  let value = entry.attr_value(gimli::DW_AT_name)?;
  let name = dwarf.attr_string(unit, value).ok()?;
  Some(name.to_string_lossy().ok()?.into_owned())
}

/// A section's bytes, decompressed if need be: at most MAX_SECTION_SIZE,
/// and at most MAX_RATIO times the compressed size (a header claiming more
/// is refused before anything is allocated). An unreadable section is
/// empty, as a missing one.
fn section_data<'d>(path: &str, name: &str, section: &object::Section<'d, '_>) -> BpfResult<Cow<'d, [u8]>> {
  let Ok(compressed) = section.compressed_data() else { return Ok(Cow::Borrowed(&[][..])) };
  if compressed.format != object::CompressionFormat::None {
    let claimed = compressed.uncompressed_size;
    let allowed = MAX_SECTION_SIZE.min((compressed.data.len() as u64).saturating_mul(MAX_RATIO).saturating_add(4096));
    if claimed > allowed {
      return err(
        Code::InvalidObject,
        format!(
          "reading the DWARF of {path}: section {name} claims {claimed} bytes decompressed, more than the {allowed} allowed"
        ),
      );
    }
  }
  Ok(compressed.decompress().unwrap_or(Cow::Borrowed(&[][..])))
}

fn dwarf_error(path: &str, e: gimli::Error) -> BpfError {
  BpfError::new(Code::InvalidObject, format!("reading the DWARF of {path}: {e}"))
}

#[cfg(test)]
mod tests {
  use super::*;

  fn evaluate(bytes: &[u8]) -> Option<u64> {
    let expr = gimli::Expression(gimli::EndianSlice::new(bytes, gimli::LittleEndian));
    member_location(expr, gimli::Encoding { format: gimli::Format::Dwarf32, version: 2, address_size: 8 })
  }

  #[test]
  fn plus_uconst_is_the_offset() {
    // DW_OP_plus_uconst with ULEB128 operands: 8, 300 (2 bytes), 70000 (3 bytes)
    assert_eq!(evaluate(&[0x23, 0x08]), Some(8));
    assert_eq!(evaluate(&[0x23, 0xac, 0x02]), Some(300));
    assert_eq!(evaluate(&[0x23, 0xf0, 0xa2, 0x04]), Some(70000));
  }

  #[test]
  fn constant_arithmetic_is_an_offset_too() {
    // DW_OP_constu 70000, DW_OP_plus
    assert_eq!(evaluate(&[0x10, 0xf0, 0xa2, 0x04, 0x22]), Some(70000));
  }

  #[test]
  fn an_expression_that_reads_memory_is_no_offset() {
    // DW_OP_deref (a virtual base class: its offset is in the object)
    assert_eq!(evaluate(&[0x06]), None);
    // DW_OP_reg0: the value is in a register, not at an address
    assert_eq!(evaluate(&[0x50]), None);
    // truncated: DW_OP_plus_uconst without its operand
    assert_eq!(evaluate(&[0x23]), None);
  }

  #[test]
  fn structs_match_by_qualified_or_bare_name() {
    assert_eq!(qualify("", "point"), "point");
    assert_eq!(qualify("outer::inner", "Wide"), "outer::inner::Wide");
    assert!(scope_matches("point", "point"));
    assert!(scope_matches("outer::inner::Wide", "outer::inner::Wide"));
    assert!(scope_matches("Wide", "outer::inner::Wide"));
    assert!(scope_matches("inner::Wide", "outer::inner::Wide"), "the end of the qualified name");
    assert!(!scope_matches("Wide", "outer::inner::Wider"));
    assert!(!scope_matches("ide", "outer::inner::Wide"), "whole names only");
    assert!(!scope_matches("r::inner::Wide", "outer::inner::Wide"));
    assert!(!scope_matches("Wide", ""), "the unit itself is no struct");
    assert!(scope_matches("runtime.g", "runtime.g"), "Go names have dots, not ::");
  }
}
