'use strict';
// examples/cachestat.js against an oracle: a file of PAGES pages, dropped
// from the page cache (posix_fadvise DONTNEED) and read whole, misses about
// PAGES pages; read again, it hits about PAGES. On a kernel with neither
// kprobes nor fentry (this project's development machine), the ENOTSUP
// error instead. The file lives on a vfat image, loop-mounted, where the
// test can make one (qemu's initramfs is tmpfs: no page cache in front of
// a disk there); else in the temporary directory.
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { bpf, buildFixture } = require('./helpers');

const SCRIPT = path.join(__dirname, '..', 'examples', 'cachestat.js');
const PAGES = 1024;
const TIMEOUT_MS = 60_000;
const features = bpf.features();
const canRun = features.kprobes || features.fentry;

/** Runs cachestat; `ready` resolves once it says it is tracing. */
function cachestat(args) {
  const child = spawn(process.execPath, [SCRIPT, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let onReady;
  const ready = new Promise((resolve) => (onReady = resolve));
  child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d) => {
    stderr += d;
    if (/^Tracing /m.test(stderr)) onReady();
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), TIMEOUT_MS);
  const done = new Promise((resolve) =>
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    }),
  );
  child.on('close', onReady);
  return { child, ready, done };
}

/**
 * A directory on a disk-backed filesystem: a loop-mounted vfat image if this
 * works here, else the temporary directory. `{ dir, remove() }`.
 */
function pageCacheDir(t) {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'node-libbpf-cachestat-'));
  const image = path.join(base, 'disk.img');
  const mnt = path.join(base, 'mnt');
  fs.mkdirSync(mnt);
  let mounted = false;
  const remove = () => {
    if (mounted) execFileSync('umount', [mnt]);
    fs.rmSync(base, { recursive: true, force: true });
  };
  try {
    fs.writeFileSync(image, '');
    fs.truncateSync(image, 32 << 20);
    execFileSync('mkfs.vfat', [image], { stdio: 'ignore' });
    execFileSync('mount', ['-o', 'loop', image, mnt], { stdio: 'ignore' });
    mounted = true;
    t.diagnostic('the file is on a loop-mounted vfat image');
    return { dir: mnt, remove };
  } catch (e) {
    t.diagnostic(`no loop-mounted vfat here (${e.message.split('\n')[0]}): the file is in ${os.tmpdir()}`);
    return { dir: base, remove };
  }
}

test('cachestat --help exits 0 with the usage', () => {
  const out = execFileSync(process.execPath, [SCRIPT, '--help'], { encoding: 'utf8' });
  assert.match(out, /--interval S/);
  assert.match(out, /--demo/);
});

test('a kernel with neither kprobes nor fentry: ENOTSUP saying so', { skip: canRun && 'this kernel has kprobes or fentry: the oracle test runs instead' }, async () => {
  const out = await cachestat(['--duration', '1']).done;
  assert.equal(out.code, 1);
  assert.match(out.stderr, /cachestat: ENOTSUP: cachestat needs kprobes or fentry on the page-cache functions, and this kernel \(.*\) has neither/);
});

