//! Where a thread's request labels are, for the profile's programs
//! (bpf/labels.bpf.h): V8's continuation-preserved embedder data (CPED),
//! the slot of the isolate that holds node's AsyncContextFrame (a JS Map of
//! AsyncLocalStorage -> store), found by calibration rather than by a table
//! of V8 versions; or, where node has no AsyncContextFrame, the address of
//! a word lib/service/labels.js keeps the current label id in.
//!
//! The calibration (lib/service/labels.js) runs `labelsCalibrate(store)`
//! inside `als.run(store, ...)` for two stores: the isolate's first bytes
//! are read and each word that points to an object whose table (an
//! OrderedHashMap: a FixedArray of nof, ndeleted, nbuckets, buckets, then
//! entries of key, value, chain) holds `store` as a value is a candidate.
//! Memory is read with process_vm_readv on this process: a guessed pointer
//! is never dereferenced.

use napi::bindgen_prelude::{BigInt, Int32ArraySlice};
use napi_derive::napi;

use crate::error::{err, guard, Code, Result};

/// Bytes of the isolate scanned for the CPED slot (V8 12-14 keep it in IsolateData, before the roots: within 1 KiB).
const MAX_SCAN: u32 = 64 * 1024;
/// Words of an object read for its table: a JSMap's is the fourth (map, properties, elements, table).
const OBJECT_WORDS: usize = 8;
/// Entries of a table read: an AsyncContextFrame holds one per AsyncLocalStorage in use.
const MAX_ENTRIES: u64 = 16;
const MAX_BUCKETS: u64 = 1024;

/// A place the calibration found the store at.
#[napi(object)]
pub struct LabelsCandidate {
  /// The slot's offset in the isolate.
  pub slot_offset: u32,
  /// The table's offset in the object the slot points to.
  pub table_offset: u32,
}

/// The calling thread, for the programs: its isolate's address and its thread id.
#[napi(object)]
pub struct LabelsThread {
  /// `v8::Isolate::GetCurrent()` (0: none, or node exports no such symbol).
  pub isolate: BigInt,
  /// `gettid()`, in this process's pid namespace.
  pub tid: u32,
}

type GetCurrent = unsafe extern "C" fn() -> usize;

fn isolate() -> usize {
  const NAME: &[u8] = b"_ZN2v87Isolate10GetCurrentEv\0";
  // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only looks the symbol up
  let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, NAME.as_ptr().cast()) };
  if f.is_null() {
    return 0;
  }
  // SAFETY: node exports v8::Isolate::GetCurrent() with this mangled name: a static function of no
  // arguments that returns the calling thread's isolate (or null); we are on a JS thread (a napi call)
  unsafe { std::mem::transmute::<*mut libc::c_void, GetCurrent>(f)() }
}

/// Reads `buf.len()` bytes of this process at `addr`; returns how many could be read.
fn read_self(addr: u64, buf: &mut [u8]) -> usize {
  let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
  let remote = libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: buf.len() };
  // SAFETY: the local iovec is `buf`, writable for its length; the remote one is only read by the
  // kernel, which fails (EFAULT) or stops short on memory that is not mapped
  let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
  if n < 0 {
    0
  } else {
    n as usize
  }
}

fn words(addr: u64, n: usize) -> Option<Vec<u64>> {
  let mut buf = vec![0u8; n * 8];
  if read_self(addr, &mut buf) != buf.len() {
    return None;
  }
  Some(buf.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap_or_default())).collect())
}

/// A tagged heap pointer's object address (no pointer compression: the tag is 01 in the low bits).
fn heap_object(w: u64) -> Option<u64> {
  (w & 3 == 1 && w > 0x10000 && w < 0x8000_0000_0000).then(|| w - 1)
}

/// A Smi's value (no pointer compression: the int32 in the upper half, the lower half 0).
fn smi(w: u64) -> Option<u64> {
  (w & 0xffff_ffff == 0).then_some(w >> 32)
}

/// Whether the OrderedHashMap at `table` holds `value` (a tagged word) among its first entries' values.
pub(crate) fn table_holds(table: u64, value: u64) -> bool {
  // (map, length, then nof, ndeleted, nbuckets)
  let Some(h) = words(table, 5) else { return false };
  let (Some(nof), Some(ndel), Some(nb)) = (smi(h[2]), smi(h[3]), smi(h[4])) else { return false };
  if nb == 0 || nb > MAX_BUCKETS || !nb.is_power_of_two() || nof + ndel > 2 * nb {
    return false;
  }
  let n = (nof + ndel).min(MAX_ENTRIES) as usize;
  if n == 0 {
    return false;
  }
  let Some(e) = words(table + 8 * (5 + nb), n * 3) else { return false };
  (0..n).any(|i| e[i * 3 + 1] == value)
}

/// The calling thread's isolate and thread id.
#[napi]
pub fn labels_thread() -> Result<LabelsThread> {
  guard(|| {
    // SAFETY: gettid takes no arguments and cannot fail
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as u32;
    Ok(LabelsThread { isolate: BigInt::from(isolate() as u64), tid })
  })
}

/// The places in the calling thread's isolate (its first `scan` bytes) of
/// a word that reaches a Map whose table holds the Smi `store` as a value:
/// run inside `als.run(store, ...)`, it finds the CPED slot.
#[napi]
pub fn labels_calibrate(store: u32, scan: u32) -> Result<Vec<LabelsCandidate>> {
  guard(|| {
    if scan == 0 || scan > MAX_SCAN || !scan.is_multiple_of(8) {
      return err(
        Code::InvalidValue,
        format!("labelsCalibrate(): scan is a multiple of 8 from 8 to {MAX_SCAN} bytes, got {scan}"),
      );
    }
    let iso = isolate() as u64;
    if iso == 0 {
      return err(
        Code::NotSupported,
        "labelsCalibrate(): no V8 isolate on this thread (node exports no v8::Isolate::GetCurrent, or this is no JS thread)",
      );
    }
    let value = u64::from(store) << 32;
    let mut region = vec![0u8; scan as usize];
    let got = read_self(iso, &mut region) / 8;
    let mut out = Vec::new();
    for (i, c) in region.chunks_exact(8).take(got).enumerate() {
      let Some(obj) = heap_object(u64::from_ne_bytes(c.try_into().unwrap_or_default())) else { continue };
      let Some(fields) = words(obj, OBJECT_WORDS) else { continue };
      for (t, &f) in fields.iter().enumerate().skip(1) {
        if let Some(table) = heap_object(f) {
          if table_holds(table, value) {
            out.push(LabelsCandidate { slot_offset: (i * 8) as u32, table_offset: (t * 8) as u32 });
          }
        }
      }
    }
    Ok(out)
  })
}

/// The address of `word`'s first element (its backing store: V8 does not move it), for the programs to read.
#[napi]
pub fn labels_word_address(word: Int32ArraySlice<'_>) -> Result<BigInt> {
  guard(|| Ok(BigInt::from(word.as_ptr() as u64)))
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn table_holds_reads_a_table() {
    // a table of 2 buckets and 1 entry (key, value, chain)
    let value = 0x5a00_0007u64 << 32;
    let t: Vec<u64> = vec![0x11, 7 << 32, 1 << 32, 0, 2 << 32, 0, 0, 0x21, value, 0];
    assert!(table_holds(t.as_ptr() as u64, value));
    assert!(!table_holds(t.as_ptr() as u64, value + (1 << 32)));
    let mut bad = t.clone();
    bad[4] = 3 << 32; // not a power of two
    assert!(!table_holds(bad.as_ptr() as u64, value));
    assert!(!table_holds(8, value));
  }
}
