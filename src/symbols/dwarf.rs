//! `dwarfMemberOffset`: the byte offset of a struct member from the DWARF of
//! an ELF file.

use std::borrow::Cow;

use napi_derive::napi;
use object::{Object, ObjectSection};

use super::elf::{parse_elf, read_elf};
use crate::error::{err, BpfError, BpfResult, Code, Result};

/// The byte offset of member `member` in struct `structName`, from the DWARF
/// of an ELF file (e.g. `runtime.g` and `goid` in a Go binary).
#[napi]
pub fn dwarf_member_offset(path: String, struct_name: String, member: String) -> Result<u32> {
  Ok(member_offset(&path, &struct_name, &member)?)
}

fn member_offset(path: &str, struct_name: &str, member: &str) -> BpfResult<u32> {
  let data = read_elf(path)?;
  let file = parse_elf(path, &data)?;
  let load = |id: gimli::SectionId| -> std::result::Result<Cow<'_, [u8]>, gimli::Error> {
    Ok(match file.section_by_name(id.name()) {
      Some(section) => section.uncompressed_data().unwrap_or(Cow::Borrowed(&[][..])),
      None => Cow::Borrowed(&[][..]),
    })
  };
  let sections = gimli::DwarfSections::load(load).map_err(|e| dwarf_error(path, e))?;
  let dwarf = sections.borrow(|s| gimli::EndianSlice::new(s, gimli::RunTimeEndian::Little));
  let mut units = dwarf.units();
  let mut found_struct = false;
  while let Some(header) = units.next().map_err(|e| dwarf_error(path, e))? {
    let unit = dwarf.unit(header).map_err(|e| dwarf_error(path, e))?;
    let mut tree = unit.entries_tree(None).map_err(|e| dwarf_error(path, e))?;
    let root = tree.root().map_err(|e| dwarf_error(path, e))?;
    let mut children = root.children();
    while let Some(node) = children.next().map_err(|e| dwarf_error(path, e))? {
      let entry = node.entry();
      if entry.tag() != gimli::DW_TAG_structure_type || name_of(&dwarf, &unit, entry).as_deref() != Some(struct_name) {
        continue;
      }
      found_struct = true;
      let mut members = node.children();
      while let Some(m) = members.next().map_err(|e| dwarf_error(path, e))? {
        let m = m.entry();
        if m.tag() == gimli::DW_TAG_member && name_of(&dwarf, &unit, m).as_deref() == Some(member) {
          if let Some(gimli::AttributeValue::Udata(off)) = m.attr_value(gimli::DW_AT_data_member_location) {
            return Ok(off as u32);
          }
          if let Some(gimli::AttributeValue::Data1(off)) = m.attr_value(gimli::DW_AT_data_member_location) {
            return Ok(u32::from(off));
          }
        }
      }
    }
  }
  if found_struct {
    return err(Code::UnknownName, format!("struct {struct_name} in {path} has no member '{member}'"));
  }
  err(
    Code::UnknownName,
    format!("{path} has no DWARF struct '{struct_name}' (built without debug info, or stripped: build without -ldflags=-w)"),
  )
}

fn name_of<R: gimli::Reader>(dwarf: &gimli::Dwarf<R>, unit: &gimli::Unit<R>, entry: &gimli::DebuggingInformationEntry<R>) -> Option<String> {
  let value = entry.attr_value(gimli::DW_AT_name)?;
  let name = dwarf.attr_string(unit, value).ok()?;
  Some(name.to_string_lossy().ok()?.into_owned())
}

fn dwarf_error(path: &str, e: gimli::Error) -> BpfError {
  BpfError::new(Code::InvalidObject, format!("reading the DWARF of {path}: {e}"))
}