// once through fentry, once through kprobes (--kprobes), where the kernel has them
const KINDS = [...(features.fentry ? [['fentry', []]] : []), ...(features.kprobes ? [['kprobe', ['--kprobes']]] : [])];
for (const [kind, flags] of KINDS.length ? KINDS : [['fentry or kprobes', []]]) {
  test(`${kind}: a file of ${PAGES} pages read cold misses about ${PAGES} pages; read again, it hits about ${PAGES}`, { skip: !canRun && 'this kernel has neither kprobes nor fentry: the ENOTSUP test runs instead' }, async (t) => {
    const where = pageCacheDir(t);
    const file = path.join(where.dir, 'data.bin');
    const reader = spawn(buildFixture('cache_reader'), [file, String(PAGES)], { stdio: ['pipe', 'pipe', 'inherit'] });
    const exited = new Promise((resolve) => reader.on('exit', resolve));
    // the reader's file closed before the image is unmounted
    t.after(async () => {
      reader.kill();
      await exited;
      where.remove();
    });
    const lines = [];
    let waiting;
    reader.stdout.setEncoding('utf8').on('data', (d) => {
      lines.push(...d.split('\n').filter(Boolean));
      waiting?.();
    });
    const next = async (re) => {
      for (;;) {
        const i = lines.findIndex((l) => re.test(l));
        if (i >= 0) return lines.splice(0, i + 1).pop();
        await new Promise((resolve) => (waiting = resolve));
      }
    };
    await next(/^ready$/);

    /** cachestat --pid of the reader while it reads the file once: its total. */
    const readOnce = async () => {
      const tool = cachestat(['--pid', String(reader.pid), '--json', ...flags]);
      await tool.ready;
      reader.stdin.write('read\n');
      assert.equal(await next(/^done /), `done ${PAGES * 4096}`);
      tool.child.kill('SIGINT');
      const out = await tool.done;
      assert.equal(out.code, 0, `cachestat exits cleanly; stderr:\n${out.stderr}`);
      const tracing = out.stderr.split('\n').find((l) => l.startsWith('Tracing'));
      t.diagnostic(tracing);
      assert.match(tracing, new RegExp(`\\(${kind}: `));
      const total = out.stdout.trim().split('\n').map((l) => JSON.parse(l)).find((r) => r.type === 'total');
      assert.ok(total, out.stdout);
      return total;
    };
    const cold = await readOnce();
    const warm = await readOnce();
    t.diagnostic(`cold: ${JSON.stringify(cold)}`);
    t.diagnostic(`warm: ${JSON.stringify(warm)}`);
    const close = (n) => n >= PAGES * 0.9 && n <= PAGES * 1.1;
    assert.ok(close(cold.misses), `cold read: ${cold.misses} misses, about ${PAGES} expected`);
    assert.ok(cold.hits <= PAGES * 0.1, `cold read: ${cold.hits} hits, few expected`);
    assert.ok(close(warm.hits), `warm read: ${warm.hits} hits, about ${PAGES} expected`);
    assert.ok(warm.misses <= PAGES * 0.1, `warm read: ${warm.misses} misses, few expected`);
    assert.ok(warm.ratio >= 90, `warm hit ratio ${warm.ratio}%`);
  });
}

test("cachestat.bpf.o: one fentry program per event, retargeted to each of its functions this kernel's BTF has", (t) => {
  const { objectPath } = require('../lib/core/objects');
  // the functions examples/cachestat.js probes, by program
  const FUNCTIONS = {
    accessed: ['folio_mark_accessed', 'mark_page_accessed'],
    added: ['filemap_add_folio', 'add_to_page_cache_lru'],
    dirtied: ['folio_account_dirtied', 'account_page_dirtied'],
    buffer_dirtied: ['mark_buffer_dirty'],
  };
  let retargeted = 0;
  for (const [program, functions] of Object.entries(FUNCTIONS)) {
    for (const func of functions) {
      const obj = bpf.loadBpfProgram(objectPath('cachestat'));
      try {
        const prog = obj.programs[`fentry_${program}`];
        assert.strictEqual(prog.autoload, false, 'SEC("?fentry/..."): left out unless chosen');
        try {
          prog.setAttachTarget(func);
        } catch (e) {
          // a name of another kernel version
          assert.strictEqual(e.code, 'ERR_BPF_UNKNOWN_NAME', e.message);
          t.diagnostic(`${func}: not in this kernel's BTF`);
          continue;
        }
        prog.autoload = true;
        retargeted++;
        if (features.fentry) {
          obj.load();
          assert.strictEqual(obj.attach(prog).attached, true);
        } else {
          // refused for being fentry, not for the target (EPERM at load on this kernel)
          assert.throws(() => obj.load(), (/** @type {NodeJS.ErrnoException} */ e) => e.code === 'ENOTSUP' && /refuses fentry programs at load time/.test(e.message) && e.message.includes(`'fentry_${program}'`));
        }
      } finally {
        obj.close();
      }
    }
  }
  // every kernel has one name of each but dirtied (inlined on some: its tracepoint)
  assert.ok(retargeted >= 3, `${retargeted} functions found`);
});
