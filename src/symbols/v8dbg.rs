//! `v8dbgSymbols`: what lib/frames/v8.js needs of a node binary to walk and
//! name its JavaScript frames (the v8dbg_* values, V8's version, the
//! interpreter's code, Bytecodes::kBytecodeSizes), read from the ELF file
//! in ranges (pread), never the whole ~100 MB binary, never mapped.
//!
//! The binary is the traced process's: every size and offset in it is
//! checked before it is trusted, and each read is bounded (the caps below),
//! so a forged file costs at most those bounds.

use std::{collections::HashMap, os::unix::fs::FileExt, path::Path};

use napi::bindgen_prelude::Buffer;
use napi_derive::napi;

use super::{
  files::{has_elf_magic, in_process_root, open_in_root, open_regular, Checked, Links, MAX_ELF_SIZE},
  target_files::TargetFileStat,
};
use crate::error::{guard, BpfError, BpfResult, Code, Result};

/// The most section headers read.
const MAX_SECTIONS: u64 = 4096;
/// The biggest symbol table or string table read.
const MAX_TABLE: u64 = 64 << 20;
/// The longest symbol name looked at: a longer one is none of ours.
const MAX_NAME: usize = 4096;
/// The most interpreter symbols kept.
const MAX_INTERPRETER: usize = 8192;
/// The most v8dbg_* values kept (a node has about 550).
const MAX_VALUES: usize = 8192;
/// The biggest Bytecodes::kBytecodeSizes (3 operand scales x bytecodes).
const MAX_BYTECODE_SIZES: u64 = 3 * 1024;
/// Symbols read from a table at once.
const SYMBOLS_AT_ONCE: u64 = 16384;

const SHT_SYMTAB: u32 = 2;
const SHT_NOBITS: u32 = 8;
const SHT_DYNSYM: u32 = 11;
const SYM_SIZE: u64 = 24;

const V8DBG: &[u8] = b"v8dbg_";
const BUILTINS: &[u8] = b"Builtins_";
const VERSION: [&[u8]; 3] =
  [b"_ZN2v88internal7Version6major_E", b"_ZN2v88internal7Version6minor_E", b"_ZN2v88internal7Version6build_E"];
const BYTECODE_SIZES: &[u8] = b"_ZN2v88internal11interpreter9Bytecodes14kBytecodeSizesE";

/// What `v8dbgSymbols` reads of a node binary.
#[napi(object, js_name = "V8dbgSymbols")]
pub struct V8dbgSymbols {
  /// The v8dbg_* values (each an i32), by name.
  pub values: HashMap<String, i32>,
  /// V8's version: [major, minor, build], or empty where its symbols are missing.
  pub version: Vec<i32>,
  /// The interpreter's code (.symtab's Builtins_InterpreterEntryTrampoline*,
  /// Builtins_InterpreterEnterAt* and bytecode handlers) as file ranges
  /// [start, end), sorted.
  pub interpreter: Vec<Vec<f64>>,
  /// Bytecodes::kBytecodeSizes (u8 [3][count]), where the binary has it.
  pub bytecode_sizes: Option<Buffer>,
  /// The ELF e_machine (62: x86_64, 183: aarch64).
  pub machine: u32,
  /// The file read: its size and identity.
  pub file: TargetFileStat,
}

/// The v8dbg_* values, V8's version, the interpreter's code and
/// Bytecodes::kBytecodeSizes of node binary `path` (a 64-bit little-endian
/// ELF file), read in ranges with every size bounded. `/proc/PID/exe` and
/// `/proc/PID/map_files/…` are the very file the process runs (followed,
/// even deleted); a path under `/proc/PID/root/` is resolved in that root,
/// no link as last component; any other path is yours (links followed).
/// `ERR_BPF_INVALID_OBJECT` when it is no regular file or no such ELF file.
#[napi(js_name = "v8dbgSymbols")]
pub fn v8dbg_symbols(path: String) -> Result<V8dbgSymbols> {
  guard(|| {
    let read = read(&path)?;
    let (dev, ino, size, mtime, mtime_nsec) = read.id;
    Ok(V8dbgSymbols {
      values: read.values.into_iter().collect(),
      version: read.version,
      interpreter: read.interpreter.into_iter().map(|(s, e)| vec![s as f64, e as f64]).collect(),
      bytecode_sizes: read.bytecode_sizes.map(Buffer::from),
      machine: u32::from(read.machine),
      file: TargetFileStat {
        size: size as f64,
        dev: dev as f64,
        ino: ino as f64,
        mtime_ms: mtime as f64 * 1000.0 + mtime_nsec as f64 / 1e6,
      },
    })
  })
}

