#!/usr/bin/env node
'use strict';
/**
 * `npm run pack:all`: builds everything a release publishes and writes the
 * tarballs `npm publish` would send into dist/, without publishing:
 *
 *   dist/node-libbpf-<v>.tgz                  the main package: JS, types, tools, BPF objects (x86, arm64), headers
 *   dist/node-libbpf-linux-x64-gnu-<v>.tgz    the x86_64 addon
 *   dist/node-libbpf-linux-arm64-gnu-<v>.tgz  the aarch64 addon
 *
 * The addons are cross-built with cargo-zigbuild against glibc 2.17 (zig's
 * glibc stubs: one binary loads on every glibc distribution of its
 * architecture since 2012), with libbpf, libelf and zlib built from
 * libbpf-sys's vendored sources and linked statically; each is checked for
 * its glibc floor and its shared libraries. The platform packages are the
 * napi-rs kind (`napi create-npm-dirs`, npm/<platform>/), listed as
 * optionalDependencies of the main package, as `napi prepublish` does.
 *
 * Options: `--target x64|arm64` (one addon; default both), `--no-pack`
 * (build only: `npm run build:cross`).
 */
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync, spawnSync } = require('node:child_process');

const ROOT = path.join(__dirname, '..');
const DIST = path.join(ROOT, 'dist');
const GLIBC_FLOOR = '2.17';
const TARGETS = {
  x64: { triple: 'x86_64-unknown-linux-gnu', platform: 'linux-x64-gnu' },
  arm64: { triple: 'aarch64-unknown-linux-gnu', platform: 'linux-arm64-gnu' },
};
/** What the addon may link dynamically: glibc's own libraries, nothing else. */
const ALLOWED_LIBS = /^(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|ld-linux-aarch64)\.so\.\d$/;

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

/** The newest GLIBC_x.y symbol version an ELF needs, and its NEEDED libraries. */
function linkage(file) {
  const versions = execFileSync('objdump', ['-T', file], { encoding: 'utf8', maxBuffer: 64 << 20 }).match(/GLIBC_[0-9.]+/g) ?? [];
  const newest = versions
    .map((v) => v.slice('GLIBC_'.length))
    .sort((a, b) => a.localeCompare(b, undefined, { numeric: true }))
    .at(-1);
  const needed = [...execFileSync('readelf', ['-d', file], { encoding: 'utf8' }).matchAll(/\(NEEDED\).*\[(.+)\]/g)].map((m) => m[1]);
  return { glibc: newest, needed };
}

/** Cross-builds the addon for `target` into npm/<platform>/ and checks how it links. */
function buildAddon(target) {
  const { triple, platform } = TARGETS[target];
  log(`building the addon for ${triple} (glibc ${GLIBC_FLOOR}, static libbpf/libelf/zlib)`);
  run('cargo', ['zigbuild', '--release', '--target', `${triple}.${GLIBC_FLOOR}`]);
  const built = path.join(ROOT, 'target', triple, 'release', 'libnode_libbpf.so');
  const dest = path.join(ROOT, 'npm', platform, `${pkg.napi.binaryName}.${platform}.node`);
  fs.copyFileSync(built, dest);
  run('llvm-strip', ['--strip-unneeded', dest]);
  const { glibc, needed } = linkage(dest);
  const extra = needed.filter((lib) => !ALLOWED_LIBS.test(lib));
  if (extra.length) throw new Error(`${dest} links ${extra.join(', ')} dynamically: only glibc may be`);
  if (glibc.localeCompare(GLIBC_FLOOR, undefined, { numeric: true }) > 0) throw new Error(`${dest} needs glibc ${glibc}, above the floor ${GLIBC_FLOOR}`);
  log(`${path.relative(ROOT, dest)}: ${(fs.statSync(dest).size / 1e6).toFixed(1)} MB, glibc >= ${glibc}, links ${needed.join(' ')}`);
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
  if (only !== undefined && !TARGETS[only]) throw new Error(`--target ${only}: expected ${Object.keys(TARGETS).join(' or ')}`);
  const targets = only ? [only] : Object.keys(TARGETS);
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
