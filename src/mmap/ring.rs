//! A BPF ring buffer (BPF_MAP_TYPE_RINGBUF) mapped into this process and
//! read in place, by whichever side holds its lock: the JS thread copies
//! records straight from it into the dispatcher's buffers (`Sink::fill`),
//! and the poller moves them into its queue only when JavaScript falls
//! behind (the ring more than half full).
//!
//! Why not libbpf-rs's `RingBuffer`: it hands each record to a callback on
//! the thread that consumes, so every record was copied twice (ring ->
//! poller's batch -> JavaScript's buffer) and crossed threads in between.
//! The bench (2 M 24-byte records, BPF_RB_NO_WAKEUP): the poller thread
//! spent 14.5 ns per record in that path (perf: the copy, `Collector::push`
//! and libbpf-rs's trampoline), more than the JS thread's whole share in
//! batch mode. Read in place, the poller spends under 1 ns per record and
//! the JS thread ~5 ns in `read` (perf, 16 M records); the consumer's CPU
//! per record fell by 12-35 ns in every mode. The layout and the protocol are libbpf's (ringbuf.c
//! `ringbuf_process_ring`): a consumer page we write, then the producer
//! page and the data pages mapped twice in a row, read-only, so that a
//! record that wraps around is contiguous.
//!
//! Reads happen under a `Lease`, which only the ring's own lock makes and
//! which reads only its own ring; each record's length is checked against
//! what the producer published before it is trusted (as cilium/ebpf's
//! ringbuf/ring.go does): a corrupt length is an error, not a read out of
//! bounds.

use std::{
  os::fd::{AsFd, AsRawFd},
  sync::{
    atomic::{AtomicU32, AtomicU64, Ordering},
    Mutex, MutexGuard,
  },
};

use libbpf_rs::{MapCore, MapHandle};
use libbpf_sys::{BPF_RINGBUF_BUSY_BIT, BPF_RINGBUF_DISCARD_BIT, BPF_RINGBUF_HDR_SZ};

use crate::error::{BpfError, BpfResult, Code};

/// The consumer position is written back at least every this many records
/// (and at the end of each read): the kernel sees the space freed without
/// our write bouncing its cache line on every record.
const RELEASE_EVERY: usize = 64;

/// How far ahead of the record being read the next bytes are asked for
/// (a prefetch: the producer wrote them on another CPU). The bench's
/// 24-byte records: 20-22 -> 16-19 ns each for the copy into JavaScript's
/// buffer (2026-11-28).
const PREFETCH_AHEAD: usize = 512;

/// One mapped ring buffer.
pub(crate) struct Ring {
  /// The consumer page (read-write): the consumer position at offset 0.
  consumer: *mut u8,
  /// The producer page, then the data pages twice (read-only).
  producer: *const u8,
  page_size: usize,
  /// Data bytes (max_entries, a power of two).
  size: usize,
  /// Serializes the two readers (the JS thread and the poller).
  lock: Mutex<()>,
  /// The map (a duplicate fd), kept open while it is mapped (None: the unit
  /// tests' ring in plain memory).
  map: Option<MapHandle>,
}

// SAFETY: the mappings are shared memory that lives as long as the Ring;
// the positions are read and written through atomics, and records are read
// only by the holder of `lock`.
unsafe impl Send for Ring {}
// SAFETY: as above.
unsafe impl Sync for Ring {}

