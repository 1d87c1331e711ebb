//! The perf map of a process (`/tmp/perf-PID.map`, one `START SIZE name`
//! per line in hex, as `node --perf-basic-prof` writes it): JIT frames.
//! Ours, not blazesym's: blazesym mmaps the file (a map that the target
//! truncates meanwhile SIGBUSes the tracer) and fails on the first
//! malformed line. Here the file is read (its last 64 MiB at most), a
//! malformed line is skipped, and lookups are a binary search.
//!
//! A map can be read up to an end offset (a byte length, `end`): the map as
//! it was when a profile window ended. V8 reuses the memory of collected
//! code, and the last line for an address wins, so code compiled after the
//! window (the decoding of the window itself) would otherwise name the
//! sampled addresses it lands on.

use std::path::Path;

use super::files::{self, Checked, FileId, Links, MAX_PERF_MAP_SIZE};
use crate::error::{BpfResult, Code};

/// One JIT function.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct JitSymbol {
  pub start: u64,
  pub size: u64,
  pub name: String,
}

/// A parsed perf map: functions sorted by start, in file order among equal
/// starts.
pub(super) struct PerfMap {
  pub id: FileId,
  /// The byte length read, when the read had an end offset.
  stop: Option<u64>,
  symbols: Vec<JitSymbol>,
}

impl PerfMap {
  /// The function covering `addr`, and the offset in it. Where the map
  /// names an address twice (code moved, and other code compiled there
  /// later), the line written last wins.
  pub fn find(&self, addr: u64) -> Option<(&JitSymbol, u64)> {
    let end = self.symbols.partition_point(|s| s.start <= addr);
    let last = self.symbols.get(end.checked_sub(1)?)?;
    // every function that starts where the nearest one below does
    let first = self.symbols[..end].partition_point(|s| s.start < last.start);
    self.symbols[first..end]
      .iter()
      .rev()
      .find(|s| addr - s.start < s.size || (s.size == 0 && addr == s.start))
      .map(|s| (s, addr - s.start))
  }
}

/// The functions of a perf map's text: malformed lines (no address, no
/// size, not hex, a range past 2^64) are skipped.
pub(super) fn parse(text: &[u8]) -> Vec<JitSymbol> {
  let mut symbols: Vec<JitSymbol> = text.split(|&b| b == b'\n').filter_map(parse_line).collect();
  // stable: among equal starts, file order stays
  symbols.sort_by_key(|s| s.start);
  symbols
}

fn parse_line(line: &[u8]) -> Option<JitSymbol> {
  let line = line.strip_suffix(b"\r").unwrap_or(line);
  let mut fields = line.splitn(3, |&b| b == b' ' || b == b'\t');
  let start = hex(fields.next()?)?;
  let size = hex(fields.next()?)?;
  let name = String::from_utf8_lossy(fields.next()?).trim().to_string();
  if name.is_empty() || start.checked_add(size).is_none() {
    return None;
  }
  Some(JitSymbol { start, size, name })
}

fn hex(field: &[u8]) -> Option<u64> {
  let field = std::str::from_utf8(field).ok()?;
  let digits = field.strip_prefix("0x").unwrap_or(field);
  if digits.is_empty() || digits.len() > 16 {
    return None;
  }
  u64::from_str_radix(digits, 16).ok()
}

/// Where process `pid`'s perf map is in its own file system: /tmp, named
/// after its pid in its pid namespace (NStgid).
pub(super) fn path_of(pid: u32) -> String {
  let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
  let ns_pid = status
    .lines()
    .find_map(|l| l.strip_prefix("NStgid:"))
    .and_then(|ids| ids.split_whitespace().next_back())
    .and_then(|id| id.parse::<u32>().ok())
    .unwrap_or(pid);
  format!("/tmp/perf-{ns_pid}.map")
}

/// Where a process's perf map is looked for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
  /// In the process's own file system: while it runs.
  ItsRoot,
  /// There while it runs; once it has exited, /tmp/perf-PID.map here
  /// (node leaves its map behind).
  ItsRootOrHere,
}

/// The perf map of process `pid`, opened and checked (`None` when it has
/// none); an error when it is no regular file or a link.
fn open(pid: u32, place: Place) -> BpfResult<Option<Checked>> {
  let not_found = |r: BpfResult<Checked>| match r {
    Ok(checked) => Ok(Some(checked)),
    Err(e) if e.code == Code::NotFound => Ok(None),
    Err(e) => Err(e),
  };
  match not_found(files::open_in_root(pid, &path_of(pid), u64::MAX, "the perf map"))? {
    None if place == Place::ItsRootOrHere && !Path::new(&format!("/proc/{pid}")).exists() => {
      let here = format!("/tmp/perf-{pid}.map");
      not_found(files::open_regular(Path::new(&here), Links::Refuse, u64::MAX, "the perf map"))
    }
    found => Ok(found),
  }
}

