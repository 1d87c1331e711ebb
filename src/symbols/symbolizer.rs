//! `Symbolizer`: addresses to function names with blazesym (kernel frames
//! from /proc/kallsyms, native frames from ELF, JavaScript frames from the
//! perf map that `node --perf-basic-prof` writes).

use std::path::Path;

use blazesym::symbolize::{self, source, Input, Symbolized, Symbolizer as BlazeSymbolizer};
use napi::bindgen_prelude::BigInt;
use napi_derive::napi;

use crate::error::{BpfError, Code, Result};

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
