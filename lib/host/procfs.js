'use strict';
/**
 * What /proc says of a traced process: where its functions are, for
 * uprobes (its executable and the ELF files it has mapped), the inodes
 * of its sockets, and where its perf map is.
 *
 *   const { findFunctions, socketInodes } = require('node-libbpf/lib/procfs');
 */
const fs = require('fs');
const native = require('../core/native');

/**
 * Where the functions `names` of process `pid` are, for uprobes: its
 * executable first, then the ELF files it has mapped (a Node.js built with
 * a shared libuv). A Map of the names found to `{ binary, fileOffset,
 * module }`: `binary` is the path to attach to, as the process sees it
 * (`/proc/PID/exe`, `/proc/PID/root/...`), `module` the file's name.
 * Names not in the map are in none of those files (inlined or stripped).
 */
function findFunctions(pid, names) {
  const found = new Map();
  const files = [[`/proc/${pid}/exe`, fs.readlinkSync(`/proc/${pid}/exe`)]];
  const seen = new Set([files[0][1]]);
  for (const line of fs.readFileSync(`/proc/${pid}/maps`, 'utf8').split('\n')) {
    const file = line.split(/\s+/).slice(5).join(' ');
    if (file.startsWith('/') && !seen.has(file)) {
      seen.add(file);
      files.push([`/proc/${pid}/root${file}`, file]);
    }
  }
  for (const [binary, module] of files) {
    let symbols;
    try {
      symbols = native.elfSymbols(binary);
    } catch {
      continue; // not an ELF file (a font, a locale archive)
    }
    for (const s of symbols) {
      if (names.includes(s.name) && !found.has(s.name) && s.fileOffset !== undefined) {
        found.set(s.name, { binary, fileOffset: Number(s.fileOffset), module });
      }
    }
    if (found.size === names.length) break;
  }
  return found;
}

/**
 * The inodes of the sockets process `pid` has open (its /proc/PID/fd links
 * `socket:[INODE]`), as numbers: what a BPF program reads from a socket to
 * tell whose it is. Empty when the process is gone.
 */
function socketInodes(pid) {
  const inodes = new Set();
  let fds;
  try {
    fds = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return inodes;
  }
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(Number(m[1]));
    } catch {} // closed meanwhile
  }
  return inodes;
}

/**
 * The pid of process `pid` in its own PID namespace (the last field of the
 * `NSpid:` line of /proc/PID/status): `pid` itself outside a container.
 */
function namespacePid(pid) {
  const m = /^NSpid:\s*(.*)$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1].trim().split(/\s+/).pop()) : pid;
}

/**
 * Where the perf map of process `pid` (`node --perf-basic-prof`) is, as
 * this process reaches it: /tmp/perf-NSPID.map in the process's own mount
 * namespace, through `/proc/PID/root` (a containerized process: NSPID is
 * its pid in its PID namespace), where the symbolizer reads it too.
 */
function perfMapPath(pid) {
  return `/proc/${pid}/root/tmp/perf-${namespacePid(pid)}.map`;
}

/**
 * The threads of process `pid` whose name (/proc/PID/task/TID/comm) matches
 * `re`, as tids; none if the process is gone.
 */
function threadsNamed(pid, re) {
  let tids;
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  return tids.filter((tid) => {
    try {
      return re.test(fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trimEnd());
    } catch {
      return false; // the thread ended
    }
  }).map(Number);
}

module.exports = { findFunctions, socketInodes, namespacePid, perfMapPath, threadsNamed };
