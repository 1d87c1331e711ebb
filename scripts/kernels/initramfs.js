'use strict';
// The test VM's initramfs: busybox (static) as /init's shell, node and the
// shared libraries it and the other binaries load (ldd), the host programs
// the tests run (TOOLS: bpftool, nm, readelf, bash, script, mkfs.vfat,
// unshare, setpriv, getconf, prlimit), each kernel's modules for a loop-mounted vfat
// (cachestat's test), the project (the
// built addon, the tests, their BPF objects and their fixture binaries), at
// the same paths as on the host. Rebuilt only when the hash of its inputs changes.
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { ROOT, CACHE, TEST_FLAGS, log, run, have, testFiles } = require('./common');

const BUSYBOX = '/bin/busybox';
const INIT = path.join(__dirname, 'init.sh');

/** Where a host file goes in the image: its path, with /bin, /lib... under /usr (merged /usr). */
function imagePath(p) {
  return /^\/(bin|sbin|lib|lib64)\//.test(p) ? `/usr${p}` : p;
}

/** The shared libraries (and the dynamic loader) that `binaries` load, from ldd. */
function sharedLibraries(binaries) {
  const libs = new Set();
  for (const bin of binaries) {
    let out;
    try {
      out = run('ldd', [bin]);
    } catch {
      continue; // static
    }
    for (const line of out.split('\n')) {
      const m = /=>\s+(\/\S+)/.exec(line) || /^\s+(\/\S+)\s+\(0x/.exec(line);
      if (m) libs.add(m[1]);
    }
  }
  return [...libs].sort();
}

const which = (cmd) => run('sh', ['-c', 'command -v "$1"', 'sh', cmd]).trim();

/**
 * Host programs the tests run, packed when the host has them: bpftool
 * (cleanup tests), nm and readelf (uprobe offset test), bash and util-linux's
 * script (bashreadline tests: an interactive bash on a pty), mkfs.vfat
 * (cachestat's test: a disk image to loop-mount), util-linux's unshare and
 * setpriv (pidns.test.js: busybox's have not `--kill-child`, `--inh-caps`),
 * getconf (options.test.js: the page size), prlimit (monitor.test.js: the
 * memlock limit of nobody before 5.11).
 */
const TOOLS = ['bpftool', 'nm', 'readelf', 'bash', 'script', 'mkfs.vfat', 'unshare', 'setpriv', 'getconf', 'prlimit'];

/** Every file of `dir` (recursively), as absolute paths. */
function walk(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = path.join(dir, d.name);
    if (d.isDirectory()) return walk(p);
    return d.isFile() ? [p] : [];
  });
}

/**
 * The project's files that the tests can need at run time: what git tracks
 * or would track (not what .gitignore leaves out: target/, node_modules/,
 * bench/.build/...), plus the ignored build outputs the tests use: the
 * addon, the BPF objects and the fixture binaries.
 */