/// What `read` found.
struct Read {
  values: Vec<(String, i32)>,
  version: Vec<i32>,
  interpreter: Vec<(u64, u64)>,
  bytecode_sizes: Option<Vec<u8>>,
  machine: u16,
  id: super::files::FileId,
}

/// A section header's fields that matter here.
#[derive(Clone, Copy)]
struct Section {
  kind: u32,
  addr: u64,
  offset: u64,
  size: u64,
  link: u32,
}

impl Section {
  /// Where `size` bytes at address `addr` are in the file, if the section
  /// holds them all and has bytes in the file.
  fn file_offset(&self, addr: u64, size: u64) -> Option<u64> {
    let end = addr.checked_add(size)?;
    (self.kind != SHT_NOBITS && addr >= self.addr && end <= self.addr.checked_add(self.size)?)
      .then(|| self.offset.checked_add(addr - self.addr))
      .flatten()
      // (the offset is the file's word: bytes past 2^64 are in no file)
      .filter(|at| at.checked_add(size).is_some())
  }
}

fn read(path: &str) -> BpfResult<Read> {
  let checked = open(path)?;
  if !has_elf_magic(&checked) {
    return Err(invalid(path, "not an ELF file (it does not start with the ELF magic)"));
  }
  let r = Reader { file: &checked.file, size: checked.size, path };
  let eh = r.bytes(0, 64)?;
  if eh[4] != 2 || eh[5] != 1 {
    return Err(invalid(path, "not a 64-bit little-endian ELF file"));
  }
  let machine = u16le(&eh, 0x12);
  let (shoff, shentsize, shnum) = (u64le(&eh, 0x28), u16le(&eh, 0x3a), u64::from(u16le(&eh, 0x3c)));
  if shentsize != 64 || shnum > MAX_SECTIONS {
    return Err(invalid(path, &format!("{shnum} section headers of {shentsize} bytes (64 bytes, at most {MAX_SECTIONS} read)")));
  }
  let sh = r.bytes(shoff, shnum * 64)?;
  let sections: Vec<Section> = sh
    .chunks_exact(64)
    .map(|h| Section { kind: u32le(h, 4), addr: u64le(h, 16), offset: u64le(h, 24), size: u64le(h, 32), link: u32le(h, 40) })
    .collect();
  let mut out = Found::default();
  // .dynsym first (small), then .symtab (large): what .dynsym lacks, and the interpreter's symbols
  let tables = sections.iter().filter(|s| s.kind == SHT_DYNSYM).chain(sections.iter().filter(|s| s.kind == SHT_SYMTAB));
  for table in tables {
    let Some(strings) = sections.get(table.link as usize) else { continue };
    if table.size > MAX_TABLE || strings.size > MAX_TABLE || strings.kind == SHT_NOBITS {
      continue;
    }
    // a table past the file's end is skipped, not fatal
    let Ok(names) = r.bytes(strings.offset, strings.size) else { continue };
    symbols(&r, table, &names, &sections, &mut out)?;
  }
  out.interpreter.sort_unstable();
  let version =
    if out.version.iter().all(Option::is_some) { out.version.iter().flatten().copied().collect() } else { Vec::new() };
  Ok(Read {
    values: out.values,
    version,
    interpreter: out.interpreter,
    bytecode_sizes: out.bytecode_sizes,
    machine,
    id: checked.id,
  })
}

/// What the symbol tables gave so far.
#[derive(Default)]
struct Found {
  values: Vec<(String, i32)>,
  seen: std::collections::HashSet<Vec<u8>>,
  version: [Option<i32>; 3],
  interpreter: Vec<(u64, u64)>,
  bytecode_sizes: Option<Vec<u8>>,
}

