//! `readTargetFile` and `statTargetFile`: the files of a traced process
//! (its jitdump, its binary, anything under its root) for JavaScript, opened
//! and checked as files.rs opens every file a target controls.

use std::path::Path;

use napi::bindgen_prelude::Buffer;
use napi_derive::napi;

use super::files::{open_in_root, open_regular, read_tail, Checked, Links};
use crate::error::{guard, BpfError, BpfResult, Code, Result};

/// The most `readTargetFile` reads when no `length` is given.
const DEFAULT_READ: u64 = 64 << 20;
/// The most `readTargetFile` reads whatever `length` says.
const MAX_READ: u64 = 256 << 20;

/// Where and how much of a target's file to read.
#[napi(object)]
pub struct TargetFileOptions {
  /// The path is inside process `pid`'s root (`/tmp/jit-42.dump`), resolved
  /// there as the process would resolve it: an absolute link stays inside,
  /// no magic links, and no link as last component.
  pub pid: Option<u32>,
  /// The first byte read (default 0). Past the end: an empty Buffer.
  pub offset: Option<f64>,
  /// The most bytes read (default: the rest of the file, which must then be
  /// at most 64 MiB; at most 256 MiB in any case).
  pub length: Option<f64>,
  /// Follow the kernel's magic link `/proc/PID/exe` or
  /// `/proc/PID/map_files/START-END`: the very file mapped, even deleted or
  /// replaced at its path. Refused for any other path.
  pub follow: Option<bool>,
}

/// What `statTargetFile` tells of a file.
#[napi(object)]
pub struct TargetFileStat {
  pub size: f64,
  pub dev: f64,
  pub ino: f64,
  /// The modification time, in milliseconds since the epoch.
  pub mtime_ms: f64,
}

/// Reads a file that a traced process controls, never blocking, following
/// no link it planted and reading no FIFO or device: `ENOENT` when it does
/// not exist, `EPERM` when not allowed, `ERR_BPF_INVALID_OBJECT` when it is
/// a FIFO, a device, a directory, a symbolic link, or too big.
#[napi]
pub fn read_target_file(path: String, options: Option<TargetFileOptions>) -> Result<Buffer> {
  guard(|| {
    read(&path, options.unwrap_or(TargetFileOptions { pid: None, offset: None, length: None, follow: None })).map(Buffer::from)
  })
}

/// The bytes `readTargetFile` returns.
fn read(path: &str, options: TargetFileOptions) -> BpfResult<Vec<u8>> {
  let offset = count(options.offset, "offset")?.unwrap_or(0);
  let length = count(options.length, "length")?;
  if let Some(length) = length.filter(|&n| n > MAX_READ) {
    return Err(BpfError::new(
      Code::InvalidValue,
      format!("readTargetFile({path}): length {length} is more than the {} MiB read at most: read it in parts", MAX_READ >> 20),
    ));
  }
  let (mut checked, shown) = open(path, options.pid, options.follow)?;
  let cap = match length {
    Some(length) => length,
    None if checked.size.saturating_sub(offset) > DEFAULT_READ => {
      return Err(BpfError::new(
        Code::InvalidObject,
        format!(
          "{shown} has {} bytes past offset {offset}, more than the {} MiB read without a length: pass a length",
          checked.size - offset,
          DEFAULT_READ >> 20
        ),
      ))
    }
    // a file growing meanwhile is cut at the cap
    None => DEFAULT_READ,
  };
  read_tail(&mut checked, offset, cap, Path::new(&shown), "the file")
}

/// The size and identity (device, inode, modification time) of a file that
/// a traced process controls, opened and checked as `readTargetFile` opens
/// it, and not read.
#[napi]
pub fn stat_target_file(path: String, options: Option<TargetFileOptions>) -> Result<TargetFileStat> {
  guard(|| stat(&path, options.as_ref().and_then(|o| o.pid), options.as_ref().and_then(|o| o.follow)))
}

