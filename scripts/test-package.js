#!/usr/bin/env node
'use strict';
// npm run test:package: the package as a user gets it, on a machine that has
// only Node.js. A Debian 11 (bullseye, glibc 2.31) root filesystem made with
// debootstrap (minbase: no Rust, no clang, no libelf, no compiler), the
// host's node and npm copied in, and then, in a chroot:
//
//   1. npm install of the tarballs of $PACK_DIR (default dist/, made by
//      `npm run pack:all` when missing) into a fresh app, with no registry:
//      the app depends on the main tarball, and npm "overrides" point each
//      platform package of its optionalDependencies at its own tarball, so
//      npm resolves every package from the folder (--offline, and a registry
//      address where nothing listens, so a fetch would fail at once);
//   2. `npx node-libbpf syscalls -p PID -d 2 -j` on a process of the test's
//      own, which calls getppid K times once tracing has started (Node's
//      process.ppid getter is one getppid(2) each): the JSON must count K;
//   3. `apt-get install clang` (bullseye's clang 11), `npx node-libbpf build`
//      of a tracepoint counter written here, then the library loads it and
//      counts K getppid calls of its own process, exactly.
//
// Each phase is timed; the last line is `N passed, N failed`, and the exit
// status is non-zero if a check failed. Everything runs in a private mount
// namespace (unshare -m): the chroot's mounts (an overlay over the cached
// tree, proc, sysfs, tracefs, bpffs, /dev) are unmounted at the end, and the
// kernel drops them with the namespace even if this script is killed. The
// processes started in the chroot are killed by pid at the end. That
// harness is scripts/chroot-harness.js, shared with test-package-musl.js.
//
// Cache (gitignored): .cache/package/bullseye/ (the pristine debootstrap
// tree, made once: delete it to make it anew), .cache/package/apt/ (the .debs
// apt-get downloads in the chroot), .cache/package/run/ (this run's overlay,
// removed at the end; KEEP=1 keeps it).
// Knobs: PACK_DIR, K (default 1000), KEEP=1, VERBOSE=1 (the commands' output).
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { ensureDebianRoot } = require('./rootfs');
const { chrootHarness, secs, tail, gist, lastJson, run, isMainTarball, tgzIn, tarballsIn, appManifest, getppidCount } = require('./chroot-harness');

const ROOT = path.resolve(__dirname, '..');
const CACHE = path.join(ROOT, '.cache', 'package');
const BASE = path.join(CACHE, 'bullseye');
const BASE_INFO = `${BASE}.json`;
const RUN = path.join(CACHE, 'run');
const CHROOT = path.join(RUN, 'root');
const APT_CACHE = path.join(CACHE, 'apt');
const PACK_DIR = path.resolve(ROOT, process.env.PACK_DIR || 'dist');
const K = Number(process.env.K || 1000);
const SUITE = 'bullseye';

const harness = chrootHarness({ name: 'test:package', chroot: CHROOT, runDir: RUN, verbose: !!process.env.VERBOSE });
const { log, check, addTime, timed, exec, traceTarget, mount, mountChroot } = harness;

/** A clean environment for commands in the chroot (not the host's npm or cargo settings). */
const CHROOT_ENV = {
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  HOME: '/root',
  LANG: 'C.UTF-8',
  TERM: 'dumb',
  DEBIAN_FRONTEND: 'noninteractive',
  npm_config_update_notifier: 'false',
};

/**
 * `sh -c script` in the chroot, in /app.
 * @param {string} script
 * @param {import('./chroot-harness').ExecOptions} [opts]
 */
function inChroot(script, opts = {}) {
  return exec('chroot', [CHROOT, '/bin/sh', '-c', `cd /app 2>/dev/null; ${script}`], { env: CHROOT_ENV, ...opts });
}

// ---------------------------------------------------------------- the tarballs

/**
 * The tarballs of $PACK_DIR: `{ main: { file, manifest }, platforms: Map(name -> { file, manifest }) }`.
 * Runs `npm run pack:all` first when the folder has no main tarball.
 */
