//! The parsers of src/symbols/ that read a traced process's bytes (the
//! v8dbg reader of a node binary, the perf map parser), compiled as they
//! are, with a stand-in for src/error.rs (which needs libbpf-rs).
#![allow(dead_code, unused_imports, clippy::all)]

mod error {
  /// src/error.rs's codes that src/symbols/ uses.
  #[derive(Debug, Clone, Copy, PartialEq, Eq)]
  pub enum Code {
    NotFound,
    NotSupported,
    Permission,
    InvalidObject,
    InvalidValue,
    Internal,
  }

  #[derive(Debug)]
  pub struct BpfError {
    pub code: Code,
    pub message: String,
    pub errno: Option<i32>,
  }

  impl BpfError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
      BpfError { code, message: message.into(), errno: None }
    }
  }

  pub type BpfResult<T> = std::result::Result<T, BpfError>;
  pub type Result<T> = napi::Result<T, String>;

  impl From<BpfError> for napi::Error<String> {
    fn from(e: BpfError) -> Self {
      napi::Error::new(format!("{:?}", e.code), e.message)
    }
  }

  /// No catch_unwind here: a panic is what the fuzzer looks for.
  pub fn guard<T>(body: impl FnOnce() -> BpfResult<T>) -> Result<T> {
    body().map_err(Into::into)
  }
}

#[path = "../../../src/symbols/files.rs"]
mod files;
#[path = "../../../src/symbols/target_files.rs"]
mod target_files;

mod symbols {
  // (at the crate's root: a #[path] inside an inline module is read from a folder that does not exist)
  use crate::{files, target_files};

  pub mod v8dbg {
    include!(concat!(env!("OUT_DIR"), "/v8dbg.rs"));

    /// `read` of the node binary at `path`; Ok or a coded error, never a panic.
    pub fn fuzz(path: &str) {
      if let Ok(r) = read(path) {
        assert!(r.values.len() <= MAX_VALUES && r.interpreter.len() <= MAX_INTERPRETER);
        assert!(r.interpreter.iter().all(|&(s, e)| s < e));
        assert!(r.bytecode_sizes.as_ref().is_none_or(|b| b.len() as u64 <= MAX_BYTECODE_SIZES && b.len() % 3 == 0));
      }
    }
  }

  pub mod perf_map {
    include!(concat!(env!("OUT_DIR"), "/perf_map.rs"));

    /// `parse` (and `parse_lines` of a few lines) of `text`, then `find`
    /// at the bytes' own addresses and at the edges of each symbol.
    pub fn fuzz(text: &[u8]) {
      let id = (0, 0, 0, 0, 0);
      let few = parse_lines(text, 3, id, None);
      let map = parse(text, id, Some(text.len() as u64));
      assert!(few.symbols.len() <= 3 && few.symbols.len() <= map.symbols.len());
      let _ = (whole_lines(text, true, true), whole_lines(text, false, true));
      for m in [&few, &map] {
        for s in m.symbols.iter().take(64) {
          for addr in [s.start, s.start.wrapping_sub(1), s.start + s.size.saturating_sub(1), s.start + s.size] {
            if let Some((name, offset)) = m.find(addr) {
              assert!(offset <= addr && name.len() <= MAX_NAME + 32);
            }
          }
        }
        for addr in [0, 1, u64::MAX, u64::MAX / 2] {
          let _ = m.find(addr);
        }
        assert!(m.bytes() <= text.len() * 8 + 4096 * 64);
      }
    }
  }
}

/// Runs the v8dbg reader on `data` as a file's bytes: written to a memfd of
/// ours (no disk), read back through /proc/self/fd/N as any path is.
pub fn v8dbg(data: &[u8]) {
  use std::os::{fd::FromRawFd, unix::fs::FileExt};
  thread_local! {
    static FILE: std::fs::File = {
      // SAFETY: a NUL-terminated name; the fd returned is ours.
      let fd = unsafe { libc::memfd_create(c"v8dbg-fuzz".as_ptr(), libc::MFD_CLOEXEC) };
      assert!(fd >= 0, "memfd_create: {}", std::io::Error::last_os_error());
      // SAFETY: a fresh fd, owned by the File from here on.
      unsafe { std::fs::File::from_raw_fd(fd) }
    };
  }
  FILE.with(|file| {
    use std::os::fd::AsRawFd;
    file.set_len(0).unwrap();
    file.write_all_at(data, 0).unwrap();
    symbols::v8dbg::fuzz(&format!("/proc/self/fd/{}", file.as_raw_fd()));
  });
}

/// Runs the perf map parser on `data`.
pub fn perf_map(data: &[u8]) {
  symbols::perf_map::fuzz(data);
}