/// What `statTargetFile` returns.
fn stat(path: &str, pid: Option<u32>, follow: Option<bool>) -> BpfResult<TargetFileStat> {
  let (checked, _) = open(path, pid, follow)?;
  let (dev, ino, size, mtime, mtime_nsec) = checked.id;
  Ok(TargetFileStat {
    size: size as f64,
    dev: dev as f64,
    ino: ino as f64,
    mtime_ms: mtime as f64 * 1000.0 + mtime_nsec as f64 / 1e6,
  })
}

/// The file opened and checked, and how errors name it.
fn open(path: &str, pid: Option<u32>, follow: Option<bool>) -> BpfResult<(Checked, String)> {
  let follow = follow.unwrap_or(false);
  if follow && (pid.is_some() || !is_magic_link(path)) {
    return Err(BpfError::new(
      Code::InvalidValue,
      format!("{path}: follow is only for /proc/PID/exe and /proc/PID/map_files/START-END (the kernel's links to a mapped file), without a pid"),
    ));
  }
  if let Some(pid) = pid {
    let inside = format!("/{}", path.trim_start_matches('/'));
    return Ok((open_in_root(pid, &inside, u64::MAX, "the file")?, format!("/proc/{pid}/root{inside}")));
  }
  if let Some((pid, inside)) = super::files::in_process_root(path) {
    return Ok((open_in_root(pid, inside, u64::MAX, "the file")?, path.to_string()));
  }
  let links = if follow { Links::Follow } else { Links::Refuse };
  let checked = open_regular(Path::new(path), links, u64::MAX, "the file").map_err(|mut e| {
    if !follow && e.code == Code::InvalidObject && is_magic_link(path) {
      e.message.push_str(" (pass follow: true for the kernel's link to the very file mapped)");
    }
    e
  })?;
  Ok((checked, path.to_string()))
}

/// `/proc/PID/exe` or `/proc/PID/map_files/START-END`.
fn is_magic_link(path: &str) -> bool {
  let Some((pid, rest)) = path.strip_prefix("/proc/").and_then(|p| p.split_once('/')) else { return false };
  let pid_ok = pid == "self" || (!pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()));
  let range_ok = |r: &str| {
    r.split_once('-').is_some_and(|(a, b)| [a, b].iter().all(|s| !s.is_empty() && s.bytes().all(|c| c.is_ascii_hexdigit())))
  };
  pid_ok && (rest == "exe" || rest.strip_prefix("map_files/").is_some_and(range_ok))
}

/// An option that counts bytes: a whole number, 0 or more.
fn count(value: Option<f64>, name: &str) -> BpfResult<Option<u64>> {
  match value {
    None => Ok(None),
    Some(v) if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= 9007199254740991.0 => Ok(Some(v as u64)),
    Some(v) => Err(BpfError::new(Code::InvalidValue, format!("{name} {v} is not a byte count: give a whole number, 0 or more"))),
  }
}

#[cfg(test)]
mod tests {
  use std::io::Write;

  use super::*;

  fn dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("target-files-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
  }

  fn read_(path: &str, pid: Option<u32>, offset: Option<f64>, length: Option<f64>, follow: Option<bool>) -> BpfResult<Vec<u8>> {
    read(path, TargetFileOptions { pid, offset, length, follow })
  }

  #[test]
  fn a_range_is_read() {
    let d = dir("range");
    let f = d.join("data");
    std::fs::File::create(&f).unwrap().write_all(b"0123456789").unwrap();
    let p = f.to_str().unwrap();
    assert_eq!(read_(p, None, None, None, None).unwrap(), b"0123456789");
    assert_eq!(read_(p, None, Some(3.0), Some(4.0), None).unwrap(), b"3456");
    assert_eq!(read_(p, None, Some(8.0), Some(100.0), None).unwrap(), b"89");
    assert_eq!(read_(p, None, Some(20.0), None, None).unwrap(), b"");
    assert_eq!(read_(p, None, Some(-1.0), None, None).unwrap_err().code, Code::InvalidValue);
    assert_eq!(read_(p, None, None, Some(1.5), None).unwrap_err().code, Code::InvalidValue);
    let e = read_(p, None, None, Some((MAX_READ + 1) as f64), None).unwrap_err();
    assert_eq!(e.code, Code::InvalidValue);
    assert!(e.message.contains("256 MiB"), "{}", e.message);
    let stat = stat(p, None, None).unwrap();
    assert_eq!(stat.size, 10.0);
    let meta = std::fs::metadata(&f).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!((stat.dev, stat.ino), (meta.dev() as f64, meta.ino() as f64));
    std::fs::remove_dir_all(&d).unwrap();
  }

