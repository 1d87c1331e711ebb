'use strict';
// Soak (as root): a flood of records into a deliberately slow callback, so
// that records are dropped and counted, while beside it objects are opened,
// attached to tracepoints, given ring and perf buffers and closed, in a loop.
// Every 10 s it prints RSS, V8 heap, open fds and BPF programs; at the end it
// detaches the flood, drains it and checks:
//
// - received + lost == produced exactly (produced: the program's `seq`);
// - RSS at the end within 20 MB of its value after the first minute;
// - open fds, and the kernel's programs and links, back to where they were;
// - the event loop kept running: no timer late by more than --max-lag s.
//
// Exit code 1 on FAIL.
//   npm run soak -- --minutes 10 [--rate 200000] [--work-us 10] [--slow 8 --fast 2] [--interval 10] [--max-lag 1]
//
// The flood: bench/soak/flood.js makes getppid() calls at --rate per second,
// __test__/bpf/stream.bpf.c turns each into a numbered record for a 4 MiB
// ring buffer, and the callback busy-waits --work-us per record during --slow
// seconds, then takes records at full speed for --fast seconds, in turn
// (--fast 0: slow all along). The churn runs on the same thread. 8 s slow
// leave ~870,000 records behind, more than the 4 MiB ring and the 16 MiB
// queue hold (24-byte records), so some are dropped and counted in every
// period; 2 s fast drain the rest. (With 5 s and 5 s, nothing was dropped
// once ring buffers were read in place: the queue then fills in batches of
// up to 1 MiB and holds its whole 16 MiB, where the poller's small batches
// of each pass had filled its 64 batches with ~3 MB.)
const fs = require('node:fs');
const { spawn, spawnSync, execFileSync } = require('node:child_process');

// V8 grows its young generation under a flood of short-lived objects (the
// records, the churned objects' JavaScript), up to two 16 MiB semi-spaces,
// over minutes: a 10-minute run saw V8's heap total go from 9 to 39 MB with
// 5-18 MB of it used, while malloc's part grew from 8.5 to 16.6 MB. The soak runs
// with the young generation at that size from the start (Node's default
// maximum, fixed), so that V8's growing it is not taken for ours.
const V8_FLAGS = ['--min-semi-space-size=16', '--max-semi-space-size=16'];
if (!V8_FLAGS.every((flag) => process.execArgv.includes(flag))) {
  process.on('SIGINT', () => {}); // the soak gets it too, and stops early
  const run = spawnSync(process.execPath, [...process.execArgv, ...V8_FLAGS, __filename, ...process.argv.slice(2)], { stdio: 'inherit' });
  process.exit(run.status ?? 1);
}

const { bpf, objectPath } = require('../__test__/helpers');

function option(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? Number(process.argv[i + 1]) : fallback;
}

const MINUTES = option('minutes', 10);
const RATE = option('rate', 200_000);
const WORK_US = option('work-us', 10);
const SLOW_MS = option('slow', 8) * 1000;
const FAST_MS = option('fast', 2) * 1000;
const INTERVAL_S = option('interval', 10);
const MAX_LAG_MS = option('max-lag', 1) * 1000;
const RSS_SLACK = 20e6;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// a full GC before each RSS sample, so that the batches' Buffers that are
// garbage already (external memory V8 frees lazily) do not count as growth
require('node:v8').setFlagsFromString('--expose-gc');
const gc = require('node:vm').runInNewContext('gc');
const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;
const millions = (n) => (n >= 1e6 ? `${(n / 1e6).toFixed(2)}M` : String(n));

/** Closes an object, waiting for the kernel where the addon can say when (closeAsync). */
async function release(obj) {
  if (typeof obj.closeAsync === 'function') await obj.closeAsync();
  else obj.close();
}

// ---- what the process and the kernel hold ----------------------------------

function fdCount() {
  return fs.readdirSync('/proc/self/fd').length;
}

/** What each open fd is (`fd -> target`), to name the ones that stayed open. */
function fdTargets() {
  const out = new Map();
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      out.set(fd, fs.readlinkSync(`/proc/self/fd/${fd}`));
    } catch {
      // the directory's own fd, closed by now
    }
  }
  return out;
}

/** The BPF programs, links and maps this process holds fds of (ids from /proc/self/fdinfo). */
function ownBpf() {
  const own = { progs: new Set(), links: new Set(), maps: new Set() };
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    let target;
    let info;
    try {
      target = fs.readlinkSync(`/proc/self/fd/${fd}`);
      if (!target.startsWith('anon_inode:bpf')) continue;
      info = fs.readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8');
    } catch {
      continue; // closed meanwhile
    }
    const id = (key) => Number((new RegExp(`^${key}:\\s*(\\d+)`, 'm').exec(info) || [])[1]);
    if (target === 'anon_inode:bpf-prog') own.progs.add(id('prog_id'));
    else if (target === 'anon_inode:bpf_link') own.links.add(id('link_id'));
    else if (target === 'anon_inode:bpf-map') own.maps.add(id('map_id'));
  }
  return own;
}