impl Ring {
  /// Maps the ring buffer of `map` (a BPF_MAP_TYPE_RINGBUF map).
  pub fn new(map: MapHandle) -> BpfResult<Self> {
    let size = map.max_entries() as usize;
    // SAFETY: sysconf has no preconditions.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    let fd = map.as_fd().as_raw_fd();
    let fail =
      |what: &str| BpfError::new(Code::Buffer, format!("mapping the ring buffer's {what}: {}", std::io::Error::last_os_error()));
    // SAFETY: mapping a ring buffer map's fd as libbpf does; checked below.
    let consumer =
      unsafe { libc::mmap(std::ptr::null_mut(), page_size, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0) };
    if consumer == libc::MAP_FAILED {
      return Err(fail("consumer page"));
    }
    // SAFETY: as above; the kernel maps the data pages twice after the producer page.
    let producer = unsafe {
      libc::mmap(std::ptr::null_mut(), page_size + 2 * size, libc::PROT_READ, libc::MAP_SHARED, fd, page_size as libc::off_t)
    };
    if producer == libc::MAP_FAILED {
      let e = fail("data pages");
      // SAFETY: the mapping made just above.
      unsafe { libc::munmap(consumer, page_size) };
      return Err(e);
    }
    Ok(Ring { consumer: consumer.cast(), producer: producer.cast(), page_size, size, lock: Mutex::new(()), map: Some(map) })
  }

  /// The map's fd: readable (epoll) when records are there.
  pub fn fd(&self) -> i32 {
    self.map.as_ref().map_or(-1, |map| map.as_fd().as_raw_fd())
  }

  /// Data bytes the ring holds.
  pub fn capacity(&self) -> usize {
    self.size
  }

  fn consumer_pos(&self) -> &AtomicU64 {
    // SAFETY: the consumer page is mapped, page-aligned, for our lifetime.
    unsafe { AtomicU64::from_ptr(self.consumer.cast()) }
  }

  fn producer_pos_atomic(&self) -> &AtomicU64 {
    // SAFETY: the producer page is mapped, page-aligned, for our lifetime
    // (we only read it; the unit tests' fake ring writes it).
    unsafe { AtomicU64::from_ptr(self.producer.cast_mut().cast()) }
  }

  /// Where the kernel has reserved up to (records may still be busy).
  pub fn producer_pos(&self) -> u64 {
    self.producer_pos_atomic().load(Ordering::Acquire)
  }

  /// Bytes written and not yet consumed (headers and padding included).
  pub fn pending(&self) -> u64 {
    self.producer_pos().saturating_sub(self.consumer_pos().load(Ordering::Acquire))
  }

  /// Takes the reader's lock: the lease to read this ring.
  pub fn lease(&self) -> Lease<'_> {
    Lease { ring: self, _lock: self.lock.lock().unwrap_or_else(|e| e.into_inner()) }
  }
}

/// The right to read one ring, held by one reader at a time (the JS thread
/// or the poller): made only by `Ring::lease`, from the ring's own lock,
/// and it reads only that ring, so a read under the wrong lock does not
/// compile.
pub(crate) struct Lease<'a> {
  ring: &'a Ring,
  _lock: MutexGuard<'a, ()>,
}

