'use strict';
// The package as users get it: its exports map, ES module import, the
// shipped objects, what `npm pack` puts in the tarball, `npx node-libbpf
// build` compiling a user's program, the tools as commands, and what a
// failed addon load says. (npm run test:package installs the packed
// tarballs on a Debian 11 root filesystem: scripts/test-package.js.)
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync, spawnSync } = require('node:child_process');
const { bpf, root, getppidLoop } = require('./helpers');
const { PUBLIC_LIB, INTERNAL_LIB, libFile } = require('../scripts/package-surface');
const { bpfArch } = require('../lib/core/objects');

const CLI = path.join(root, 'lib', 'tools', 'cli.js');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'node-libbpf-package-'));
test.after(() => fs.rmSync(tmp, { recursive: true, force: true }));

test('the exports map: the entry, the public helpers with their types, no internals, the shipped objects', () => {
  // a package can require itself by name: what a user's require sees
  assert.strictEqual(require('node-libbpf'), bpf);
  for (const name of PUBLIC_LIB) {
    assert.strictEqual(require.resolve(`node-libbpf/lib/${name}`), path.join(root, `${libFile(name)}.js`), name);
    assert.ok(fs.existsSync(path.join(root, `${libFile(name)}.d.ts`)), `${libFile(name)}.d.ts (npm run build:types)`);
  }
  for (const name of INTERNAL_LIB) {
    assert.throws(() => require.resolve(`node-libbpf/lib/${name}`), { code: 'ERR_PACKAGE_PATH_NOT_EXPORTED' }, name);
  }
  // (every module lives in a room: lib/<room>/<name>.js; scripts/check-deps.js keeps the rooms' order)
  const listed = fs.readdirSync(path.join(root, 'lib'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.js')).map((f) => path.basename(f, '.js'));
  assert.deepStrictEqual([...PUBLIC_LIB, ...INTERNAL_LIB].sort(), listed.sort(), 'every lib module is public or internal');
  const obj = require.resolve(`node-libbpf/bpf/${bpfArch()}/syscall_hist.bpf.o`);
  assert.strictEqual(obj, bpf.objectPath('syscall_hist'));
  assert.ok(bpf.objectNames().includes('node_syscalls'));
  assert.throws(() => bpf.objectPath('nonesuch'), { code: 'ENOENT', message: /ships no BPF object 'nonesuch'.*it ships: .*syscall_hist/ });
  assert.throws(() => bpf.objectPath('syscall_hist', { arch: /** @type {any} */ ('riscv64') }), { code: 'ERR_BPF_ARCH', message: /x86 \(x64\) and arm64/ });
});

test('what the types and the exporters need is declared: optional peer dependencies, never bundled', () => {
  /** @type {{ [field: string]: any }} */
  const pkg = require('../package.json');
  // index.d.ts uses Node's types; lib/service/prometheus.js and lib/service/opentelemetry.js
  // take the user's own prom-client and OpenTelemetry SDK
  for (const name of ['@types/node', 'prom-client', '@opentelemetry/api', '@opentelemetry/sdk-metrics']) {
    assert.ok(pkg.peerDependencies?.[name], `${name} is a peer dependency`);
    assert.strictEqual(pkg.peerDependenciesMeta?.[name]?.optional, true, `${name} is optional`);
    assert.ok(!pkg.dependencies?.[name], `${name} is not bundled`);
  }
});

test('ES modules import the entry by name', () => {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', "import { loadBpfProgram, features, objectPath } from 'node-libbpf'; import bpf from 'node-libbpf'; console.log(typeof loadBpfProgram, typeof features, bpf.objectPath === objectPath)"], {
    cwd: root,
    encoding: 'utf8',
  });
  assert.strictEqual(r.stdout.trim(), 'function function true', r.stderr);
});

test('npm pack: the tarball holds the entry, the types, the tools, both architectures\' objects and the headers, and no tests or addon', () => {
  const [info] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  const files = new Set(info.files.map((f) => f.path));
  for (const f of ['index.js', 'index.d.ts', 'binding.js', 'binding.d.ts', 'lib/tools/cli.js', 'lib/tools/args.d.ts', 'examples/node_syscalls.js', 'examples/workloads/http.js',
    'bpf/syscall_hist.bpf.c', 'bpf/syscall_hist.h', 'bpf/x86/syscall_hist.bpf.o', 'bpf/arm64/syscall_hist.bpf.o',
    'include/x86/vmlinux.h', 'include/arm64/vmlinux.h', 'include/bpf/bpf_helpers.h', 'include/bpf/bpf_helper_defs.h', 'include/bpf/bpf_tracing.h',
    'include/bpf/bpf_core_read.h', 'include/bpf/bpf_endian.h', 'include/bpf/usdt.bpf.h']) {
    assert.ok(files.has(f), `${f} is in the tarball`);
  }
  const unwanted = [...files].filter((f) => f.startsWith('__test__/') || f.endsWith('.node') || f.startsWith('src/') || f.startsWith('target/') || f.startsWith('bench/'));
  assert.deepStrictEqual(unwanted, []);
});

