'use strict';
// Every numeric option at its limits (issue 21): -1, 2**32-1, 2**32, 1e12,
// NaN, Infinity and 1.5 are an ERR_BPF_INVALID_VALUE error naming the call,
// the option, its range and the value, both through the API (lib/, checked
// before napi) and through the addon itself (src/options.rs, for what
// reaches it); the valid extremes work. The cases run in a child process
// (this file, with NODE_LIBBPF_OPTIONS_CASES set): an abort there (the old
// "memory allocation of 343597383600 bytes failed") fails a test here
// instead of killing the runner. The child also checks that the errors
// left nothing behind: no new fd (links, perf events, buffers and map
// duplicates are all fds) and no new BPF link in the kernel.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync, execFileSync } = require('node:child_process');

const BAD = [-1, 2 ** 32 - 1, 2 ** 32, 1e12, NaN, Infinity, 1.5];
const SAFE = Number.MAX_SAFE_INTEGER;

/** How a value shows in a message (`NaN`, `-1`, `1000000000000`, `5n`). */
const shown = (v) => (typeof v === 'bigint' ? `${v}n` : String(v));
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const inRange = (v, /** @type {number[]} */ [min, max]) => typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;

/**
 * The options, each with its range and the calls that take it: `api(v)`
 * through the package, `native(v)` through the addon with lib/ bypassed
 * (null: checked in JavaScript only). A call with a valid value attaches or
 * opens, then detaches or closes. `kernel(error)`: whether an error of a
 * valid value is the kernel's say (a pid that does not exist), not ours.
 * @returns {{ call: string, name: string, range: number[], api?: (v: any) => any, native?: ((v: any) => any) | null, kernel?: (out: any) => boolean, noType?: boolean }[]}
 */
