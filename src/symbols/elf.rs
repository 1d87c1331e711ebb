//! `elfSymbols`: the function symbols of an ELF file, and the parsing of
//! ELF files that `dwarf` shares (reading them: files.rs).

use napi::bindgen_prelude::BigInt;
use napi_derive::napi;
use object::{Object, ObjectSection};

pub(super) use super::files::read_elf;
use crate::error::{guard, BpfError, BpfResult, Code, Result};

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
  guard(|| symbols(&path))
}

fn symbols(path: &str) -> BpfResult<Vec<ElfSymbol>> {
  use object::{ObjectSymbol, SymbolKind};
  let data = read_elf(path)?;
  let file = parse_elf(path, &data)?;
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
      .and_then(|sec| sec.file_range().and_then(|(off, _)| sym.address().checked_sub(sec.address())?.checked_add(off)));
    out.push(ElfSymbol {
      name: name.to_string(),
      address: BigInt::from(sym.address()),
      file_offset: file_offset.map(BigInt::from),
      size: (sym.size() > 0).then_some(sym.size().min(u64::from(u32::MAX)) as u32),
    });
  }
  Ok(out)
}

/// The parsed ELF file (`ERR_BPF_INVALID_OBJECT` when it is not one).
pub(super) fn parse_elf<'d>(path: &str, data: &'d [u8]) -> BpfResult<object::File<'d>> {
  object::File::parse(data).map_err(|e| BpfError::new(Code::InvalidObject, format!("{path} is not an ELF file: {e}")))
}
