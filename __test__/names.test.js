'use strict';
// Names of errnos and syscalls (lib/core/names.js, from the addon's tables),
// checked against fixed numbers and against what the running kernel shows.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const { spawn } = require('node:child_process');
const { bpf, waitFor, throwsCode } = require('./helpers');
const { errnoName, syscallName, syscallNumber, syscallNames } = require('../lib/core/names');
const { syscallNumberOfEvent } = require('../lib/tools/syscalls');

test('every errno of the kernel has a name', () => {
  const unnamed = [];
  for (let n = 1; n <= 133; n++) if (/^errno /.test(errnoName(n))) unnamed.push(n);
  // asm-generic/errno.h leaves out 41 and 58 (EWOULDBLOCK is EAGAIN, EDEADLOCK is EDEADLK)
  assert.deepStrictEqual(unnamed, [41, 58]);
  assert.strictEqual(errnoName(41), 'errno 41');
  assert.strictEqual(errnoName(115), 'EINPROGRESS');
  assert.strictEqual(errnoName(-115), 'EINPROGRESS', 'a syscall return value works too');
  // node's table (libuv's) agrees, up to aliases such as ENOTSUP for EOPNOTSUPP
  for (const [name, n] of Object.entries(os.constants.errno)) {
    assert.strictEqual(os.constants.errno[errnoName(n)] ?? n, n, `${name} ${n} is ${errnoName(n)}`);
  }
});

test('the kernel-internal errnos that a syscall exit can see have names', () => {
  // include/linux/errno.h: what a signal-interrupted syscall returns inside the kernel
  assert.strictEqual(errnoName(-512), 'ERESTARTSYS');
  assert.deepStrictEqual(
    [513, 514, 515, 516, 517].map(errnoName),
    ['ERESTARTNOINTR', 'ERESTARTNOHAND', 'ENOIOCTLCMD', 'ERESTART_RESTARTBLOCK', 'EPROBE_DEFER'],
  );
  assert.strictEqual(bpf.errnoName(520), null, 'the addon says null where there is no name');
  assert.strictEqual(errnoName(520), 'errno 520');
});

test('syscall names and numbers of x86_64 and arm64', () => {
  assert.strictEqual(syscallNumber('openat', 'x64'), 257);
  assert.strictEqual(syscallName(257, 'x86_64'), 'openat', 'the kernel name of the arch works too');
  assert.strictEqual(syscallNumber('openat', 'arm64'), 56);
  assert.strictEqual(syscallNumber('open', 'arm64'), undefined, 'arm64 has only openat');
  assert.deepStrictEqual([syscallName(264, 'arm64'), syscallName(265, 'arm64')], ['name_to_handle_at', 'open_by_handle_at']);
  assert.strictEqual(syscallName(79, 'arm64'), 'newfstatat');
  assert.strictEqual(syscallName(403, 'arm64'), 'syscall_403', 'the *_time64 syscalls are 32-bit only');
  assert.strictEqual(syscallName(469, 'x64'), 'file_setattr', 'the last one is in the table');
  assert.strictEqual(syscallName(1000, 'x64'), 'syscall_1000');
  assert.strictEqual(syscallNumber('syscall_1000', 'x64'), 1000);
  assert.deepStrictEqual(syscallNames(), bpf.syscallNames(), 'the default is this machine');
  throwsCode(assert, () => syscallNames('mips'), 'ERR_BPF_INVALID_VALUE', /no syscall table for architecture 'mips'/);
});

test("every syscall tracepoint of this kernel has a number", (t) => {
  const dir = '/sys/kernel/tracing/events/syscalls';
  if (!fs.existsSync(dir)) return t.skip(`${dir} is not there (npm run setup mounts tracefs)`);
  const events = fs.readdirSync(dir).filter((e) => e.startsWith('sys_enter_')).map((e) => e.slice('sys_enter_'.length));
  assert.ok(events.length > 300, `${events.length} syscall tracepoints`);
  assert.deepStrictEqual(events.filter((e) => syscallNumberOfEvent(e) === undefined), []);
});

test("the kernel's syscall numbers of blocked processes (/proc/PID/syscall) have our names", async (t) => {
  // cat waits in read() on its stdin, sleep in clock_nanosleep()
  for (const [cmd, args, expected] of /** @type {[string, string[], string][]} */ ([['cat', [], 'read'], ['sleep', ['10'], 'clock_nanosleep']])) {
    const child = spawn(cmd, args, { stdio: ['pipe', 'ignore', 'ignore'] });
    t.after(() => child.kill());
    let nr;
    const current = () => {
      const word = fs.readFileSync(`/proc/${child.pid}/syscall`, 'utf8').split(' ')[0];
      nr = /^\d+$/.test(word) ? Number(word) : undefined;
      return nr === syscallNumber(expected);
    };
    assert.ok(await waitFor(current), `${cmd} blocked in syscall ${nr}, ${syscallName(nr)}; expected ${expected} ${syscallNumber(expected)}`);
    assert.strictEqual(syscallName(nr), expected);
  }
});
