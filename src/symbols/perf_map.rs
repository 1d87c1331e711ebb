//! The perf map of a process (`/tmp/perf-PID.map`, one `START SIZE name`
//! per line in hex, as `node --perf-basic-prof` writes it): JIT frames.
//! Ours, not blazesym's: blazesym mmaps the file (a map that the target
//! truncates meanwhile SIGBUSes the tracer) and fails on the first
//! malformed line. Here the file is read (its last 64 MiB at most), a
//! malformed line is skipped, and lookups are a binary search.
//!
//! The map is the target's to write, so what is kept of it is bounded: the
//! last `MAX_LINES` lines, each name cut at `MAX_NAME` bytes (with a mark
//! that says how much was cut), the names in one buffer (a lookup borrows
//! its name), and the maps of all processes together within
//! `MAX_CACHED_BYTES` (`Cache`: the least recently used map goes first).
//!
//! A map can be read up to an end offset (a byte length, `end`): the map as
//! it was when a profile window ended. V8 reuses the memory of collected
//! code, and the last line for an address wins, so code compiled after the
//! window (the decoding of the window itself) would otherwise name the
//! sampled addresses it lands on.

use std::{collections::HashMap, fmt::Write, path::Path};

use super::files::{self, Checked, FileId, Links, MAX_PERF_MAP_SIZE};
use crate::error::{BpfResult, Code};

/// The most bytes of a name kept; the rest is cut, and the name ends with
/// `…[+N bytes]`.
pub(super) const MAX_NAME: usize = 4096;
/// The most lines of a map parsed: the last ones (those written last win
/// anyway where addresses were reused).
pub(super) const MAX_LINES: usize = 1 << 20;
/// The most memory the parsed perf maps of one `Symbolizer` hold, all
/// processes together.
pub(super) const MAX_CACHED_BYTES: usize = 128 << 20;

/// One JIT function: its name is `PerfMap::name`'s.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct JitSymbol {
  pub start: u64,
  pub size: u64,
  /// Where its name is in the map's `names`: offset and length.
  name: (u32, u32),
}

/// A parsed perf map: functions sorted by start, in file order among equal
/// starts.
pub(super) struct PerfMap {
  pub id: FileId,
  /// The byte length read, when the read had an end offset.
  stop: Option<u64>,
  symbols: Vec<JitSymbol>,
  /// Every function's name, one after the other.
  names: String,
}

impl PerfMap {
  /// The function covering `addr` (its name), and the offset in it. Where
  /// the map names an address twice (code moved, and other code compiled
  /// there later), the line written last wins.
  pub fn find(&self, addr: u64) -> Option<(&str, u64)> {
    let end = self.symbols.partition_point(|s| s.start <= addr);
    let last = self.symbols.get(end.checked_sub(1)?)?;
    // every function that starts where the nearest one below does
    let first = self.symbols[..end].partition_point(|s| s.start < last.start);
    self.symbols[first..end]
      .iter()
      .rev()
      .find(|s| addr - s.start < s.size || (s.size == 0 && addr == s.start))
      .map(|s| (self.name(s), addr - s.start))
  }

  fn name(&self, s: &JitSymbol) -> &str {
    let (at, len) = (s.name.0 as usize, s.name.1 as usize);
    &self.names[at..at + len]
  }

  /// The memory the map holds, in bytes.
  pub fn bytes(&self) -> usize {
    self.symbols.capacity() * std::mem::size_of::<JitSymbol>() + self.names.capacity()
  }
}

/// The functions of a perf map's text (its last `MAX_LINES` lines):
/// malformed lines (no address, no size, not hex, a range past 2^64) are
/// skipped.
fn parse(text: &[u8], id: FileId, stop: Option<u64>) -> PerfMap {
  parse_lines(text, MAX_LINES, id, stop)
}

fn parse_lines(text: &[u8], max_lines: usize, id: FileId, stop: Option<u64>) -> PerfMap {
  // (sized once: a map of a million lines grown by doubling held twice its size for a moment)
  let lines = text.iter().filter(|&&b| b == b'\n').count().saturating_add(1).min(max_lines);
  let mut symbols = Vec::with_capacity(lines);
  let mut names = String::new();
  symbols.extend(text.rsplit(|&b| b == b'\n').take(max_lines).filter_map(|line| parse_line(line, &mut names)));
  // (read from the last line up: back to file order)
  symbols.reverse();
  // stable: among equal starts, file order stays
  symbols.sort_by_key(|s| s.start);
  symbols.shrink_to_fit();
  names.shrink_to_fit();
  PerfMap { id, stop, symbols, names }
}

