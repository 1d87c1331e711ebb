'use strict';
// Issue 21: what a hostile user or a hostile traced process can make
// node-libbpf do, each written as the attack: a binary planted where a
// workload is built, a cache dir another user can write, a file name full
// of terminal escapes, a source file named like a clang option, nft rule
// text from numbers that are not numbers, a pattern that matches every
// tracepoint, a unix socket path that looks like a port, an IPv6 address
// with two runs of zeros.
const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { sleep, waitFor, throwsCode, startExample } = require('./helpers');
const { escapeText } = require('../lib/core/format');
const { formatTable } = require('../lib/tools/report');
const { formatStack, foldStacks } = require('../lib/frames/stacks');

const EXAMPLES = path.join(__dirname, '..', 'examples');
const TIMEOUT_MS = 60_000;
const NOBODY = 65534;
const root = process.getuid?.() === 0;
const has = (cmd) => {
  try {
    execFileSync(cmd, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    try {
      execFileSync(cmd, ['version'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  }
};
const skipRoot = root ? false : 'these attacks need root (a file of another user, BPF programs): run the tests as root';
if (skipRoot) console.log(`# skipping most of hostile.test.js: ${skipRoot}`);

/** Whether the kernel refuses to follow a link of another user in a sticky world-writable directory (fs.protected_symlinks). */
function protectedSymlinks() {
  try {
    return fs.readFileSync('/proc/sys/fs/protected_symlinks', 'utf8').trim() !== '0';
  } catch {
    return false;
  }
}

/** A new directory in the temp dir, removed at the end. */
function tempDir(t, prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `node-libbpf-hostile-${prefix}-`));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A directory `name` in `parent` of user `uid` with `mode` (chmod: the umask does not apply). */
function dirOf(parent, name, uid, mode) {
  const dir = path.join(parent, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.chownSync(dir, uid, uid);
  fs.chmodSync(dir, mode);
  return dir;
}

describe('paths other users control (lib/host/go.js)', { skip: skipRoot }, () => {
  const go = require('../lib/host/go');
  const saved = process.env.NODE_LIBBPF_CACHE_DIR;
  after(() => {
    if (saved === undefined) delete process.env.NODE_LIBBPF_CACHE_DIR;
    else process.env.NODE_LIBBPF_CACHE_DIR = saved;
  });
  const cacheIn = (dir) => {
    process.env.NODE_LIBBPF_CACHE_DIR = dir;
    return () => go.cacheDir('go');
  };

  test('a cache dir of another user, or writable by others, is refused with a coded error naming it and the fix', (t) => {
    const base = tempDir(t, 'cache');
    const theirs = dirOf(base, 'theirs', NOBODY, 0o755);
    throwsCode(assert, cacheIn(theirs), 'ERR_BPF_UNSAFE_PATH', new RegExp(`^${theirs} is owned by uid ${NOBODY}, not by this user \\(uid 0\\).*chown 0 ${theirs}`));
    const open = dirOf(base, 'open', 0, 0o777);
    throwsCode(assert, cacheIn(open), 'ERR_BPF_UNSAFE_PATH', new RegExp(`^${open} is writable by others \\(mode 0777\\).*chmod go-w ${open}`));
    // above the cache root: a directory others may write in without the sticky bit lets them swap what is below
    const above = dirOf(base, 'above', 0, 0o777);
    throwsCode(assert, cacheIn(path.join(above, 'cache')), 'ERR_BPF_UNSAFE_PATH', new RegExp(`^${above} is writable by others and not sticky`));
    // a symbolic link another user planted in a sticky dir, to their own dir: the real dir is checked
    const sticky = dirOf(base, 'sticky', 0, 0o1777);
    fs.symlinkSync(theirs, path.join(sticky, 'link'));
    fs.lchownSync(path.join(sticky, 'link'), NOBODY, NOBODY);
    if (protectedSymlinks()) {
      // (Debian's kernels: fs.protected_symlinks=1) the kernel itself refuses to follow it, before the library sees where it leads
      throwsCode(assert, cacheIn(path.join(sticky, 'link')), 'EACCES', /permission denied/);
    } else {
      throwsCode(assert, cacheIn(path.join(sticky, 'link')), 'ERR_BPF_UNSAFE_PATH', new RegExp(`^${theirs} is owned by uid ${NOBODY}`));
    }
    // a fresh one in a sticky dir (as /tmp) is made, mode 0700, ours
    const made = cacheIn(path.join(sticky, 'mine'))();
    assert.equal(made, path.join(sticky, 'mine', 'go'));
    for (const dir of [path.join(sticky, 'mine'), made]) {
      const st = fs.statSync(dir);
      assert.equal(st.mode & 0o777, 0o700, `${dir} mode 0700`);
      assert.equal(st.uid, 0);
    }
  });

  test('a reused binary of another user, or writable by others, is not run', (t) => {
    const base = tempDir(t, 'reuse');
    const out = dirOf(base, 'out', 0, 0o700);
    const binary = path.join(out, 'goroutines');
    const marker = path.join(base, 'ran');
    fs.writeFileSync(binary, `#!/bin/sh\ntouch ${marker}\n`);
    fs.chmodSync(binary, 0o755);
    fs.chownSync(binary, NOBODY, NOBODY);
    fs.utimesSync(binary, new Date(Date.now() + 3600e3), new Date(Date.now() + 3600e3)); // newer than the source
    const source = path.join(EXAMPLES, 'workloads', 'goroutines.go');
    throwsCode(assert, () => go.buildGo(source, binary), 'ERR_BPF_UNSAFE_PATH', new RegExp(`^${binary} is owned by uid ${NOBODY} with mode 0755, so it is not run`));
    // ours, but others may write it
    fs.chownSync(binary, 0, 0);
    fs.chmodSync(binary, 0o777);
    throwsCode(assert, () => go.buildGo(source, binary), 'ERR_BPF_UNSAFE_PATH', new RegExp(`^${binary} is owned by uid 0 with mode 0777, so it is not run`));
    // an output dir others may write in: refused before anything is built or run
    const shared = dirOf(base, 'shared', NOBODY, 0o777);
    throwsCode(assert, () => go.buildGo(source, path.join(shared, 'goroutines')), 'ERR_BPF_UNSAFE_PATH', new RegExp(`^${shared} is owned by uid ${NOBODY}`));
    assert.equal(fs.existsSync(marker), false, 'the planted script never ran');
  });

  test('goroutines --demo with a world-writable TMPDIR holding a planted workload binary: the planted one does not run', { skip: !has('go') && 'no go tool (npm run setup installs golang-go)', timeout: 3 * TIMEOUT_MS }, async (t) => {
    const tmp = dirOf(tempDir(t, 'tmpdir'), 'tmp', NOBODY, 0o777);
    const workloads = dirOf(tmp, 'node-libbpf-workloads', NOBODY, 0o777);
    const marker = path.join(tmp, 'planted-ran');
    // where the demo used to build and run its Go program, newer than any source
    const planted = path.join(workloads, 'goroutines');
    fs.writeFileSync(planted, `#!/bin/sh\necho owned > ${marker}\nexec sleep 30\n`, { mode: 0o755 });
    fs.chownSync(planted, NOBODY, NOBODY);
    fs.utimesSync(planted, new Date(Date.now() + 3600e3), new Date(Date.now() + 3600e3));
    delete process.env.NODE_LIBBPF_CACHE_DIR; // the default cache, as a user would run it
    const child = spawn(process.execPath, [path.join(EXAMPLES, 'goroutines.js'), '--demo', '-d', '1', '--json'], {
      env: { ...process.env, TMPDIR: tmp },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 2 * TIMEOUT_MS,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    const [code] = await new Promise((resolve) => child.on('close', (...a) => resolve(a)));
    assert.equal(fs.existsSync(marker), false, `the planted binary ran; stderr:\n${stderr}`);
    assert.equal(code, 0, `goroutines --demo exits cleanly; stderr:\n${stderr}`);
    const binary = /^workload: pid \d+ \S+ (\{.*\})$/m.exec(stderr);
    assert.ok(binary, stderr);
    const built = JSON.parse(binary[1]).binary;
    assert.ok(!built.startsWith(tmp), `the demo's binary is not in TMPDIR: ${built}`);
    assert.equal(fs.statSync(built).uid, 0);
    assert.equal(fs.statSync(path.dirname(built)).mode & 0o077, 0, `${path.dirname(built)} is private`);
    const lines = stdout.trim().split('\n').map((l) => JSON.parse(l));
    assert.ok(lines.at(-1).summary.goroutines > 0, 'the real Go program ran and was traced');
  });
});

describe('terminal escapes in traced text (lib/core/format.js escapeText)', () => {
  test('C0, DEL, C1, bidi controls, backslash, invalid UTF-8 and lone surrogates are escaped; the rest stays', () => {
    const cases = [
      ['x\x1b]0;owned\x07\x1b[2J.txt', 'x\\e]0;owned\\a\\e[2J.txt'],
      ['a\\b', 'a\\\\b'],
      ['\t\n\r\b\f\v\0\x01\x1f', '\\t\\n\\r\\b\\f\\v\\x00\\x01\\x1f'],
      ['\x7f\u0080\u009b\u009f\u00a0é😀', '\\x7f\\xc2\\x80\\xc2\\x9b\\xc2\\x9f\u00a0é😀'],
      ['\ud800x\udc00', '\\ud800x\\udc00'],
      // bidi controls (a file named `txt.exe` shown as `exe.txt`): marks, embeddings, overrides, isolates
      ['invoice\u202efdp.exe', 'invoice\\u{202e}fdp.exe'],
      ['\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u2069', '\\u{61c}\\u{200e}\\u{200f}\\u{202a}\\u{202b}\\u{202c}\\u{202d}\\u{2066}\\u{2067}\\u{2068}\\u{2069}\\u{2069}'],
      ['\u200d\u2060\u202f\u2065\u206a', '\u200d\u2060\u202f\u2065\u206a'],
      ['plain /usr/lib/x86_64-linux-gnu/libc.so.6', 'plain /usr/lib/x86_64-linux-gnu/libc.so.6'],
      [42, '42'],
    ];
    for (const [input, shown] of cases) assert.equal(escapeText(input), shown, JSON.stringify(input));
    // bytes: invalid UTF-8 (a lone 0xff, a C1 byte alone, an overlong NUL, a surrogate, a cut sequence) byte by byte
    const bytes = Buffer.from([0x61, 0xff, 0xc3, 0xa9, 0x1b, 0xc2, 0x9b, 0x9b, 0xc0, 0x80, 0xed, 0xa0, 0x80, 0xf0, 0x9f, 0x98, 0x80, 0x5c, 0xe2, 0x82]);
    assert.equal(escapeText(bytes), 'a\\xffé\\e\\xc2\\x9b\\x9b\\xc0\\x80\\xed\\xa0\\x80😀\\\\\\xe2\\x82');
    assert.equal(escapeText(new Uint8Array(bytes).subarray(2, 4)), 'é');
    assert.equal(escapeText(Buffer.from('a\u202eb\u2066')), 'a\\u{202e}b\\u{2066}');
  });

  test('tables, stacks and folded stacks escape what they print', () => {
    const evil = 'ev\x1b[2Jil';
    const table = formatTable([{ title: 'COMM', value: (r) => r.comm, left: true }, { title: 'COUNT', value: (r) => r.count }], [{ comm: evil, count: 1 }]);
    assert.equal(table, 'COMM       COUNT\nev\\e[2Jil      1');
    const stack = { pid: 7, comm: evil, count: 3, kernel: ['do_\x9bsys'], user: ['main\n'] };
    assert.equal(formatStack(stack), '    do_\\xc2\\x9bsys\n    --\n    main\\n\n    ev\\e[2Jil [7]\n      3');
    assert.equal(foldStacks([stack]), 'ev\\e[2Jil;main ;do_\\xc2\\x9bsys_[k] 3');
  });

  describe('examples/trace_file_io.js, on a process that opens a file named with escapes', { skip: skipRoot, timeout: 3 * TIMEOUT_MS }, () => {
    const COMM = 'ev\x1b[2Jil';
    let dir, name;
    before(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-libbpf-hostile-escapes-'));
      name = path.join(dir, 'x\x1b]0;owned\x07\x1b[2J\u009b31m\\.txt');
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    /** trace_file_io `args` on a node process that renames itself COMM and opens `name` once traced; its stdout. */
    async function traceOpen(args) {
      const script = `fs=require('fs');fs.writeFileSync('/proc/self/comm',${JSON.stringify(COMM)});process.stdout.write('ready\\n');process.stdin.once('data',()=>{fs.closeSync(fs.openSync(${JSON.stringify(name)},'w'));process.stdin.once('end',()=>process.exit(0));});`;
      const victim = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'], timeout: TIMEOUT_MS });
      await new Promise((resolve) => victim.stdout.once('data', resolve));
      const tool = startExample(path.join(EXAMPLES, 'trace_file_io.js'), ['--pid', String(victim.pid), ...args], TIMEOUT_MS);
      try {
        await tool.ready;
        victim.stdin.write('go\n');
        await waitFor(() => tool.out.stdout.includes('owned'), 10_000);
        await sleep(100);
      } finally {
        victim.stdin.end();
      }
      const { code, signal, stdout, stderr } = await tool.exited;
      assert.equal(code, 0, `trace_file_io exits when its process does (${signal ?? code}); stderr:\n${stderr}`);
      return stdout;
    }

    test('text: no control character reaches the terminal; the name and comm are shown escaped', async () => {
      const stdout = await traceOpen([]);
      assert.doesNotMatch(stdout, /[\x00-\x09\x0b-\x1f\x7f-\x9f]/, 'only the newlines between lines');
      const line = stdout.split('\n').find((l) => l.includes('owned'));
      assert.ok(line, stdout);
      assert.ok(line.includes(`COMM:${escapeText(COMM)}]`), line);
      assert.ok(line.includes(` file=${path.join(dir, 'x\\e]0;owned\\a\\e[2J\\xc2\\x9b31m\\\\.txt')} `), line);
    });

    test('--json: the exact name and comm', async () => {
      const stdout = await traceOpen(['--json']);
      const events = stdout.trim().split('\n').map((l) => JSON.parse(l)).filter((e) => e.syscall === 'openat' && e.filename === name);
      assert.equal(events.length, 1, stdout);
      assert.equal(events[0].comm, COMM);
    });
  });
});

describe('lib/core/compile.js: a source file named like a clang option', { skip: !has('clang') && 'no clang' }, () => {
  test('-fplugin=evil.so.bpf.c is compiled as a file, not read as an option', async (t) => {
    const dir = tempDir(t, 'compile');
    const source = '-fplugin=evil.so.bpf.c';
    fs.writeFileSync(
      path.join(dir, source),
      '#include "vmlinux.h"\n#include <bpf/bpf_helpers.h>\nchar LICENSE[] SEC("license") = "GPL";\nSEC("tp/syscalls/sys_enter_getpid") int handle(void *ctx) { return 0; }\n',
    );
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const { output } = await require('../lib/core/compile').compile(source);
      assert.equal(output, '-fplugin=evil.so.bpf.o');
      assert.deepEqual([...fs.readFileSync(path.join(dir, output)).subarray(0, 4)], [0x7f, 0x45, 0x4c, 0x46], 'an ELF object');
    } finally {
      process.chdir(cwd);
    }
    assert.ok(require('../lib/core/compile').clangArgs('-x.c', 'o.o').slice(-2).join(' ') === '-- ./-x.c', 'the source last, after --');
  });
});

describe('lib/host/netns.js: dropRandom with values that are not numbers', { skip: skipRoot || (!has('nft') && 'no nft') }, () => {
  test('a coded error, and no nft rule, no ip call', () => {
    const { createVethPair } = require('../lib/host/netns');
    const link = createVethPair('hostile');
    try {
      const gso = () => link.exec(1, ['ip', '-d', 'link', 'show', 'veth-b']).match(/gso_max_segs (\d+)/)[1];
      const before = gso();
      /** @type {[any, any, any, RegExp][]} */ // bad on purpose: any lets them past the type check
      const bad = [
        [1, '20; flush ruleset', {}, /percent '20; flush ruleset' is not an integer from 0 to 100/],
        [1, 20, { dport: '80 counter accept } } table inet x { chain y { type filter hook input priority 0; policy drop; }' }, /dport '80 counter accept.* is not an integer from 1 to 65535/],
        [1, 101, {}, /percent 101/],
        [1, 20.5, {}, /percent 20.5/],
        [1, 20, { dport: 0 }, /dport 0/],
        ['1; reboot', 20, {}, /side '1; reboot' is not an integer from 0 to 1/],
      ];
      for (const [side, percent, options, re] of bad) throwsCode(assert, () => link.dropRandom(side, percent, options), 'ERR_BPF_INVALID_VALUE', re);
      assert.equal(link.exec(1, ['nft', 'list', 'ruleset']).trim(), '', 'no nft table made');
      assert.equal(gso(), before, 'no ip call: segmentation offload untouched');
    } finally {
      link.destroy();
    }
  });
});

describe('examples/funccount.js: a pattern wider than the probe cap', { skip: skipRoot, timeout: 2 * TIMEOUT_MS }, () => {
  const runTool = (args) =>
    new Promise((resolve) => {
      const child = spawn(process.execPath, [path.join(EXAMPLES, 'funccount.js'), ...args], { stdio: ['ignore', 'pipe', 'pipe'], timeout: TIMEOUT_MS });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (d) => (out += d));
      child.stderr.setEncoding('utf8').on('data', (d) => (out += d));
      child.on('close', (code) => resolve({ code, out }));
    });

  test("'t:*:*' (every tracepoint) stops with the count and how to narrow it, before anything is loaded", async () => {
    const { code, out } = await runTool(['t:*:*']);
    assert.equal(code, 1, out);
    const m = /^funccount: ERR_BPF_INVALID_VALUE: 't:\*:\*' match (\d+) probes, more than 1000: .*narrow the pattern.*raise the limit with --max-probes (\d+)$/m.exec(out);
    assert.ok(m, out);
    assert.ok(Number(m[1]) > 1000 && m[2] === m[1], out);
    assert.doesNotMatch(out, /^Counting/m, 'nothing attached');
  });

  test('--max-probes N: the cap is N, and each pattern says what it matched', async () => {
    const { code, out } = await runTool(['--max-probes', '3', 't:sched:sched_process_*', 't:task:*']);
    assert.equal(code, 1, out);
    assert.match(out, /'t:sched:sched_process_\*' 't:task:\*' match (\d+) probes \('t:sched:sched_process_\*': \d+, 't:task:\*': \d+\), more than 3: /);
    assert.equal((await runTool(['--max-probes', 'lots', 't:task:*'])).code, 2, 'a bad --max-probes is a usage error');
  });
});

describe('endpoints', () => {
  test("OTel: 'unix:/a.sock:80' is a socket path, not an address and a port", () => {
    const { attributes } = require('../lib/service/opentelemetry');
    assert.deepEqual(attributes({ endpoint: 'unix:/a.sock:80' }), { 'network.peer.address': '/a.sock:80', 'network.transport': 'unix' });
    assert.deepEqual(attributes({ endpoint: '[2001:db8::1]:443' }), { 'network.peer.address': '2001:db8::1', 'network.peer.port': 443 });
    assert.deepEqual(attributes({ endpoint: '10.0.0.1:80' }), { 'network.peer.address': '10.0.0.1', 'network.peer.port': 80 });
  });

  test('IPv6 endpoints as RFC 5952 writes them: the longest run of zeros is ::, the first of two as long', () => {
    const { endpointName } = require('../lib/service/monitor');
    const v6 = (text) => ({ family: 10, port: 80, addr: { v6: Buffer.from(text.split(':').map((g) => g.padStart(4, '0')).join(''), 'hex') } });
    assert.equal(endpointName(v6('2001:db8:0:0:1:0:0:1')), '[2001:db8::1:0:0:1]:80');
    assert.equal(endpointName(v6('2001:0:0:1:0:0:0:1')), '[2001:0:0:1::1]:80', 'the longest run, not the first');
    assert.equal(endpointName(v6('2001:db8:0:1:0:0:0:1')), '[2001:db8:0:1::1]:80');
    assert.equal(endpointName(v6('2001:db8:0:1:1:1:1:1')), '[2001:db8:0:1:1:1:1:1]:80', 'one zero group is not ::');
    assert.equal(endpointName(v6('0:0:0:0:0:0:0:1')), '[::1]:80');
    assert.equal(endpointName(v6('0:0:0:0:0:ffff:a00:1')), '10.0.0.1:80', 'IPv4-mapped as IPv4');
  });
});
