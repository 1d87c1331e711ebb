'use strict';
// The kernels to test on, and fetching a Debian kernel: `apt-get download`
// of its linux-image package, `dpkg-deb` to take /boot/vmlinuz-* out of it
// (nothing is installed), cached in .cache/kernels/<id>/. A kernel of a
// Debian release the host's apt does not list (bullseye's 5.10 on a
// bookworm host) comes through an apt of its own: its sources list, lists
// and cache under .cache/kernels/apt-<suite>/, so the host's apt is left
// as it was.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { CACHE, log, run } = require('./common');

/**
 * The kernels: the host's own (its tests run natively: it is not booted),
 * Debian 12's 6.1 LTS, the newest linux-image-6.1.0-N-amd64 that apt
 * knows, and Debian 11's 5.10 LTS (bullseye, through an apt of its own),
 * booted under qemu (TCG). Debian 12's 6.12 (bookworm-security) runs only
 * when asked for: KERNELS=host,debian-6.1,debian-5.10,debian-6.12.
 */
const KERNELS = [
  { id: 'host', host: true },
  { id: 'debian-6.1', prefix: 'linux-image-6.1.0-', pattern: /^linux-image-6\.1\.0-(\d+)-amd64$/ },
  { id: 'debian-5.10', suite: 'bullseye', prefix: 'linux-image-5.10.0-', pattern: /^linux-image-5\.10\.0-(\d+)-amd64$/ },
  { id: 'debian-6.12', optional: true, prefix: 'linux-image-6.12.', pattern: /^linux-image-6\.12\.(\d+)\+deb12-amd64$/ },
  // Debian 12's arm64 6.1, under qemu-system-aarch64 with arm64 userland: scripts/kernels/arm64.js
  { id: 'debian-6.1-arm64', arch: 'arm64' },
];

/** The kernels selected by $KERNELS (comma-separated ids), default all but the optional ones. */
function selectedKernels() {
  const wanted = (process.env.KERNELS || '').split(',').filter(Boolean);
  if (wanted.length === 0) return KERNELS.filter((k) => !k.optional);
  const unknown = wanted.filter((id) => !KERNELS.some((k) => k.id === id));
  if (unknown.length) throw new Error(`unknown kernel ${unknown.join(', ')} in KERNELS; known: ${KERNELS.map((k) => k.id).join(', ')}`);
  return KERNELS.filter((k) => wanted.includes(k.id));
}

/** Debian's archive (main and security) for a suite apt is not set up for. */
const ARCHIVE = 'http://deb.debian.org/debian';
const KEYRING = '/usr/share/keyrings/debian-archive-keyring.gpg';

/**
 * apt's options for `kernel`: none for the host's own sources; for a kernel
 * of another suite, a sources list with that suite (main and security),
 * and lists, state and cache of its own under .cache/kernels/apt-<suite>/
 * (made here), so that neither the host's sources nor its package lists
 * change.
 */
function aptOptions(kernel) {
  if (!kernel.suite) return [];
  const dir = path.join(CACHE, `apt-${kernel.suite}`);
  const etc = path.join(dir, 'etc');
  for (const d of [path.join(etc, 'sources.list.d'), path.join(etc, 'preferences.d'), path.join(dir, 'state', 'lists', 'partial'), path.join(dir, 'cache', 'archives', 'partial')]) {
    fs.mkdirSync(d, { recursive: true });
  }
  const list = path.join(etc, 'sources.list');
  fs.writeFileSync(
    list,
    `deb [signed-by=${KEYRING}] ${ARCHIVE} ${kernel.suite} main\n` +
      `deb [signed-by=${KEYRING}] ${ARCHIVE}-security ${kernel.suite}-security main\n`,
  );
  fs.writeFileSync(path.join(dir, 'state', 'status'), '', { flag: 'a' });
  return [
    '-o', `Dir::Etc=${etc}`,
    '-o', `Dir::Etc::sourcelist=${list}`,
    '-o', `Dir::Etc::sourceparts=${path.join(etc, 'sources.list.d')}`,
    '-o', `Dir::Etc::preferencesparts=${path.join(etc, 'preferences.d')}`,
    '-o', `Dir::State=${path.join(dir, 'state')}`,
    '-o', `Dir::State::status=${path.join(dir, 'state', 'status')}`,
    '-o', `Dir::Cache=${path.join(dir, 'cache')}`,
  ];
}

/** Package names matching the kernel's pattern, newest ABI first. */
function candidates(kernel) {
  const names = run('apt-cache', [...aptOptions(kernel), 'pkgnames', kernel.prefix]).split('\n');
  return names
    .map((n) => [n, kernel.pattern.exec(n)])
    .filter(([, m]) => m)
    .sort((a, b) => Number(b[1][1]) - Number(a[1][1]))
    .map(([n]) => n);
}