function projectFiles() {
  let files;
  try {
    files = run('git', ['-C', ROOT, 'ls-files', '-z', '--cached', '--others', '--exclude-standard'])
      .split('\0')
      .filter(Boolean)
      .map((rel) => path.join(ROOT, rel));
  } catch {
    // not a git checkout: everything but the usual build trees
    const skipTop = new Set(['.git', 'target', 'node_modules', '.cache']);
    files = fs
      .readdirSync(ROOT, { withFileTypes: true })
      .filter((d) => !skipTop.has(d.name))
      .flatMap((d) => (d.isDirectory() ? walk(path.join(ROOT, d.name)) : [path.join(ROOT, d.name)]));
  }
  files = files.filter((p) => fs.existsSync(p) && fs.statSync(p).isFile() && !p.endsWith('.log'));
  files.push(...fs.readdirSync(ROOT).filter((f) => f.endsWith('.node')).map((f) => path.join(ROOT, f)));
  for (const dir of ['bpf', '__test__/bpf', 'include/bpf']) files.push(...walk(path.join(ROOT, dir)).filter((p) => /\.(bpf\.o|h)$/.test(p)));
  files.push(...walk(path.join(ROOT, '__test__', '.build')));
  // runtime dependencies (package.json "dependencies", if it ever has any),
  // and the optional peers the monitor exports through (prom-client, the
  // OpenTelemetry SDK: monitor_overflow.test.js scrapes them), with what
  // they depend on, as installed; their JavaScript only
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const queue = [...Object.keys(pkg.dependencies || {}), ...Object.keys(pkg.peerDependencies || {})];
  const deps = new Set();
  while (queue.length) {
    const dep = queue.shift();
    const manifest = path.join(ROOT, 'node_modules', dep, 'package.json');
    if (deps.has(dep) || dep.startsWith('@types/') || !fs.existsSync(manifest)) continue;
    deps.add(dep);
    queue.push(...Object.keys(JSON.parse(fs.readFileSync(manifest, 'utf8')).dependencies || {}));
  }
  for (const dep of deps) files.push(...walk(path.join(ROOT, 'node_modules', dep)).filter((p) => /\.(c?js|json)$/.test(p) && !/\/build\/(esm|esnext)\//.test(p)));
  return [...new Set(files)].sort();
}

/**
 * What goes into the image: `{ dest, src }` (a host file, content and mtime
 * kept), `{ dest, text, mode }` or `{ dest, link }`.
 */
function entries({ fixtures, modules = [] }) {
  const list = [];
  const file = (src, dest = imagePath(src)) => list.push({ dest, src: fs.realpathSync(src) });

  // each kernel's modules (loop, vfat: fetch.js MODULES), which /init loads
  for (const { release, dir } of modules) {
    for (const f of fs.readdirSync(dir)) file(path.join(dir, f), `/usr/lib/modules/${release}/${f}`);
  }

  // binaries and their libraries
  const tools = TOOLS.filter(have).map(which);
  const addon = fs.readdirSync(ROOT).filter((f) => f.endsWith('.node')).map((f) => path.join(ROOT, f));
  const elves = [process.execPath, ...tools, ...addon, ...fixtures];
  file(process.execPath);
  for (const t of tools) file(t);
  for (const lib of sharedLibraries(elves)) file(lib);
  if (fs.existsSync('/usr/bin/ldd')) file('/usr/bin/ldd'); // the napi loader reads it (glibc or musl)
  file(BUSYBOX, '/usr/bin/busybox');
  const taken = new Set(list.map((e) => e.dest));
  for (const applet of run(BUSYBOX, ['--list-full']).split('\n').filter(Boolean)) {
    const dest = imagePath(`/${applet}`);
    if (!taken.has(dest) && path.basename(dest) !== 'busybox') {
      taken.add(dest);
      list.push({ dest, link: '/usr/bin/busybox' });
    }
  }

  // the project, as checked out and built: the addon, its loader, lib/,
  // the examples, the tests, their fixture binaries and the BPF objects; not
  // the build trees, the caches or the dev dependencies
  for (const src of projectFiles()) file(src, src);

  // /init and what it reads
  list.push({ dest: '/init', text: fs.readFileSync(INIT, 'utf8'), mode: 0o755 });
  list.push({
    dest: '/etc/node-libbpf-tests.conf',
    text: `REPO='${ROOT}'\nTEST_FILES='${testFiles().join(' ')}'\nTEST_FLAGS='${TEST_FLAGS.join(' ')}'\n`,
    mode: 0o644,
  });
  list.push({ dest: '/etc/hostname', text: 'node-libbpf-vm\n', mode: 0o644 });
  list.push({ dest: '/etc/hosts', text: '127.0.0.1 localhost\n::1 localhost ip6-localhost\n', mode: 0o644 });
  // nobody and nogroup: pidns.test.js runs the monitor as nobody (setpriv), hostile.test.js's files are nobody's
  list.push({ dest: '/etc/passwd', text: 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n', mode: 0o644 });
  list.push({ dest: '/etc/group', text: 'root:x:0:\nnogroup:x:65534:\n', mode: 0o644 });
  return list.sort((a, b) => (a.dest < b.dest ? -1 : a.dest > b.dest ? 1 : 0));
}

/** The hash of everything that goes in: paths, modes, contents. */
function hashOf(list) {
  const h = crypto.createHash('sha256');
  for (const e of list) {
    h.update(`${e.dest}\0`);
    if (e.src) {
      const st = fs.statSync(e.src);
      h.update(`file ${st.mode & 0o7777}\0`);
      h.update(fs.readFileSync(e.src));
    } else if (e.link) {
      h.update(`link ${e.link}\0`);
    } else {
      h.update(`text ${e.mode}\0${e.text}`);
    }
    h.update('\0');
  }
  return h.digest('hex');
}

/** Lays the entries out in `stage` and packs them as a newc cpio archive (uncompressed: quicker to unpack under TCG). */
function pack(list, stage, out) {
  fs.rmSync(stage, { recursive: true, force: true });
  fs.mkdirSync(stage, { recursive: true });
  for (const d of ['usr/bin', 'usr/sbin', 'usr/lib', 'usr/lib64', 'proc', 'sys', 'dev', 'run', 'root', 'etc', 'mnt']) {
    fs.mkdirSync(path.join(stage, d), { recursive: true });
  }
  fs.mkdirSync(path.join(stage, 'tmp'), { mode: 0o1777 });
  fs.chmodSync(path.join(stage, 'tmp'), 0o1777);
  for (const d of ['bin', 'sbin', 'lib', 'lib64']) fs.symlinkSync(`usr/${d}`, path.join(stage, d));
  for (const e of list) {
    const dest = path.join(stage, e.dest);
    fs.mkdirSync(path.dirname(dest), { recursive: true });
    if (e.src) {
      fs.copyFileSync(e.src, dest);
      const st = fs.statSync(e.src);
      fs.chmodSync(dest, st.mode & 0o7777);
      fs.utimesSync(dest, st.atime, st.mtime); // the tests compare fixture and source mtimes
    } else if (e.link) {
      fs.symlinkSync(e.link, dest);
    } else {
      fs.writeFileSync(dest, e.text, { mode: e.mode });
      fs.chmodSync(dest, e.mode);
    }
  }
  // the kernel opens /dev/console for /init before anything is mounted
  try {
    run('mknod', ['-m', '600', path.join(stage, 'dev', 'console'), 'c', '5', '1']);
  } catch {
    // not root: /init reopens /dev/console from devtmpfs
  }
  run('sh', ['-c', 'cd "$1" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet > "$2"', 'sh', stage, `${out}.partial`]);
  fs.renameSync(`${out}.partial`, out);
  fs.rmSync(stage, { recursive: true, force: true });
}

/** The initramfs path, (re)built if an input changed. */
function buildInitramfs({ fixtures, modules }) {
  fs.mkdirSync(CACHE, { recursive: true });
  const out = path.join(CACHE, 'initramfs.cpio');
  const stamp = path.join(CACHE, 'initramfs.hash');
  const list = entries({ fixtures, modules });
  const hash = hashOf(list);
  if (fs.existsSync(out) && fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8').trim() === hash) {
    log(`initramfs up to date (${(fs.statSync(out).size / 1e6).toFixed(0)} MB, ${list.length} entries)`);
    return { path: out, rebuilt: false };
  }
  const start = Date.now();
  fs.rmSync(stamp, { force: true });
  pack(list, path.join(CACHE, 'initramfs.root'), out);
  fs.writeFileSync(stamp, `${hash}\n`);
  log(`initramfs built in ${((Date.now() - start) / 1000).toFixed(1)} s (${(fs.statSync(out).size / 1e6).toFixed(0)} MB, ${list.length} entries)`);
  return { path: out, rebuilt: true };
}

module.exports = { buildInitramfs, pack, hashOf };