/// Reads the symbols of `table` (names in `names`) into `out`: only the
/// names that are ours are decoded (a byte compare first), each at most
/// MAX_NAME bytes long.
fn symbols(r: &Reader, table: &Section, names: &[u8], sections: &[Section], out: &mut Found) -> BpfResult<()> {
  let count = table.size / SYM_SIZE; // (a trailing part of a symbol is no symbol)
  let mut first = 0;
  while first < count {
    let n = (count - first).min(SYMBOLS_AT_ONCE);
    let Some(at) = table.offset.checked_add(first * SYM_SIZE) else { return Ok(()) };
    let Ok(syms) = r.bytes(at, n * SYM_SIZE) else { return Ok(()) };
    for sym in syms.chunks_exact(SYM_SIZE as usize) {
      let Some(name) = name_at(names, u32le(sym, 0) as usize) else { continue };
      let section = sections.get(usize::from(u16le(sym, 6)));
      let (value, size) = (u64le(sym, 8), u64le(sym, 16));
      if let Some(rest) = name.strip_prefix(BUILTINS) {
        if table.kind != SHT_SYMTAB || !is_interpreter(rest) || out.interpreter.len() >= MAX_INTERPRETER || size == 0 {
          continue;
        }
        if let Some(start) = section.and_then(|s| s.file_offset(value, size)) {
          out.interpreter.push((start, start + size));
        }
      } else if name == BYTECODE_SIZES {
        // Bytecodes::kBytecodeSizes[3][count] (u8: single, double, quadruple operand scale): baseline frames' lines
        if out.bytecode_sizes.is_some() || size == 0 || size % 3 != 0 || size > MAX_BYTECODE_SIZES {
          continue;
        }
        if let Some(at) = section.and_then(|s| s.file_offset(value, size)) {
          out.bytecode_sizes = r.bytes(at, size).ok();
        }
      } else if let Some(k) = VERSION.iter().position(|v| *v == name) {
        if out.version[k].is_none() {
          out.version[k] = section.and_then(|s| s.file_offset(value, 4)).and_then(|at| r.i32_at(at));
        }
      } else if name.starts_with(V8DBG) {
        if out.values.len() >= MAX_VALUES || out.seen.contains(name) {
          continue;
        }
        let Some(v) = section.and_then(|s| s.file_offset(value, 4)).and_then(|at| r.i32_at(at)) else { continue };
        // v8dbg_ and ASCII: a name of any other bytes is none of V8's
        let Ok(text) = std::str::from_utf8(name) else { continue };
        out.seen.insert(name.to_vec());
        out.values.push((text.to_string(), v));
      }
    }
    first += n;
  }
  Ok(())
}

/// The name at `at` in a string table: its bytes up to the NUL, if that NUL
/// comes within MAX_NAME bytes and the name starts as one of ours.
fn name_at(names: &[u8], at: usize) -> Option<&[u8]> {
  let c = *names.get(at)?;
  // most names are none of ours: v8dbg_, _ZN2v8, Builtins_
  if c != b'v' && c != b'_' && c != b'B' {
    return None;
  }
  let window = &names[at..names.len().min(at + MAX_NAME)];
  let name = &window[..window.iter().position(|&b| b == 0)?];
  let ours = name.starts_with(V8DBG) || name.starts_with(BUILTINS) || name.starts_with(b"_ZN2v88internal");
  ours.then_some(name)
}

/// Builtins_InterpreterEntryTrampoline*, Builtins_InterpreterEnterAt* and
/// the bytecode handlers (Builtins_\w+Handler), without the prefix.
fn is_interpreter(rest: &[u8]) -> bool {
  rest.starts_with(b"InterpreterEntryTrampoline")
    || rest.starts_with(b"InterpreterEnterAt")
    || (rest.len() > b"Handler".len()
      && rest.ends_with(b"Handler")
      && rest.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_'))
}

/// Opens the binary (see `v8dbg_symbols`).
fn open(path: &str) -> BpfResult<Checked> {
  const WHAT: &str = "the node binary";
  if let Some((pid, inside)) = in_process_root(path) {
    return open_in_root(pid, inside, MAX_ELF_SIZE, WHAT);
  }
  open_regular(Path::new(path), Links::Follow, MAX_ELF_SIZE, WHAT)
}

/// Ranged reads of a checked file.
struct Reader<'f> {
  file: &'f std::fs::File,
  size: u64,
  path: &'f str,
}

