//! Kernel addresses to names, from /proc/kallsyms: the nearest symbol at or
//! below an address, and the offset into it. Ours, not blazesym's kernel
//! source, so that the table can be read off the JS thread, on the libuv
//! thread pool (`Symbolizer.preloadKernel()`): the kernel makes the file's
//! ~200,000 lines as it is read, ~45 ms on the 2-vCPU VM, which a
//! profile's first pull spent on the JS thread.
//!
//! Only kernel addresses (the upper half of the address space, on x86_64
//! and arm64) are kept: per-CPU variables are listed at their small offsets
//! in the per-CPU area (`0000000000001000 A cpu_debug_store`, 5.10 and 6.1),
//! and without CAP_SYSLOG every address reads as zero, so that then every
//! address is unknown. Among symbols at one address (aliases), a function's
//! name (type t or T) wins, then the first in the file.

use std::sync::{Arc, OnceLock};

/// Where the kernel's addresses start (x86_64 and arm64 alike).
const KERNEL_HALF: u64 = 1 << 63;

/// /proc/kallsyms, parsed: starts sorted, file order among equal starts.
pub(super) struct Kallsyms {
  symbols: Vec<(u64, bool, Box<str>)>,
}

impl Kallsyms {
  /// Reads and parses /proc/kallsyms (empty where it cannot be read).
  pub fn read() -> Self {
    Self::parse(&std::fs::read("/proc/kallsyms").unwrap_or_default())
  }

  /// `ADDRESS TYPE NAME[\t[MODULE]]` lines; malformed ones and addresses below the kernel's half skipped.
  fn parse(text: &[u8]) -> Self {
    let mut symbols: Vec<(u64, bool, Box<str>)> = text
      .split(|&b| b == b'\n')
      .filter_map(|line| {
        let mut fields = line.splitn(3, |&b| b == b' ');
        let address = u64::from_str_radix(std::str::from_utf8(fields.next()?).ok()?, 16).ok()?;
        let kind = fields.next()?;
        let name = fields.next()?.split(|&b| b == b'\t').next()?;
        if address < KERNEL_HALF || name.is_empty() {
          return None;
        }
        Some((address, matches!(kind, b"t" | b"T"), String::from_utf8_lossy(name).into()))
      })
      .collect();
    // stable: among equal starts, file order stays
    symbols.sort_by_key(|s| s.0);
    Kallsyms { symbols }
  }

  /// The symbol at or below `address` and the offset into it.
  pub fn find(&self, address: u64) -> Option<(&str, u64)> {
    let end = self.symbols.partition_point(|s| s.0 <= address);
    let start = self.symbols.get(end.checked_sub(1)?)?.0;
    let first = self.symbols[..end].partition_point(|s| s.0 < start);
    let aliases = &self.symbols[first..end];
    let (_, _, name) = aliases.iter().find(|s| s.1).unwrap_or(&aliases[0]);
    Some((name, address - start))
  }
}

/// A Kallsyms read once, when first asked for (perhaps on the thread pool,
/// `Symbolizer.preloadKernel()`).
#[derive(Clone, Default)]
pub(super) struct KallsymsCell(Arc<OnceLock<Kallsyms>>);

impl KallsymsCell {
  /// The table, read now if no thread has (or waiting for the one reading it).
  pub fn get(&self) -> &Kallsyms {
    self.0.get_or_init(Kallsyms::read)
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn the_nearest_symbol_below_a_function_name_first_among_aliases() {
    let table = Kallsyms::parse(
      b"ffffffff81000100 T second\n\
        ffffffff81000000 D data_alias\n\
        ffffffff81000000 T _stext\n\
        ffffffff81000000 T _text\n\
        not a line\n\
        0000000000000000 T hidden\n\
        0000000000001000 A cpu_debug_store\n\
        ffffffffc0200000 t in_module\t[mod]\n",
    );
    assert_eq!(table.find(0xffffffff81000004), Some(("_stext", 4)));
    assert_eq!(table.find(0xffffffff81000100), Some(("second", 0)));
    assert_eq!(table.find(0xffffffffc0200010), Some(("in_module", 16)));
    assert_eq!(table.find(0xffffffff80000000), None);
    assert_eq!(table.find(0x1004), None, "a per-CPU offset is no kernel address");
  }

  #[test]
  fn addresses_hidden_as_zeros_name_nothing() {
    let table = Kallsyms::parse(b"0000000000000000 T _stext\n0000000000000000 T do_sys_openat2\n");
    assert_eq!(table.find(0xffffffff81000004), None);
  }
}
