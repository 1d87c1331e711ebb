//! A structural check of a BPF ELF object before libbpf sees it: what
//! libbpf and libelf trust without checking (found by fuzz/object/, the
//! coverage-guided fuzzer of the loader). The section header table and every
//! section inside the file, section links in range, the symbol table's entry
//! size, its symbols' names and sections in range, string tables ended by a
//! NUL, relocations naming symbols that exist, no BTF variable whose size
//! libbpf would truncate to a negative int (its open then returned a pointer
//! that was an error code, and the first map lookup segfaulted), and no BTF
//! type that refers back to itself through typedefs, modifiers, pointers or
//! arrays (libbpf's open followed one forever).
//!
//! std only, no `use crate::`: fuzz/object/check.rs compiles this file alone
//! into the fuzzer. One pass over the headers, symbols, relocations and BTF
//! types: 15 to 35 µs for the largest shipped object.

/// What is wrong with the file (the section and the index), for the error
/// message.
pub(crate) type Problem = String;

const SHT_SYMTAB: u32 = 2;
const SHT_STRTAB: u32 = 3;
const SHT_RELA: u32 = 4;
const SHT_NOBITS: u32 = 8;
const SHT_REL: u32 = 9;
const SHN_LORESERVE: u16 = 0xff00;
const SHN_ABS: u16 = 0xfff1;
const SHN_COMMON: u16 = 0xfff2;
const SHDR_SIZE: usize = 64;
const SYM_SIZE: u64 = 24;

/// The bytes of a 64-bit ELF file, read in its own byte order.
struct Elf<'a> {
  bytes: &'a [u8],
  big: bool,
}

impl Elf<'_> {
  fn uint<const N: usize>(&self, at: usize) -> Option<u64> {
    let b: [u8; N] = self.bytes.get(at..at.checked_add(N)?)?.try_into().ok()?;
    let mut v = 0u64;
    for i in 0..N {
      let byte = if self.big { b[i] } else { b[N - 1 - i] };
      v = (v << 8) | u64::from(byte);
    }
    Some(v)
  }
  fn u16(&self, at: usize) -> Option<u16> {
    self.uint::<2>(at).map(|v| v as u16)
  }
  fn u32(&self, at: usize) -> Option<u32> {
    self.uint::<4>(at).map(|v| v as u32)
  }
  fn u64(&self, at: usize) -> Option<u64> {
    self.uint::<8>(at)
  }
}

/// One section header.
struct Section {
  name: u32,
  kind: u32,
  offset: usize,
  size: usize,
  link: u32,
  info: u32,
  entsize: u64,
}

/// A section's name, read from the section name table `names`.
fn name_of<'a>(elf: &Elf<'a>, names: &Section, s: &Section) -> Option<&'a [u8]> {
  let from = names.offset.checked_add(s.name as usize)?;
  let rest = elf.bytes.get(from..names.offset + names.size)?;
  Some(&rest[..rest.iter().position(|&b| b == 0)?])
}

