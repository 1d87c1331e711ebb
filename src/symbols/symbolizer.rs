//! `Symbolizer`: addresses to function names (kernel frames from
//! /proc/kallsyms, kallsyms.rs; native frames from ELF with blazesym;
//! JavaScript frames from the perf map that `node --perf-basic-prof`
//! writes).
//!
//! A process's addresses are not handed to blazesym's process source,
//! which mmaps the target's files where they lie (a file truncated by the
//! target under the mapping SIGBUSes the tracer; a FIFO or a device in its
//! maps would be opened too) and its perf map (same, and one malformed line
//! fails the whole call). Instead, here: /proc/PID/maps says which file
//! each address is in; that file (through /proc/PID/map_files, the very
//! file mapped, or else /proc/PID/root + its path without following links)
//! must be a regular ELF file of at most 1 GiB; blazesym symbolizes a
//! sealed memfd copy of it (files.rs), or for this process's own code the
//! file itself (`sealed_copy`); addresses in no file, or in none
//! that names them, are looked up in the perf map, read and parsed here
//! (perf_map.rs); [vdso] addresses alone go to blazesym's process source.

use std::{
  cell::{Cell, RefCell},
  collections::{BTreeMap, HashMap},
  fs::File,
  io::Read,
  os::fd::AsRawFd,
  path::{Path, PathBuf},
};

use blazesym::symbolize::{source, Input, Sym, Symbolized, Symbolizer as BlazeSymbolizer};
use napi::{
  bindgen_prelude::{AsyncTask, BigInt},
  Env, Task,
};
use napi_derive::napi;

use super::{
  files::{self, FileId, Links, MAX_ELF_SIZE},
  kallsyms::KallsymsCell,
  perf_map::{self, PerfMap, Place},
};
use crate::error::{guard, BpfError, BpfResult, Code, Result};

/// The most memory the sealed copies of one `Symbolizer` take; files past
/// it are not symbolized (their frames are unknown).
const MAX_COPIES_SIZE: u64 = 4 << 30;
/// The most of /proc/PID/maps read.
const MAX_MAPS_SIZE: u64 = 64 << 20;

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
  /// Sealed copies of the target files symbolized, by the original's
  /// identity (None: a file refused, not tried again).
  copies: RefCell<HashMap<FileId, Option<File>>>,
  copied: Cell<u64>,
  /// Each process's perf map, parsed, by pid (within a budget of bytes).
  perf_maps: RefCell<perf_map::Cache>,
  /// /proc/kallsyms, read once (perhaps ahead, by `preloadKernel`).
  kallsyms: KallsymsCell,
}

/// `preloadKernel()`'s work on the thread pool: the kernel's table, read.
pub struct LoadKallsyms(KallsymsCell);

impl Task for LoadKallsyms {
  type Output = ();
  type JsValue = ();

  // (a Task's error carries a napi Status, not our code: the guard's
  // error, a caught panic, goes on as its code and message)
  fn compute(&mut self) -> napi::Result<()> {
    guard(|| {
      self.0.get();
      Ok(())
    })
    .map_err(|e| napi::Error::from_reason(format!("{}: {}", e.status, e.reason)))
  }

  fn resolve(&mut self, _env: Env, _output: ()) -> napi::Result<()> {
    Ok(())
  }
}

/// A frame without a symbol.
fn unknown() -> Frame {
  Frame { name: None, module: None, offset: 0, file: None, line: None }
}

fn frame(sym: Sym<'_>, module: Option<String>) -> Frame {
  Frame {
    name: Some(sym.name.into_owned()),
    module: module.or_else(|| sym.module.map(|m| m.to_string_lossy().into_owned())),
    offset: sym.offset as u32,
    file: sym.code_info.as_ref().map(|c| c.to_path().to_string_lossy().into_owned()),
    line: sym.code_info.as_ref().and_then(|c| c.line),
  }
}

fn addresses(addrs: &[BigInt]) -> Vec<u64> {
  addrs.iter().map(|a| a.get_u64().1).collect()
}

/// A perf map's end offset from JavaScript: a byte length, none for all.
fn end_offset(end: Option<i64>) -> BpfResult<Option<u64>> {
  end
    .map(|end| {
      u64::try_from(end).map_err(|_| {
        BpfError::new(
          Code::InvalidValue,
          format!("perfMapEnd: {end} is no byte offset: give symbolizer.perfMapSize(pid) taken when the window ended"),
        )
      })
    })
    .transpose()
}