test('npx node-libbpf build: a user\'s program compiled with the package\'s headers loads and counts K events exactly', async () => {
  const src = path.join(tmp, 'count_getppid.bpf.c');
  fs.writeFileSync(
    src,
    `#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

const volatile __u32 target_pid = 0;
__u64 calls = 0;

SEC("tp/syscalls/sys_enter_getppid")
int count_getppid(void *ctx)
{
	if (bpf_get_current_pid_tgid() >> 32 == target_pid)
		__sync_fetch_and_add(&calls, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
`,
  );
  const r = spawnSync(process.execPath, [CLI, 'build', src], { encoding: 'utf8' });
  assert.strictEqual(r.status, 0, r.stderr);
  assert.match(r.stderr, /wrote .*count_getppid\.bpf\.o/);
  const K = 1234;
  const loop = getppidLoop(K);
  const obj = bpf.loadBpfProgram(path.join(tmp, 'count_getppid.bpf.o'));
  try {
    obj.setGlobalVariable('target_pid', loop.child.pid);
    obj.attachTracepoint('syscalls', 'sys_enter_getppid', 'count_getppid');
    loop.go();
    await loop.exited;
    assert.strictEqual(obj.getGlobalVariable('calls'), BigInt(K));
  } finally {
    obj.close();
  }
  // the other architecture's object compiles too (cross-compiling BPF is free)
  const other = bpfArch() === 'x86' ? 'arm64' : 'x86';
  const cross = spawnSync(process.execPath, [CLI, 'build', src, '--arch', other, '-o', path.join(tmp, `count_getppid.${other}.bpf.o`)], { encoding: 'utf8' });
  assert.strictEqual(cross.status, 0, cross.stderr);
});

test('npx node-libbpf build: no clang, an old clang, a program that does not compile: coded errors that say what to do', () => {
  const src = path.join(tmp, 'broken.bpf.c');
  fs.writeFileSync(src, '#include "vmlinux.h"\nint broken(void) { return no_such_thing; }\n');
  const missing = spawnSync(process.execPath, [CLI, 'build', src, '--clang', '/no/such/clang'], { encoding: 'utf8' });
  assert.strictEqual(missing.status, 1);
  assert.match(missing.stderr, /ERR_BPF_NO_CLANG: \/no\/such\/clang was not found: install clang 11 or newer \(Debian\/Ubuntu: apt-get install clang/);
  // a stand-in that says it is clang 9
  const old = path.join(tmp, 'clang-9');
  fs.writeFileSync(old, '#!/bin/sh\necho "clang version 9.0.1"\n', { mode: 0o755 });
  const tooOld = spawnSync(process.execPath, [CLI, 'build', src, '--clang', old], { encoding: 'utf8' });
  assert.strictEqual(tooOld.status, 1);
  assert.match(tooOld.stderr, /ERR_BPF_OLD_CLANG: .*clang-9 is clang 9; BPF CO-RE objects need clang 11 or newer/);
  const broken = spawnSync(process.execPath, [CLI, 'build', src], { encoding: 'utf8' });
  assert.strictEqual(broken.status, 1);
  assert.match(broken.stderr, /ERR_BPF_COMPILE: clang .*broken\.bpf\.c failed \(exit 1\):\n.*no_such_thing/);
  assert.ok(!fs.existsSync(path.join(tmp, 'broken.bpf.o')), 'no object is left by a failed compile');
});

test('the tools are commands: every one has --help (exit 0) with bcc\'s options, and says which process when it needs one', () => {
  const help = spawnSync(process.execPath, [CLI, '--help'], { encoding: 'utf8' });
  assert.strictEqual(help.status, 0);
  const tools = [...help.stdout.matchAll(/^ {2}([a-z_-]+) {2,}/gm)].map((m) => m[1]).filter((t) => t !== 'build' && t !== 'types');
  assert.ok(tools.length >= 11, tools.join(' '));
  for (const tool of tools) {
    const r = spawnSync(process.execPath, [CLI, tool, '--help'], { encoding: 'utf8' });
    assert.strictEqual(r.status, 0, `${tool} --help: ${r.stderr}`);
    assert.match(r.stdout, new RegExp(`^usage: node-libbpf ${tool} \\[-p PID \\| --demo\\]`), tool);
    assert.match(r.stdout, /-p, --pid PID[^]*--demo[^]*-d, --duration S[^]*-j, --json/, tool);
  }
  const needsPid = spawnSync(process.execPath, [CLI, 'event-loop'], { encoding: 'utf8' });
  assert.strictEqual(needsPid.status, 2);
  assert.match(needsPid.stderr, /which process\? give -p PID, or --demo/);
  const unknown = spawnSync(process.execPath, [CLI, 'nonesuch'], { encoding: 'utf8' });
  assert.strictEqual(unknown.status, 2);
  assert.match(unknown.stderr, /no command 'nonesuch'/);
});

test('an addon that cannot load: ERR_BPF_NATIVE_LOAD names the platform package, or the loader\'s reason, and the fix', () => {
  // the package's JavaScript without its addon, as an install that skipped optional dependencies has it
  const pkg = path.join(tmp, 'node_modules', 'node-libbpf');
  fs.mkdirSync(pkg, { recursive: true });
  for (const f of ['package.json', 'index.js', 'binding.js']) fs.copyFileSync(path.join(root, f), path.join(pkg, f));
  fs.cpSync(path.join(root, 'lib'), path.join(pkg, 'lib'), { recursive: true, filter: (f) => !f.endsWith('.d.ts') });
  const load = () => spawnSync(process.execPath, ['-e', "try { require('node-libbpf') } catch (e) { console.log(e.code + ': ' + e.message) }"], { cwd: tmp, encoding: 'utf8' });
  const platform = `linux-${process.arch}-gnu`;
  assert.match(
    load().stdout,
    new RegExp(`ERR_BPF_NATIVE_LOAD: node-libbpf's addon package node-libbpf-${platform} is not installed: .*npm install node-libbpf-${platform}`),
  );
  // an addon file that is not a shared object: the dynamic loader's words
  fs.writeFileSync(path.join(pkg, `node-libbpf.${platform}.node`), 'not an ELF');
  assert.match(load().stdout, new RegExp(`ERR_BPF_NATIVE_LOAD: node-libbpf's addon for ${platform} was found but did not load: .*(invalid ELF header|too short)`));
});