/// Checks the ELF structure libbpf relies on; `Err` says what is wrong.
pub(crate) fn check(bytes: &[u8]) -> Result<(), Problem> {
  if bytes.len() < 4 || &bytes[..4] != b"\x7fELF" {
    return Err("not an ELF file".into());
  }
  if bytes.len() < 64 {
    return Err(format!("the ELF header is cut short ({} of 64 bytes)", bytes.len()));
  }
  if bytes[4] != 2 {
    return Err(format!("not a 64-bit ELF file (class {}); BPF objects are 64-bit", bytes[4]));
  }
  let big = match bytes[5] {
    1 => false,
    2 => true,
    other => return Err(format!("unknown ELF byte order {other}")),
  };
  let elf = Elf { bytes, big };
  let shoff = elf.u64(0x28).unwrap_or(0);
  let shentsize = elf.u16(0x3a).unwrap_or(0);
  let shnum = elf.u16(0x3c).unwrap_or(0) as usize;
  let shstrndx = elf.u16(0x3e).unwrap_or(0) as usize;
  if shnum == 0 {
    return Err("the ELF header lists no sections".into());
  }
  if shentsize as usize != SHDR_SIZE {
    return Err(format!("section headers of {shentsize} bytes, not {SHDR_SIZE}"));
  }
  let table_end = shoff.checked_add((shnum * SHDR_SIZE) as u64);
  if table_end.is_none_or(|end| end > bytes.len() as u64) {
    return Err(format!(
      "the section header table ({shnum} headers at offset {shoff}) ends past the end of the file ({} bytes)",
      bytes.len()
    ));
  }
  let mut sections = Vec::with_capacity(shnum);
  for i in 0..shnum {
    let at = shoff as usize + i * SHDR_SIZE;
    let (offset, size) = (elf.u64(at + 24).unwrap_or(0), elf.u64(at + 32).unwrap_or(0));
    let kind = elf.u32(at + 4).unwrap_or(0);
    if i > 0 && kind != SHT_NOBITS && offset.checked_add(size).is_none_or(|end| end > bytes.len() as u64) {
      return Err(format!(
        "section {i}'s contents ({size} bytes at offset {offset}) end past the end of the file ({} bytes)",
        bytes.len()
      ));
    }
    let (offset, size) = if kind == SHT_NOBITS || i == 0 { (0, 0) } else { (offset as usize, size as usize) };
    sections.push(Section {
      name: elf.u32(at).unwrap_or(0),
      kind,
      offset,
      size,
      link: elf.u32(at + 40).unwrap_or(0),
      info: elf.u32(at + 44).unwrap_or(0),
      entsize: elf.u64(at + 56).unwrap_or(0),
    });
  }
  let names = sections.get(shstrndx).filter(|s| s.kind == SHT_STRTAB);
  let Some(names) = names else {
    return Err(format!("the section name table's index {shstrndx} is not a string table of the {shnum} sections"));
  };
  // the section for a message: `section 14 (.symtab)`
  let at = |i: usize| match name_of(&elf, names, &sections[i]).filter(|n| !n.is_empty()) {
    Some(n) => format!("section {i} ({})", String::from_utf8_lossy(n)),
    None => format!("section {i}"),
  };

  // string tables: every name read from them ends inside them
  for (i, s) in sections.iter().enumerate() {
    if s.kind == SHT_STRTAB && s.size > 0 && bytes[s.offset + s.size - 1] != 0 {
      return Err(format!("{}: the string table does not end with a NUL byte", at(i)));
    }
    if i > 0 && s.name as usize >= names.size {
      return Err(format!("section {i}'s name offset {} is past the section name table ({} bytes)", s.name, names.size));
    }
  }

  // the symbol table: its entries, names and sections
  let mut symbols = None;
  for (i, s) in sections.iter().enumerate().filter(|(_, s)| s.kind == SHT_SYMTAB) {
    if s.entsize != SYM_SIZE || !(s.size as u64).is_multiple_of(SYM_SIZE) {
      return Err(format!("{}: symbols of {} bytes in {} bytes, not entries of {SYM_SIZE}", at(i), s.entsize, s.size));
    }
    let strtab = sections.get(s.link as usize).filter(|t| t.kind == SHT_STRTAB);
    let Some(strtab) = strtab else {
      return Err(format!("{}: its string table's index {} is not a string table of the {shnum} sections", at(i), s.link));
    };
    let count = s.size / SYM_SIZE as usize;
    if s.info as usize > count {
      return Err(format!("{}: its first global symbol {} is past its {count} symbols", at(i), s.info));
    }
    for n in 0..count {
      let sym = s.offset + n * SYM_SIZE as usize;
      let name = elf.u32(sym).unwrap_or(0);
      let shndx = elf.u16(sym + 6).unwrap_or(0);
      if name as usize >= strtab.size.max(1) {
        return Err(format!("{}: symbol {n}'s name offset {name} is past its string table ({} bytes)", at(i), strtab.size));
      }
      if shndx as usize >= shnum && !(shndx == SHN_ABS || shndx == SHN_COMMON) {
        let what = if shndx >= SHN_LORESERVE { "a reserved section index" } else { "past the sections" };
        return Err(format!("{}: symbol {n}'s section index {shndx} is {what} ({shnum} sections)", at(i)));
      }
    }
    symbols = Some((i, count));
  }

  // relocations: their symbol table, target section and symbols
  for (i, s) in sections.iter().enumerate().filter(|(_, s)| s.kind == SHT_REL || s.kind == SHT_RELA) {
    let entry = if s.kind == SHT_REL { 16 } else { 24 };
    if s.entsize != entry || !s.size.is_multiple_of(entry as usize) {
      return Err(format!("{}: relocations of {} bytes in {} bytes, not entries of {entry}", at(i), s.entsize, s.size));
    }
    let Some((symtab, count)) = symbols.filter(|&(symtab, _)| symtab == s.link as usize) else {
      return Err(format!("{}: its symbol table's index {} is not the symbol table", at(i), s.link));
    };
    if s.info as usize >= shnum || s.info == 0 {
      return Err(format!("{}: the section it relocates, {}, is not one of the {shnum} sections", at(i), s.info));
    }
    for n in 0..s.size / entry as usize {
      let sym = elf.u64(s.offset + n * entry as usize + 8).unwrap_or(0) >> 32;
      if sym >= count as u64 {
        return Err(format!("{}: relocation {n} names symbol {sym}, past the {count} symbols of {}", at(i), at(symtab)));
      }
    }
  }

  if let Some(i) = sections.iter().position(|s| s.kind != SHT_NOBITS && name_of(&elf, names, s) == Some(b".BTF")) {
    let s = &sections[i];
    btf::check(&Elf { bytes: &bytes[s.offset..s.offset + s.size], big }).map_err(|p| format!("{}: {p}", at(i)))?;
  }
  Ok(())
}

