'use strict';
/**
 * Names of errnos and syscalls, from the addon's tables (the `syscalls`
 * crate: x86_64 and arm64, and the kernel-internal errnos such as
 * ERESTARTSYS that a syscall's exit tracepoint can see). `arch` is a
 * `process.arch` name (`x64`, `arm64`, the default: this machine's) or the
 * kernel's (`x86_64`, `aarch64`).
 *
 *   const { errnoName, syscallName, syscallNumber } = require('node-libbpf/lib/names');
 *   errnoName(115);                  // 'EINPROGRESS'
 *   syscallName(257, 'x64');         // 'openat'
 *   syscallNumber('openat', 'arm64'); // 56
 */
const native = require('./native');

// the names the addon's syscallNames takes
const ARCHS = { x64: 'x86_64', x86_64: 'x86_64', arm64: 'arm64', aarch64: 'arm64' };
const tables = new Map(); // arch -> { names, numbers }

function table(arch = process.arch) {
  // an unknown arch goes to the addon as it is: its error names it
  const name = ARCHS[arch] ?? arch;
  if (!tables.has(name)) {
    const names = native.syscallNames(name);
    const numbers = new Map();
    names.forEach((syscall, nr) => syscall && numbers.set(syscall, nr));
    tables.set(name, { names, numbers });
  }
  return tables.get(name);
}

/** The syscall names of `arch`, indexed by number ('' where none). */
function syscallNames(arch) {
  return table(arch).names;
}

/** The name of syscall `nr`: `syscallName(257)` is `openat` on x86_64; `syscall_N` when unknown. */
function syscallName(nr, arch) {
  return table(arch).names[nr] || `syscall_${nr}`;
}

/** The number of syscall `name` (`openat`, or `syscall_N`), or undefined when `arch` has none. */
function syscallNumber(name, arch) {
  const nr = table(arch).numbers.get(name);
  if (nr !== undefined) return nr;
  const m = /^syscall_(\d+)$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/** The name of an errno: `errnoName(115)` (or -115) is `EINPROGRESS`; `errno N` when it has none. */
function errnoName(errno) {
  return native.errnoName(errno) ?? `errno ${errno}`;
}

module.exports = { errnoName, syscallNames, syscallName, syscallNumber };