impl Lease<'_> {
  /// Hands each committed record below position `until`, in order, to
  /// `take` until it returns false (that record stays for the next read) or
  /// none is left. Returns how many it took, or an error (Code::Buffer) at
  /// a record whose length runs past what the producer published (the
  /// records before it are taken and consumed; it stays, unread).
  pub fn read(&self, until: u64, mut take: impl FnMut(&[u8]) -> bool) -> BpfResult<usize> {
    let ring = self.ring;
    let consumer = ring.consumer_pos();
    let mask = (ring.size - 1) as u64;
    // SAFETY: the data pages follow the producer page.
    let data = unsafe { ring.producer.add(ring.page_size) };
    let mut cons = consumer.load(Ordering::Acquire);
    let mut taken = 0;
    let mut unreleased = 0;
    let mut corrupt = None;
    'ring: loop {
      let prod = ring.producer_pos().min(until);
      if cons >= prod {
        break;
      }
      while cons < prod {
        // SAFETY: cons & mask is inside the first copy of the data pages,
        // and a header is 8-byte aligned.
        let header = unsafe { data.add((cons & mask) as usize) };
        // SAFETY: a prefetch is a hint: it never faults, whatever the address
        // (this one is inside the data pages, mapped twice over, or just past them).
        #[cfg(target_arch = "x86_64")]
        unsafe {
          std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(header.wrapping_add(PREFETCH_AHEAD).cast());
        }
        // SAFETY: as above; the kernel commits a record by clearing the busy bit.
        let len = unsafe { AtomicU32::from_ptr(header.cast_mut().cast()) }.load(Ordering::Acquire);
        if len & BPF_RINGBUF_BUSY_BIT != 0 {
          break 'ring;
        }
        let bytes = (len & !(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT)) as usize;
        let total = ((bytes + BPF_RINGBUF_HDR_SZ as usize + 7) & !7) as u64;
        // a record reserved below `until` ends below it too: the kernel
        // moves the producer position past a whole record at once
        if total > prod - cons || total > ring.size as u64 {
          corrupt = Some(BpfError::new(
            Code::Buffer,
            format!(
              "ring buffer corrupt: the record at position {cons} claims {bytes} bytes, past the {} the producer published (of a {}-byte ring)",
              prod - cons,
              ring.size
            ),
          ));
          break 'ring;
        }
        if len & BPF_RINGBUF_DISCARD_BIT == 0 {
          // SAFETY: a committed record of `bytes` bytes after its header,
          // inside what the producer published (checked above); one that
          // wraps around runs on into the second mapping.
          let record = unsafe { std::slice::from_raw_parts(header.add(BPF_RINGBUF_HDR_SZ as usize), bytes) };
          if !take(record) {
            break 'ring;
          }
          taken += 1;
        }
        cons += total;
        unreleased += 1;
        if unreleased == RELEASE_EVERY {
          consumer.store(cons, Ordering::Release);
          unreleased = 0;
        }
      }
    }
    if unreleased > 0 {
      consumer.store(cons, Ordering::Release);
    }
    corrupt.map_or(Ok(taken), Err)
  }
}

impl Drop for Ring {
  fn drop(&mut self) {
    if self.map.is_none() {
      return;
    }
    // SAFETY: the two mappings made in `new`, unmapped once.
    unsafe {
      libc::munmap(self.consumer.cast(), self.page_size);
      libc::munmap(self.producer.cast_mut().cast(), self.page_size + 2 * self.size);
    }
  }
}

#[cfg(test)]
pub(crate) mod tests {
  use super::*;

  const PAGE: usize = 4096;

  /// A ring in plain memory, written as the kernel writes one: the
  /// consumer page, the producer page, then the data (twice over, as the
  /// kernel maps it; `write` fills both copies).
  pub(crate) struct FakeRing {
    memory: Vec<u64>,
    pub ring: std::sync::Arc<Ring>,
    produced: u64,
  }

  impl FakeRing {
    pub fn new(size: usize) -> Self {
      let mut memory = vec![0u64; (2 * PAGE + 2 * size) / 8];
      let base = memory.as_mut_ptr().cast::<u8>();
      // SAFETY: inside `memory`, which the FakeRing keeps (and never grows).
      let ring = std::sync::Arc::new(Ring {
        consumer: base,
        producer: unsafe { base.add(PAGE) },
        page_size: PAGE,
        size,
        lock: Mutex::new(()),
        map: None,
      });
      FakeRing { memory, ring, produced: 0 }
    }

    fn put(&mut self, at: u64, bytes: &[u8]) {
      let size = self.ring.size;
      let data = &mut bytemuck_u8(&mut self.memory)[2 * PAGE..];
      for (i, b) in bytes.iter().enumerate() {
        let pos = (at as usize + i) % size;
        data[pos] = *b;
        data[pos + size] = *b;
      }
    }

    /// Writes a record with `flags` (busy, discard) in its header; returns its position.
    pub fn write(&mut self, record: &[u8], flags: u32) -> u64 {
      let at = self.produced;
      self.put(at, &(record.len() as u32 | flags).to_ne_bytes());
      self.put(at + 8, record);
      self.produced += ((record.len() + 8 + 7) & !7) as u64;
      self.ring.producer_pos_atomic().store(self.produced, Ordering::Release);
      at
    }

