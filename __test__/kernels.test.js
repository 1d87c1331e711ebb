'use strict';
// The kernel-dependent calls: kprobes and kretprobes on the syscall's kernel
// function (the article's attachKprobe/attachKretprobe), and fentry/fexit.
// Where the running kernel has the feature (bpf.features()), they run for
// real with exact counts; where it lacks it, the documented ENOTSUP is
// asserted. `npm run test:kernels` runs this file on kernels that have them
// (Debian's 6.1 under qemu) and on the host's own kernel, which has neither.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { bpf, objectPath, waitFor, throwsCode, twoFiles, openBoth } = require('./helpers');

const K = 25;
const ENOENT = 2;
const AT_FDCWD = -100;

const features = bpf.features();
const NO_KPROBES = 'this kernel has no kprobes (CONFIG_KPROBES off): the ENOTSUP test runs instead';
const HAS_KPROBES = 'this kernel has kprobes: the kprobe tests run instead';
const NO_FENTRY = 'this kernel refuses fentry/fexit programs: the ENOTSUP test runs instead';
const HAS_FENTRY = 'this kernel allows fentry/fexit: the fentry test runs instead';

/** Decodes `struct kprobe_openat_event` (__test__/bpf/kprobe_openat.h). */
function decode(data) {
  const nul = data.indexOf(0, 24);
  return {
    pid: data.readUInt32LE(0),
    tid: data.readUInt32LE(4),
    durationNs: data.readBigUInt64LE(8),
    ret: data.readInt32LE(16),
    dfd: data.readInt32LE(20),
    filename: data.toString('utf8', 24, nul < 0 ? 24 + 256 : nul),
  };
}

/** kprobe_openat.bpf.o, filtering on this process. */
function kprobeTracer() {
  const obj = bpf.loadBpfProgram(objectPath('kprobe_openat'));
  obj.setGlobalVariable('target_pid', process.pid);
  return obj;
}

/** Exactly K pairs per file, with the return values, the dfd and durations. */
function checkEvents(events, files) {
  const opened = events.filter((e) => e.filename === files.present);
  const failed = events.filter((e) => e.filename === files.missing);
  assert.strictEqual(opened.length, K, 'one enter/exit pair per successful openat');
  assert.strictEqual(failed.length, K, 'one enter/exit pair per failed openat');
  for (const e of [...opened, ...failed]) {
    assert.strictEqual(e.pid, process.pid);
    assert.strictEqual(e.dfd, AT_FDCWD, 'the first syscall argument, read through the wrapper\'s pt_regs');
    assert.ok(e.durationNs > 0n, 'duration > 0');
  }
  for (const e of opened) assert.ok(e.ret >= 0, `an fd returned, got ${e.ret}`);
  for (const e of failed) assert.strictEqual(e.ret, -ENOENT);
}

/** Opens `files` K times each and checks the pairs the ring buffer brought. */
async function measure(obj, files) {
  const events = [];
  const rb = obj.getMap('events').openRingBuffer((data) => events.push(decode(data)));
  const enters = obj.getGlobalVariable('enter_count');
  const exits = obj.getGlobalVariable('exit_count');
  openBoth(files, K);
  // the programs ran synchronously inside this thread's syscalls
  assert.strictEqual(obj.getGlobalVariable('enter_count') - enters, BigInt(2 * K));
  assert.strictEqual(obj.getGlobalVariable('exit_count') - exits, BigInt(2 * K));
  await waitFor(() => events.filter((e) => e.filename.startsWith(files.dir)).length >= 2 * K);
  rb.close();
  checkEvents(events, files);
  assert.strictEqual(rb.lost, 0);
  const ns = events.filter((e) => e.filename.startsWith(files.dir)).map((e) => Number(e.durationNs)).sort((a, b) => a - b);
  return { p50: ns[ns.length >> 1], max: ns[ns.length - 1] };
}

