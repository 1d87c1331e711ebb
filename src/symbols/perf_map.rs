//! The perf map of a process (`/tmp/perf-PID.map`, one `START SIZE name`
//! per line in hex, as `node --perf-basic-prof` writes it): JIT frames.
//! Ours, not blazesym's: blazesym mmaps the file (a map that the target
//! truncates meanwhile SIGBUSes the tracer) and fails on the first
//! malformed line. Here the file is read (its last 64 MiB at most), a
//! malformed line is skipped, and lookups are a binary search.

use std::path::Path;

use super::files::{self, FileId, MAX_PERF_MAP_SIZE};
use crate::error::BpfResult;

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

/// The perf map of process `pid` (at `path` in its file system), parsed,
/// or `cached` again when the file has not changed. `None` when the
/// process has none; an error when it is no regular file or a link. Of a
/// map over 64 MiB (a long-running process), the last 64 MiB: the lines
/// written last, which win anyway where addresses were reused.
pub(super) fn load(pid: u32, path: &str, cached: Option<PerfMap>) -> BpfResult<Option<PerfMap>> {
  let mut checked = match files::open_in_root(pid, path, u64::MAX, "the perf map") {
    Ok(checked) => checked,
    Err(e) if e.code == crate::error::Code::NotFound => return Ok(None),
    Err(e) => return Err(e),
  };
  if let Some(map) = cached.filter(|m| m.id == checked.id) {
    return Ok(Some(map));
  }
  let skipped = checked.size.saturating_sub(MAX_PERF_MAP_SIZE);
  let text = files::read_tail(&mut checked, skipped, MAX_PERF_MAP_SIZE, Path::new(path), "the perf map")?;
  // a cut first line is no line
  let text = match skipped {
    0 => &text[..],
    _ => text.iter().position(|&b| b == b'\n').map_or(&[][..], |newline| &text[newline + 1..]),
  };
  Ok(Some(PerfMap { id: checked.id, symbols: parse(text) }))
}

#[cfg(test)]
mod tests {
  use super::*;

  fn map(text: &str) -> PerfMap {
    PerfMap { id: (0, 0, 0, 0, 0), symbols: parse(text.as_bytes()) }
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
}
