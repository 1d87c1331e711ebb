//! Reading files that a traced process may control (its binaries and
//! libraries, its perf map, anything under /proc/PID/root), so that no such
//! file can hang, crash or exhaust the tracer:
//!
//! - opened with O_NONBLOCK (a FIFO cannot block the open) and, where the
//!   path comes from the target, O_NOFOLLOW; then fstat: regular files only
//!   (no FIFO, device, directory), and no bigger than a cap;
//! - read with read(2), never mmapped: a file that the target truncates
//!   while we read it gives a short read, where a mapping would SIGBUS;
//! - ELF magic checked before anything parses the file.
//!
//! blazesym mmaps the ELF files it symbolizes. For a target's files we hand
//! it a sealed memfd copy instead (memfd_create, the checked file copied in,
//! then F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE): the copy cannot shrink
//! under the mapping, so no SIGBUS, whatever the target does to the original
//! afterwards. The copy costs the file's size in memory while the
//! `Symbolizer` caches it (a node binary: ~100 MB); the size cap bounds it.

use std::{
  fs::File,
  io::Read,
  os::{
    fd::{AsRawFd, FromRawFd},
    unix::fs::{MetadataExt, OpenOptionsExt},
  },
  path::Path,
};

use crate::error::{BpfError, BpfResult, Code};

/// The biggest ELF file read or copied (binaries and libraries).
pub(super) const MAX_ELF_SIZE: u64 = 1 << 30;
/// The biggest decompressed section (DWARF) parsed.
pub(super) const MAX_SECTION_SIZE: u64 = 256 << 20;
/// The most of a perf map read (its end).
pub(super) const MAX_PERF_MAP_SIZE: u64 = 64 << 20;

/// Whether a path names the file itself or may be a symbolic link.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Links {
  /// The user gave the path: follow links.
  Follow,
  /// The target made the path: a link in its last component is refused.
  Refuse,
}

/// The identity of a file's contents as far as a cache goes: device,
/// inode, size and modification time.
pub(super) type FileId = (u64, u64, u64, i64, i64);

/// An opened regular file, checked: its size and identity.
pub(super) struct Checked {
  pub file: File,
  pub size: u64,
  pub id: FileId,
}

/// Opens `path` for reading without blocking and checks it is a regular
/// file of at most `cap` bytes. `what` names it in errors ("the perf map").
pub(super) fn open_regular(path: &Path, links: Links, cap: u64, what: &str) -> BpfResult<Checked> {
  let shown = path.display();
  let mut flags = libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY;
  if links == Links::Refuse {
    flags |= libc::O_NOFOLLOW;
  }
  let file = std::fs::OpenOptions::new()
    .read(true)
    .custom_flags(flags)
    .open(path)
    .map_err(|e| open_error(&e, &shown.to_string(), links, what))?;
  check(file, &shown.to_string(), cap, what)
}

/// The error for a file that did not open.
fn open_error(e: &std::io::Error, shown: &str, links: Links, what: &str) -> BpfError {
  match e.raw_os_error() {
    Some(libc::ENOENT) | Some(libc::ENOTDIR) => BpfError::new(
      Code::NotFound,
      format!("{what} {shown} does not exist (check the path, and that the process whose file it is still runs)"),
    ),
    Some(libc::ELOOP) if links == Links::Refuse => BpfError::new(
      Code::InvalidObject,
      format!("{what} {shown} is a symbolic link: not followed in a path the traced process controls"),
    ),
    Some(libc::EACCES) | Some(libc::EPERM) => BpfError::new(
      Code::Permission,
      format!(
        "reading {what} {shown}: {e} (run as root: another user's process's files need CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH)"
      ),
    ),
    _ => BpfError::new(Code::InvalidObject, format!("reading {what} {shown}: {e}")),
  }
}