function options(env) {
  const { stream, probes, uprobe, usdt, perf, monitorObj, bpf, binary, usdtBinary, pageSize, cpus, maxRate } = env;
  const nat = (obj) => obj.handle;
  const nmap = (obj, name) => nat(obj).map(name);
  const closeAll = (x) => (x.detach ? x.detach() : x.close());
  const ring = (opts) => closeAll(stream.obj.getMap('events').openRingBuffer(() => {}, opts));
  const perfBuf = (opts) => closeAll(stream.obj.getMap('perf_events').openPerfBuffer(() => {}, opts));
  const nRing = (opts) => closeAll(nmap(stream, 'events').openRingBuffer(() => {}, opts));
  const nPerf = (opts) => closeAll(nmap(stream, 'perf_events').openPerfBuffer(() => {}, opts));
  const notFound = (e) => e.code !== 'ERR_BPF_INVALID_VALUE'; // the kernel's no, not ours
  // a kernel without attach cookies (5.15+; on raw tracepoints 6.10+) refuses a non-zero one
  const [major, minor] = require('node:os').release().split('.').map(Number);
  const noCookies = (e) => e.code === 'ENOTSUP' && !bpf.features().attachCookie;
  const noRawTpCookies = (e) => (major < 6 || (major === 6 && minor < 10)) && e.code !== 'ERR_BPF_INVALID_VALUE'; // (6.1: the kernel's EINVAL)
  const list = [
    { call: 'openRingBuffer', name: 'pollInterval', range: [1, 60_000], api: (v) => ring({ pollInterval: v }), native: (v) => nRing({ pollInterval: v }) },
    { call: 'openRingBuffer', name: 'queueSize', range: [1, 65_536], api: (v) => ring({ queueSize: v }), native: (v) => nRing({ queueSize: v }) },
    { call: 'openPerfBuffer', name: 'pollInterval', range: [1, 60_000], api: (v) => perfBuf({ pollInterval: v }), native: (v) => nPerf({ pollInterval: v }) },
    { call: 'openPerfBuffer', name: 'queueSize', range: [1, 65_536], api: (v) => perfBuf({ queueSize: v }), native: (v) => nPerf({ queueSize: v }) },
    { call: 'openPerfBuffer', name: 'pageCount', range: [1, 8192], api: (v) => perfBuf({ pageCount: v }), native: (v) => nPerf({ pageCount: v }) },
    // the default 256 pages: at most all of one CPU's buffer
    { call: 'openPerfBuffer', name: 'wakeupBytes', range: [1, 256 * pageSize], api: (v) => perfBuf({ wakeupBytes: v }), native: (v) => nPerf({ wakeupBytes: v }) },
    {
      call: "map 'phases' readMapped",
      name: 'offset',
      range: [0, SAFE],
      api: (v) => monitorObj.obj.getMap('phases').readMapped(Buffer.alloc(8), v),
      native: (v) => nmap(monitorObj, 'phases').readMapped(Buffer.alloc(8), v),
      kernel: (e) => /are outside its \d+ bytes/.test(e.message), // the map's own bounds
    },
    {
      call: 'attachTracepoint',
      name: 'cookie',
      range: [0, SAFE],
      api: (v) => closeAll(probes.obj.attachTracepoint('syscalls', 'sys_enter_getppid', 'handle_cookie_getppid', { cookie: v })),
      native: null, // the addon takes bigints: see the bigint test
      kernel: noCookies,
    },
    {
      call: 'attachRawTracepoint',
      name: 'cookie',
      range: [0, SAFE],
      api: (v) => closeAll(probes.obj.attachRawTracepoint('sys_enter', 'handle_raw_sys_enter', { cookie: v })),
      native: null,
      kernel: noRawTpCookies,
    },
    {
      call: 'attachKprobe',
      name: 'cookie',
      range: [0, SAFE],
      api: (v) => closeAll(probes.obj.attachKprobe('do_sys_openat2', 'handle_kprobe_openat', { cookie: v })),
      native: null,
      kernel: notFound, // no kprobes here: ENOTSUP
    },
    ...['attachUprobe', 'attachUretprobe'].flatMap((call) => [
      {
        call,
        name: 'pid',
        range: [1, 4_194_304],
        api: (v) => closeAll(uprobe.obj[call](binary, 'add_one', call === 'attachUprobe' ? 'handle_add_one' : 'handle_add_one_return', { pid: v })),
        native: (v) => closeAll(nat(uprobe)[call](binary, 'add_one', call === 'attachUprobe' ? 'handle_add_one' : 'handle_add_one_return', { pid: v })),
        kernel: notFound, // no such process: ENOENT
      },
      {
        call,
        name: 'offset',
        range: [0, SAFE],
        api: (v) => closeAll(uprobe.obj[call](binary, v, call === 'attachUprobe' ? 'handle_add_one' : 'handle_add_one_return')),
        native: (v) => closeAll(nat(uprobe)[call](binary, v, call === 'attachUprobe' ? 'handle_add_one' : 'handle_add_one_return')),
        kernel: notFound, // past the end of the file: the kernel's EINVAL
        noType: true, // a string is a symbol
      },
    ]),
    {
      call: 'attachUprobe',
      name: 'cookie',
      range: [0, SAFE],
      api: (v) => closeAll(uprobe.obj.attachUprobe(binary, 'add_one', 'handle_add_one', { cookie: v })),
      native: null,
      kernel: noCookies,
    },
    {
      call: 'attachUprobeMulti',
      name: 'pid',
      range: [1, 4_194_304],
      api: (v) => closeAll(uprobe.obj.attachUprobeMulti(binary, ['add_one'], 'handle_multi', { pid: v })),
      native: (v) => closeAll(nat(uprobe).attachUprobeMulti(binary, ['add_one'], 'handle_multi', { pid: v })),
      kernel: notFound,
    },
    {
      call: 'attachUprobeMulti',
      name: 'cookies[0]',
      range: [0, SAFE],
      api: (v) => closeAll(uprobe.obj.attachUprobeMulti(binary, ['add_one'], 'handle_multi', { cookies: [v] })),
      native: null,
      kernel: (e) => e.code === 'ENOTSUP' && !bpf.features().uprobeMulti, // (6.6+)
    },
    {
      call: 'attachUsdt',
      name: 'pid',
      range: [1, 4_194_304],
      api: (v) => closeAll(usdt.obj.attachUsdt(usdtBinary, 'nodelibbpf', 'tick', 'handle_tick', { pid: v })),
      native: (v) => closeAll(nat(usdt).attachUsdt(usdtBinary, 'nodelibbpf', 'tick', 'handle_tick', { pid: v })),
      kernel: notFound,
    },
    {
      call: 'attachUsdt',
      name: 'cookie',
      range: [0, SAFE],
      api: (v) => closeAll(usdt.obj.attachUsdt(usdtBinary, 'nodelibbpf', 'tick', 'handle_tick', { cookie: v })),
      native: null,
      kernel: noCookies, // (5.10: libbpf's USDT is ENOTSUP there, whatever the cookie)
    },
    .../** @type {[string, number[]][]} */ ([
      ['frequency', [1, maxRate]],
      ['period', [1, SAFE]],
      ['pid', [1, 4_194_304]],
      ['cpu', [0, cpus - 1]],
    ]).map(([name, range]) => ({
      call: 'attachPerfEvent',
      name,
      range,
      api: (v) => closeAll(perf.obj.attachPerfEvent('handle_cpu_clock', { [name]: v })),
      native: (v) => closeAll(nat(perf).attachPerfEvent('handle_cpu_clock', { [name]: v })),
      // pid 1 exists; 4194304 does not
      ...(name === 'pid' && { kernel: notFound }),
    })),
    { call: 'monitor()', name: 'top', range: [1, 4096], api: (v) => bpf.monitor({ top: v }).close(), native: null },
  ];
  return list;
}

