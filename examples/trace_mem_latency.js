'use strict';
// Traces how a Node.js process maps and returns memory (V8's heap, Buffers,
// malloc): how long each mmap, munmap and madvise took, through a ring
// buffer. Needs root.
//   node examples/trace_mem_latency.js [--pid N] [--duration S] [--json]
const path = require('path');
const { formatRet, flagNames } = require('../lib/core/format');
const { traceSyscalls } = require('../lib/tools/trace_syscalls');
const { run } = require('../lib/tools/run');
const { objectPath } = require('../lib/core/objects');

// enum mem_syscall (bpf/mem_latency.h): how records name the call
const SYSCALLS = { MEM_MMAP: 'mmap', MEM_MUNMAP: 'munmap', MEM_MADVISE: 'madvise' };

// <sys/mman.h> (x86_64 and arm64 values)
const PROT = { PROT_READ: 0x1, PROT_WRITE: 0x2, PROT_EXEC: 0x4 };
const MAP = {
  MAP_SHARED_VALIDATE: 0x3, MAP_SHARED: 0x1, MAP_PRIVATE: 0x2, MAP_FIXED: 0x10, MAP_ANONYMOUS: 0x20,
  MAP_32BIT: 0x40, MAP_GROWSDOWN: 0x100, MAP_DENYWRITE: 0x800, MAP_EXECUTABLE: 0x1000, MAP_LOCKED: 0x2000,
  MAP_NORESERVE: 0x4000, MAP_POPULATE: 0x8000, MAP_NONBLOCK: 0x10000, MAP_STACK: 0x20000,
  MAP_HUGETLB: 0x40000, MAP_SYNC: 0x80000, MAP_FIXED_NOREPLACE: 0x100000,
};
const MADV = {
  0: 'MADV_NORMAL', 1: 'MADV_RANDOM', 2: 'MADV_SEQUENTIAL', 3: 'MADV_WILLNEED', 4: 'MADV_DONTNEED',
  8: 'MADV_FREE', 9: 'MADV_REMOVE', 10: 'MADV_DONTFORK', 11: 'MADV_DOFORK', 12: 'MADV_MERGEABLE',
  13: 'MADV_UNMERGEABLE', 14: 'MADV_HUGEPAGE', 15: 'MADV_NOHUGEPAGE', 16: 'MADV_DONTDUMP', 17: 'MADV_DODUMP',
  18: 'MADV_WIPEONFORK', 19: 'MADV_KEEPONFORK', 20: 'MADV_COLD', 21: 'MADV_PAGEOUT',
  22: 'MADV_POPULATE_READ', 23: 'MADV_POPULATE_WRITE', 24: 'MADV_DONTNEED_LOCKED', 25: 'MADV_COLLAPSE',
};

/** What a struct mem_event (bpf/mem_latency.h) reports of its call. */
function toEvent(record) {
  const syscall = SYSCALLS[record.syscall];
  return {
    syscall,
    pid: record.pid,
    tid: record.tid,
    duration_ns: record.duration_ns,
    ret: record.ret, // mmap: the address
    addr: record.addr,
    len: record.len,
    ...(syscall === 'mmap' && {
      prot: flagNames(record.prot, PROT, 'PROT_NONE'),
      flags: flagNames(record.flags, MAP),
      fd: record.fd,
    }),
    ...(syscall === 'madvise' && { advice: MADV[record.advice] ?? String(record.advice) }),
    comm: record.comm,
  };
}

const hex = (n) => `0x${n.toString(16)}`;

/** The text after "mmap took 0.015 ms". */
function details(e) {
  const ret = e.syscall === 'mmap' && e.ret >= 0 ? hex(e.ret) : formatRet(e.ret);
  const range = `addr=${hex(e.addr)} len=${e.len}`;
  if (e.syscall === 'mmap') return `(ret=${ret}) ${range} ${e.prot} ${e.flags}${e.fd >= 0 ? ` fd=${e.fd}` : ''}`;
  if (e.syscall === 'madvise') return `(ret=${ret}) ${range} ${e.advice}`;
  return `(ret=${ret}) ${range}`;
}

run(() =>
  traceSyscalls({
    description: 'Prints every mmap, munmap and madvise of a process, with its latency.',
    object: objectPath('mem_latency'),
    workload: path.join(__dirname, 'workloads', 'mem.js'),
    nodeArgs: ['--expose-gc'],
    syscalls: Object.values(SYSCALLS),
    buffer: 'ring',
    type: 'mem_event',
    toEvent,
    details,
  }),
);