/// A file of process `pid`'s file system (`path`, absolute there), resolved
/// as the process itself would: in its root, an absolute link inside
/// staying inside (openat2 RESOLVE_IN_ROOT, where plain /proc/PID/root/...
/// would resolve it in ours), no magic links, no link as last component;
/// then checked as `open_regular` checks.
pub(super) fn open_in_root(pid: u32, path: &str, cap: u64, what: &str) -> BpfResult<Checked> {
  let shown = format!("/proc/{pid}/root{path}");
  let root = std::fs::OpenOptions::new()
    .read(true)
    .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC)
    .open(format!("/proc/{pid}/root"))
    .map_err(|e| open_error(&e, &shown, Links::Refuse, what))?;
  let relative = std::ffi::CString::new(path.trim_start_matches('/'))
    .map_err(|_| BpfError::new(Code::InvalidObject, format!("{what} {shown}: a NUL in the path")))?;
  let how = OpenHow {
    flags: (libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY | libc::O_NOFOLLOW) as u64,
    mode: 0,
    resolve: libc::RESOLVE_IN_ROOT | libc::RESOLVE_NO_MAGICLINKS,
  };
  // SAFETY: a directory fd we own, a NUL-terminated path, and an open_how
  // of the size passed; the fd returned (if any) is ours.
  let fd = unsafe {
    libc::syscall(libc::SYS_openat2, root.as_raw_fd(), relative.as_ptr(), &how as *const OpenHow, std::mem::size_of::<OpenHow>())
  };
  if fd < 0 {
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ENOSYS) {
      // before Linux 5.6: the last component at least is no link
      return open_regular(Path::new(&shown), Links::Refuse, cap, what);
    }
    return Err(open_error(&e, &shown, Links::Refuse, what));
  }
  // SAFETY: openat2 returned a new fd that nothing else owns.
  check(unsafe { File::from_raw_fd(fd as i32) }, &shown, cap, what)
}

/// struct open_how of openat2(2) (libc's cannot be built: non-exhaustive).
#[repr(C)]
struct OpenHow {
  flags: u64,
  mode: u64,
  resolve: u64,
}

/// Checks an open file: a regular file of at most `cap` bytes.
fn check(file: File, shown: &str, cap: u64, what: &str) -> BpfResult<Checked> {
  let meta = file.metadata().map_err(|e| BpfError::new(Code::InvalidObject, format!("reading {what} {shown}: {e}")))?;
  if !meta.file_type().is_file() {
    return Err(BpfError::new(
      Code::InvalidObject,
      format!("{what} {shown} is not a regular file (a FIFO, a device or a directory): give the path of a file"),
    ));
  }
  if meta.len() > cap {
    return Err(BpfError::new(
      Code::InvalidObject,
      format!("{what} {shown} is {} bytes, more than the {} MiB read at most", meta.len(), cap >> 20),
    ));
  }
  let id = (meta.dev(), meta.ino(), meta.len(), meta.mtime(), meta.mtime_nsec());
  Ok(Checked { file, size: meta.len(), id })
}

/// All of a checked file, read (not mapped), at most `cap` bytes: a file
/// that grows past the cap after the check is an error, one that shrinks
/// gives what is left.
pub(super) fn read_all(checked: &mut Checked, cap: u64, path: &Path, what: &str) -> BpfResult<Vec<u8>> {
  let mut data = Vec::with_capacity(checked.size.min(cap) as usize);
  (&checked.file)
    .take(cap + 1)
    .read_to_end(&mut data)
    .map_err(|e| BpfError::new(Code::InvalidObject, format!("reading {what} {}: {e}", path.display())))?;
  if data.len() as u64 > cap {
    return Err(BpfError::new(
      Code::InvalidObject,
      format!("{what} {} grew past the {} MiB read at most while it was read", path.display(), cap >> 20),
    ));
  }
  Ok(data)
}

/// At most `cap` bytes of a checked file from offset `from`, read (not
/// mapped): a file that shrinks meanwhile gives what is left.
pub(super) fn read_tail(checked: &mut Checked, from: u64, cap: u64, path: &Path, what: &str) -> BpfResult<Vec<u8>> {
  use std::io::{Seek, SeekFrom};
  let mut data = Vec::with_capacity(checked.size.saturating_sub(from).min(cap) as usize);
  (&checked.file)
    .seek(SeekFrom::Start(from))
    .and_then(|_| (&checked.file).take(cap).read_to_end(&mut data))
    .map_err(|e| BpfError::new(Code::InvalidObject, format!("reading {what} {}: {e}", path.display())))?;
  Ok(data)
}