/** Runs every case (in the child); returns one result per case. */
function runCases() {
  const { bpf, objectPath, buildFixture, kernelIds, added } = require('./helpers');
  const native = require('../lib/core/native');
  /** @type {{ [name: string]: any }} */
  const env = {
    bpf,
    binary: buildFixture('add_one'),
    usdtBinary: buildFixture('usdt_ticks'),
    pageSize: Number(execFileSync('getconf', ['PAGESIZE'], { encoding: 'utf8' })),
    cpus: Number(
      fs
        .readFileSync('/sys/devices/system/cpu/possible', 'utf8')
        .trim()
        .split(',')
        .map((p) => Number(p.split('-').pop()))
        .reduce((a, b) => Math.max(a, b)),
    ) + 1,
    maxRate: require('../lib/core/validate').maxSampleRate(),
  };
  for (const name of ['stream', 'probes', 'uprobe', 'usdt', 'perf_sample', 'monitor']) {
    // the object through the package, and a second copy through the addon
    // alone (lib/ bypassed)
    const o = { obj: bpf.loadBpfProgram(objectPath(name)), handle: native.openObject(objectPath(name)) };
    if (name === 'monitor') {
      // its per-thread storage as lib/service/monitor.js chooses it: task storage (5.11+), else a hash by thread
      const task = require('../lib/core/compat').chooseThreadStorage(o.obj) === 'task storage';
      o.handle.writeGlobal('use_task_storage', Buffer.from([task ? 1 : 0]));
      o.handle.setMapAutocreate('starts', task);
      o.handle.setMapAutocreate('starts_by_tid', !task);
    }
    o.obj.load();
    o.handle.load();
    env[{ perf_sample: 'perf', monitor: 'monitorObj' }[name] ?? name] = o;
  }
  const fds = () => fs.readdirSync('/proc/self/fd').length;
  const results = [];
  const run = (fn) => {
    try {
      fn();
      return { ok: true };
    } catch (e) {
      return { code: e.code, message: e.message };
    }
  };
  const list = options(env);
  // the errors first, counting what they leave behind
  const before = { fds: fds(), links: kernelIds().links };
  for (const o of list) {
    for (const layer of ['api', 'native']) {
      if (!o[layer]) continue;
      for (const v of BAD) {
        if (inRange(v, o.range)) continue;
        results.push({ call: o.call, name: o.name, range: o.range, layer, value: shown(v), out: run(() => o[layer](v)) });
      }
      if (layer === 'api' && !o.noType) {
        results.push({ call: o.call, name: o.name, range: o.range, layer, value: '"10"', type: true, out: run(() => o[layer]('10')) });
      }
      results.push({ call: o.call, name: o.name, range: o.range, layer, value: shown(o.range[0] - 1), out: run(() => o[layer](o.range[0] - 1)) });
    }
  }
  const leftFds = fds() - before.fds;
  const leftLinks = added(before.links, kernelIds().links);
  // then the valid values: the extremes, and BAD's values in range
  for (const o of list) {
    for (const layer of ['api', 'native']) {
      if (!o[layer]) continue;
      const values = [...new Set([o.range[0], o.range[1], ...BAD.filter((v) => inRange(v, o.range))])];
      for (const v of values) {
        const out = run(() => o[layer](v));
        const accepted = out.ok || (o.kernel ? o.kernel(out) : false);
        results.push({ call: o.call, name: o.name, range: o.range, layer, value: shown(v), valid: true, accepted, out });
      }
    }
  }
  for (const o of Object.values(env)) {
    if (!o?.obj) continue;
    o.obj.close();
    o.handle.close();
  }
  return { results, leftFds, leftLinks };
}