/**
 * The kernel image of a Debian kernel: `{ vmlinuz, release, package }`,
 * from the cache, or downloaded (apt-get update first if apt knows no such
 * package).
 */
function fetchKernel(kernel) {
  const dir = path.join(CACHE, kernel.id);
  const vmlinuz = path.join(dir, 'vmlinuz');
  const meta = path.join(dir, 'kernel.json');
  const modules = path.join(dir, 'modules');
  if (fs.existsSync(vmlinuz) && fs.existsSync(meta) && fs.existsSync(modules)) return { vmlinuz, modules, ...JSON.parse(fs.readFileSync(meta, 'utf8')) };

  let names = candidates(kernel);
  if (names.length === 0) {
    log('apt-get update (to find the kernel package)');
    run('apt-get', [...aptOptions(kernel), '-o', 'APT::Sandbox::User=root', 'update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'] });
    names = candidates(kernel);
  }
  if (names.length === 0) {
    const where = kernel.suite ? `Debian's ${kernel.suite} (${ARCHIVE}, through .cache/kernels/apt-${kernel.suite}/)` : "the host's apt sources (is this Debian 12 with its main archive in sources.list?)";
    throw new Error(`no package like ${kernel.pattern} in ${where}`);
  }

  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'node-libbpf-kernel-'));
  try {
    let deb;
    for (const name of names) {
      try {
        log(`downloading ${name} (apt-get download)`);
        run('apt-get', [...aptOptions(kernel), 'download', '-qq', '-o', 'APT::Sandbox::User=root', name], { cwd: work });
        deb = fs.readdirSync(work).find((f) => f.endsWith('.deb'));
        if (deb) break;
      } catch (e) {
        log(`apt-get download ${name} failed: ${String(e.stderr || e.message).trim()}`);
      }
    }
    if (!deb) throw new Error(`could not download any of ${names.join(', ')}`);
    const root = path.join(work, 'x');
    fs.mkdirSync(root);
    run('sh', ['-c', 'dpkg-deb --fsys-tarfile "$1" | tar -x -C "$2" ./boot ./lib/modules', 'sh', path.join(work, deb), root]);
    const image = fs.readdirSync(path.join(root, 'boot')).find((f) => f.startsWith('vmlinuz-'));
    if (!image) throw new Error(`${deb} has no /boot/vmlinuz-*`);
    const release = image.slice('vmlinuz-'.length);
    fs.mkdirSync(dir, { recursive: true });
    fs.copyFileSync(path.join(root, 'boot', image), `${vmlinuz}.partial`);
    const config = path.join(root, 'boot', `config-${release}`);
    if (fs.existsSync(config)) fs.copyFileSync(config, path.join(dir, 'config'));
    fs.renameSync(`${vmlinuz}.partial`, vmlinuz);
    copyModules(path.join(root, 'lib', 'modules', release, 'kernel'), modules);
    const info = { release, package: deb.replace(/\.deb$/, '') };
    fs.writeFileSync(meta, `${JSON.stringify(info, null, 2)}\n`);
    return { vmlinuz, modules, ...info };
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/**
 * The modules /init loads (insmod, in this order) for a filesystem on a
 * block device: cachestat's test needs a page cache in front of a disk,
 * which the initramfs (tmpfs) is not. Debian builds them as modules.
 */
const MODULES = ['drivers/block/loop.ko', 'fs/fat/fat.ko', 'fs/fat/vfat.ko', 'fs/nls/nls_cp437.ko', 'fs/nls/nls_ascii.ko', 'fs/nls/nls_utf8.ko'];

/** Copies MODULES (uncompressed or .xz) from a kernel package's tree into `dest`. */
function copyModules(tree, dest) {
  fs.rmSync(dest, { recursive: true, force: true });
  fs.mkdirSync(`${dest}.partial`, { recursive: true });
  for (const rel of MODULES) {
    const src = [rel, `${rel}.xz`].map((r) => path.join(tree, r)).find((p) => fs.existsSync(p));
    if (!src) throw new Error(`the kernel package has no ${rel}`);
    const out = path.join(`${dest}.partial`, path.basename(rel));
    if (src.endsWith('.xz')) fs.writeFileSync(out, run('xz', ['-dc', src], { encoding: 'buffer' }));
    else fs.copyFileSync(src, out);
  }
  fs.writeFileSync(path.join(`${dest}.partial`, 'order'), `${MODULES.map((m) => path.basename(m)).join('\n')}\n`);
  fs.renameSync(`${dest}.partial`, dest);
}

module.exports = { KERNELS, selectedKernels, fetchKernel };