/**
 * Where the resident memory is, from /proc/self/smaps: malloc's arenas (the
 * main [heap] and the threads' arenas, 64 MiB-aligned), the mmapped BPF maps
 * (ring buffers), and the rest (V8's heap pages, code, libraries).
 */
function memoryParts() {
  const parts = { malloc: 0, bpfMaps: 0, other: 0 };
  let part = 'other';
  for (const line of fs.readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const m = /^([0-9a-f]+)-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (m) {
      const [, start, name] = m;
      if (name === '[heap]' || (name === '' && BigInt(`0x${start}`) % (64n << 20n) === 0n)) part = 'malloc';
      else if (name === 'anon_inode:bpf-map') part = 'bpfMaps';
      else part = 'other';
    } else if (line.startsWith('Rss:')) {
      parts[part] += Number(line.split(/\s+/)[1]) * 1024;
    }
  }
  return parts;
}

/** The ids of every BPF program and link in the kernel (bpftool). */
function kernelBpf() {
  const ids = (kind) => JSON.parse(execFileSync('bpftool', ['-j', kind, 'show'], { encoding: 'utf8' }) || '[]').map((x) => x.id);
  return { progs: ids('prog'), links: ids('link') };
}

// ---- the churn: objects opened, attached, buffered and closed in a loop ------

/** One object's life: load, attach, buffers, a moment of records, close. */
async function churnCycle(i, floodPid, seen) {
  const openat = i % 2 === 1;
  const obj = bpf.loadBpfProgram(objectPath(openat ? 'openat' : 'stream'));
  try {
    let records = 0;
    if (openat) {
      obj.setGlobalVariable('target_pid', process.pid);
      obj.attachTracepoint('syscalls', 'sys_enter_openat', 'handle_enter_openat');
      obj.attachTracepoint('syscalls', 'sys_exit_openat', 'handle_exit_openat');
      obj.getMap('rb_events').openRingBuffer(() => records++);
      obj.getMap('perf_events').openPerfBuffer(() => records++, { pageCount: 4 });
      for (let k = 0; k < 5; k++) fs.closeSync(fs.openSync('/proc/self/stat', 'r'));
    } else {
      // a second reader of the flood: closed while its records pour in
      obj.setGlobalVariable('target_pid', floodPid);
      obj.attachTracepoint('syscalls', 'sys_enter_getppid', 'handle_enter_getppid');
      obj.getMap('events').openRingBuffer(() => records++);
    }
    const own = ownBpf();
    own.progs.forEach((id) => seen.progs.add(id));
    own.links.forEach((id) => seen.links.add(id));
    await sleep(20 + Math.floor(Math.random() * 180));
    return records;
  } finally {
    await release(obj);
  }
}

// ---- the run -----------------------------------------------------------------

