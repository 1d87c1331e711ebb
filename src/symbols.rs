//! Symbols: addresses to names (kernel frames from /proc/kallsyms, native
//! frames from ELF and DWARF, JavaScript frames from the perf map that
//! `node --perf-basic-prof` writes) with blazesym; the function symbols of
//! an ELF file; and struct member offsets from DWARF.

use std::{borrow::Cow, path::Path};

use blazesym::symbolize::{self, source, Input, Symbolized, Symbolizer as BlazeSymbolizer};
use napi::bindgen_prelude::BigInt;
use napi_derive::napi;
use object::{Object, ObjectSection};

use crate::error::{err, BpfError, BpfResult, Code, Result};

/// A symbolized address.
#[napi(object)]
pub struct Frame {
  /// The function (demangled); absent when the address has no symbol.
  pub name: Option<String>,
  /// The file the address is in (a binary, a library, `[kernel]`, the perf
  /// map).
  pub module: Option<String>,
  /// The offset of the address in the function.
  pub offset: u32,
  /// The source file and line, when DWARF has them.
  pub file: Option<String>,
  pub line: Option<u32>,
}

/// Turns addresses into function names, caching what it has parsed
/// (symbol tables, DWARF, perf maps) across calls.
#[napi]
pub struct Symbolizer {
  inner: BlazeSymbolizer,
}

fn frames(results: Vec<Symbolized<'_>>) -> Vec<Frame> {
  results
    .into_iter()
    .map(|s| match s {
      Symbolized::Sym(sym) => Frame {
        name: Some(sym.name.into_owned()),
        module: sym.module.map(|m| m.to_string_lossy().into_owned()),
        offset: sym.offset as u32,
        file: sym.code_info.as_ref().map(|c| c.to_path().to_string_lossy().into_owned()),
        line: sym.code_info.as_ref().and_then(|c| c.line),
      },
      Symbolized::Unknown(_) => Frame { name: None, module: None, offset: 0, file: None, line: None },
    })
    .collect()
}

fn addresses(addrs: &[BigInt]) -> Vec<u64> {
  addrs.iter().map(|a| a.get_u64().1).collect()
}

#[napi]
impl Symbolizer {
  #[napi(constructor)]
  #[allow(clippy::new_without_default)]
  pub fn new() -> Self {
    Symbolizer { inner: BlazeSymbolizer::new() }
  }

  /// Names of kernel addresses (from /proc/kallsyms).
  #[napi]
  pub fn kernel(&self, addresses_: Vec<BigInt>) -> Result<Vec<Frame>> {
    let src = symbolize::source::Source::Kernel(source::Kernel { debug_syms: false, ..Default::default() });
    let found = self
      .inner
      .symbolize(&src, Input::AbsAddr(&addresses(&addresses_)))
      .map_err(|e| BpfError::new(Code::Attach, format!("symbolizing kernel addresses: {e}")))?;
    Ok(frames(found))
  }

  /// Names of user-space addresses of process `pid`: ELF symbols of its
  /// binaries and libraries, and JIT frames from /tmp/perf-<pid>.map
  /// (node --perf-basic-prof). The process must still be running.
  #[napi]
  pub fn process(&self, pid: u32, addresses_: Vec<BigInt>) -> Result<Vec<Frame>> {
    if !Path::new(&format!("/proc/{pid}")).exists() {
      return Err(BpfError::new(Code::NotFound, format!("process {pid} does not exist (symbolize while it runs)")).into());
    }
    // ELF symbols are enough for names; node's DWARF alone is ~100 MB
    let src = symbolize::source::Source::Process(source::Process {
      perf_map: true,
      debug_syms: false,
      ..source::Process::new(pid.into())
    });
    let found = self
      .inner
      .symbolize(&src, Input::AbsAddr(&addresses(&addresses_)))
      .map_err(|e| BpfError::new(Code::Attach, format!("symbolizing addresses of process {pid}: {e}")))?;
    Ok(frames(found))
  }
}

/// A function symbol of an ELF file.
#[napi(object)]
pub struct ElfSymbol {
  pub name: String,
  /// The virtual address in the file.
  pub address: BigInt,
  /// Where the function is in the file (what uprobes attach at).
  pub file_offset: Option<BigInt>,
  pub size: Option<u32>,
}

/// The function symbols of an ELF binary or library (symtab and dynsym,
/// defined ones, each name once), e.g. to attach a uprobe to every
/// `pthread_mutex_*` of libc.
#[napi]
pub fn elf_symbols(path: String) -> Result<Vec<ElfSymbol>> {
  use object::{ObjectSymbol, SymbolKind};
  let data = read_elf(&path)?;
  let file = parse_elf(&path, &data)?;
  let mut seen = std::collections::HashSet::new();
  let mut out = Vec::new();
  for sym in file.symbols().chain(file.dynamic_symbols()) {
    if sym.kind() != SymbolKind::Text || sym.is_undefined() || sym.address() == 0 {
      continue;
    }
    let Ok(name) = sym.name() else { continue };
    if name.is_empty() || !seen.insert(name.to_string()) {
      continue;
    }
    // the file offset: where the section's bytes are in the file
    let file_offset = sym
      .section_index()
      .and_then(|i| file.section_by_index(i).ok())
      .and_then(|sec| sec.file_range().map(|(off, _)| sym.address() - sec.address() + off));
    out.push(ElfSymbol {
      name: name.to_string(),
      address: BigInt::from(sym.address()),
      file_offset: file_offset.map(BigInt::from),
      size: (sym.size() > 0).then_some(sym.size() as u32),
    });
  }
  Ok(out)
}

fn read_elf(path: &str) -> BpfResult<Vec<u8>> {
  std::fs::read(path).map_err(|e| match e.kind() {
    std::io::ErrorKind::NotFound => BpfError::new(Code::NotFound, format!("{path} does not exist")),
    _ => BpfError::new(Code::InvalidObject, format!("reading {path}: {e}")),
  })
}

fn parse_elf<'d>(path: &str, data: &'d [u8]) -> BpfResult<object::File<'d>> {
  object::File::parse(data).map_err(|e| BpfError::new(Code::InvalidObject, format!("{path} is not an ELF file: {e}")))
}

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

/// Options of `flameGraph`.
#[napi(object)]
#[derive(Default)]
pub struct FlameGraphOptions {
  pub title: Option<String>,
  /// What the counts are (default `samples`).
  pub count_name: Option<String>,
}

/// A flame graph (SVG) of folded stacks: one `frame;frame;frame count` per
/// line, root first, as `stackcount --folded` prints them (inferno).
#[napi]
pub fn flame_graph(folded: String, options: Option<FlameGraphOptions>) -> Result<String> {
  let options = options.unwrap_or_default();
  let mut opts = inferno::flamegraph::Options::default();
  if let Some(title) = options.title {
    opts.title = title;
  }
  if let Some(count_name) = options.count_name {
    opts.count_name = count_name;
  }
  let mut svg = Vec::new();
  inferno::flamegraph::from_lines(&mut opts, folded.lines(), &mut svg)
    .map_err(|e| BpfError::new(Code::InvalidValue, format!("making the flame graph: {e} (give folded stacks: 'a;b;c 12' per line)")))?;
  Ok(String::from_utf8_lossy(&svg).into_owned())
}