impl Reader<'_> {
  /// `len` bytes at `at` (all of them, or an error).
  fn bytes(&self, at: u64, len: u64) -> BpfResult<Vec<u8>> {
    if at.checked_add(len).is_none_or(|end| end > self.size) {
      return Err(invalid(self.path, &format!("{len} bytes at {at} are past its end ({} bytes)", self.size)));
    }
    let mut buf = vec![0u8; len as usize];
    self.file.read_exact_at(&mut buf, at).map_err(|e| invalid(self.path, &format!("reading {len} bytes at {at}: {e}")))?;
    Ok(buf)
  }

  fn i32_at(&self, at: u64) -> Option<i32> {
    self.bytes(at, 4).ok().map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
  }
}

fn invalid(path: &str, what: &str) -> BpfError {
  BpfError::new(Code::InvalidObject, format!("{path}: {what}: give the path of a node binary (64-bit ELF)"))
}

fn u16le(b: &[u8], at: usize) -> u16 {
  u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32le(b: &[u8], at: usize) -> u32 {
  u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or_default())
}

fn u64le(b: &[u8], at: usize) -> u64 {
  u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default())
}

#[cfg(test)]
mod tests {
  use super::*;

  /// A small ELF file: a .data section at address 0x1000 holding `data`,
  /// a .symtab of `syms` (name offset, section, value, size) and its
  /// .strtab `strings`.
  fn elf(data: &[u8], syms: &[(u32, u16, u64, u64)], strings: &[u8], symtab_size: Option<u64>) -> Vec<u8> {
    let mut f = vec![0u8; 64];
    f[..4].copy_from_slice(b"\x7fELF");
    f[4] = 2;
    f[5] = 1;
    f[0x12..0x14].copy_from_slice(&62u16.to_le_bytes());
    let data_at = f.len() as u64;
    f.extend_from_slice(data);
    let symtab_at = f.len() as u64;
    for &(name, shndx, value, size) in syms {
      f.extend_from_slice(&name.to_le_bytes());
      f.extend_from_slice(&[0, 0]);
      f.extend_from_slice(&shndx.to_le_bytes());
      f.extend_from_slice(&value.to_le_bytes());
      f.extend_from_slice(&size.to_le_bytes());
    }
    let strtab_at = f.len() as u64;
    f.extend_from_slice(strings);
    let shoff = f.len() as u64;
    let header = |kind: u32, addr: u64, offset: u64, size: u64, link: u32| {
      let mut h = vec![0u8; 64];
      h[4..8].copy_from_slice(&kind.to_le_bytes());
      h[16..24].copy_from_slice(&addr.to_le_bytes());
      h[24..32].copy_from_slice(&offset.to_le_bytes());
      h[32..40].copy_from_slice(&size.to_le_bytes());
      h[40..44].copy_from_slice(&link.to_le_bytes());
      h
    };
    f.extend(header(0, 0, 0, 0, 0));
    f.extend(header(1, 0x1000, data_at, data.len() as u64, 0));
    f.extend(header(SHT_SYMTAB, 0, symtab_at, symtab_size.unwrap_or(syms.len() as u64 * SYM_SIZE), 3));
    f.extend(header(3, 0, strtab_at, strings.len() as u64, 0));
    f[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
    f[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
    f[0x3c..0x3e].copy_from_slice(&4u16.to_le_bytes());
    f
  }

  fn read_bytes(name: &str, bytes: &[u8]) -> BpfResult<Read> {
    let path = std::env::temp_dir().join(format!("v8dbg-test-{name}-{}", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    let out = read(path.to_str().unwrap());
    std::fs::remove_file(&path).unwrap();
    out
  }

  const STRINGS: &[u8] = b"\0v8dbg_HeapObjectTag\0v8dbg_off_fp_function\0Builtins_LdarHandler\0";

  #[test]
  fn values_and_interpreter_ranges_are_read() {
    let mut data = 1i32.to_le_bytes().to_vec();
    data.extend((-16i32).to_le_bytes());
    data.extend([0xcc; 8]);
    let syms = [(1, 1, 0x1000, 4), (21, 1, 0x1004, 4), (43, 1, 0x1008, 8), (1, 1, 0x1004, 4)];
    let r = read_bytes("ok", &elf(&data, &syms, STRINGS, None)).unwrap();
    let values: HashMap<_, _> = r.values.into_iter().collect();
    assert_eq!(values.len(), 2);
    assert_eq!(values["v8dbg_HeapObjectTag"], 1, "the first of a name twice");
    assert_eq!(values["v8dbg_off_fp_function"], -16);
    assert_eq!(r.interpreter, vec![(72, 80)]);
    assert_eq!(r.machine, 62);
    assert!(r.version.is_empty());
  }

  #[test]
  fn a_name_without_nul_is_skipped() {
    // the last name runs to the table's end, and one longer than MAX_NAME
    let mut strings = STRINGS.to_vec();
    let long_at = strings.len() as u32;
    strings.extend(b"v8dbg_");
    strings.extend(vec![b'x'; MAX_NAME]);
    strings.push(0);
    let open_at = strings.len() as u32;
    strings.extend(b"v8dbg_open");
    let syms = [(1, 1, 0x1000, 4), (long_at, 1, 0x1000, 4), (open_at, 1, 0x1000, 4), (u32::MAX, 1, 0x1000, 4)];
    let r = read_bytes("nul", &elf(&7i32.to_le_bytes(), &syms, &strings, None)).unwrap();
    assert_eq!(r.values, vec![("v8dbg_HeapObjectTag".to_string(), 7)]);
  }

  #[test]
  fn a_symtab_of_no_whole_number_of_symbols_is_read_to_its_last_whole_one() {
    let syms = [(1, 1, 0x1000, 4), (21, 1, 0x1000, 4)];
    let r = read_bytes("partial", &elf(&3i32.to_le_bytes(), &syms, STRINGS, Some(SYM_SIZE + 13))).unwrap();
    assert_eq!(r.values, vec![("v8dbg_HeapObjectTag".to_string(), 3)]);
  }

  #[test]
  fn a_section_past_the_end_is_refused_or_skipped() {
    // a value past its section, a section past the file's end, a symtab past it
    let syms = [(1, 1, 0x1002, 4), (21, 5, 0x1000, 4)];
    let r = read_bytes("past", &elf(&3i32.to_le_bytes(), &syms, STRINGS, None)).unwrap();
    assert!(r.values.is_empty());
    let mut f = elf(&3i32.to_le_bytes(), &[(1, 1, 0x1000, 4)], STRINGS, Some(1 << 40));
    let r = read_bytes("huge", &f).unwrap();
    assert!(r.values.is_empty(), "a symtab bigger than MAX_TABLE is skipped");
    let shoff = u64le(&f, 0x28) as usize;
    f[shoff + 64 + 24..shoff + 64 + 32].copy_from_slice(&(1u64 << 40).to_le_bytes());
    f[shoff + 128 + 32..shoff + 128 + 40].copy_from_slice(&SYM_SIZE.to_le_bytes());
    let r = read_bytes("far", &f).unwrap();
    assert!(r.values.is_empty(), "a .data past the file's end gives no value");
    let len = f.len();
    f[0x28..0x30].copy_from_slice(&(len as u64).to_le_bytes());
    let e = read_bytes("headers", &f).err().unwrap();
    assert_eq!(e.code, Code::InvalidObject);
    assert!(e.message.contains("past its end"), "{}", e.message);
    f[0x3c..0x3e].copy_from_slice(&60000u16.to_le_bytes());
    assert!(read_bytes("many", &f).err().unwrap().message.contains("60000 section headers"));
  }

  #[test]
  fn a_range_past_2_pow_64_is_skipped() {
    // a section whose offset puts the interpreter's code past 2^64: no range that ends before it starts
    let mut f = elf(&[0xcc; 8], &[(43, 1, 0x1000, 8)], STRINGS, None);
    assert_eq!(read_bytes("wrap-ok", &f).unwrap().interpreter, vec![(64, 72)]);
    let shoff = u64le(&f, 0x28) as usize;
    f[shoff + 64 + 24..shoff + 64 + 32].copy_from_slice(&(u64::MAX - 4).to_le_bytes());
    assert!(read_bytes("wrap", &f).unwrap().interpreter.is_empty());
  }

  #[test]
  fn this_test_binary_is_no_node() {
    let me = format!("/proc/{}/exe", std::process::id());
    let r = read(&me).unwrap();
    assert!(r.values.is_empty() && r.version.is_empty());
    assert!(read("/proc/self/status").err().unwrap().message.contains("ELF magic"));
  }

  #[test]
  fn interpreter_names() {
    assert!(is_interpreter(b"InterpreterEntryTrampolineForProfiling"));
    assert!(is_interpreter(b"LdarHandler") && is_interpreter(b"Ldar_WideHandler"));
    assert!(!is_interpreter(b"Handler") && !is_interpreter(b"Ld.arHandler") && !is_interpreter(b"CallFunction"));
  }
}