async function main() {
  if (process.getuid() !== 0) {
    console.error('soak: run as root (it loads BPF programs)');
    process.exit(1);
  }
  const startFds = fdCount();
  const startKernel = kernelBpf();
  const seen = { progs: new Set(), links: new Set() };

  // a first cycle of each kind: the addon's own lasting fds (poller, ...) open here
  await churnCycle(0, process.pid, seen);
  await churnCycle(1, process.pid, seen);
  // and Node's: its first child process leaves a /dev/null fd open for good
  await new Promise((resolve) => spawn('true', { stdio: ['pipe', 'pipe', 'inherit'] }).on('close', resolve));
  const baseFds = fdCount();
  const baseTargets = fdTargets();
  const flood = spawn(process.execPath, [`${__dirname}/soak/flood.js`, String(RATE)], { stdio: ['pipe', 'pipe', 'inherit'] });

  const obj = bpf.loadBpfProgram(objectPath('stream'));
  obj.setGlobalVariable('target_pid', flood.pid);
  const link = obj.attachTracepoint('syscalls', 'sys_enter_getppid', 'handle_enter_getppid');
  const own0 = ownBpf();
  own0.progs.forEach((id) => seen.progs.add(id));
  own0.links.forEach((id) => seen.links.add(id));
  const ringFull = () => Number(obj.getGlobalVariable('ring_full'));
  const produced = () => Number(obj.getGlobalVariable('seq'));

  const started = Date.now();
  let deadline = started + MINUTES * 60_000;
  let ending = false;
  let watchdog = false;
  let received = 0;
  let lostReported = 0;
  let cycles = 2;
  let churnRecords = 0;
  let rb = null;
  // the event loop's health: how late a 100 ms timer fires
  let maxLag = 0;
  let lastTick = Date.now();

  // RSS swings with the records queued for JavaScript (up to 16 MiB, and
  // the batch being read): compare medians over one slow+fast period
  const baselineAt = Math.min(60_000, (MINUTES * 60_000) / 2);
  const window = Math.max(10_000, SLOW_MS + FAST_MS);
  const rssSamples = [];
  let rssMax = 0;
  let nextRss = 0;
  const sampleRss = () => {
    const now = Date.now();
    if (now < nextRss) return;
    nextRss = now + 1000;
    gc();
    const rss = process.memoryUsage.rss();
    rssMax = Math.max(rssMax, rss);
    rssSamples.push([now - started, rss]);
  };
  const median = (from, to) => {
    const xs = rssSamples.filter(([t]) => t >= from && t < to).map(([, r]) => r).sort((a, b) => a - b);
    return xs.length ? xs[xs.length >> 1] : NaN;
  };
  // every INTERVAL_S: memory, fds, programs (from the flood's callback too,
  // should the event loop's timers be starved)
  let nextSample = started + INTERVAL_S * 1000;
  const sample = (from) => {
    const now = Date.now();
    if (now < nextSample) return;
    nextSample = now + INTERVAL_S * 1000;
    const { rss, heapUsed, heapTotal, external } = process.memoryUsage();
    const parts = memoryParts();
    const own = ownBpf();
    const kernel = kernelBpf();
    const late = now - lastTick - 100;
    maxLag = Math.max(maxLag, late);
    console.log(
      `${((now - started) / 1000).toFixed(0).padStart(5)} s  rss ${mb(rss)} (malloc ${mb(parts.malloc)}, BPF maps ${mb(parts.bpfMaps)})  ` +
        `V8 heap ${mb(heapUsed)} of ${mb(heapTotal)}, external ${mb(external)}  fds ${fdCount()}  ` +
        `own progs/links/maps ${own.progs.size}/${own.links.size}/${own.maps.size}  kernel progs ${kernel.progs.length}  ` +
        `flood: produced ${millions(produced())} received ${millions(received)} lost ${millions(rb.lost + ringFull())}  ` +
        `churn: ${cycles} objects  timers late by ${(Math.max(0, late) / 1000).toFixed(1)} s (max ${(maxLag / 1000).toFixed(1)} s)${from === 'callback' && late > 1000 ? ', printed from the callback' : ''}`,
    );
  };

  rb = obj.getMap('events').openRingBuffer(
    () => {
      received++;
      if (SLOW_MS > 0 && (FAST_MS === 0 || (Date.now() - started) % (SLOW_MS + FAST_MS) < SLOW_MS)) {
        // busy, without garbage: a BigInt per clock read made V8 grow its
        // young generation over the minutes (heap total 9 -> 39 MB, used 5-10)
        const end = performance.now() + WORK_US / 1000;
        while (performance.now() < end);
      }
      if ((received & 4095) === 0) {
        sampleRss();
        sample('callback');
        // the run must end even if the event loop never gets a turn
        if (!ending && Date.now() > deadline + 2000 && link.attached) {
          watchdog = true;
          link.detach();
        }
      }
    },
    { lost: (n) => (lostReported += n) },
  );

  const lagTimer = setInterval(() => {
    const now = Date.now();
    maxLag = Math.max(maxLag, now - lastTick - 100);
    lastTick = now;
  }, 100);

  let floodCalls = 0;
  let floodOut = '';
  flood.stdout.on('data', (d) => (floodOut += d));
  const floodDone = new Promise((resolve) => flood.on('close', () => resolve((floodCalls = Number(floodOut)))));
  flood.stdin.end('go\n');

  process.on('SIGINT', () => {
    console.log('SIGINT: stopping early');
    deadline = 0;
  });
  const phases = FAST_MS === 0 ? `${WORK_US} µs per record all along` : `${WORK_US} µs per record for ${SLOW_MS / 1000} s, full speed for ${FAST_MS / 1000} s, in turn`;
  console.log(`soak: ${MINUTES} min, flood of ${RATE} getppid/s (pid ${flood.pid}) into a callback of ${phases}; churn of stream and openat objects`);
  console.log(`start: fds ${startFds} (${baseFds} after a first cycle), kernel programs ${startKernel.progs.length}, links ${startKernel.links.length}`);

  // the churn runs beside the flood until the deadline
  let churnError = /** @type {NodeJS.ErrnoException | null} */ (null);
  const churn = (async () => {
    while (Date.now() < deadline) {
      try {
        churnRecords += await churnCycle(cycles++, flood.pid, seen);
      } catch (e) {
        churnError = e;
        deadline = 0;
      }
    }
  })();

  const timer = setInterval(() => {
    sampleRss();
    sample('timer');
  }, 250);
  while (Date.now() < deadline) await sleep(200);
  ending = true;
  clearInterval(timer);
  clearInterval(lagTimer);
  await churn;
  const runMs = Date.now() - started;
  const rssBaseline = median(baselineAt, baselineAt + window);
  const rssEnd = median(runMs - window, runMs);

  // the end: the kernel side stops first, then the buffer drains
  if (link.attached) link.detach();
  await sleep(50); // a program run in flight on another CPU finishes
  const total = produced();
  const drainDeadline = Date.now() + 60_000;
  while (received + rb.lost + ringFull() < total && Date.now() < drainDeadline) await sleep(20);
  await sleep(200); // anything beyond the count would show now
  const lost = rb.lost + ringFull();
  const lostByBuffer = rb.lost;
  flood.kill('SIGTERM');
  await floodDone;
  rb.close();
  await release(obj);

  // the kernel frees a closed program a moment later (RCU): wait for ours to go
  const leftOf = () => {
    const kernel = kernelBpf();
    return { progs: kernel.progs.filter((id) => seen.progs.has(id)), links: kernel.links.filter((id) => seen.links.has(id)), kernel };
  };
  let left = leftOf();
  for (let i = 0; i < 50 && left.progs.length + left.links.length > 0; i++) {
    await sleep(100);
    left = leftOf();
  }
  const endFds = fdCount();
  const newFds = [...fdTargets()].filter(([fd, target]) => baseTargets.get(fd) !== target).map(([fd, target]) => `${fd} ${target}`);
  const own = ownBpf();

  const v8Spaces = require('node:v8')
    .getHeapSpaceStatistics()
    .filter((space) => space.space_size > 0)
    .map((space) => `${space.space_name.replace(/_space$/, '')} ${mb(space.space_size)}`)
    .join(', ');
  console.log(`V8 heap at the end: ${v8Spaces} (flags ${V8_FLAGS.join(' ')})`);
  const seconds = (Date.now() - started) / 1000;
  console.log(`end after ${seconds.toFixed(0)} s: ${cycles} churned objects (${churnRecords} records to them), flood generator made ${floodCalls} calls`);
  console.log(`flood: produced ${total}, received ${received}, lost ${lost} (${lostByBuffer} dropped by the buffer, ${lost - lostByBuffer} refused by the full ring)`);
  if (watchdog) console.log('the flood was detached by the callback: the event loop had no turn past the deadline');
  const checks = [
    [received + lost === total, `received + lost == produced: ${received} + ${lost} = ${received + lost}, produced ${total}`],
    [lostReported === lostByBuffer, `the lost callback reported every drop: ${lostReported} of ${lostByBuffer}`],
    [lost > 0, `the slow callback fell behind: ${lost} records dropped and counted`],
    [
      rssEnd - rssBaseline <= RSS_SLACK,
      `RSS ${mb(rssEnd)} at the end, ${mb(rssBaseline)} after ${baselineAt / 1000} s (medians over ${window / 1000} s; within ${mb(RSS_SLACK)}; max ${mb(rssMax)})`,
    ],
    [endFds === baseFds, `open fds back to ${baseFds}: ${endFds} (${startFds} before the first object)${newFds.length ? `; new: ${newFds.join(', ')}` : ''}`],
    [own.progs.size + own.links.size + own.maps.size === 0, `no BPF fds held: ${own.progs.size} programs, ${own.links.size} links, ${own.maps.size} maps`],
    [left.progs.length === 0 && left.links.length === 0, `none of our ${seen.progs.size} programs and ${seen.links.size} links left in the kernel: ${JSON.stringify({ progs: left.progs, links: left.links })}`],
    [
      left.kernel.progs.length === startKernel.progs.length || left.progs.length === 0,
      `kernel programs ${left.kernel.progs.length}, ${startKernel.progs.length} at the start` +
        (left.kernel.progs.length === startKernel.progs.length ? '' : " (the difference is other processes' programs: none of them is ours)"),
    ],
    [churnError === null, `the churn ran without error${churnError ? `: ${churnError.code} ${churnError.message}` : ''}`],
    [maxLag <= MAX_LAG_MS, `the event loop kept running: a 100 ms timer was at most ${(maxLag / 1000).toFixed(1)} s late (limit ${MAX_LAG_MS / 1000} s)`],
  ];
  for (const [ok, what] of checks) console.log(`${ok ? 'PASS' : 'FAIL'}  ${what}`);
  const passed = checks.every(([ok]) => ok);
  console.log(passed ? 'soak: PASS' : 'soak: FAIL');
  process.exit(passed ? 0 : 1);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
