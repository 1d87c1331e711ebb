//! A BPF_F_MMAPABLE array map mapped into this process (`readMapped`).

/// A BPF_F_MMAPABLE array map mapped read-only into this process: its
/// values are read with no syscall.
pub(crate) struct Mapped {
  ptr: *mut libc::c_void,
  len: usize,
}

impl Mapped {
  /// Maps the array `fd` (`len` bytes: max_entries values of value_size
  /// rounded up to 8).
  pub fn new(fd: i32, len: usize) -> std::io::Result<Self> {
    // SAFETY: a fresh read-only shared mapping of a map fd; checked below.
    let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, fd, 0) };
    if ptr == libc::MAP_FAILED {
      return Err(std::io::Error::last_os_error());
    }
    Ok(Mapped { ptr, len })
  }

  /// Bytes mapped.
  pub fn len(&self) -> usize {
    self.len
  }

  /// Copies the bytes from `offset` into `target` (all of it); false, and
  /// nothing copied, when that range runs past the mapping. Counters the
  /// kernel is bumping meanwhile are read as they are at that instant.
  pub fn read(&self, offset: usize, target: &mut [u8]) -> bool {
    if offset.checked_add(target.len()).is_none_or(|end| end > self.len) {
      return false;
    }
    // SAFETY: the range is inside the mapping (checked); the kernel may
    // write to it meanwhile, which makes the bytes racy, not invalid.
    unsafe { std::ptr::copy_nonoverlapping(self.ptr.cast::<u8>().add(offset), target.as_mut_ptr(), target.len()) };
    true
  }
}

impl Drop for Mapped {
  fn drop(&mut self) {
    // SAFETY: our own mapping, unmapped once.
    unsafe { libc::munmap(self.ptr, self.len) };
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

  #[test]
  fn reads_inside_the_mapping_and_refuses_a_range_past_it() {
    // SAFETY: plain syscalls on a new memfd that the OwnedFd owns.
    let fd = unsafe { OwnedFd::from_raw_fd(libc::memfd_create(c"mapped".as_ptr(), 0)) };
    let bytes: Vec<u8> = (0..=255).cycle().take(4096).collect();
    // SAFETY: writing our own buffer to our own fd.
    assert_eq!(unsafe { libc::pwrite(fd.as_raw_fd(), bytes.as_ptr().cast(), bytes.len(), 0) }, 4096);
    let mapped = Mapped::new(fd.as_raw_fd(), 4096).unwrap();
    assert_eq!(mapped.len(), 4096);
    let mut out = [0u8; 8];
    assert!(mapped.read(4088, &mut out));
    assert_eq!(out, [248, 249, 250, 251, 252, 253, 254, 255]);
    let mut untouched = [7u8; 8];
    for offset in [4089, 4096, usize::MAX - 3] {
      assert!(!mapped.read(offset, &mut untouched), "offset {offset}");
    }
    assert_eq!(untouched, [7; 8], "nothing copied");
    assert!(mapped.read(4096, &mut []), "an empty read at the end");
  }
}
