'use strict';
// What `npm run test:kernels` needs on the host, installed when missing
// (apt-get, as scripts/setup.sh does), and the built addon, BPF objects and
// test binaries that go into the VM.
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { ROOT, log, run, have } = require('./common');

/** Debian packages of the host tools that are missing. */
function missingPackages() {
  const need = [];
  const dpkgHas = (pkg) => {
    try {
      return /Status: install ok installed/.test(run('dpkg', ['-s', pkg]));
    } catch {
      return false;
    }
  };
  if (!have('qemu-system-x86_64')) need.push('qemu-system-x86');
  // a static busybox: the initramfs has no libc for it to link against at /init time
  if (!fs.existsSync('/bin/busybox') || !dpkgHas('busybox-static')) need.push('busybox-static');
  if (!have('cpio')) need.push('cpio');
  if (!have('gcc')) need.push('gcc');
  if (!have('bpftool')) need.push('bpftool');
  if (!have('nm') || !have('readelf')) need.push('binutils');
  if (!have('dpkg-deb') || !have('apt-get')) need.push('dpkg');
  // cachestat's test makes a vfat image in the VM (busybox has no mkfs.vfat)
  if (!have('mkfs.vfat')) need.push('dosfstools');
  return need;
}

/** Installs the missing host tools (as root, with apt-get), or says what to install. */
function ensureTools() {
  const need = missingPackages();
  if (need.length === 0) return;
  if (process.getuid() !== 0 || !have('apt-get')) {
    throw new Error(`missing ${need.join(' ')}; install them (Debian/Ubuntu: apt-get install ${need.join(' ')})`);
  }
  log(`installing ${need.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...need], { stdio: ['ignore', 'ignore', 'inherit'], env });
}

/**
 * scripts/setup.sh (clang, bpftool, <sys/sdt.h> for a fixture..., quiet when
 * all is there), then the addon (`npm run build:addon`) when it is missing,
 * and the BPF objects (`npm run build:bpf` rebuilds only what is stale).
 */
function ensureBuilt() {
  execFileSync('bash', [path.join(ROOT, 'scripts', 'setup.sh')], { cwd: ROOT, stdio: ['ignore', 2, 2] });
  if (!fs.readdirSync(ROOT).some((f) => f.endsWith('.node')) || !fs.existsSync(path.join(ROOT, 'binding.js'))) {
    log('building the addon (missing): npm run build:addon');
    execFileSync('npm', ['run', 'build:addon'], { cwd: ROOT, stdio: ['ignore', 2, 2] });
  }
  execFileSync('node', [path.join(ROOT, 'scripts', 'build-bpf.js')], { cwd: ROOT, stdio: ['ignore', 2, 2] });
}

/**
 * Fixtures the tests build with extra flags as well (symbols.test.js: the
 * same C++ source with three forms of DWARF).
 */
const FIXTURE_FLAGS = {
  member_offsets: [['-gdwarf-4'], ['-gdwarf-5'], ['-gdwarf-2', '-gstrict-dwarf'], ['-gz=zlib']],
};

/**
 * Builds every __test__/fixtures/*.c and *.cpp on the host, as the tests
 * would (helpers.buildFixture), with FIXTURE_FLAGS' variants: the VM has no
 * gcc or g++. Returns the binaries.
 */
function prebuildFixtures() {
  const { buildFixture } = require('../../__test__/helpers');
  return fs
    .readdirSync(path.join(ROOT, '__test__', 'fixtures'))
    .map((f) => /^(.*)\.(c|cpp)$/.exec(f))
    .filter(Boolean)
    // (a library a host test LD_PRELOADs has no main: not a program, and no VM test runs it)
    .filter((m) => /\bmain\s*\(/.test(fs.readFileSync(path.join(ROOT, '__test__', 'fixtures', m[0]), 'utf8')))
    .flatMap(([, name]) => [buildFixture(name), ...(FIXTURE_FLAGS[name] ?? []).map((flags) => buildFixture(name, flags))]);
}

module.exports = { ensureTools, ensureBuilt, prebuildFixtures };