if (process.env.NODE_LIBBPF_OPTIONS_CASES) {
  process.stdout.write(JSON.stringify(runCases()));
  process.exit(0);
}

/** The child's results (it runs this file); an abort or a crash fails here. */
function childResults() {
  const run = spawnSync(process.execPath, [__filename], {
    env: { ...process.env, NODE_LIBBPF_OPTIONS_CASES: '1' },
    encoding: 'utf8',
    maxBuffer: 64 << 20,
    timeout: 120_000,
  });
  assert.strictEqual(run.signal, null, `the child was killed by ${run.signal}: ${run.stderr.slice(-2000)}`);
  assert.strictEqual(run.status, 0, `the child failed: ${run.stderr.slice(-2000)}`);
  return JSON.parse(run.stdout);
}

let cached;
const cases = () => (cached ??= childResults());

test('every numeric option out of range: ERR_BPF_INVALID_VALUE naming the call, the option, its range and the value, through the API and through the addon', { skip: process.getuid() !== 0 && 'needs root' }, () => {
  const { results } = cases();
  const errors = results.filter((r) => !r.valid && !r.type);
  assert.ok(errors.length > 200, `${errors.length} error cases`);
  for (const r of errors) {
    const where = `${r.layer} ${r.call} ${r.name} = ${r.value}`;
    assert.strictEqual(r.out.code, 'ERR_BPF_INVALID_VALUE', `${where}: ${JSON.stringify(r.out)}`);
    assert.match(r.out.message, new RegExp(`^${escape(r.call)}: ${escape(r.name)} must be an integer from ${r.range[0]} to `), where);
    assert.match(r.out.message, new RegExp(`; got ${escape(r.value)}$`), `${where}: ${r.out.message}`);
  }
});

test('a wrong type: ERR_INVALID_ARG_TYPE naming the option', { skip: process.getuid() !== 0 && 'needs root' }, () => {
  const typed = cases().results.filter((r) => r.type);
  assert.ok(typed.length > 20);
  for (const r of typed) {
    assert.strictEqual(r.out.code, 'ERR_INVALID_ARG_TYPE', `${r.call} ${r.name}: ${JSON.stringify(r.out)}`);
    assert.match(r.out.message, new RegExp(`^${escape(r.call)}: ${escape(r.name)} must be`));
  }
});

test('the errors left nothing behind: no fd, no link in the kernel', { skip: process.getuid() !== 0 && 'needs root' }, () => {
  const { leftFds, leftLinks } = cases();
  assert.strictEqual(leftFds, 0, 'fds opened by the failed calls');
  assert.deepStrictEqual(leftLinks, [], 'links made by the failed calls (another helper of the machine? bpftool link show id N)');
});

test('the valid extremes work: each option at its min and max opens or attaches, then closes (queueSize 65536, pageCount 8192, ...)', { skip: process.getuid() !== 0 && 'needs root' }, () => {
  const valid = cases().results.filter((r) => r.valid);
  assert.ok(valid.length > 50, `${valid.length} valid cases`);
  for (const r of valid) assert.ok(r.accepted, `${r.layer} ${r.call} ${r.name} = ${r.value}: ${JSON.stringify(r.out)}`);
});

