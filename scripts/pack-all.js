#!/usr/bin/env node
'use strict';
/**
 * `npm run pack:all`: builds everything a release publishes and writes the
 * tarballs `npm publish` would send into dist/, without publishing:
 *
 *   dist/node-libbpf-<v>.tgz                   the main package: JS, types, tools, BPF objects (x86, arm64), headers
 *   dist/node-libbpf-linux-x64-gnu-<v>.tgz     the x86_64 addon, glibc
 *   dist/node-libbpf-linux-arm64-gnu-<v>.tgz   the aarch64 addon, glibc
 *   dist/node-libbpf-linux-x64-musl-<v>.tgz    the x86_64 addon, musl (Alpine)
 *   dist/node-libbpf-linux-arm64-musl-<v>.tgz  the aarch64 addon, musl
 *
 * The addons are cross-built with cargo-zigbuild, with libbpf, libelf and
 * zlib built from libbpf-sys's vendored sources and linked statically. The
 * gnu ones against glibc 2.17 (zig's glibc stubs: one binary loads on every
 * glibc distribution of its architecture since 2012), each checked for its
 * glibc floor and its shared libraries. The platform packages are the napi-rs
 * kind (`napi create-npm-dirs`, npm/<platform>/, with `libc: ["glibc"]` or
 * `["musl"]`, so npm installs the one of the machine's libc), listed as
 * optionalDependencies of the main package, as `napi prepublish` does.
 *
 * musl: the addon is a cdylib that a musl Node loads, so it links musl
 * dynamically (`-C target-feature=-crt-static`, as `napi build` does for musl
 * targets; Rust's musl default is a static C runtime) and must need nothing
 * but musl (checked: NEEDED only libc.so / libc.musl-* / ld-musl-*, no GLIBC_
 * symbol version). libbpf-sys's vendored elfutils `configure` fails on musl:
 * it looks for argp, fts and obstack, which elfutils' tools need and libelf
 * does not (libbpf-sys issue #137). Rather than patch libbpf-sys, the build
 * answers those three configure checks through autoconf's cache variables
 * in the environment (`ac_cv_search_argp_parse="none required"`, the same
 * for fts_close and _obstack_free, `ac_cv_bad_fts=no`), and gives the C
 * compiler scripts/musl/ (`CFLAGS_<triple>`), whose argp.h only declares what
 * libeu's color.c and printversion.c include (`make -C lib` compiles them;
 * libelf links neither, and the check below fails if an argp, fts or obstack
 * symbol reached the addon). Same crate, same sources as the gnu builds.
 *
 * Options: `--target x64|arm64|x64-musl|arm64-musl|gnu|musl` (one addon, or
 * one libc's two; default all four), `--no-pack` (build only:
 * `npm run build:cross`). The main package always names the four platform
 * packages; `npm run test:package` wants them all in dist/.
 */
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync, spawnSync } = require('node:child_process');

const ROOT = path.join(__dirname, '..');
const DIST = path.join(ROOT, 'dist');
const GLIBC_FLOOR = '2.17';
const TARGETS = {
  x64: { triple: 'x86_64-unknown-linux-gnu', platform: 'linux-x64-gnu', libc: 'gnu', machine: 'X86-64' },
  arm64: { triple: 'aarch64-unknown-linux-gnu', platform: 'linux-arm64-gnu', libc: 'gnu', machine: 'AArch64' },
  'x64-musl': { triple: 'x86_64-unknown-linux-musl', platform: 'linux-x64-musl', libc: 'musl', machine: 'X86-64' },
  'arm64-musl': { triple: 'aarch64-unknown-linux-musl', platform: 'linux-arm64-musl', libc: 'musl', machine: 'AArch64' },
};
/** What an addon may link dynamically: its libc's own libraries, nothing else. */
const ALLOWED_LIBS = {
  gnu: /^(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|ld-linux-aarch64)\.so\.\d$/,
  // musl's loader answers every libc.* (and libm, libpthread, ...) itself: zig names it libc.so, Alpine libc.musl-<arch>.so.1
  musl: /^(libc\.so|libc\.musl-(x86_64|aarch64)\.so\.1|ld-musl-(x86_64|aarch64)\.so\.1)$/,
};
/** Symbols of argp, fts and obstack: what scripts/musl/ lets configure pass without; the addon must not need one. */
const MUSL_ABSENT = /^(argp_|_?obstack|fts_|error$|error_at_line$)/;