  #[test]
  fn a_file_past_the_default_cap_needs_a_length() {
    let d = dir("cap");
    let f = d.join("big");
    std::fs::File::create(&f).unwrap().set_len(DEFAULT_READ + 1).unwrap();
    let p = f.to_str().unwrap();
    let e = read_(p, None, None, None, None).unwrap_err();
    assert_eq!(e.code, Code::InvalidObject);
    assert!(e.message.contains("pass a length"), "{}", e.message);
    assert_eq!(read_(p, None, Some(DEFAULT_READ as f64 - 1.0), None, None).unwrap().len(), 2);
    assert_eq!(read_(p, None, None, Some(16.0), None).unwrap().len(), 16);
    std::fs::remove_dir_all(&d).unwrap();
  }

  #[test]
  fn a_fifo_and_a_link_are_refused() {
    let d = dir("fifo");
    let fifo = d.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let link = d.join("link");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    let e = read_(fifo.to_str().unwrap(), None, None, None, None).unwrap_err();
    assert_eq!(e.code, Code::InvalidObject);
    assert!(e.message.contains("not a regular file"), "{}", e.message);
    let e = read_(link.to_str().unwrap(), None, None, None, None).unwrap_err();
    assert_eq!(e.code, Code::InvalidObject);
    assert!(e.message.contains("symbolic link"), "{}", e.message);
    assert_eq!(stat(d.to_str().unwrap(), None, None).err().unwrap().code, Code::InvalidObject, "a directory");
    // follow: only the kernel's magic links
    let e = read_(link.to_str().unwrap(), None, None, None, Some(true)).unwrap_err();
    assert_eq!(e.code, Code::InvalidValue);
    let e = read_(d.join("none").to_str().unwrap(), None, None, None, None).unwrap_err();
    assert_eq!(e.code, Code::NotFound);
    std::fs::remove_dir_all(&d).unwrap();
  }

  #[test]
  fn the_running_binary_is_read_through_its_magic_link() {
    let me = std::process::id();
    let exe = format!("/proc/{me}/exe");
    assert_eq!(read_(&exe, None, None, None, None).unwrap_err().code, Code::InvalidObject, "a link without follow");
    assert_eq!(read_(&exe, None, None, Some(4.0), Some(true)).unwrap(), b"\x7fELF");
    let stat = stat(&exe, None, Some(true)).unwrap();
    assert_eq!(stat.size, std::fs::metadata("/proc/self/exe").unwrap().len() as f64);
    assert!(is_magic_link("/proc/self/exe") && is_magic_link("/proc/12/map_files/55d0-55e0"));
    assert!(!is_magic_link("/proc/12/root/exe") && !is_magic_link("/proc/12/map_files/x") && !is_magic_link("/proc//exe"));
  }

  #[test]
  fn a_path_in_a_root_resolves_there() {
    // this process's root is /: an absolute link inside it resolves in it,
    // and a link as last component is refused
    let d = dir("root");
    std::fs::write(d.join("data"), b"inside").unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    std::os::unix::fs::symlink(&d, d.join("sub").join("up")).unwrap();
    std::os::unix::fs::symlink(d.join("data"), d.join("last")).unwrap();
    let me = std::process::id();
    let via = format!("{}/sub/up/data", d.display());
    assert_eq!(read_(&via, Some(me), None, None, None).unwrap(), b"inside");
    assert_eq!(read_(&format!("/proc/{me}/root{via}"), None, None, None, None).unwrap(), b"inside");
    let e = read_(&format!("{}/last", d.display()), Some(me), None, None, None).unwrap_err();
    assert_eq!(e.code, Code::InvalidObject);
    assert!(e.message.contains(&format!("/proc/{me}/root")), "{}", e.message);
    assert_eq!(read_("/x", Some(me), None, None, Some(true)).unwrap_err().code, Code::InvalidValue);
    std::fs::remove_dir_all(&d).unwrap();
  }
}
