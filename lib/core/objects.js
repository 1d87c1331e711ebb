'use strict';
/**
 * The package's compiled BPF objects: `bpf/<arch>/<name>.bpf.o`, one set per
 * architecture under libbpf-tools' names (`x86`, `arm64`), built by
 * `npm run build:bpf` from `bpf/<name>.bpf.c` and shipped in the package.
 */
const fs = require('node:fs');
const path = require('node:path');
const { codedError } = require('./validate');

const ROOT = path.join(__dirname, '..', '..');

/** libbpf-tools' architecture names, by Node's `process.arch`. */
const BPF_ARCH = { x64: 'x86', arm64: 'arm64' };

/**
 * The BPF architecture name (`x86`, `arm64`) of `arch` (a Node arch or a BPF one; default: this process's).
 * @param {string} [arch]
 * @returns {string}
 */
function bpfArch(arch = process.arch) {
  if (Object.hasOwn(BPF_ARCH, arch)) return BPF_ARCH[arch];
  if (Object.values(BPF_ARCH).includes(arch)) return arch;
  throw codedError(
    'ERR_BPF_ARCH',
    `no BPF objects for architecture '${arch}': node-libbpf ships x86 (x64) and arm64 ones`,
  );
}

/**
 * The names of the objects the package ships for `arch`.
 * @param {{ arch?: string }} [options] `arch`: a Node arch (`x64`) or a BPF one (`x86`); this process's by default
 * @returns {string[]}
 */
function objectNames({ arch } = {}) {
  const dir = path.join(ROOT, 'bpf', bpfArch(arch));
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.bpf.o'))
    .map((f) => f.slice(0, -'.bpf.o'.length))
    .sort();
}

/**
 * The path of a shipped object, e.g. `objectPath('syscall_hist')` ->
 * `.../node-libbpf/bpf/x86/syscall_hist.bpf.o` on x86_64.
 * @param {string} name
 * @param {{ arch?: string }} [options] as objectNames
 * @returns {string}
 */
function objectPath(name, { arch } = {}) {
  const dir = bpfArch(arch);
  const file = path.join(ROOT, 'bpf', dir, `${name}.bpf.o`);
  if (!fs.existsSync(file)) {
    const names = objectNames({ arch });
    throw codedError(
      'ENOENT',
      names.length
        ? `node-libbpf ships no BPF object '${name}' for ${dir}; it ships: ${names.join(', ')}`
        : `node-libbpf's BPF objects for ${dir} are not built (bpf/${dir}/ is empty): in a checkout, run npm run build:bpf`,
    );
  }
  return file;
}

module.exports = { bpfArch, objectNames, objectPath, BPF_ARCH };
