'use strict';
// What a container's misconfigurations say (src/diagnose.rs), each made here
// without a container runtime, in a child process of its own: capabilities
// dropped (root without CAP_BPF/CAP_PERFMON, as in a container without
// --cap-add; nobody without them), a seccomp filter refusing bpf(2) with
// the capabilities kept (a seccomp profile), a user namespace (a rootless
// container), and no kernel BTF (an empty /sys/kernel/btf in a mount
// namespace; a btfPath that does not exist). Each is a coded error whose
// message names the fix.
const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { buildFixture, objectPath } = require('./helpers');

const ROOT = path.join(__dirname, '..');
const skip = process.getuid?.() === 0 ? false : 'the scenarios drop privileges root has: run the tests as root';
if (skip) console.log(`# skipping container_errors.test.js: ${skip}`);

// the monitor, as a service in a container starts it
const MONITOR = `const bpf = require(${JSON.stringify(ROOT)});
  try { const m = bpf.monitor(); const parts = m.parts; m.close(); console.log(JSON.stringify({ parts })); }
  catch (e) { console.log(JSON.stringify({ error: { code: e.code, message: e.message } })); }`;

/**
 * Runs MONITOR (or `script`) in node under `prefix`: its JSON line.
 * @param {string[]} prefix
 * @param {{ script?: string, env?: NodeJS.ProcessEnv }} [options]
 */
function child(prefix, { script = MONITOR, env } = {}) {
  const [cmd, ...args] = [...prefix, process.execPath, '-e', script];
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env } });
  assert.equal(r.status, 0, `${cmd} exited ${r.status} ${r.signal}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1));
}

const CAPS_FIX = [/--cap-add BPF --cap-add PERFMON/, /securityContext\.capabilities\.add: \["BPF", "PERFMON"\]/];

describe('container misconfigurations', { skip }, () => {
  test('control: root with every capability starts the monitor', () => {
    const r = child([]);
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.ok(r.parts.length > 0);
  });

  test('root without CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN (a container without --cap-add): EPERM naming the flags', () => {
    const r = child(['setpriv', '--bounding-set', '-bpf,-perfmon,-sys_admin', '--']);
    assert.equal(r.error?.code, 'EPERM', JSON.stringify(r));
    assert.match(r.error.message, /lacks CAP_BPF and CAP_PERFMON/);
    for (const re of CAPS_FIX) assert.match(r.error.message, re);
  });

  test('root with CAP_BPF only: EPERM naming the one missing', () => {
    const r = child(['setpriv', '--bounding-set', '-perfmon,-sys_admin', '--']);
    // the load needs CAP_BPF only; the attach of a perf event or tracepoint needs CAP_PERFMON
    assert.equal(r.error?.code, 'EPERM', JSON.stringify(r));
    assert.match(r.error.message, /lacks CAP_PERFMON \(/);
    for (const re of CAPS_FIX) assert.match(r.error.message, re);
  });

  test('nobody without capabilities: EPERM naming them', () => {
    const r = child(['setpriv', '--reuid', 'nobody', '--regid', 'nogroup', '--clear-groups']);
    assert.equal(r.error?.code, 'EPERM', JSON.stringify(r));
    for (const re of CAPS_FIX) assert.match(r.error.message, re);
  });

  test('a seccomp filter refusing bpf() with the capabilities kept: EPERM naming the seccomp profile', () => {
    const r = child([buildFixture('seccomp_deny_bpf')]);
    assert.equal(r.error?.code, 'EPERM', JSON.stringify(r));
    assert.match(r.error.message, /seccomp filter \(Seccomp: 2 in \/proc\/self\/status\) refuses bpf\(\):/);
    assert.match(r.error.message, /--security-opt seccomp=/);
    assert.match(r.error.message, /securityContext\.seccompProfile/);
    assert.match(r.error.message, /docker's default profile allows bpf\(\) with CAP_BPF/);
  });

  test('a seccomp filter refusing bpf() and perf_event_open(): both named', () => {
    const r = child([buildFixture('seccomp_deny_bpf')], { env: { SECCOMP_DENY_PERF: '1' } });
    assert.equal(r.error?.code, 'EPERM', JSON.stringify(r));
    assert.match(r.error.message, /refuses bpf\(\) and perf_event_open\(\)/);
  });

  test('a seccomp filter refusing perf_event_open() only: attachPerfEvent gets EPERM naming it', () => {
    const r = child([buildFixture('seccomp_deny_bpf')], {
      env: { SECCOMP_DENY_PERF: 'only' },
      script: `const bpf = require(${JSON.stringify(ROOT)});
        const obj = bpf.loadBpfProgram(${JSON.stringify(objectPath('perf_sample'))});
        try { obj.attachPerfEvent('handle_cpu_clock', { event: 'cpu-clock', pid: process.pid }); console.log('{}'); }
        catch (e) { console.log(JSON.stringify({ error: { code: e.code, message: e.message } })); }
        finally { obj.close(); }`,
    });
    assert.equal(r.error?.code, 'EPERM', JSON.stringify(r));
    assert.match(r.error.message, /perf_event_open\(cpu-clock, pid \d+, cpu -1\): Operation not permitted/);
    assert.match(r.error.message, /seccomp filter \(Seccomp: 2 in \/proc\/self\/status\) refuses perf_event_open\(\):/);
  });

  test('a user namespace (a rootless container): EPERM saying BPF is not available there', () => {
    const r = child(['unshare', '--user', '--map-root-user', '--']);
    assert.equal(r.error?.code, 'EPERM', JSON.stringify(r));
    assert.match(r.error.message, /runs in a user namespace .*uid_map/);
    assert.match(r.error.message, /allows no BPF there/);
  });

  test('no /sys/kernel/btf/vmlinux (an empty /sys/kernel/btf): ENOENT naming the mount and btfPath', () => {
    const script = MONITOR.replace(/'/g, "'\\''");
    const r = child(['unshare', '--mount', '--propagation', 'private', '--', 'sh', '-c',
      `mount -t tmpfs none /sys/kernel/btf && exec "$0" -e '${script}'`]);
    assert.equal(r.error?.code, 'ENOENT', JSON.stringify(r));
    assert.match(r.error.message, /\/sys\/kernel\/btf\/vmlinux\) is missing/);
    assert.match(r.error.message, /-v \/sys\/kernel\/btf:\/sys\/kernel\/btf:ro/);
    assert.match(r.error.message, /btfPath/);
  });

  test('a btfPath that does not exist: ENOENT naming it', () => {
    const r = child([], {
      script: `const bpf = require(${JSON.stringify(ROOT)});
        try { bpf.loadBpfProgram(require(${JSON.stringify(path.join(ROOT, 'lib', 'core', 'objects'))}).objectPath('monitor'), { btfPath: '/nonexistent/vmlinux' }); console.log('{}'); }
        catch (e) { console.log(JSON.stringify({ error: { code: e.code, message: e.message } })); }`,
    });
    assert.equal(r.error?.code, 'ENOENT', JSON.stringify(r));
    assert.match(r.error.message, /btfPath \/nonexistent\/vmlinux does not exist/);
  });
});
