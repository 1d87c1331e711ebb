'use strict';
// Traces the file I/O of a Node.js process: how long each openat, read,
// write and close took, through a perf buffer. Needs root.
//   node examples/trace_file_io.js [--pid N] [--duration S] [--json]
const fs = require('fs');
const path = require('path');
const { formatRet, flagNames } = require('../lib/core/format');
const { traceSyscalls } = require('../lib/tools/trace_syscalls');
const { run } = require('../lib/tools/run');
const { objectPath } = require('../lib/core/objects');

// enum file_io_syscall (bpf/file_io.h): how records name the call
const SYSCALLS = { FILE_IO_OPENAT: 'openat', FILE_IO_READ: 'read', FILE_IO_WRITE: 'write', FILE_IO_CLOSE: 'close' };

// openat's flags besides the access mode; O_CLOEXEC is not in fs.constants
const ACCESS_MODES = ['O_RDONLY', 'O_WRONLY', 'O_RDWR'];
const { O_CREAT, O_EXCL, O_NOCTTY, O_TRUNC, O_APPEND, O_NONBLOCK, O_SYNC, O_DSYNC, O_DIRECTORY, O_NOFOLLOW, O_DIRECT, O_NOATIME } =
  fs.constants;
const O_FLAGS = { O_CREAT, O_EXCL, O_NOCTTY, O_TRUNC, O_APPEND, O_NONBLOCK, O_SYNC, O_DSYNC, O_DIRECTORY, O_NOFOLLOW, O_DIRECT, O_NOATIME, O_CLOEXEC: 0o2000000 };

/** openat's flags by name: `O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC`. */
function openFlags(flags) {
  return [ACCESS_MODES[flags & 3] ?? 'O_ACCMODE', flagNames(flags & ~3, O_FLAGS, '')].filter(Boolean).join('|');
}

/** What a struct file_io_event (bpf/file_io.h) reports of its call. */
function toEvent(record) {
  const syscall = SYSCALLS[record.syscall];
  return {
    syscall,
    pid: record.pid,
    tid: record.tid,
    duration_ns: record.duration_ns,
    ret: record.ret,
    ...(syscall !== 'openat' && { fd: record.fd }),
    ...(syscall === 'openat' && { flags: openFlags(record.flags), mode: record.mode, filename: record.filename }),
    comm: record.comm,
  };
}

/** The text after "openat took 0.015 ms". */
function details(e) {
  const ret = `(ret=${formatRet(e.ret)})`;
  if (e.syscall !== 'openat') return `${ret} fd=${e.fd}`;
  const mode = e.flags.includes('O_CREAT') ? ` mode=0${e.mode.toString(8)}` : '';
  return `${ret} file=${e.filename} flags=${e.flags}${mode}`;
}

run(() =>
  traceSyscalls({
    description: 'Prints every openat, read, write and close of a process, with its latency.',
    object: objectPath('file_io'),
    workload: path.join(__dirname, 'workloads', 'file_io.js'),
    syscalls: Object.values(SYSCALLS),
    buffer: 'perf',
    type: 'file_io_event',
    toEvent,
    details,
  }),
);
