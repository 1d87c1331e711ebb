'use strict';
// Debian's arm64 packages on an x86_64 host, without touching the host's apt:
// an apt of its own in .cache/kernels/arm64/apt/ (its own sources list, with
// the host's Debian mirror, its own package lists and download cache, and an
// empty dpkg status), for APT::Architecture=arm64. Nothing is installed:
// packages are downloaded and unpacked with dpkg-deb. Used by the arm64 row
// of test:kernels (scripts/kernels/arm64.js) and by scripts/vendor-vmlinux.js.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { CACHE, log, run } = require('./common');
const { hostMirrors } = require('../rootfs');

const DIR = path.join(CACHE, 'arm64');
const APT = path.join(DIR, 'apt');
const SUITE = 'bookworm';

/** apt-get's options for the private arm64 apt. */
function aptOptions() {
  return [
    '-o', 'APT::Architecture=arm64',
    '-o', 'APT::Architectures::=arm64',
    '-o', `Dir::State=${path.join(APT, 'state')}`,
    '-o', `Dir::State::status=${path.join(APT, 'state', 'status')}`,
    '-o', `Dir::Cache=${path.join(APT, 'cache')}`,
    '-o', `Dir::Etc=${path.join(APT, 'etc')}`,
    '-o', `Dir::Etc::sourcelist=${path.join(APT, 'etc', 'sources.list')}`,
    '-o', 'Dir::Etc::sourceparts=-',
    '-o', `Dir::Etc::parts=${path.join(APT, 'etc', 'apt.conf.d')}`,
    '-o', `Dir::Etc::preferencesparts=${path.join(APT, 'etc', 'preferences.d')}`,
    '-o', 'APT::Sandbox::User=root',
    '-o', 'Debug::NoLocking=1',
    '-o', 'APT::Install-Recommends=false',
  ];
}

/** Sets up the private apt and its package lists (apt-get update once; again when `refresh` or a day old). */
function ensureApt({ refresh = false } = {}) {
  for (const d of ['state/lists/partial', 'cache/archives/partial', 'etc/apt.conf.d', 'etc/preferences.d']) fs.mkdirSync(path.join(APT, d), { recursive: true });
  const status = path.join(APT, 'state', 'status');
  if (!fs.existsSync(status)) fs.writeFileSync(status, '');
  const { archive, security } = hostMirrors();
  const keyring = '/usr/share/keyrings/debian-archive-keyring.gpg';
  if (!fs.existsSync(keyring)) throw new Error(`${keyring} is missing: apt-get install debian-archive-keyring`);
  const sources = [
    `deb [arch=arm64 signed-by=${keyring}] ${archive} ${SUITE} main`,
    `deb [arch=arm64 signed-by=${keyring}] ${security} ${SUITE}-security main`,
    '',
  ].join('\n');
  const list = path.join(APT, 'etc', 'sources.list');
  const changed = !fs.existsSync(list) || fs.readFileSync(list, 'utf8') !== sources;
  if (changed) fs.writeFileSync(list, sources);
  const lists = path.join(APT, 'state', 'lists');
  const fresh = fs.readdirSync(lists).some((f) => f.includes('_Packages') && Date.now() - fs.statSync(path.join(lists, f)).mtimeMs < 86400e3);
  if (refresh || changed || !fresh) {
    log(`apt-get update of Debian ${SUITE} arm64 (a private apt in ${path.relative(process.cwd(), APT) || APT}; the host's apt is untouched)`);
    run('apt-get', [...aptOptions(), 'update', '-qq'], { stdio: ['ignore', 'ignore', 'pipe'] });
  }
}

/** apt-cache of the private apt. */
function aptCache(args) {
  return run('apt-cache', [...aptOptions(), ...args]);
}

/** The newest `linux-image-6.1.0-N-arm64` (Debian 12's 6.1 LTS kernel). */
function newestKernelPackage() {
  const names = aptCache(['pkgnames', 'linux-image-6.1.0-'])
    .split('\n')
    .map((n) => [n, /^linux-image-6\.1\.0-(\d+)-arm64$/.exec(n)])
    .filter(([, m]) => m)
    .sort((a, b) => Number(b[1][1]) - Number(a[1][1]));
  if (names.length === 0) throw new Error(`the arm64 package lists have no linux-image-6.1.0-N-arm64 (is ${hostMirrors().archive} a Debian mirror with ${SUITE}?)`);
  return names[0][0];
}