function tarballs() {
  if (!tgzIn(PACK_DIR).some(isMainTarball)) {
    const scripts = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts || {};
    if (process.env.PACK_DIR || !scripts['pack:all']) {
      throw new Error(`no node-libbpf-<version>.tgz in ${PACK_DIR}: run npm run pack:all (it writes every tarball into dist/), or set PACK_DIR to a folder of tarballs`);
    }
    log(`no tarballs in ${path.relative(ROOT, PACK_DIR)}/: npm run pack:all`);
    const r = spawnSync('npm', ['run', 'pack:all'], { cwd: ROOT, stdio: ['ignore', 2, 2] });
    if (r.status !== 0) throw new Error(`npm run pack:all exited ${r.status}`);
  }
  return tarballsIn(PACK_DIR, 'keep one version there');
}

// ---------------------------------------------------------------- the root filesystem

/** The pristine bullseye tree (scripts/rootfs.js), made with debootstrap when missing: `{ seconds, made }`. */
function ensureBase() {
  return ensureDebianRoot(BASE, { suite: SUITE, log });
}

/** This run's root: an overlay over the pristine tree (chroot-harness.js), and apt's cache and the host's resolv.conf for apt-get there. */
function prepareChroot() {
  mountChroot(BASE);
  // apt's downloads are kept between runs (clang and its libraries: ~40 MB)
  fs.mkdirSync(path.join(APT_CACHE, 'partial'), { recursive: true });
  mount(['--bind', APT_CACHE], path.join(CHROOT, 'var', 'cache', 'apt', 'archives'));
  fs.copyFileSync('/etc/resolv.conf', path.join(CHROOT, 'etc', 'resolv.conf'));
}

/** The host's node (process.execPath) and npm, into /usr/local. */
function copyNode() {
  const bin = path.join(CHROOT, 'usr', 'local', 'bin');
  fs.mkdirSync(bin, { recursive: true });
  fs.copyFileSync(process.execPath, path.join(bin, 'node'));
  fs.chmodSync(path.join(bin, 'node'), 0o755);
  const npmCli = ['/usr/lib/node_modules/npm', path.join(path.dirname(process.execPath), '..', 'lib', 'node_modules', 'npm')].find((d) =>
    fs.existsSync(path.join(d, 'bin', 'npm-cli.js')),
  );
  if (!npmCli) throw new Error(`npm was not found beside ${process.execPath} (lib/node_modules/npm): install npm`);
  const dest = path.join(CHROOT, 'usr', 'local', 'lib', 'node_modules', 'npm');
  fs.mkdirSync(path.dirname(dest), { recursive: true });
  run('cp', ['-a', npmCli, dest]);
  fs.symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', path.join(bin, 'npm'));
  fs.symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', path.join(bin, 'npx'));
}

// ---------------------------------------------------------------- the app

/** The program a user writes and builds with \`npx node-libbpf build\`: counts a process's getppid calls. */
const COUNTER_C = `// SPDX-License-Identifier: GPL-2.0
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

const volatile __u32 target_tgid = 0;
__u64 count = 0;

SEC("tp/syscalls/sys_enter_getppid")
int handle_enter_getppid(void *ctx)
{
	if ((bpf_get_current_pid_tgid() >> 32) != target_tgid)
		return 0;
	__sync_fetch_and_add(&count, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
`;

/** Loads the built counter, attaches it, makes K getppid calls, prints the count as JSON. */
const COUNTER_JS = `'use strict';
const bpf = require('node-libbpf');
const k = Number(process.argv[2]);
const obj = bpf.loadBpfProgram('/app/counter.bpf.o');
obj.setGlobalVariable('target_tgid', process.pid);
obj.attachTracepoint('syscalls', 'sys_enter_getppid', 'handle_enter_getppid');
let sum = 0;
for (let i = 0; i < k; i++) sum += process.ppid; // one getppid(2) each
const count = obj.getGlobalVariable('count');
obj.close();
console.log(JSON.stringify({ count: Number(count), sum: sum > 0 }));
`;