test('a cookie is a bigint from 0n to 2n ** 64n - 1n: the largest reaches bpf_get_attach_cookie() whole, a negative or a larger one is an error', { skip: process.getuid() !== 0 && 'needs root' }, (t) => {
  const { bpf, objectPath, throwsCode } = require('./helpers');
  const native = require('../lib/core/native');
  const obj = bpf.loadBpfProgram(objectPath('probes'));
  const handle = native.openObject(objectPath('probes'));
  t.after(() => {
    obj.close();
    handle.close();
  });
  const range = '^attachTracepoint: cookie must be an integer from 0 to 2\\*\\*64-1; got ';
  // the package shows the bigint, the addon its sign and size past 64 bits
  for (const [cookie, byAddon] of /** @type {[bigint, string][]} */ ([[-1n, '-1n'], [2n ** 64n, 'a bigint of more than 64 bits'], [-(2n ** 64n), 'a negative bigint of more than 64 bits'], [2n ** 128n, 'a bigint of more than 64 bits']])) {
    throwsCode(assert, () => obj.attachTracepoint('syscalls', 'sys_enter_getppid', 'handle_cookie_getppid', { cookie }), 'ERR_BPF_INVALID_VALUE', new RegExp(`${range}${escape(`${cookie}n`)}$`));
    throwsCode(assert, () => handle.attachTracepoint('syscalls', 'sys_enter_getppid', 'handle_cookie_getppid', { cookie }), 'ERR_BPF_INVALID_VALUE', new RegExp(`${range}${escape(byAddon)}$`));
  }
  throwsCode(assert, () => obj.attachUprobeMulti('/bin/true', ['main'], 'handle_multi', { cookies: [1n, -1n] }), 'ERR_BPF_INVALID_VALUE', /^attachUprobeMulti: cookies\[1\] must be an integer from 0 to 2\*\*64-1; got -1n$/);
  if (!bpf.features().attachCookie) return t.skip('no attach cookies on this kernel (5.15+): checked the errors only');
  obj.setGlobalVariable('target_pid', process.pid);
  const max = 2n ** 64n - 1n;
  obj.attachTracepoint('syscalls', 'sys_enter_getppid', 'handle_cookie_getppid', { cookie: max });
  for (let i = 0; i < 3; i++) process.ppid; // eslint-disable-line no-unused-expressions
  assert.deepStrictEqual(obj.getMap('cookie_counts').entries(), [[max, 3n]]);
});

/** Runs a tool with `args`: its exit status and stderr's first line. */
function tool(name, args) {
  const run = spawnSync(process.execPath, [path.join(__dirname, '..', 'examples', `${name}.js`), ...args], { encoding: 'utf8', timeout: 30_000 });
  return { status: run.status, signal: run.signal, first: run.stderr.split('\n')[0] };
}

test('the tools\' numeric flags out of range: a usage error naming the flag and its range, exit 2', () => {
  const BAD_ARGS = ['-1', '4294967295', '4294967296', '1e12', 'NaN', 'Infinity', '1.5', '0', ''];
  /** @type {[tool: string, flag: string, re: RegExp, valid: string[], rest: string[]][]} */
  const flags = [
    // [tool, flag, what the error says, the values in range, other arguments]
    ['syscall_hist', '--pid', /^-p: not a process id \(an integer from 1 to 4194304\): /, [], []],
    ['syscall_hist', '--duration', /^-d: not a number of seconds above 0 and at most 2147483: /, ['1.5'], ['-p', '1']],
    ['syscall_hist', '--interval', /^--interval: not a number of seconds above 0 and at most 2147483: /, ['1.5'], ['-p', '1']],
    ['syscall_hist', '--top', /^--top: not an integer from 1 to 100000: /, [], ['-p', '1']],
    ['node_syscalls', '--hist', /^--hist: not an integer from 1 to 100000: /, [], ['-p', '1']],
    ['stackcount', '--frequency', /^--frequency: not an integer from 1 to \d+: /, [], ['--profile', '-p', '1']],
    ['goroutines', '--goid-offset', /^--goid-offset: not an integer from 0 to 65535: /, ['0'], ['-p', '1']],
  ];
  let checked = 0;
  for (const [name, flag, re, valid, rest] of flags) {
    for (const value of BAD_ARGS) {
      if (valid.includes(value)) continue;
      const r = tool(name, [...rest, `${flag}=${value}`]);
      const where = `${name} ${flag} ${JSON.stringify(value)}`;
      assert.strictEqual(r.signal, null, where);
      assert.strictEqual(r.status, 2, `${where}: ${r.first}`);
      assert.match(r.first, re, where);
      assert.ok(r.first.endsWith(value), `${where}: the value given, in ${r.first}`);
      checked++;
    }
  }
  assert.ok(checked > 50, `${checked} cases`);
});