/** Downloads `packages` (with their dependencies when `deps`) into `dir`: the .deb paths. */
function download(packages, dir, { deps = false } = {}) {
  fs.mkdirSync(path.join(dir, 'partial'), { recursive: true });
  if (deps) {
    // every package they need, as if nothing were installed (the empty dpkg status)
    run('apt-get', [...aptOptions(), '-o', `Dir::Cache::archives=${dir}`, 'install', '-y', '-qq', '--download-only', ...packages], { stdio: ['ignore', 'ignore', 'pipe'] });
  } else {
    run('apt-get', [...aptOptions(), 'download', '-qq', ...packages], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  }
  return fs.readdirSync(dir).filter((f) => f.endsWith('.deb')).map((f) => path.join(dir, f));
}

/**
 * Debian 12's arm64 6.1 kernel: `{ vmlinuz, config, release, package }`,
 * cached in .cache/kernels/debian-6.1-arm64/ (the image is an uncompressed
 * arm64 `Image`, which qemu boots and which holds the kernel's BTF).
 */
function fetchArm64Kernel() {
  const dir = path.join(CACHE, 'debian-6.1-arm64');
  const vmlinuz = path.join(dir, 'vmlinuz');
  const meta = path.join(dir, 'kernel.json');
  if (fs.existsSync(vmlinuz) && fs.existsSync(meta)) return { vmlinuz, config: path.join(dir, 'config'), ...JSON.parse(fs.readFileSync(meta, 'utf8')) };
  ensureApt();
  const name = newestKernelPackage();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'node-libbpf-arm64-kernel-'));
  try {
    log(`downloading ${name} (arm64)`);
    const [deb] = download([name], work);
    if (!deb) throw new Error(`apt-get download ${name} gave no .deb`);
    const root = path.join(work, 'x');
    fs.mkdirSync(root);
    run('sh', ['-c', 'dpkg-deb --fsys-tarfile "$1" | tar -x -C "$2" ./boot', 'sh', deb, root]);
    const image = fs.readdirSync(path.join(root, 'boot')).find((f) => f.startsWith('vmlinuz-'));
    if (!image) throw new Error(`${path.basename(deb)} has no /boot/vmlinuz-*`);
    const release = image.slice('vmlinuz-'.length);
    fs.mkdirSync(dir, { recursive: true });
    fs.copyFileSync(path.join(root, 'boot', `config-${release}`), path.join(dir, 'config'));
    fs.copyFileSync(path.join(root, 'boot', image), `${vmlinuz}.partial`);
    fs.renameSync(`${vmlinuz}.partial`, vmlinuz);
    const info = { release, package: path.basename(deb, '.deb') };
    fs.writeFileSync(meta, `${JSON.stringify(info, null, 2)}\n`);
    return { vmlinuz, config: path.join(dir, 'config'), ...info };
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/**
 * The arm64 programs of the test VM: Debian 12's node (nodejs: node 18), a
 * static busybox (the shell of /init), bpftool (the cleanup and stats
 * tests), binutils (nm and readelf: the uprobe offset test), with every
 * package they depend on.
 */
const USERLAND = ['nodejs', 'busybox-static', 'bpftool', 'binutils'];

/**
 * USERLAND unpacked into .cache/kernels/arm64/root/ (made once; delete it
 * for newer packages): `{ root, node, busybox, version }`.
 */
function fetchArm64Userland() {
  const root = path.join(DIR, 'root');
  const meta = path.join(DIR, 'root.json');
  if (fs.existsSync(meta) && fs.existsSync(path.join(root, 'usr', 'bin', 'node'))) {
    return { root, node: path.join(root, 'usr', 'bin', 'node'), busybox: path.join(root, 'bin', 'busybox'), ...JSON.parse(fs.readFileSync(meta, 'utf8')) };
  }
  ensureApt();
  const debs = path.join(DIR, 'debs');
  fs.rmSync(debs, { recursive: true, force: true });
  log(`downloading ${USERLAND.join(', ')} for arm64, with their dependencies`);
  const files = download(USERLAND, debs, { deps: true });
  const partial = `${root}.partial`;
  fs.rmSync(partial, { recursive: true, force: true });
  fs.mkdirSync(partial, { recursive: true });
  for (const deb of files) run('dpkg-deb', ['-x', deb, partial]);
  fs.rmSync(root, { recursive: true, force: true });
  fs.renameSync(partial, root);
  const version = files.map((f) => /\/nodejs_([^_]+)_arm64\.deb$/.exec(f)?.[1]).find(Boolean);
  fs.writeFileSync(meta, `${JSON.stringify({ version, packages: files.map((f) => path.basename(f)).sort() }, null, 2)}\n`);
  fs.rmSync(debs, { recursive: true, force: true });
  return { root, node: path.join(root, 'usr', 'bin', 'node'), busybox: path.join(root, 'bin', 'busybox'), version };
}

/**
 * The kernel's BTF (what /sys/kernel/btf/vmlinux gives on that kernel),
 * carved out of an uncompressed kernel image: the `.BTF` section is a blob
 * that starts with BTF's header (magic 0xeb9f, version 1, header length 24,
 * type_off 0) and whose length the header gives. Returns a Buffer.
 */
function btfFromImage(image) {
  const data = fs.readFileSync(image);
  const magic = Buffer.from([0x9f, 0xeb, 0x01, 0x00, 0x18, 0x00, 0x00, 0x00]);
  const found = [];
  for (let i = data.indexOf(magic); i >= 0; i = data.indexOf(magic, i + 1)) {
    const typeOff = data.readUInt32LE(i + 8);
    const typeLen = data.readUInt32LE(i + 12);
    const strOff = data.readUInt32LE(i + 16);
    const strLen = data.readUInt32LE(i + 20);
    const end = i + 24 + strOff + strLen;
    // the kernel's own: types first, strings right after, and it is big
    if (typeOff === 0 && strOff === typeLen && end <= data.length && typeLen > 1 << 20) found.push(data.subarray(i, end));
  }
  if (found.length !== 1) {
    throw new Error(`${image}: ${found.length} BTF blobs found (expected 1): is it an uncompressed kernel Image built with CONFIG_DEBUG_INFO_BTF=y?`);
  }
  return Buffer.from(found[0]);
}

module.exports = { hostMirrors, ensureApt, fetchArm64Kernel, fetchArm64Userland, btfFromImage, ARM64_DIR: DIR };