/** Step 2: the syscalls tool on a process of the test's own (chroot-harness.js's getppid target). */
async function syscallsStep() {
  const { r, sent, tracingAt, targetOut } = await traceTarget({ chrootBin: 'chroot', node: '/usr/local/bin/node', env: CHROOT_ENV, k: K }, (pid, onStderr) =>
    exec('chroot', [CHROOT, '/bin/sh', '-c', `cd /app && exec npx --no-install node-libbpf syscalls -p ${pid} -d 2 -j`], { env: CHROOT_ENV, timeoutMs: 120000, onStderr }),
  );
  addTime('first npx node-libbpf syscalls -p PID -d 2 -j (to its exit)', r.ms);
  if (tracingAt !== undefined) addTime('  of which: to its "Tracing" line (start-up, load and attach)', tracingAt);
  log(`npx node-libbpf syscalls: exit ${r.code} after ${secs(r.ms)}${tracingAt !== undefined ? `, tracing after ${secs(tracingAt)}` : ''}`);
  if (!check('npx node-libbpf syscalls -p PID -d 2 -j exits 0', r.code === 0, r.code === 0 ? '' : `exit ${r.code}:\n    ${tail(r.stderr)}`)) return;
  check('it printed a "Tracing ..." line on stderr before counting', sent, sent ? '' : tail(r.stderr));
  const count = getppidCount(r.stdout);
  check(`its JSON counts the K=${K} getppid calls of the target process`, count === K, `counted ${count}${count === undefined ? ` (no JSON with a syscalls list in: ${r.stdout.slice(0, 300)})` : ''}`);
  check('the target made its calls while traced', /done true/.test(targetOut), tail(targetOut, 3));
}

/** Step 3: clang from bullseye, `npx node-libbpf build`, the library loads the object and counts. */
async function buildStep() {
  const apt = await timed('apt-get update && apt-get install clang (in the chroot)', () =>
    inChroot('apt-get update -qq && apt-get install -y -qq --no-install-recommends clang', { timeoutMs: 600000 }),
  );
  if (!check('apt-get install clang in the chroot', apt.code === 0, apt.code === 0 ? '' : tail(apt.stderr))) return;
  const v = await inChroot('clang --version | head -n 1');
  log(`clang in the chroot: ${v.stdout.trim()}`);
  fs.writeFileSync(path.join(CHROOT, 'app', 'counter.bpf.c'), COUNTER_C);
  fs.writeFileSync(path.join(CHROOT, 'app', 'counter.js'), COUNTER_JS);
  const b = await timed('npx node-libbpf build counter.bpf.c -o counter.bpf.o', () =>
    inChroot('npx --no-install node-libbpf build counter.bpf.c -o counter.bpf.o', { timeoutMs: 120000 }),
  );
  const built = b.code === 0 && fs.existsSync(path.join(CHROOT, 'app', 'counter.bpf.o'));
  if (!check(`npx node-libbpf build compiles a tracepoint counter with ${v.stdout.trim() || 'clang'}`, built, built ? '' : `exit ${b.code}:\n    ${tail(b.stderr + b.stdout)}`)) return;
  const c = await inChroot(`node counter.js ${K}`, { timeoutMs: 60000 });
  const out = lastJson(c.stdout);
  check(`the library loads it and it counts the K=${K} getppid calls exactly`, c.code === 0 && out?.count === K, out ? `counted ${out.count}` : `exit ${c.code}:\n    ${tail(c.stderr + c.stdout)}`);
}