test('features() describes the running kernel', (t) => {
  t.diagnostic(`features: ${JSON.stringify(features)}`);
  assert.strictEqual(features.release, os.release());
  for (const key of ['btf', 'tracepoints', 'kprobes', 'uprobes', 'fentry', 'uprobeMulti', 'ringBuffer', 'perfBuffer', 'taskStorage', 'attachCookie', 'bpfLoop', 'atomicFetch']) {
    assert.strictEqual(typeof features[key], 'boolean', key);
  }
  // what each release added, so a kernel that has one has the older ones
  const order = ['ringBuffer', 'taskStorage', 'atomicFetch', 'attachCookie', 'bpfLoop', 'uprobeMulti'];
  for (let i = 1; i < order.length; i++) {
    if (features[order[i]]) assert.ok(features[order[i - 1]], `${order[i]} (newer) without ${order[i - 1]}`);
  }
});

test('every BPF object of the project loads here (CO-RE relocations, this kernel\'s verifier)', (t) => {
  // compiled against the build machine's vmlinux.h: CO-RE must fit them to this
  // kernel's BTF, and this kernel's verifier (older ones track less) must accept them
  const dirs = [path.dirname(objectPath('openat')), path.dirname(objectPath('file_io'))];
  const paths = dirs.flatMap((dir) => fs.readdirSync(dir).filter((f) => f.endsWith('.bpf.o')).map((f) => path.join(dir, f)));
  const objects = paths.map((p) => path.basename(p)).sort();
  assert.ok(objects.includes('kprobe_openat.bpf.o') && objects.includes('file_io.bpf.o'));
  const failed = [];
  const variants = [];
  for (const file of paths) {
    // every program, and the uprobe fallbacks (SEC("?uprobe")); objects with per-thread
    // storage load with each kind of it (compat.bpf.h): task storage only
    // where the kernel has it
    const opened = bpf.loadBpfProgram(file);
    const storage = opened.mapNames.includes('starts_by_tid');
    opened.close();
    for (const task of storage ? [false, ...(features.taskStorage ? [true] : [])] : [null]) {
      const obj = bpf.loadBpfProgram(file);
      try {
        // the fallbacks of user-space probes too; those of kernel functions
        // and tracepoints only where this kernel has them (their tools choose)
        for (const prog of Object.values(obj.programs)) if (/^u(ret)?probe/.test(prog.section)) prog.autoload = true;
        if (task !== null) {
          obj.setGlobalVariable('use_task_storage', task);
          obj.setMapAutocreate('starts', task);
          obj.setMapAutocreate('starts_by_tid', !task);
          variants.push(`${path.basename(file)} (${task ? 'task storage' : 'hash by thread'})`);
        }
        obj.load();
      } catch (e) {
        // fentry/fexit programs are refused by some kernels: the ENOTSUP test below covers it
        const refused = !features.fentry && e.code === 'ENOTSUP' && /refuses (fentry|fexit|fmod_ret)/.test(e.message);
        if (refused) t.diagnostic(`${path.basename(file)}: fentry/fexit refused by this kernel`);
        else failed.push(`${path.basename(file)}${task === null ? '' : ` (use_task_storage ${task})`}: ${e.code}: ${e.message}`);
      } finally {
        obj.close();
      }
    }
  }
  t.diagnostic(`loaded with each per-thread storage: ${variants.join(', ')}`);
  t.diagnostic(`${objects.length} objects: ${objects.join(' ')}`);
  assert.deepStrictEqual(failed, [], `objects that do not load on ${features.release}`);
});