/// The JIT frame of `map` that covers `addr` (its name copied out of the
/// map for JavaScript: at most perf_map::MAX_NAME bytes and a mark).
fn jit_frame(map: &PerfMap, addr: u64) -> Option<Frame> {
  map.find(addr).map(|(name, offset)| Frame {
    name: Some(name.to_string()),
    module: None,
    offset: offset.min(u64::from(u32::MAX)) as u32,
    file: None,
    line: None,
  })
}

/// A line of /proc/PID/maps.
struct Mapping {
  start: u64,
  end: u64,
  offset: u64,
  inode: u64,
  /// Mapped executable (`x` among its permissions).
  exec: bool,
  /// The path (without ` (deleted)`), `[vdso]`, `[heap]`, or ''.
  path: String,
}

/// The mappings of process `pid`, sorted by address.
fn read_maps(pid: u32) -> BpfResult<Vec<Mapping>> {
  let path = format!("/proc/{pid}/maps");
  let mut text = String::new();
  File::open(&path).and_then(|f| f.take(MAX_MAPS_SIZE).read_to_string(&mut text)).map_err(|e| match e.kind() {
    std::io::ErrorKind::NotFound => {
      BpfError::new(Code::NotFound, format!("process {pid} does not exist (symbolize while it runs)"))
    }
    _ => BpfError::new(Code::InvalidValue, format!("reading {path}: {e}")),
  })?;
  let mut maps: Vec<Mapping> = text.lines().filter_map(parse_maps_line).collect();
  maps.sort_by_key(|m| m.start);
  Ok(maps)
}

fn parse_maps_line(line: &str) -> Option<Mapping> {
  // start-end perms offset dev inode   path (which may hold spaces)
  let mut rest = line;
  let mut field = || {
    let trimmed = rest.trim_start();
    let end = trimmed.find(' ').unwrap_or(trimmed.len());
    let (f, r) = trimmed.split_at(end);
    rest = r;
    f
  };
  let (range, perms, offset, _dev, inode) = (field(), field(), field(), field(), field());
  let (start, end) = range.split_once('-')?;
  let path = rest.trim_start();
  Some(Mapping {
    start: u64::from_str_radix(start, 16).ok()?,
    end: u64::from_str_radix(end, 16).ok()?,
    offset: u64::from_str_radix(offset, 16).ok()?,
    inode: inode.parse().ok()?,
    exec: perms.contains('x'),
    path: path.strip_suffix(" (deleted)").unwrap_or(path).to_string(),
  })
}

#[napi]
impl Symbolizer {
  #[napi(constructor)]
  #[allow(clippy::new_without_default)]
  pub fn new() -> Result<Self> {
    guard(|| {
      Ok(Symbolizer {
        inner: BlazeSymbolizer::new(),
        copies: RefCell::new(HashMap::new()),
        copied: Cell::new(0),
        perf_maps: RefCell::new(perf_map::Cache::new(perf_map::MAX_CACHED_BYTES)),
        kallsyms: KallsymsCell::default(),
      })
    })
  }

  /// Names of kernel addresses (from /proc/kallsyms, read at the first
  /// call unless `preloadKernel()` has read it).
  #[napi]
  pub fn kernel(&self, addresses_: Vec<BigInt>) -> Result<Vec<Frame>> {
    guard(|| {
      let table = self.kallsyms.get();
      Ok(
        addresses(&addresses_)
          .into_iter()
          .map(|a| match table.find(a) {
            Some((name, offset)) => {
              Frame { name: Some(name.to_string()), module: None, offset: offset as u32, file: None, line: None }
            }
            None => unknown(),
          })
          .collect(),
      )
    })
  }

  /// Reads /proc/kallsyms on the libuv thread pool, for the `kernel()`
  /// calls to come (a profile's first pull reads it there after its window,
  /// not on the JS thread): resolves once it is read (at once if it is).
  #[napi(js_name = "preloadKernel", ts_return_type = "Promise<void>")]
  pub fn preload_kernel(&self) -> Result<AsyncTask<LoadKallsyms>> {
    guard(|| Ok(AsyncTask::new(LoadKallsyms(self.kallsyms.clone()))))
  }