/** Everything in the chroot; runs inside the private mount namespace. */
async function inNamespace() {
  const started = Date.now();
  let packs;
  try {
    packs = tarballs();
  } catch (e) {
    check('the tarballs', false, e.message);
    return;
  }
  const { main, platforms } = packs;
  log(`tarballs in ${path.relative(ROOT, PACK_DIR) || '.'}/: ${[main.file, ...[...platforms.values()].map((p) => p.file)].map((f) => `${path.basename(f)} (${(fs.statSync(f).size / 1e6).toFixed(2)} MB)`).join(', ')}`);
  // every platform package the main package names is there, at the version it names
  const optional = main.manifest.optionalDependencies || {};
  const own = `node-libbpf-linux-${process.arch}-gnu`;
  for (const [name, range] of Object.entries(optional)) {
    const p = platforms.get(name);
    check(`${name}@${range} (optionalDependency) is in the folder`, p && p.manifest.version === range, p ? `the tarball is ${p.manifest.version}` : 'no tarball');
  }
  check(`the main package names ${own} as an optionalDependency`, Object.hasOwn(optional, own), Object.keys(optional).join(', ') || 'it has no optionalDependencies');

  const cached = fs.existsSync(BASE_INFO);
  const base = await timed(cached ? `root filesystem (the cached ${SUITE} tree)` : `root filesystem (debootstrap --variant=minbase ${SUITE})`, ensureBase);
  log(base.made ? `debootstrap took ${base.seconds} s` : `cached ${SUITE} tree (made ${base.date} in ${base.seconds} s)`);
  await timed('chroot set up (overlay, mounts, node and npm copied)', async () => {
    prepareChroot();
    copyNode();
    fs.mkdirSync(path.join(CHROOT, 'pkgs'), { recursive: true });
    for (const f of [main.file, ...[...platforms.values()].map((p) => p.file)]) fs.copyFileSync(f, path.join(CHROOT, 'pkgs', path.basename(f)));
    fs.mkdirSync(path.join(CHROOT, 'app'), { recursive: true });
  });

  // the machine: glibc 2.31, no compiler, no libelf; the node binary runs there
  const facts = await inChroot(
    'ldd --version | head -n 1; for c in clang gcc cc rustc cargo bpftool; do command -v $c; done; ls /usr/lib/x86_64-linux-gnu/libelf* /lib/x86_64-linux-gnu/libelf* 2>/dev/null; echo end',
  );
  const glibc = /(\d+\.\d+)\s*$/m.exec(facts.stdout.split('\n')[0] || '')?.[1];
  check('the chroot has glibc 2.31 (Debian 11)', glibc === '2.31', `ldd --version: ${facts.stdout.split('\n')[0]}`);
  const extra = facts.stdout.split('\n').slice(1).filter((l) => l && l !== 'end');
  check('the chroot has no clang, gcc, rustc, cargo, bpftool or libelf', extra.length === 0, extra.join(', '));
  const ldd = await inChroot('ldd /usr/local/bin/node; node --version');
  const nodeVersion = /^v(\d+)\./m.exec(ldd.stdout);
  check(`the host's node (${process.version}) runs on glibc 2.31 (ldd finds every library and version)`, ldd.code === 0 && !/not found/.test(ldd.stdout + ldd.stderr) && nodeVersion && Number(nodeVersion[1]) >= 18, tail(ldd.stdout + ldd.stderr, 4));

  // 1. npm install, no registry
  fs.writeFileSync(path.join(CHROOT, 'app', 'package.json'), `${JSON.stringify(appManifest(packs, 'node-libbpf-package-test', '/pkgs'), null, 2)}\n`);
  const install = await timed('npm install (from the tarballs, no registry)', () =>
    inChroot('npm install --offline --registry=http://127.0.0.1:9/ --no-audit --no-fund --loglevel=warn', { timeoutMs: 300000 }),
  );
  if (!check('npm install of the tarballs, offline', install.code === 0, install.code === 0 ? '' : tail(install.stderr))) return;
  const installed = fs.existsSync(path.join(CHROOT, 'app', 'node_modules', own, 'package.json'));
  check(`npm installed ${own} from its tarball`, installed, installed ? '' : `node_modules has: ${fs.readdirSync(path.join(CHROOT, 'app', 'node_modules')).join(', ')}`);
  const other = [...platforms.keys()].filter((n) => n !== own && fs.existsSync(path.join(CHROOT, 'app', 'node_modules', n)));
  check('and no other platform package', other.length === 0, other.join(', '));
  const du = await inChroot('du -sk node_modules | cut -f1');
  log(`node_modules: ${(Number(du.stdout.trim()) / 1024).toFixed(1)} MB`);
  const load = await inChroot(`node -e "const b = require('node-libbpf'); console.log(typeof b.loadBpfProgram)"`);
  if (!check("require('node-libbpf') loads the prebuilt addon", load.stdout.trim() === 'function', load.stdout.trim() === 'function' ? '' : gist(load.stderr + load.stdout, 15))) {
    log('(the steps that use the addon run anyway, to report every failure)');
  }

  // 2. the syscalls tool on a process of our own
  await syscallsStep();
  // 3. clang, the build command, the library loading the result
  await buildStep();
  addTime('all (this run)', Date.now() - started);
}

harness.main({ script: __filename, needs: 'debootstrap, chroot, mounts, BPF', inNamespace });