/// The size of process `pid`'s perf map now, in bytes (0 without one, or
/// with one that is no regular file): the end offset of a window.
pub(super) fn size(pid: u32, place: Place) -> u64 {
  open(pid, place).ok().flatten().map_or(0, |checked| checked.size)
}

/// The perf map of process `pid`, parsed, or `cached` again when neither
/// the file nor `end` has changed. `None` when the process has none; an
/// error when it is no regular file or a link. `end`: the byte length to
/// read (the map's size when a window ended), whole lines only; without
/// it, all of the map. Of more than 64 MiB (a long-running process), the
/// last 64 MiB before the end: the lines written last, which win anyway
/// where addresses were reused.
pub(super) fn load(pid: u32, place: Place, cached: Option<PerfMap>, end: Option<u64>) -> BpfResult<Option<PerfMap>> {
  let Some(mut checked) = open(pid, place)? else { return Ok(None) };
  let stop = end.map(|end| end.min(checked.size));
  if let Some(map) = cached.filter(|m| m.id == checked.id && m.stop == stop) {
    return Ok(Some(map));
  }
  let len = stop.unwrap_or(checked.size);
  let skipped = len.saturating_sub(MAX_PERF_MAP_SIZE);
  // without an end, what the map has grown by since the fstat is read too
  let cap = stop.map_or(MAX_PERF_MAP_SIZE, |stop| stop - skipped);
  let text = files::read_tail(&mut checked, skipped, cap, Path::new(&path_of(pid)), "the perf map")?;
  Ok(Some(PerfMap { id: checked.id, stop, symbols: parse(whole_lines(&text, skipped > 0, stop.is_some())) }))
}

/// The lines of `text` read from a map: a first line cut by the start of
/// the read (`cut_first`) is no line, nor a last one cut by its end
/// (`cut_last`: a read to an end offset, which may fall inside a line or
/// after one being written).
fn whole_lines(text: &[u8], cut_first: bool, cut_last: bool) -> &[u8] {
  let text = match cut_first {
    false => text,
    true => text.iter().position(|&b| b == b'\n').map_or(&[][..], |newline| &text[newline + 1..]),
  };
  match cut_last {
    false => text,
    true => text.iter().rposition(|&b| b == b'\n').map_or(&[][..], |newline| &text[..=newline]),
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn map(text: &str) -> PerfMap {
    PerfMap { id: (0, 0, 0, 0, 0), stop: None, symbols: parse(text.as_bytes()) }
  }

  #[test]
  fn malformed_lines_are_skipped() {
    let m = map("1000 10 JS:*a x.js:1:1\nzzzz 10 bad\n2000\n3000 xyz bad\nffffffffffffffff 2 over\n\n4000 0x20 LazyCompile:~b y.js:2:2\r\n5000 10 \n");
    assert_eq!(m.symbols.len(), 2);
    assert_eq!(m.find(0x1004).map(|(s, o)| (s.name.as_str(), o)), Some(("JS:*a x.js:1:1", 4)));
    assert_eq!(m.find(0x401f).map(|(s, o)| (s.name.as_str(), o)), Some(("LazyCompile:~b y.js:2:2", 0x1f)));
    assert!(m.find(0x1010).is_none(), "past the end of a");
    assert!(m.find(0xfff).is_none());
    assert!(m.find(u64::MAX).is_none());
  }

  #[test]
  fn the_last_line_for_an_address_wins() {
    let m = map("1000 100 old\n1000 100 new\n1050 10 inner\n");
    assert_eq!(m.find(0x1010).unwrap().0.name, "new");
    assert_eq!(m.find(0x1052).unwrap().0.name, "inner");
    // past inner's end, inside new's: the nearest start below is inner's
    assert!(m.find(0x1070).is_none());
  }

  #[test]
  fn a_read_to_an_end_offset_keeps_whole_lines_before_it() {
    let text = b"1000 100 JS:*hotLoop a.js:1:1\n1080 100 JS:^toBigInt b.js:2:2\n2000 10 JS:~cut";
    let names = |t: &[u8]| parse(t).into_iter().map(|s| s.name).collect::<Vec<_>>();
    assert_eq!(names(whole_lines(&text[..30], false, true)), ["JS:*hotLoop a.js:1:1"]);
    assert_eq!(names(whole_lines(&text[..40], false, true)), ["JS:*hotLoop a.js:1:1"], "a line cut by the end");
    assert_eq!(names(whole_lines(text, false, true)), ["JS:*hotLoop a.js:1:1", "JS:^toBigInt b.js:2:2"], "one being written");
    assert_eq!(names(whole_lines(text, false, false)).len(), 3, "without an end: every line");
    assert_eq!(names(whole_lines(&text[5..], true, true)), ["JS:^toBigInt b.js:2:2"], "a line cut by the start");
    assert!(whole_lines(&text[..20], false, true).is_empty());
    assert!(whole_lines(&text[..20], true, false).is_empty());
  }
}
