'use strict';
/**
 * Compiling a BPF program (`X.bpf.c`) into a CO-RE object, as libbpf-tools
 * does: `clang -g -O2 -target bpf` against the package's vendored
 * `include/<arch>/vmlinux.h` and libbpf's own BPF headers (`include/bpf/`,
 * copied from libbpf's sources when the package is built), then the DWARF
 * stripped (the BTF stays). `npx node-libbpf build` and the project's own
 * build (scripts/build-bpf.js) both compile through here.
 */
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync, spawn } = require('node:child_process');
const { bpfArch } = require('./objects');
const { codedError } = require('./validate');

const INCLUDE = path.join(__dirname, '..', '..', 'include');

/** The oldest clang that compiles our headers (CO-RE relocations, BTF type and enum checks). */
const MIN_CLANG = 11;
const INSTALL_CLANG = `install clang ${MIN_CLANG} or newer (Debian/Ubuntu: apt-get install clang; Fedora/RHEL: dnf install clang; Alpine: apk add clang), or name one with --clang PATH`;

/** `{ major, text }` of a clang, or a coded error naming the install command. */
function clangVersion(clang) {
  const r = spawnSync(clang, ['--version'], { encoding: 'utf8' });
  if (r.error) throw codedError('ERR_BPF_NO_CLANG', `${clang} was not found: ${INSTALL_CLANG}`);
  const m = /clang version (\d+)\./.exec(r.stdout);
  if (!m) throw codedError('ERR_BPF_NO_CLANG', `${clang} does not say it is clang ('${r.stdout.split('\n')[0]}'): ${INSTALL_CLANG}`);
  const major = Number(m[1]);
  if (major < MIN_CLANG) {
    throw codedError('ERR_BPF_OLD_CLANG', `${clang} is clang ${major}; BPF CO-RE objects need clang ${MIN_CLANG} or newer: ${INSTALL_CLANG}`);
  }
  return { major, text: r.stdout.split('\n')[0] };
}

/** The directory of Debian's multiarch headers (`<asm/*.h>`, which `-target bpf` does not search), if there is one. */
function multiarchInclude() {
  const dir = { x64: '/usr/include/x86_64-linux-gnu', arm64: '/usr/include/aarch64-linux-gnu' }[process.arch];
  return dir && fs.existsSync(path.join(dir, 'asm')) ? [`-idirafter${dir}`] : [];
}

/**
 * The clang command line that compiles `source` for `arch` into `output`.
 * @param {string} source
 * @param {string} output
 * @param {{ arch?: string, includes?: string[], defines?: string[] }} [options] `includes`: directories (-I), `defines`: `NAME` or `NAME=VALUE` (-D)
 * @returns {string[]}
 */
function clangArgs(source, output, { arch, includes = [], defines = [] } = {}) {
  const a = bpfArch(arch);
  return [
    '-g',
    '-O2',
    '-target',
    'bpf',
    `-D__TARGET_ARCH_${a}`,
    ...defines.map((d) => `-D${d}`),
    `-I${path.join(INCLUDE, a)}`,
    `-I${INCLUDE}`,
    `-I${path.dirname(path.resolve(source))}`,
    ...includes.map((dir) => `-I${dir}`),
    ...multiarchInclude(),
    '-Wall',
    '-Wno-unused-function',
    '-c',
    '-o',
    output,
    // the rest are files: a source named -fplugin=x.so is not an option
    // (clang 14's driver hands a file name to cc1 as it is: hence ./ too)
    '--',
    source.startsWith('-') ? `./${source}` : source,
  ];
}

/** `prog.bpf.c` -> `prog.bpf.o`. */
function defaultOutput(source) {
  return source.endsWith('.c') ? `${source.slice(0, -2)}.o` : `${source}.o`;
}

function checkInputs(source, arch) {
  if (!fs.existsSync(source)) throw codedError('ENOENT', `${source}: no such file`);
  const a = bpfArch(arch);
  const vmlinux = path.join(INCLUDE, a, 'vmlinux.h');
  if (!fs.existsSync(vmlinux)) throw codedError('ENOENT', `${vmlinux} is missing: node-libbpf is installed without its headers for ${a}`);
  const helpers = path.join(INCLUDE, 'bpf', 'bpf_helpers.h');
  if (!fs.existsSync(helpers)) {
    throw codedError('ENOENT', `${helpers} is missing: in a checkout, run npm run build:bpf (it copies libbpf's headers)`);
  }
}

/** The first llvm-strip on PATH that runs (plain, then versioned like clang), or null. */
function findStrip(major) {
  for (const name of ['llvm-strip', `llvm-strip-${major}`]) {
    if (!spawnSync(name, ['--version']).error) return name;
  }
  return null;
}

/** Runs a command; resolves with its stderr, or rejects with a coded error. */
function run(cmd, args, what) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', (e) => reject(codedError('ERR_BPF_COMPILE', `${what}: ${e.message}`)));
    child.on('close', (status) => {
      if (status === 0) resolve(stderr);
      else reject(codedError('ERR_BPF_COMPILE', `${what} failed (exit ${status}):\n${stderr.trimEnd()}`));
    });
  });
}

/**
 * Compiles `source` into a CO-RE BPF object. Options: `output` (default:
 * `prog.bpf.c` -> `prog.bpf.o`), `arch` (`x86`/`arm64`, default: this
 * machine's), `includes`, `defines`, `clang` (default: `$CLANG` or `clang`).
 * Resolves with `{ output, warnings }`.
 */
async function compile(source, options = {}) {
  const { arch, clang = process.env.CLANG || 'clang' } = options;
  const output = options.output || defaultOutput(source);
  checkInputs(source, arch);
  const { major } = clangVersion(clang);
  // compiled aside, then renamed: a program being loaded never sees half a
  // file; aside is a new directory (mkdtemp, 0700): in a shared directory
  // such as /tmp, a name known in advance could be another user's symlink
  fs.mkdirSync(path.dirname(output), { recursive: true });
  const aside = fs.mkdtempSync(path.join(path.dirname(path.resolve(output)), `.${path.basename(output)}.partial-`));
  const partial = path.join(aside, path.basename(output));
  try {
    const warnings = await run(clang, clangArgs(source, partial, options), `${clang} ${source}`);
    const strip = findStrip(major);
    if (strip) await run(strip, ['-g', partial], `${strip} -g ${partial}`);
    fs.renameSync(partial, output);
    return { output, warnings };
  } finally {
    fs.rmSync(aside, { recursive: true, force: true });
  }
}

module.exports = { compile, clangArgs, clangVersion, defaultOutput, INCLUDE, MIN_CLANG };
