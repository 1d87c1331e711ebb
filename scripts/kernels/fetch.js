'use strict';
// The kernels to test on, and fetching a Debian kernel: `apt-get download`
// of its linux-image package, `dpkg-deb` to take /boot/vmlinuz-* out of it
// (nothing is installed), cached in .cache/kernels/<id>/.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { CACHE, log, run } = require('./common');

/**
 * The kernels: the host's own (its tests run natively: it is not booted)
 * and Debian 12's 6.1 LTS, the newest linux-image-6.1.0-N-amd64 that apt
 * knows, booted under qemu (TCG). Debian 12's 6.12 (bookworm-security)
 * runs only when asked for: KERNELS=host,debian-6.1,debian-6.12.
 */
const KERNELS = [
  { id: 'host', host: true },
  { id: 'debian-6.1', prefix: 'linux-image-6.1.0-', pattern: /^linux-image-6\.1\.0-(\d+)-amd64$/ },
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

/** Package names matching the kernel's pattern, newest ABI first. */
function candidates(kernel) {
  const names = run('apt-cache', ['pkgnames', kernel.prefix]).split('\n');
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
  if (fs.existsSync(vmlinuz) && fs.existsSync(meta)) return { vmlinuz, ...JSON.parse(fs.readFileSync(meta, 'utf8')) };

  let names = candidates(kernel);
  if (names.length === 0) {
    log('apt-get update (to find the kernel package)');
    run('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'] });
    names = candidates(kernel);
  }
  if (names.length === 0) throw new Error(`apt knows no package like ${kernel.pattern} (is this Debian 12 with its main archive in sources.list?)`);

  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'node-libbpf-kernel-'));
  try {
    let deb;
    for (const name of names) {
      try {
        log(`downloading ${name} (apt-get download)`);
        run('apt-get', ['download', '-qq', '-o', 'APT::Sandbox::User=root', name], { cwd: work });
        deb = fs.readdirSync(work).find((f) => f.endsWith('.deb'));
        if (deb) break;
      } catch (e) {
        log(`apt-get download ${name} failed: ${String(e.stderr || e.message).trim()}`);
      }
    }
    if (!deb) throw new Error(`could not download any of ${names.join(', ')}`);
    const root = path.join(work, 'x');
    fs.mkdirSync(root);
    run('sh', ['-c', 'dpkg-deb --fsys-tarfile "$1" | tar -x -C "$2" ./boot', 'sh', path.join(work, deb), root]);
    const image = fs.readdirSync(path.join(root, 'boot')).find((f) => f.startsWith('vmlinuz-'));
    if (!image) throw new Error(`${deb} has no /boot/vmlinuz-*`);
    const release = image.slice('vmlinuz-'.length);
    fs.mkdirSync(dir, { recursive: true });
    fs.copyFileSync(path.join(root, 'boot', image), `${vmlinuz}.partial`);
    const config = path.join(root, 'boot', `config-${release}`);
    if (fs.existsSync(config)) fs.copyFileSync(config, path.join(dir, 'config'));
    fs.renameSync(`${vmlinuz}.partial`, vmlinuz);
    const info = { release, package: deb.replace(/\.deb$/, '') };
    fs.writeFileSync(meta, `${JSON.stringify(info, null, 2)}\n`);
    return { vmlinuz, ...info };
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

module.exports = { KERNELS, selectedKernels, fetchKernel };