  /// Names of user-space addresses of process `pid`: ELF symbols of its
  /// binaries and libraries, and JIT frames from /tmp/perf-<pid>.map
  /// (node --perf-basic-prof). The process must still be running. A file
  /// of the process that is no regular ELF file (or over 1 GiB), or a perf
  /// map that is no regular file, leaves its addresses unnamed; malformed
  /// perf map lines are skipped, and of a map over 64 MiB the last 64 MiB
  /// are read. `perfMapEnd`: the byte length of the perf map to read
  /// (`perfMapSize(pid)` taken when a profile window ended: code compiled
  /// after it, which can reuse a sampled address, does not name it);
  /// without it, all of the map.
  #[napi]
  pub fn process(&self, pid: u32, addresses_: Vec<BigInt>, perf_map_end: Option<i64>) -> Result<Vec<Frame>> {
    guard(|| self.symbolize_process(pid, &addresses(&addresses_), end_offset(perf_map_end)?))
  }

  /// The size of process `pid`'s perf map now, in bytes (0 without one):
  /// the `perfMapEnd` of a window that ends now. Once the process has
  /// exited, of /tmp/perf-PID.map here (as `perfMap`).
  #[napi]
  pub fn perf_map_size(&self, pid: u32) -> Result<i64> {
    guard(|| Ok(perf_map::size(pid, Place::ItsRootOrHere).min(i64::MAX as u64) as i64))
  }

  /// JIT frames of process `pid` from its perf map alone (a frame without
  /// a name where no line covers the address), as `process` reads it, up
  /// to `perfMapEnd` bytes; the process need not run: once it has exited,
  /// /tmp/perf-PID.map here (node leaves it behind) is read.
  #[napi]
  pub fn perf_map(&self, pid: u32, addresses_: Vec<BigInt>, perf_map_end: Option<i64>) -> Result<Vec<Frame>> {
    guard(|| {
      let end = end_offset(perf_map_end)?;
      let addrs = addresses(&addresses_);
      let named =
        self.with_perf_map(pid, Place::ItsRootOrHere, end, |map| addrs.iter().map(|&a| jit_frame(map, a)).collect::<Vec<_>>());
      Ok(named.unwrap_or_else(|| addrs.iter().map(|_| None).collect()).into_iter().map(|f| f.unwrap_or_else(unknown)).collect())
    })
  }
}

impl Symbolizer {
  /// `f` of process `pid`'s perf map read up to `end` (cached by pid),
  /// None when it has none or one that is no regular file or a link.
  fn with_perf_map<T>(&self, pid: u32, place: Place, end: Option<u64>, f: impl FnOnce(&PerfMap) -> T) -> Option<T> {
    let mut perf_maps = self.perf_maps.borrow_mut();
    let cached = perf_maps.take(pid);
    let map = perf_map::load(pid, place, cached, end).ok()??;
    let out = f(&map);
    perf_maps.put(pid, map);
    Some(out)
  }