/// The part of .BTF libbpf trusts after its own checks: the sizes it keeps
/// in an int, and chains of references that end. Anything else malformed
/// here libbpf refuses itself.
mod btf {
  use super::{Elf, Problem};

  const KIND_INT: u32 = 1;
  const KIND_PTR: u32 = 2;
  const KIND_ARRAY: u32 = 3;
  const KIND_STRUCT: u32 = 4;
  const KIND_UNION: u32 = 5;
  const KIND_ENUM: u32 = 6;
  const KIND_FWD: u32 = 7;
  const KIND_TYPEDEF: u32 = 8;
  const KIND_VOLATILE: u32 = 9;
  const KIND_CONST: u32 = 10;
  const KIND_RESTRICT: u32 = 11;
  const KIND_FUNC: u32 = 12;
  const KIND_FUNC_PROTO: u32 = 13;
  const KIND_VAR: u32 = 14;
  const KIND_DATASEC: u32 = 15;
  const KIND_FLOAT: u32 = 16;
  const KIND_DECL_TAG: u32 = 17;
  const KIND_TYPE_TAG: u32 = 18;
  const KIND_ENUM64: u32 = 19;
  /// libbpf's MAX_RESOLVE_DEPTH
  const MAX_DEPTH: usize = 32;

  /// Where each type starts in `types` (id 1 at index 0), its kind and vlen.
  struct Types<'a> {
    elf: &'a Elf<'a>,
    at: Vec<(usize, u32, u32)>,
  }

  impl Types<'_> {
    fn get(&self, id: u32) -> Option<(usize, u32, u32)> {
      self.at.get((id as usize).checked_sub(1)?).copied()
    }

    /// libbpf's btf__resolve_size, without its error codes: `None` where
    /// libbpf returns an error (which it reports properly).
    fn resolve_size(&self, mut id: u32) -> Option<u64> {
      let mut nelems: u64 = 1;
      for _ in 0..MAX_DEPTH {
        let (at, kind, _) = self.get(id)?;
        let size = |at| self.elf.u32(at + 8).map(u64::from);
        match kind {
          KIND_INT | KIND_STRUCT | KIND_UNION | KIND_ENUM | KIND_ENUM64 | KIND_DATASEC | KIND_FLOAT => {
            let size = size(at)?;
            return (size <= u64::from(u32::MAX) / nelems.max(1)).then_some(nelems * size);
          }
          KIND_PTR => return Some(nelems * 8),
          KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT | KIND_VAR | KIND_DECL_TAG | KIND_TYPE_TAG => {
            id = self.elf.u32(at + 8)?;
          }
          KIND_ARRAY => {
            let count = u64::from(self.elf.u32(at + 12 + 8)?);
            if nelems != 0 && count > u64::from(u32::MAX) / nelems {
              return None;
            }
            nelems *= count;
            id = self.elf.u32(at + 12)?;
          }
          _ => return None,
        }
      }
      None
    }
  }

  impl Types<'_> {
    /// The one type a type refers to by itself (not through a struct's
    /// members or a function's parameters): a chain of these never returns
    /// to where it started in valid BTF.
    fn next(&self, id: u32) -> Option<u32> {
      let (at, kind, _) = self.get(id)?;
      let next = match kind {
        KIND_PTR | KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT | KIND_TYPE_TAG | KIND_VAR | KIND_FUNC
        | KIND_DECL_TAG => self.elf.u32(at + 8)?,
        KIND_ARRAY => self.elf.u32(at + 12)?,
        _ => return None,
      };
      (next != 0).then_some(next)
    }

    /// A chain of references that loops (libbpf follows typedefs and
    /// modifiers without a limit: a map whose type is `const` of itself hung
    /// bpf_object__open).
    fn cycle(&self) -> Option<Problem> {
      // 0: not seen, 1: on the chain being followed, 2: ends
      let mut state = vec![0u8; self.at.len() + 1];
      let mut chain = Vec::new();
      for start in 1..=self.at.len() as u32 {
        let mut id = start;
        chain.clear();
        let looped = loop {
          match state[id as usize] {
            0 => state[id as usize] = 1,
            seen => break seen == 1,
          }
          chain.push(id);
          match self.next(id).filter(|&n| (n as usize) < state.len()) {
            Some(n) => id = n,
            None => break false,
          }
        };
        if looped {
          let from = chain.iter().position(|&c| c == id).unwrap_or(0);
          let path: Vec<_> = chain[from..].iter().take(6).map(|c| format!("[{c}]")).collect();
          return Some(format!("BTF type [{id}] refers back to itself ({} -> [{id}])", path.join(" -> ")));
        }
        for &c in &chain {
          state[c as usize] = 2;
        }
      }
      None
    }
  }

  pub(super) fn check(elf: &Elf<'_>) -> Result<(), Problem> {
    // a header libbpf would refuse is left to libbpf (its message names it)
    let (Some(0xeb9f), Some(hdr_len)) = (elf.u16(0), elf.u32(4)) else { return Ok(()) };
    let (Some(type_off), Some(type_len)) = (elf.u32(8), elf.u32(12)) else { return Ok(()) };
    let start = (hdr_len as usize).saturating_add(type_off as usize);
    let Some(end) = start.checked_add(type_len as usize).filter(|&e| e <= elf.bytes.len()) else { return Ok(()) };
    let mut at = Vec::new();
    let mut pos = start;
    while pos + 12 <= end {
      let info = elf.u32(pos + 4).unwrap_or(0);
      let (kind, vlen) = ((info >> 24) & 0x1f, info & 0xffff);
      let extra = match kind {
        KIND_INT | KIND_VAR | KIND_DECL_TAG => 4,
        KIND_ARRAY => 12,
        KIND_STRUCT | KIND_UNION | KIND_DATASEC | KIND_ENUM64 => 12 * vlen as usize,
        KIND_ENUM | KIND_FUNC_PROTO => 8 * vlen as usize,
        KIND_PTR | KIND_FWD | KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT | KIND_FUNC | KIND_FLOAT
        | KIND_TYPE_TAG => 0,
        _ => return Ok(()),
      };
      at.push((pos, kind, vlen));
      pos += 12 + extra;
    }
    let types = Types { elf, at };
    if let Some(problem) = types.cycle() {
      return Err(problem);
    }
    for &(sec, _, vlen) in types.at.iter().filter(|t| t.1 == KIND_DATASEC) {
      for v in 0..vlen as usize {
        let Some(var) = elf.u32(sec + 12 + 12 * v) else { break };
        let Some((var_at, KIND_VAR, _)) = types.get(var) else { continue };
        let Some(ty) = elf.u32(var_at + 8) else { continue };
        // libbpf keeps an extern's size in an int: past i32::MAX it turns
        // negative and open returns it as if it were an object
        if let Some(size) = types.resolve_size(ty).filter(|&s| s > i32::MAX as u64) {
          return Err(format!("BTF variable [{var}] has a type of {size} bytes (type [{ty}]), more than 2^31 - 1"));
        }
      }
    }
    Ok(())
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn read(rel: &str) -> Vec<u8> {
    std::fs::read(format!("{}/{rel}", env!("CARGO_MANIFEST_DIR"))).unwrap()
  }

  /// Where section `name`'s header is in a valid little-endian object.
  fn header(b: &[u8], name: &str) -> usize {
    let le = |at: usize, n: usize| (0..n).rev().fold(0u64, |v, i| (v << 8) | u64::from(b[at + i])) as usize;
    let (shoff, shnum, shstrndx) = (le(0x28, 8), le(0x3c, 2), le(0x3e, 2));
    let names = le(shoff + shstrndx * 64 + 24, 8);
    (0..shnum)
      .map(|i| shoff + i * 64)
      .find(|&at| {
        let from = names + le(at, 4);
        b[from..from + name.len() + 1] == *format!("{name}\0").as_bytes()
      })
      .unwrap()
  }

  fn put(b: &mut [u8], at: usize, v: u64, n: usize) {
    b[at..at + n].copy_from_slice(&v.to_le_bytes()[..n]);
  }

  fn refused(b: &[u8], want: &str) {
    let problem = check(b).expect_err(want);
    assert!(problem.contains(want), "{problem:?} does not say {want:?}");
  }

  #[test]
  fn every_compiled_object_passes() {
    let mut n = 0;
    for dir in ["bpf/x86", "bpf/arm64", "__test__/bpf/x86", "__test__/bpf/arm64"] {
      let Ok(files) = std::fs::read_dir(format!("{}/{dir}", env!("CARGO_MANIFEST_DIR"))) else { continue };
      for f in files.flatten().filter(|f| f.file_name().to_string_lossy().ends_with(".bpf.o")) {
        let bytes = std::fs::read(f.path()).unwrap();
        assert_eq!(check(&bytes), Ok(()), "{}", f.path().display());
        n += 1;
      }
    }
    assert!(n >= 30, "only {n} objects: run npm run build");
  }

  #[test]
  fn what_libbpf_trusts_is_refused_with_its_place() {
    let good = read("bpf/x86/bashreadline.bpf.o");
    assert_eq!(check(&good), Ok(()));
    let symtab = header(&good, ".symtab");
    let sym_at = |b: &[u8], i: usize| (0..8).rev().fold(0usize, |v, k| (v << 8) | b[symtab + 24 + k] as usize) + i * 24;

    refused(&good[..40], "the ELF header is cut short (40 of 64 bytes)");
    let mut b = good.clone();
    b[4] = 1;
    refused(&b, "not a 64-bit ELF file (class 1)");
    refused(&good[..good.len() - 1], "the section header table");
    let mut b = good.clone();
    put(&mut b, 0x3e, 0xfff0, 2);
    refused(&b, "the section name table's index 65520");
    let mut b = good.clone();
    put(&mut b, symtab + 32, 1 << 40, 8);
    refused(&b, "end past the end of the file");
    let mut b = good.clone();
    put(&mut b, symtab + 56, 16, 8);
    refused(&b, "(.symtab): symbols of 16 bytes");
    let mut b = good.clone();
    put(&mut b, symtab + 40, 999, 4);
    refused(&b, "(.symtab): its string table's index 999");
    let mut b = good.clone();
    let at = sym_at(&b, 3);
    put(&mut b, at + 6, 300, 2);
    refused(&b, "(.symtab): symbol 3's section index 300 is past the sections");
    let mut b = good.clone();
    put(&mut b, at + 6, 0xfff5, 2);
    refused(&b, "is a reserved section index");
    let mut b = good.clone();
    put(&mut b, at, 0x8000_0000, 4);
    refused(&b, "(.symtab): symbol 3's name offset 2147483648 is past its string table");
    let mut b = good.clone();
    let strtab = header(&b, ".strtab");
    let end = (0..8).rev().fold(0usize, |v, k| (v << 8) | b[strtab + 24 + k] as usize)
      + (0..8).rev().fold(0usize, |v, k| (v << 8) | b[strtab + 32 + k] as usize);
    b[end - 1] = b'x';
    refused(&b, "(.strtab): the string table does not end with a NUL byte");
    let mut b = good.clone();
    let rel = header(&b, ".reluretprobe");
    let rel_at = (0..8).rev().fold(0usize, |v, k| (v << 8) | b[rel + 24 + k] as usize);
    put(&mut b, rel_at + 8 + 4, 5000, 4);
    refused(&b, "(.reluretprobe): relocation 0 names symbol 5000, past the");
    let mut b = good.clone();
    put(&mut b, rel + 44, 0, 4);
    refused(&b, "(.reluretprobe): the section it relocates, 0, is not one of the");
    let mut b = good;
    put(&mut b, rel + 40, 1, 4);
    refused(&b, "(.reluretprobe): its symbol table's index 1 is not the symbol table");

    // a BTF int of 2^31 + 4 bytes: libbpf's open returned the negative int as an object
    refused(
      &read("__test__/fixtures/fuzz/sigsegv-kcfg-extern-size--bashreadline.bpf.o"),
      "(.BTF): BTF variable [54] has a type of 2147483652 bytes (type [2])",
    );
    // a .maps variable's type is `const` of itself: libbpf's open followed it forever
    refused(
      &read("__test__/fixtures/fuzz/hang-btf-map-type-cycle--fuzz-object.bpf.o"),
      "(.BTF): BTF type [55] refers back to itself ([55] -> [55])",
    );
    refused(&read("__test__/fixtures/fuzz/hang-btf-type-cycle--stream.bpf.o"), "BTF type [22] refers back to itself");
    assert_eq!(check(b"\x7fELF"), Err("the ELF header is cut short (4 of 64 bytes)".into()));
    assert_eq!(check(b"#include"), Err("not an ELF file".into()));
  }
}