/// Whether a checked file starts with the ELF magic (read at offset 0,
/// without moving the file's position).
pub(super) fn has_elf_magic(checked: &Checked) -> bool {
  use std::os::unix::fs::FileExt;
  let mut magic = [0u8; 4];
  checked.file.read_exact_at(&mut magic, 0).is_ok() && magic == *b"\x7fELF"
}

/// The bytes of an ELF file (`ENOENT` when it does not exist;
/// `ERR_BPF_INVALID_OBJECT` when it is no regular file, is too big or has
/// no ELF magic). A path in a process's root (`/proc/PID/root/...`, as
/// lib/host/procfs.js makes them from its maps) is the process's to control:
/// resolved in that root, its last component no link (`open_in_root`).
pub(super) fn read_elf(path: &str) -> BpfResult<Vec<u8>> {
  let mut checked = match in_process_root(path) {
    Some((pid, inside)) => open_in_root(pid, inside, MAX_ELF_SIZE, "the file")?,
    None => open_regular(Path::new(path), Links::Follow, MAX_ELF_SIZE, "the file")?,
  };
  if !has_elf_magic(&checked) {
    return Err(BpfError::new(Code::InvalidObject, format!("{path} is not an ELF file (it does not start with the ELF magic)")));
  }
  read_all(&mut checked, MAX_ELF_SIZE, Path::new(path), "the file")
}

/// `/proc/PID/root/a/b` as (PID, `/a/b`).
pub(super) fn in_process_root(path: &str) -> Option<(u32, &str)> {
  let (pid, inside) = path.strip_prefix("/proc/")?.split_once("/root/")?;
  Some((pid.parse().ok()?, &path[path.len() - inside.len() - 1..]))
}

/// A sealed in-memory copy of a checked file: it can neither shrink, grow
/// nor change, so mapping it is safe. Reached as `/proc/self/fd/N` while
/// the `File` lives.
pub(super) fn sealed_copy(checked: &Checked) -> std::io::Result<File> {
  // SAFETY: a NUL-terminated name and flags; the fd returned is ours.
  let fd = unsafe { libc::memfd_create(c"node-libbpf-elf".as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
  if fd < 0 {
    return Err(std::io::Error::last_os_error());
  }
  // SAFETY: fd was just made by memfd_create and nothing else owns it.
  let mut copy = unsafe { File::from_raw_fd(fd) };
  // read at most the size checked: a file growing meanwhile is cut there
  let copied = std::io::copy(&mut (&checked.file).take(checked.size), &mut copy)?;
  if copied == 0 {
    return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the file is empty"));
  }
  let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL;
  // SAFETY: fcntl on our own memfd; F_ADD_SEALS takes an int.
  if unsafe { libc::fcntl(copy.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
    return Err(std::io::Error::last_os_error());
  }
  Ok(copy)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a_fifo_is_refused_without_blocking() {
    let dir = std::env::temp_dir().join(format!("files-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let e = open_regular(&fifo, Links::Refuse, MAX_ELF_SIZE, "the file").err().unwrap();
    assert_eq!(e.code, Code::InvalidObject);
    assert!(e.message.contains("not a regular file"), "{}", e.message);
    std::fs::remove_dir_all(&dir).unwrap();
  }

  #[test]
  fn paths_in_a_process_root_are_told() {
    assert_eq!(in_process_root("/proc/42/root/usr/lib/x.so"), Some((42, "/usr/lib/x.so")));
    assert_eq!(in_process_root("/proc/self/root/x"), None);
    assert_eq!(in_process_root("/proc/42/exe"), None);
    assert_eq!(in_process_root("/usr/lib/x.so"), None);
  }

  #[test]
  fn a_sealed_copy_cannot_shrink() {
    let checked = open_regular(Path::new("/proc/self/exe"), Links::Follow, MAX_ELF_SIZE, "the file").unwrap();
    assert!(has_elf_magic(&checked));
    let copy = sealed_copy(&checked).unwrap();
    assert_eq!(copy.metadata().unwrap().len(), checked.size);
    assert!(copy.set_len(10).is_err(), "sealed against shrinking");
  }
}