fn parse_line(line: &[u8], names: &mut String) -> Option<JitSymbol> {
  let line = line.strip_suffix(b"\r").unwrap_or(line);
  let mut fields = line.splitn(3, |&b| b == b' ' || b == b'\t');
  let start = hex(fields.next()?)?;
  let size = hex(fields.next()?)?;
  let name = fields.next()?.trim_ascii();
  if name.is_empty() || start.checked_add(size).is_none() || names.len() > u32::MAX as usize - 2 * MAX_NAME {
    return None;
  }
  let at = names.len();
  push_name(names, name);
  Some(JitSymbol { start, size, name: (at as u32, (names.len() - at) as u32) })
}

/// Appends name `raw` to `names`: at most MAX_NAME bytes of it (cut at a
/// character), and where it was longer, how many bytes were cut.
fn push_name(names: &mut String, raw: &[u8]) {
  if raw.len() <= MAX_NAME {
    names.push_str(&String::from_utf8_lossy(raw));
    return;
  }
  let mut end = MAX_NAME;
  while end > MAX_NAME - 4 && raw[end] & 0xc0 == 0x80 {
    end -= 1;
  }
  names.push_str(&String::from_utf8_lossy(&raw[..end]));
  let _ = write!(names, "…[+{} bytes]", raw.len() - end);
}

fn hex(field: &[u8]) -> Option<u64> {
  let field = std::str::from_utf8(field).ok()?;
  let digits = field.strip_prefix("0x").unwrap_or(field);
  if digits.is_empty() || digits.len() > 16 {
    return None;
  }
  u64::from_str_radix(digits, 16).ok()
}

/// The parsed perf maps of processes, by pid, within a budget of bytes
/// across them: the least recently used go first.
pub(super) struct Cache {
  maps: HashMap<u32, (PerfMap, u64)>,
  /// A use's number: the higher, the more recent.
  clock: u64,
  budget: usize,
}

impl Cache {
  pub fn new(budget: usize) -> Self {
    Cache { maps: HashMap::new(), clock: 0, budget }
  }

  /// Process `pid`'s map, taken out of the cache (`put` it back).
  pub fn take(&mut self, pid: u32) -> Option<PerfMap> {
    self.maps.remove(&pid).map(|(map, _)| map)
  }

  /// Keeps `map` as process `pid`'s, the most recently used, and evicts the
  /// least recently used maps past the budget (`map` too, if it alone is).
  pub fn put(&mut self, pid: u32, map: PerfMap) {
    if map.bytes() > self.budget {
      return;
    }
    self.clock += 1;
    self.maps.insert(pid, (map, self.clock));
    while self.bytes() > self.budget {
      let Some(oldest) = self.maps.iter().min_by_key(|(_, (_, used))| *used).map(|(&pid, _)| pid) else { break };
      self.maps.remove(&oldest);
    }
  }