  fn symbolize_process(&self, pid: u32, addrs: &[u64], perf_map_end: Option<u64>) -> BpfResult<Vec<Frame>> {
    if pid == 0 || !Path::new(&format!("/proc/{pid}")).exists() {
      return Err(BpfError::new(Code::NotFound, format!("process {pid} does not exist (symbolize while it runs)")));
    }
    let maps = read_maps(pid)?;
    let mut out: Vec<Option<Frame>> = addrs.iter().map(|_| None).collect();
    // the addresses of each file-backed mapping, and those in the vDSO
    let mut in_files: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    let mut in_vdso = Vec::new();
    for (i, &addr) in addrs.iter().enumerate() {
      let Some(j) = maps.partition_point(|m| m.start <= addr).checked_sub(1).filter(|&j| addr < maps[j].end) else {
        continue;
      };
      if maps[j].path == "[vdso]" {
        in_vdso.push(i);
      } else if maps[j].inode != 0 && maps[j].path.starts_with('/') {
        in_files.entry(j).or_default().push(i);
      }
    }
    for (j, which) in in_files {
      let m = &maps[j];
      let Some(copy) = self.sealed_copy(pid, m) else { continue };
      let offsets: Vec<u64> = which.iter().map(|&i| (addrs[i] - m.start).saturating_add(m.offset)).collect();
      let src = source::Source::Elf(source::Elf { debug_syms: false, ..source::Elf::new(copy) });
      // a file blazesym cannot read leaves its addresses unnamed
      let Ok(found) = self.inner.symbolize(&src, Input::FileOffset(&offsets)) else { continue };
      for (i, s) in which.into_iter().zip(found) {
        if let Symbolized::Sym(sym) = s {
          out[i] = Some(frame(sym, Some(m.path.clone())));
        }
      }
    }
    if !in_vdso.is_empty() {
      let vdso: Vec<u64> = in_vdso.iter().map(|&i| addrs[i]).collect();
      let src =
        source::Source::Process(source::Process { perf_map: false, debug_syms: false, ..source::Process::new(pid.into()) });
      if let Ok(found) = self.inner.symbolize(&src, Input::AbsAddr(&vdso)) {
        for (i, s) in in_vdso.into_iter().zip(found) {
          if let Symbolized::Sym(sym) = s {
            out[i] = Some(frame(sym, None));
          }
        }
      }
    }
    // the rest: JIT code, named by the perf map if the process writes one
    // (a perf map that is no regular file, or a link: JIT frames unnamed)
    if out.iter().any(Option::is_none) {
      self.with_perf_map(pid, Place::ItsRoot, perf_map_end, |map| {
        for (slot, &addr) in out.iter_mut().zip(addrs) {
          if slot.is_none() {
            *slot = jit_frame(map, addr);
          }
        }
      });
    }
    Ok(out.into_iter().map(|f| f.unwrap_or_else(unknown)).collect())
  }

  /// `/proc/self/fd/N` of a sealed copy of the file that mapping `m` of
  /// process `pid` maps, made once per file; None when the file is no
  /// regular ELF file, is too big, or cannot be read. This process's own
  /// executable mappings are read from the very file, opened, not copied:
  /// a change to it under blazesym's mapping would fault this process's
  /// own code first (its text is mapped from it), and the copy of node's
  /// ~100 MB binary took a self-profile's first pull ~50 ms of the JS
  /// thread and as much shared memory for the Symbolizer's life.
  fn sealed_copy(&self, pid: u32, m: &Mapping) -> Option<PathBuf> {
    // the very file mapped (needs CAP_SYS_ADMIN), else its path, resolved
    // in the process's root (files.rs)
    let by_fd = PathBuf::from(format!("/proc/{pid}/map_files/{:x}-{:x}", m.start, m.end));
    let checked = files::open_regular(&by_fd, Links::Follow, MAX_ELF_SIZE, "the mapped file")
      .or_else(|e| match e.code {
        Code::Permission => files::open_in_root(pid, &m.path, MAX_ELF_SIZE, "the mapped file"),
        _ => Err(e),
      })
      .ok()?;
    let mut copies = self.copies.borrow_mut();
    let own = m.exec && pid == std::process::id();
    let copy = copies.entry(checked.id).or_insert_with(|| {
      if !files::has_elf_magic(&checked) {
        return None;
      }
      if own {
        return Some(checked.file);
      }
      if self.copied.get() + checked.size > MAX_COPIES_SIZE {
        return None;
      }
      let copy = files::sealed_copy(&checked).ok()?;
      self.copied.set(self.copied.get() + checked.size);
      Some(copy)
    });
    copy.as_ref().map(|f| PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd())))
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn maps_lines_parse_with_spaces_in_paths() {
    let m = parse_maps_line("7f00-7f80 r-xp 00001000 fd:01 1234    /opt/my app/lib x.so (deleted)").unwrap();
    assert_eq!((m.start, m.end, m.offset, m.inode), (0x7f00, 0x7f80, 0x1000, 1234));
    assert_eq!(m.path, "/opt/my app/lib x.so");
    let anon = parse_maps_line("7f00-7f80 rw-p 00000000 00:00 0 ").unwrap();
    assert_eq!((anon.inode, anon.path.as_str()), (0, ""));
    assert_eq!(parse_maps_line("7f00-7f80 r-xp 00000000 00:00 0 [vdso]").unwrap().path, "[vdso]");
    assert!(parse_maps_line("garbage").is_none());
  }
}
