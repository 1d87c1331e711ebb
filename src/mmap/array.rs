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