test('autoload and autocreate: what is left out before load is not in the kernel', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('event_loop'));
  t.after(() => obj.close());
  const p = obj.programs;
  // SEC("?uprobe"): off until asked for
  assert.strictEqual(p.handle_poll_entry.autoload, false);
  assert.strictEqual(p.handle_phase_entry.autoload, true);
  p.handle_phase_entry.autoload = false;
  p.handle_poll_entry.autoload = true;
  // (a map left out is tested with the per-thread storage of every object above)
  obj.setMapAutocreate('hist', true);
  throwsCode(assert, () => obj.setMapAutocreate('nope', false), 'ERR_BPF_UNKNOWN_NAME', /its maps are: /);
  obj.load();
  assert.strictEqual(p.handle_phase_entry.autoload, false);
  assert.strictEqual(typeof p.handle_poll_entry.stats.id, 'number');
  throwsCode(assert, () => p.handle_phase_entry.stats, 'ERR_BPF_LOAD', /was not loaded \(its autoload is false\)/);
  throwsCode(assert, () => obj.attachUprobe(process.execPath, 0, p.handle_phase_entry), 'ERR_BPF_LOAD', /programs\.handle_phase_entry\.autoload = true before load/);
  throwsCode(assert, () => (p.handle_phase_entry.autoload = true), 'ERR_BPF_READ_ONLY', /before load\(\)/);
  throwsCode(assert, () => obj.setMapAutocreate('hist', false), 'ERR_BPF_READ_ONLY', /before load\(\)/);
  // the kernel has each program asked for, under its name (bpftool: from BTF, or the kernel's 15 characters)
  const loaded = Object.values(p).filter((x) => x.autoload);
  assert.strictEqual(loaded.length, Object.keys(p).length - 12, 'the 11 other per-phase programs and handle_phase_entry left out');
  const listed = new Map(JSON.parse(execFileSync('bpftool', ['-j', 'prog', 'show'], { encoding: 'utf8' })).map((x) => [x.id, x.name]));
  for (const prog of loaded) assert.ok([prog.name, prog.name.slice(0, 15)].includes(listed.get(prog.stats.id)), prog.name);
});

test('kprobe + kretprobe on __x64_sys_openat: exactly K pairs per file, return values, durations', async (t) => {
  if (!features.kprobes) return t.skip(NO_KPROBES);
  const files = twoFiles(); // before attaching: creating them opens one
  const obj = kprobeTracer();
  t.after(() => obj.close());
  const entry = obj.attachKprobe('__x64_sys_openat', obj.programs.handle_openat_entry);
  const exit = obj.attachKretprobe('__x64_sys_openat', 'handle_openat_return');
  assert.strictEqual(entry.target, 'kprobe __x64_sys_openat');
  assert.strictEqual(exit.target, 'kretprobe __x64_sys_openat');
  const { p50, max } = await measure(obj, files);
  assert.strictEqual(obj.getGlobalVariable('entry_cookie'), 0n, 'no cookie given');
  t.diagnostic(`openat latency through kprobes: p50 ${p50} ns, max ${max} ns`);
});

test("the article's names sys_enter_openat/sys_exit_openat attach to the syscall through libbpf's ksyscall", async (t) => {
  if (!features.kprobes) return t.skip(NO_KPROBES);
  const files = twoFiles();
  const obj = kprobeTracer();
  t.after(() => obj.close());
  // before 5.15 the kernel takes no cookie (the program reads 0: compat.bpf.h)
  const cookie = features.attachCookie ? 7n : 0n;
  const entry = obj.attachKprobe('sys_enter_openat', 'handle_openat_entry', { cookie });
  const exit = obj.attachKretprobe('sys_exit_openat', 'handle_openat_return');
  assert.strictEqual(entry.target, 'ksyscall openat');
  assert.strictEqual(exit.target, 'kretsyscall openat');
  await measure(obj, files);
  assert.strictEqual(obj.getGlobalVariable('entry_cookie'), cookie, 'bpf_get_attach_cookie() gives the cookie option');
  if (!features.attachCookie) t.diagnostic('no attach cookies on this kernel (5.15+): attached without one');

  // detaching the kprobes stops the counting
  entry.detach();
  exit.detach();
  assert.strictEqual(entry.attached, false);
  const enters = obj.getGlobalVariable('enter_count');
  fs.closeSync(fs.openSync(__filename, 'r'));
  assert.strictEqual(obj.getGlobalVariable('enter_count'), enters);
});