    /// Writes a record whose header claims `claimed` bytes instead of its
    /// own length (a corrupt ring); returns its position.
    pub fn write_claiming(&mut self, record: &[u8], claimed: u32) -> u64 {
      let at = self.write(record, 0);
      self.put(at, &claimed.to_ne_bytes());
      at
    }

    /// Clears the busy bit of the record at `at` (of `len` bytes).
    pub fn commit(&mut self, at: u64, len: usize) {
      self.put(at, &(len as u32).to_ne_bytes());
    }

    pub fn consumed(&self) -> u64 {
      self.ring.consumer_pos().load(Ordering::Acquire)
    }
  }

  fn bytemuck_u8(words: &mut [u64]) -> &mut [u8] {
    // SAFETY: u64s viewed as their bytes.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast(), words.len() * 8) }
  }

  fn read_all(ring: &Ring) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    ring
      .lease()
      .read(u64::MAX, |r| {
        out.push(r.to_vec());
        true
      })
      .unwrap();
    out
  }

  #[test]
  fn committed_records_are_read_in_order_discarded_ones_skipped_and_a_busy_one_stops_the_read() {
    let mut fake = FakeRing::new(4096);
    fake.write(b"one", 0);
    fake.write(b"skipped", BPF_RINGBUF_DISCARD_BIT);
    fake.write(b"three!!!", 0);
    let busy = fake.write(b"four", BPF_RINGBUF_BUSY_BIT);
    fake.write(b"five", 0);
    assert_eq!(read_all(&fake.ring), vec![b"one".to_vec(), b"three!!!".to_vec()]);
    assert_eq!(fake.consumed(), busy, "consumed up to the busy record");
    assert_eq!(fake.ring.pending(), 16 + 16);
    fake.commit(busy, 4);
    assert_eq!(read_all(&fake.ring), vec![b"four".to_vec(), b"five".to_vec()]);
    assert_eq!(fake.ring.pending(), 0);
  }

  #[test]
  fn a_record_not_taken_stays_for_the_next_read_and_records_wrap_around() {
    let mut fake = FakeRing::new(64);
    // records of 16 bytes take 24 of the ring's 64: every few rounds one wraps around
    for round in 0..10u8 {
      let records: Vec<Vec<u8>> = (0..2).map(|i| vec![round * 2 + i; 16]).collect();
      records.iter().for_each(|r| {
        fake.write(r, 0);
      });
      let lease = fake.ring.lease();
      let mut got = Vec::new();
      assert_eq!(
        lease
          .read(u64::MAX, |r| {
            got.push(r.to_vec());
            false
          })
          .unwrap(),
        0
      );
      assert_eq!(got, vec![records[0].clone()], "offered, not taken");
      got.clear();
      assert_eq!(
        lease
          .read(u64::MAX, |r| {
            got.push(r.to_vec());
            true
          })
          .unwrap(),
        2
      );
      assert_eq!(got, records, "round {round}");
    }
    assert_eq!(fake.consumed(), 10 * 2 * 24);
  }

  #[test]
  fn a_record_whose_length_runs_past_what_the_producer_published_is_an_error_not_a_read() {
    for claimed in [17, 4000, 1 << 20] {
      let mut fake = FakeRing::new(4096);
      fake.write(b"good", 0);
      let bad = fake.write_claiming(&[7; 8], claimed);
      let mut got = Vec::new();
      let e = fake
        .ring
        .lease()
        .read(u64::MAX, |r| {
          got.push(r.to_vec());
          true
        })
        .unwrap_err();
      assert_eq!(e.code, Code::Buffer);
      assert!(e.message.contains(&format!("position {bad} claims {claimed} bytes, past the 16")), "{}", e.message);
      assert_eq!(got, vec![b"good".to_vec()], "the records before it are read");
      assert_eq!(fake.consumed(), bad, "and consumed; the corrupt one stays");
      // the right length: read
      fake.commit(bad, 8);
      assert_eq!(read_all(&fake.ring), vec![vec![7u8; 8]]);
    }
  }
}