const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const log = (msg) => console.error(`pack:all: ${msg}`);

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'], ...opts });
  if (r.error) throw new Error(`${cmd}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (exit ${r.status})`);
}

const have = (cmd, args = ['--version']) => !spawnSync(cmd, args, { stdio: 'ignore' }).error;

/** rustup's std for each target, zig and cargo-zigbuild (PyPI), installed when missing. */
function ensureToolchain(targets) {
  const installed = execFileSync('rustup', ['target', 'list', '--installed'], { encoding: 'utf8' }).split('\n');
  const missing = targets.map((t) => TARGETS[t].triple).filter((t) => !installed.includes(t));
  if (missing.length) {
    log(`rustup target add ${missing.join(' ')}`);
    run('rustup', ['target', 'add', ...missing]);
  }
  if (!have('cargo-zigbuild') || !have('python3', ['-m', 'ziglang', 'version'])) {
    log('pip install ziglang cargo-zigbuild');
    run('python3', ['-m', 'pip', 'install', '--quiet', 'ziglang', 'cargo-zigbuild']);
  }
}

/** The newest GLIBC_x.y symbol version an ELF needs, its NEEDED libraries, its machine and its undefined dynamic symbols. */
function linkage(file) {
  const versions = execFileSync('objdump', ['-T', file], { encoding: 'utf8', maxBuffer: 64 << 20 }).match(/GLIBC_[0-9.]+/g) ?? [];
  const newest = versions
    .map((v) => v.slice('GLIBC_'.length))
    .sort((a, b) => a.localeCompare(b, undefined, { numeric: true }))
    .at(-1);
  const needed = [...execFileSync('readelf', ['-d', file], { encoding: 'utf8' }).matchAll(/\(NEEDED\).*\[(.+)\]/g)].map((m) => m[1]);
  const machine = /Machine:\s+(.+)/.exec(execFileSync('readelf', ['-h', file], { encoding: 'utf8' }))?.[1].trim();
  const undefinedSymbols = execFileSync('nm', ['-D', '--undefined-only', file], { encoding: 'utf8', maxBuffer: 64 << 20 })
    .split('\n')
    .map((l) => l.trim().split(/\s+/).pop())
    .filter(Boolean);
  return { glibc: newest, needed, machine, undefinedSymbols };
}

/** The environment of a musl build: the crt-static flag napi-rs sets, and elfutils' configure answered (see the header). */
function muslEnv(triple) {
  const upper = triple.toUpperCase().replace(/-/g, '_');
  const key = `CARGO_TARGET_${upper}_RUSTFLAGS`;
  return {
    ...process.env,
    [key]: [process.env[key], '-C target-feature=-crt-static'].filter(Boolean).join(' '),
    [`CFLAGS_${triple.replace(/-/g, '_')}`]: `-I${path.join(ROOT, 'scripts', 'musl')}`,
    ac_cv_search_argp_parse: 'none required',
    ac_cv_search_fts_close: 'none required',
    ac_cv_search__obstack_free: 'none required',
    ac_cv_bad_fts: 'no',
  };
}