  /// The bytes the cached maps hold.
  pub fn bytes(&self) -> usize {
    self.maps.values().map(|(map, _)| map.bytes()).sum()
  }
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
  Ok(Some(parse(whole_lines(&text, skipped > 0, stop.is_some()), checked.id, stop)))
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
    parse(text.as_bytes(), (0, 0, 0, 0, 0), None)
  }

  fn names(map: &PerfMap) -> Vec<&str> {
    map.symbols.iter().map(|s| map.name(s)).collect()
  }

  #[test]
  fn malformed_lines_are_skipped() {
    let m = map("1000 10 JS:*a x.js:1:1\nzzzz 10 bad\n2000\n3000 xyz bad\nffffffffffffffff 2 over\n\n4000 0x20 LazyCompile:~b y.js:2:2\r\n5000 10 \n");
    assert_eq!(m.symbols.len(), 2);
    assert_eq!(m.find(0x1004), Some(("JS:*a x.js:1:1", 4)));
    assert_eq!(m.find(0x401f), Some(("LazyCompile:~b y.js:2:2", 0x1f)));
    assert!(m.find(0x1010).is_none(), "past the end of a");
    assert!(m.find(0xfff).is_none());
    assert!(m.find(u64::MAX).is_none());
  }

  #[test]
  fn the_last_line_for_an_address_wins() {
    let m = map("1000 100 old\n1000 100 new\n1050 10 inner\n");
    assert_eq!(m.find(0x1010).unwrap().0, "new");
    assert_eq!(m.find(0x1052).unwrap().0, "inner");
    // past inner's end, inside new's: the nearest start below is inner's
    assert!(m.find(0x1070).is_none());
  }

  #[test]
  fn a_read_to_an_end_offset_keeps_whole_lines_before_it() {
    let text = b"1000 100 JS:*hotLoop a.js:1:1\n1080 100 JS:^toBigInt b.js:2:2\n2000 10 JS:~cut";
    let names = |t: &[u8]| {
      let m = map(std::str::from_utf8(t).unwrap());
      names(&m).into_iter().map(String::from).collect::<Vec<_>>()
    };
    assert_eq!(names(whole_lines(&text[..30], false, true)), ["JS:*hotLoop a.js:1:1"]);
    assert_eq!(names(whole_lines(&text[..40], false, true)), ["JS:*hotLoop a.js:1:1"], "a line cut by the end");
    assert_eq!(names(whole_lines(text, false, true)), ["JS:*hotLoop a.js:1:1", "JS:^toBigInt b.js:2:2"], "one being written");
    assert_eq!(names(whole_lines(text, false, false)).len(), 3, "without an end: every line");
    assert_eq!(names(whole_lines(&text[5..], true, true)), ["JS:^toBigInt b.js:2:2"], "a line cut by the start");
    assert!(whole_lines(&text[..20], false, true).is_empty());
    assert!(whole_lines(&text[..20], true, false).is_empty());
  }

  #[test]
  fn a_long_name_is_cut_with_a_mark() {
    let long = format!("\x1b{}", "x".repeat(3 * MAX_NAME));
    let m = map(&format!("1000 10 {long}\n2000 10 short\n"));
    let (name, _) = m.find(0x1000).unwrap();
    assert_eq!(name.len(), MAX_NAME + "…[+8193 bytes]".len());
    assert!(name.starts_with("\x1bxxx"));
    assert!(name.ends_with("x…[+8193 bytes]"), "{}", &name[MAX_NAME - 8..]);
    assert_eq!(m.find(0x2000).unwrap().0, "short");
    // cut at a character, not inside one
    let wide = format!("1000 10 a{}\n", "é".repeat(MAX_NAME));
    let name = map(&wide).find(0x1000).unwrap().0.to_string();
    assert!(name.starts_with("aéé") && !name.contains('\u{fffd}'));
    assert!(name.ends_with(&format!("é…[+{} bytes]", 1 + 2 * MAX_NAME - (MAX_NAME - 1))), "{}", &name[name.len() - 20..]);
    // the map holds the cut names, not the line
    assert!(map(&format!("1000 10 {}\n", "y".repeat(1 << 20))).bytes() < 2 * MAX_NAME);
  }

  #[test]
  fn only_the_last_lines_are_parsed() {
    let text: String = (0..100).map(|i| format!("{:x} 10 f{i}\n", 0x1000 + i * 0x10)).collect();
    let m = parse_lines(text.as_bytes(), 11, (0, 0, 0, 0, 0), None);
    // (the 11th line from the end is the empty one after the last newline)
    assert_eq!(names(&m), (90..100).map(|i| format!("f{i}")).collect::<Vec<_>>());
    assert!(m.find(0x1000).is_none());
    assert_eq!(m.find(0x1000 + 99 * 0x10).unwrap().0, "f99");
    let all = map(&text);
    assert_eq!(all.symbols.len(), 100);
    let many: String = (0..MAX_LINES + 5).map(|i| format!("{:x} 1 g\n", i + 1)).collect();
    assert_eq!(map(&many).symbols.len(), MAX_LINES - 1);
  }

  #[test]
  fn the_cache_keeps_the_most_recently_used_within_its_budget() {
    let sized =
      |lines: usize| map(&(0..lines).map(|i| format!("{:x} 10 function{i:06}\n", 0x1000 + i * 0x10)).collect::<String>());
    let one = sized(1000).bytes();
    let mut cache = Cache::new(one * 3 + one / 2);
    for pid in 1..=3 {
      cache.put(pid, sized(1000));
    }
    assert!(cache.bytes() <= one * 3 + one / 2);
    // 1 used again: 2 is the least recently used, evicted by a fourth
    let m1 = cache.take(1).unwrap();
    cache.put(1, m1);
    cache.put(4, sized(1000));
    assert!(cache.take(2).is_none(), "the least recently used map is evicted");
    for pid in [1, 3, 4] {
      assert!(cache.take(pid).is_some(), "pid {pid} kept");
    }
    assert_eq!(cache.bytes(), 0);
    // a map past the budget alone is not kept
    cache.put(5, sized(4000));
    assert!(cache.take(5).is_none());
    assert_eq!(cache.bytes(), 0);
  }
}