test('SEC("ksyscall/openat") auto-attaches with attach(), as libbpf does', async (t) => {
  if (!features.kprobes) return t.skip(NO_KPROBES);
  const files = twoFiles();
  const obj = kprobeTracer();
  t.after(() => obj.close());
  assert.match(obj.attach('handle_openat_entry').target, /ksyscall\/openat/);
  assert.match(obj.attach('handle_openat_return').target, /kretsyscall\/openat/);
  await measure(obj, files);
});

test('a kprobe on a function that does not exist: ERR_BPF_UNKNOWN_NAME', (t) => {
  if (!features.kprobes) return t.skip(NO_KPROBES);
  const obj = kprobeTracer();
  t.after(() => obj.close());
  throwsCode(assert, () => obj.attachKprobe('no_such_kernel_function_xyz', 'handle_openat_entry'), 'ERR_BPF_UNKNOWN_NAME', /no_such_kernel_function_xyz is not a kernel function/);
});

test('without kprobes: attachKprobe/attachKretprobe throw ENOTSUP naming the tracepoint', (t) => {
  if (features.kprobes) return t.skip(HAS_KPROBES);
  const obj = kprobeTracer();
  t.after(() => obj.close());
  throwsCode(assert, () => obj.attachKprobe('__x64_sys_openat', obj.programs.handle_openat_entry), 'ENOTSUP', /kprobes are not available on this kernel.*syscalls:sys_enter_openat/);
  throwsCode(assert, () => obj.attachKprobe('sys_enter_openat', 'handle_openat_entry'), 'ENOTSUP', /ksyscall openat cannot attach.*attachTracepoint\('syscalls', 'sys_enter_openat'/);
  throwsCode(assert, () => obj.attachKretprobe('__x64_sys_openat', 'handle_openat_return'), 'ENOTSUP', /kprobes are not available on this kernel.*syscalls:sys_exit_openat/);
  throwsCode(assert, () => obj.attachKretprobe('sys_exit_openat', 'handle_openat_return'), 'ENOTSUP', /kretsyscall openat cannot attach.*'syscalls', 'sys_exit_openat'/);
  // the programs loaded; only the attach is refused
  assert.strictEqual(obj.loaded, true);
  assert.strictEqual(obj.getGlobalVariable('enter_count'), 0n);
});

test('fentry/fexit on do_sys_openat2 count exactly the opens of this process', (t) => {
  if (!features.fentry) return t.skip(NO_FENTRY);
  const obj = bpf.loadBpfProgram(objectPath('fentry'));
  t.after(() => obj.close());
  obj.setGlobalVariable('target_pid', process.pid);
  const entry = obj.attach('handle_fentry_openat');
  obj.attach(obj.programs.handle_fexit_openat);
  assert.match(entry.target, /fentry\/do_sys_openat2/);
  const files = twoFiles();
  const before = [obj.getGlobalVariable('fentry_hits'), obj.getGlobalVariable('fexit_hits')];
  openBoth(files, K);
  assert.strictEqual(obj.getGlobalVariable('fentry_hits') - before[0], BigInt(2 * K));
  assert.strictEqual(obj.getGlobalVariable('fexit_hits') - before[1], BigInt(2 * K));
  obj.detachAll();
  const after = obj.getGlobalVariable('fentry_hits');
  fs.closeSync(fs.openSync(files.present, 'r'));
  assert.strictEqual(obj.getGlobalVariable('fentry_hits'), after, 'detached: no more hits');
});

test('a kernel refusing fentry: the first attach (which loads) throws ENOTSUP saying so', (t) => {
  if (features.fentry) return t.skip(HAS_FENTRY);
  const obj = bpf.loadBpfProgram(objectPath('fentry'));
  t.after(() => obj.close());
  throwsCode(assert, () => obj.attach('handle_fentry_openat'), 'ENOTSUP', /this kernel refuses fentry programs at load time/);
});