/** Cross-builds the addon for `target` into npm/<platform>/ and checks how it links. */
function buildAddon(target) {
  const { triple, platform, libc, machine: wantMachine } = TARGETS[target];
  const gnu = libc === 'gnu';
  log(`building the addon for ${triple} (${gnu ? `glibc ${GLIBC_FLOOR}` : 'musl, dynamically'}, static libbpf/libelf/zlib)`);
  if (gnu) run('cargo', ['zigbuild', '--release', '--target', `${triple}.${GLIBC_FLOOR}`]);
  else run('cargo', ['zigbuild', '--release', '--target', triple], { env: muslEnv(triple) });
  const built = path.join(ROOT, 'target', triple, 'release', 'libnode_libbpf.so');
  const dest = path.join(ROOT, 'npm', platform, `${pkg.napi.binaryName}.${platform}.node`);
  fs.copyFileSync(built, dest);
  run('llvm-strip', ['--strip-unneeded', dest]);
  const { glibc, needed, machine, undefinedSymbols } = linkage(dest);
  if (!machine?.endsWith(wantMachine)) throw new Error(`${dest} is an ELF for ${machine}, not ${wantMachine}`);
  const extra = needed.filter((lib) => !ALLOWED_LIBS[libc].test(lib));
  if (extra.length) throw new Error(`${dest} links ${extra.join(', ')} dynamically: only ${gnu ? 'glibc' : 'musl'} may be`);
  if (gnu) {
    if (glibc.localeCompare(GLIBC_FLOOR, undefined, { numeric: true }) > 0) throw new Error(`${dest} needs glibc ${glibc}, above the floor ${GLIBC_FLOOR}`);
  } else {
    if (glibc) throw new Error(`${dest} needs the symbol version GLIBC_${glibc}: a musl addon may need no glibc`);
    if (!needed.length) throw new Error(`${dest} needs no shared library: a musl addon must link musl dynamically (-C target-feature=-crt-static)`);
    const absent = undefinedSymbols.filter((s) => MUSL_ABSENT.test(s));
    if (absent.length) throw new Error(`${dest} needs ${absent.join(', ')}, which musl lacks: elfutils' tools code reached the addon`);
  }
  log(`${path.relative(ROOT, dest)}: ${machine}, ${(fs.statSync(dest).size / 1e6).toFixed(1)} MB, ${gnu ? `glibc >= ${glibc}` : 'no glibc'}, links ${needed.join(' ')}`);
}

/** `npm pack` of `dir` into dist/; returns the tarball's name. */
function npmPack(dir) {
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', DIST], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const [info] = JSON.parse(out);
  return info;
}

/** The main package, with the platform packages as optionalDependencies (what `napi prepublish` adds), packed. */
function packMain(platforms) {
  const file = path.join(ROOT, 'package.json');
  const original = fs.readFileSync(file, 'utf8');
  const withDeps = { ...pkg, optionalDependencies: Object.fromEntries(platforms.map((p) => [`${pkg.name}-${p}`, pkg.version])) };
  fs.writeFileSync(file, `${JSON.stringify(withDeps, null, 2)}\n`);
  try {
    return npmPack(ROOT);
  } finally {
    fs.writeFileSync(file, original);
  }
}

function main() {
  const argv = process.argv.slice(2);
  const only = argv.includes('--target') ? argv[argv.indexOf('--target') + 1] : undefined;
  const groups = { gnu: ['x64', 'arm64'], musl: ['x64-musl', 'arm64-musl'] };
  if (only !== undefined && !TARGETS[only] && !groups[only]) throw new Error(`--target ${only}: expected one of ${[...Object.keys(TARGETS), ...Object.keys(groups)].join(', ')}`);
  const targets = only === undefined ? Object.keys(TARGETS) : groups[only] || [only];
  ensureToolchain(targets);
  run('npx', ['napi', 'create-npm-dirs']);
  for (const t of targets) buildAddon(t);
  if (argv.includes('--no-pack')) return;

  run('node', ['scripts/build-bpf.js', '--arch', 'all', '--no-tests']);
  run('node', ['scripts/build-types.js']);
  fs.mkdirSync(DIST, { recursive: true });
  for (const f of fs.readdirSync(DIST).filter((f) => f.endsWith('.tgz'))) fs.rmSync(path.join(DIST, f));
  const packed = [packMain(Object.keys(TARGETS).map((t) => TARGETS[t].platform))];
  for (const t of targets) packed.push(npmPack(path.join(ROOT, 'npm', TARGETS[t].platform)));
  console.log('tarball                                   packed     unpacked  files');
  for (const p of packed) {
    console.log(`${p.filename.padEnd(40)} ${`${(p.size / 1e6).toFixed(2)} MB`.padStart(9)} ${`${(p.unpackedSize / 1e6).toFixed(2)} MB`.padStart(11)} ${String(p.entryCount).padStart(6)}`);
  }
  console.log(`in ${path.relative(process.cwd(), DIST) || '.'}/ (npm publish would send each as it is)`);
}

try {
  main();
} catch (err) {
  console.error(`pack:all: ${err.message}`);
  process.exit(1);
}
