'use strict';
// The layout's self-check (V8Frames.selfCheck, lib/frames/v8.js): before a
// process's JS frames are named, a frame of known name and line is named
// with its layout; where it is wrong, no names but ERR_V8_LAYOUT. Each
// v8dbg_* value the layouts read is forged, one at a time (+8 for an
// offset, +1 for a type, tag or mask), on every cached major: the check
// must catch every forged value that makes a name, file or line wrong on a
// workload of known functions (interpreted, compiled, inlined, off CPU).
// From the host: a node whose binary's v8dbg value bytes are patched gets
// no names, the reason, and the perf map's names.
//
// This file also runs as a child under another node (V8_SELFCHECK_FORGE=1):
// it prints the forged values' rows as JSON.
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

/** The lines of `name`, a function of this file at column 0: [first, last]. */
function linesOf(name) {
  const source = fs.readFileSync(__filename, 'utf8').split('\n');
  const first = source.findIndex((l) => l.startsWith(`function ${name}(`));
  const last = source.findIndex((l, i) => i > first && l === '}');
  return [first + 1, last + 1];
}

// the workload whose frames say whether a forged layout names wrong (their lines are read from this file)
function forgeHot(n) {
  let s = 0;
  for (let i = 0; i < n; i++) s += Math.sqrt(i) + forgeInlined(i);
  return s;
}

function forgeInlined(i) {
  return i & 1;
}

function forgeWait(cell) {
  return Atomics.wait(cell, 0, 0, 2);
}

function forgeWork(ms) {
  const cell = new Int32Array(new SharedArrayBuffer(4));
  const until = performance.now() + ms;
  let s = 0;
  while (performance.now() < until) {
    s += forgeHot(20000);
    forgeWait(cell);
  }
  return s;
}

const WORKLOAD = ['forgeHot', 'forgeInlined', 'forgeWait', 'forgeWork'];

/** What the V8 frames' layouts read of v8dbg value `name`: JSON of layoutOf and heapLayout given `values`, or the error. */
function layoutsOf(binary, values) {
  const { layoutOf } = require('../lib/frames/v8');
  const { heapLayout } = require('../lib/frames/v8_heap');
  try {
    return JSON.stringify([layoutOf({ ...binary, values }, 'forged'), heapLayout(values, binary.version)], (k, v) => (typeof v === 'bigint' ? String(v) : v));
  } catch (err) {
    return `error: ${err.message}`;
  }
}

/** How much a forged value differs: a pointer for an offset, 1 for a type, tag, mask or shift. */
const forgeDelta = (name) => (/^v8dbg_(class_|off_fp_)|Index$|^v8dbg_scopeinfo_idx_/.test(name) ? 8 : 1);

/**
 * In this process: the profile's object (its CPU sampler and sched_switch
 * program), the self-check of the real layout and its cost, then each
 * forged value: the check's answer, and the frames of the workload it names
 * wrong. Returns { node, v8, checkMs, realWrong, realSeen, rows }.
 */
function forgeAll(mode = 'forge') {
  const bpf = require('..');
  const { objectPath } = require('./helpers');
  const { V8Frames, binaryOf } = require('../lib/frames/v8');
  const { V8Names } = require('../lib/frames/v8_names');
  const pid = process.pid;
  const obj = bpf.loadBpfProgram(objectPath('profile'));
  obj.setGlobalVariable('target_pid', pid);
  obj.programs.handle_switch.autoload = false;
  obj.programs.handle_tick.autoload = false;
  obj.load();
  const v8 = new V8Frames(bpf);
  try {
    const watched = v8.watch(obj, pid);
    if (watched) throw watched;
    const attach = () => {
      const link = obj.attach('handle_sched_switch');
      return () => link.detach();
    };
    const real = binaryOf(pid);
    const realLayout = obj.getMap('v8_layouts').get(pid);
    let started = performance.now();
    const first = v8.selfCheck(obj, pid, { attach });
    const checkMs = [performance.now() - started];
    if (first) throw first;
    for (let i = 0; i < 3; i++) {
      started = performance.now();
      const again = v8.selfCheck(obj, pid, { attach });
      checkMs.push(performance.now() - started);
      if (again) throw again;
    }
    if (mode === 'check') return { node: process.version, v8: process.versions.v8, checkMs };
    forgeWork(300); // (compiled before the rows: each row sees the same tiers)
    const lines = Object.fromEntries(WORKLOAD.map((n) => [n, linesOf(n)]));

    /**
     * The workload's frames as the walk records them with the layout in
     * v8_layouts, each named with `binary`'s layout and with the real one:
     * [[forged, real, lost]] (the functions of a frame, innermost first, paired;
     * lost: the forged naming lost inlined functions of that frame).
     */
    const workFrames = (binary) => {
      obj.getMap('v8_stacks').clear();
      const links = [obj.attach('handle_sched_switch'), obj.attachPerfEvent('handle_sample', { event: 'cpu-clock', period: 250000, pid })];
      try {
        forgeWork(60);
      } finally {
        for (const l of links) l.detach();
      }
      const both = [new V8Names(pid, binary), new V8Names(pid, real)];
      const out = [];
      const named = (names, f) => {
        try {
          return names.frame(f, f.innermost === true);
        } catch (err) {
          return [{ name: `[JS naming failed: ${err.message}]`, kind: 'unnamed' }];
        }
      };
      try {
        for (const n of both) n.epoch();
        for (const stack of v8.readStacks(obj).values()) {
          for (const f of stack.frames) {
            if (!f.sfi) continue;
            const [forged, truth] = both.map((n) => named(n, f));
            // (paired from the physical function, the last: a forged layout can lose inlined ones; `lost` says so)
            const lost = forged.length < truth.length;
            forged.forEach((g, i) => out.push([g, truth[truth.length - forged.length + i], lost]));
          }
        }
      } finally {
        for (const n of both) n.close();
      }
      return out;
    };
    const label = (g) => (g ? `${g.name} ${g.file}:${g.line}` : 'nothing');
    // wrong: a function named (not left unnamed) otherwise than the real layout names the same walked
    // frame, or a function of this file outside its lines (a forged walk's slot: both layouts read it)
    const wrongOf = (pairs) =>
      pairs.filter(([g, r]) => {
        // (a top-level script's function is named by its source on some nodes: no truth to compare with)
        if (g.kind === 'unnamed' || /^\[JS /.test(g.name) || /\n/.test(r?.name ?? '')) return false;
        // (a line or file the forged layout leaves out is missing, not wrong; so is the line where the
        // function starts, given with its reason, where the real layout reads the statement's)
        if (g.name === r?.name && g.file === r.file && /the line where the function starts/.test(g.reason ?? '') && g.line !== undefined && r.line !== undefined && g.line <= r.line) return false;
        if (g.name !== r?.name || (g.file !== undefined && g.file !== r.file) || (g.line !== undefined && g.line !== r.line)) return true;
        const at = g.file === __filename && lines[g.name];
        return Boolean(at && g.line !== undefined && (g.line < at[0] || g.line > at[1]));
      });
    const truthPairs = workFrames(real);
    const truth = truthPairs.map(([g]) => g);
    const realWrong = wrongOf(truthPairs).length;
    const realSeen = WORKLOAD.filter((n) => truth.some((g) => g.name === n && g.file === __filename && g.line >= lines[n][0] && g.line <= lines[n][1]));

    const base = layoutsOf(real, real.values);
    const rows = [];
    for (const [name, value] of real.values) {
      const values = new Map(real.values);
      values.set(name, value + forgeDelta(name));
      // (only the values the walk or the naming read)
      if (layoutsOf(real, values) === base) continue;
      const forged = { ...real, values };
      const check = v8.selfCheck(obj, pid, { attach, binary: forged });
      const wrong = check?.code === 'ERR_V8_LAYOUT' && /outside .*not a layout V8 builds/.test(check.message) ? [] : wrongOf(workFrames(forged));
      rows.push({ name, value, forged: value + forgeDelta(name), caught: check ? check.code : null, wrong: wrong.length, inlining: wrong.filter(([, , lost]) => lost).length, example: wrong[0] ? `${label(wrong[0][0])} (real: ${label(wrong[0][1])})` : undefined });
    }
    obj.getMap('v8_layouts').set(pid, realLayout);
    return { node: process.version, v8: process.versions.v8, checkMs, realWrong, realSeen, truth: truth.length, rows };
  } finally {
    v8.close();
    obj.close();
  }
}

if (process.env.V8_SELFCHECK_FORGE) {
  // ('check': the real layout's checks alone, their cost)
  console.log(JSON.stringify(forgeAll(process.env.V8_SELFCHECK_FORGE === 'check' ? 'check' : 'forge')));
} else {
  const { describe, test, after } = require('node:test');
  const assert = require('node:assert/strict');
  const os = require('node:os');
  const { bpf, objectPath, sleep } = require('./helpers');
  const stacks = require('../lib/frames/stacks');
  const { testNode } = require('../scripts/nodes');

  const MAJORS = ['20', '22', '24', '26'];
  const skip = process.getuid?.() !== 0 ? 'the walk runs in BPF programs: run the tests as root' : false;
  if (skip) console.log(`# skipping v8_selfcheck.test.js: ${skip}`);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'v8-selfcheck-'));
  after(() => fs.rmSync(tmp, { recursive: true, force: true }));

  describe('in process: a frame of ours named right, and every forged value that names wrong caught', { skip }, () => {
    for (const major of MAJORS) {
      const { node, skip: none } = testNode(major);
      test(`Node ${major}: the real layout passes; each v8dbg value forged alone is refused by the check, or names nothing wrong`, { skip: none }, () => {
        const r = spawnSync(/** @type {string} */ (node), [__filename], { env: { ...process.env, V8_SELFCHECK_FORGE: '1' }, encoding: 'utf8', timeout: 120_000, maxBuffer: 16 << 20 });
        assert.equal(r.status, 0, r.stderr);
        const out = JSON.parse(r.stdout.trim().split('\n').pop());
        // the oracle: the real layout names the workload's functions at their lines, nothing wrong
        assert.equal(out.realWrong, 0, 'the real layout names nothing wrong');
        assert.deepEqual(out.realSeen.filter((n) => ['forgeWait', 'forgeWork'].includes(n)), ['forgeWait', 'forgeWork'], `the workload's functions named at their lines (${out.truth} frames)`);
        // (not caught: what an optimized Code's inlining reads (its deoptimization data, the inlining
        // positions' array), which no frame at attach time has; forged, a frame loses its inlined functions
        // and the outer one is named at the inlined code's line)
        const gaps = out.rows.filter((row) => row.wrong > 0 && !row.caught && row.inlining === row.wrong);
        for (const row of gaps) console.log(`# ${out.node}: not checked at attach time: ${row.name} (${row.wrong} frames wrong, their inlined functions lost, e.g. ${row.example})`);
        const missed = out.rows.filter((row) => row.wrong > 0 && !row.caught && row.inlining < row.wrong);
        const caught = out.rows.filter((row) => row.caught);
        const harmful = out.rows.filter((row) => row.wrong > 0);
        for (const row of out.rows) console.log(`# ${out.node}: ${row.name} ${row.value} -> ${row.forged}: ${row.caught ?? 'passed'}, ${row.wrong} frames wrong${row.example ? ` (${row.example})` : ''}`);
        console.log(`# ${out.node} (V8 ${out.v8}): ${out.rows.length} values read, forged: ${caught.length} refused by the check, ${harmful.length} would name wrong, ${missed.length} of those missed; the check took ${out.checkMs.map((ms) => ms.toFixed(1)).join(', ')} ms (first, then warm)`);
        assert.ok(out.rows.length >= 20, `${out.rows.length} values forged`);
        assert.ok(harmful.length > 0, 'some forged value names wrong (else this oracle checks nothing)');
        assert.deepEqual(missed.map((row) => `${row.name}: ${row.wrong} wrong, e.g. ${row.example}`), [], 'every forged value that names wrong is refused');
      });
    }

    test('bpf.profile() checks before it names: a window names this file\'s forgeHot with its line', async () => {
      const p = bpf.profile({ frequency: 499, clock: 'cpu-clock' });
      try {
        const window = p.collect({ seconds: 1 });
        await sleep(50);
        forgeWork(700);
        const w = await window;
        assert.ok(!w.notes.some((n) => /ERR_V8_LAYOUT|unnamed/.test(n)), w.notes.join('\n'));
        const [first, last] = linesOf('forgeHot');
        const labels = w.folded('cpu').split('\n').flatMap((l) => l.replace(/ \d+$/, '').split(';'));
        const hot = labels.filter((l) => /^forgeHot /.test(l));
        assert.ok(hot.length > 0, `forgeHot in the window: ${labels.slice(0, 20).join(' | ')}`);
        for (const l of hot) {
          const m = /v8_selfcheck\.test\.js:(\d+)/.exec(l);
          assert.ok(m && Number(m[1]) >= first && Number(m[1]) <= last, l);
        }
      } finally {
        p.close();
      }
    });
  });

  describe('from the host: the functions walked read through the layout', { skip }, () => {
    const HOT = path.join(__dirname, 'fixtures', 'v8_hot.js');
    /** The hot fixture under `node`, ready. */
    async function startHot(node, args = []) {
      const child = spawn(node, [...args, HOT], { stdio: ['pipe', 'pipe', 'inherit'], cwd: tmp });
      await new Promise((resolve, reject) => {
        child.stdout.on('data', (d) => String(d).includes('ready') && resolve(undefined));
        child.on('exit', (code) => reject(new Error(`${node} ${HOT} exited ${code}`)));
      });
      return child;
    }
    /** stackcount's object sampling `pid` at 99 Hz, its V8 walk set up. */
    function sampler(pid, attach = true) {
      const obj = bpf.loadBpfProgram(objectPath('stackcount'));
      obj.setGlobalVariable('target_pid', pid);
      const symbolizer = new stacks.StackSymbolizer(bpf);
      const error = symbolizer.v8.watch(obj, pid);
      if (attach) obj.attachPerfEvent('handle_sample', { event: 'cpu-clock', frequency: 99 });
      return { obj, symbolizer, error };
    }

    test('a real node passes; before any JS frame is walked the check waits (undefined); forged name, script or SFI offsets are refused', async () => {
      const child = await startHot(process.execPath);
      const { obj, symbolizer, error } = sampler(/** @type {number} */ (child.pid), false);
      try {
        assert.equal(error, null);
        const { binaryOf } = require('../lib/frames/v8');
        const real = binaryOf(child.pid);
        const forge = (name) => ({ ...real, values: new Map([...real.values, [name, real.values.get(name) + 8]]) });
        assert.equal(symbolizer.v8.selfCheck(obj, child.pid), undefined, 'nothing walked yet');
        obj.attachPerfEvent('handle_sample', { event: 'cpu-clock', frequency: 99 });
        await sleep(1500);
        obj.detachAll();
        const started = performance.now();
        assert.equal(symbolizer.v8.selfCheck(obj, child.pid), null);
        console.log(`# from the host: the check took ${(performance.now() - started).toFixed(1)} ms`);
        const offsets = [...real.values.keys()].filter((k) => /^v8dbg_class_(SharedFunctionInfo__name_or_scope_info|SharedFunctionInfo__script(_or_debug_info)?|Script__name)__/.test(k));
        assert.ok(offsets.length >= 3, offsets.join());
        for (const name of offsets) {
          const e = symbolizer.v8.selfCheck(obj, child.pid, { binary: forge(name) });
          assert.equal(e?.code, 'ERR_V8_LAYOUT', `${name} + 8: ${e?.message}`);
        }
      } finally {
        obj.close();
        child.kill();
      }
    });

    test('a node whose v8dbg value bytes are patched (Script::name + 8): ERR_V8_LAYOUT, its frames unnamed with the reason, the perf map names them', async () => {
      const bytes = fs.readFileSync(process.execPath);
      const name = [...require('../lib/frames/v8').binaryOf(process.pid).values.keys()].find((k) => k.startsWith('v8dbg_class_Script__name__'));
      assert.ok(name);
      const at = symbolOffset(process.execPath, /** @type {string} */ (name));
      bytes.writeInt32LE(bytes.readInt32LE(at) + 8, at);
      const node = path.join(tmp, 'node');
      fs.writeFileSync(node, bytes, { mode: 0o755 });
      const child = await startHot(node, ['--perf-basic-prof']);
      const { obj, symbolizer, error } = sampler(/** @type {number} */ (child.pid));
      try {
        assert.equal(error, null, 'the walk is set up (the patched value is only the naming\'s)');
        await sleep(1500);
        obj.detachAll();
        const e = symbolizer.v8.selfCheck(obj, child.pid);
        assert.equal(e?.code, 'ERR_V8_LAYOUT');
        assert.match(e.message, /does not match its memory .*left unnamed .*never named wrong.*report/);
        assert.equal(obj.getMap('v8_layouts').get(child.pid), undefined, 'no longer walked');
        assert.equal(symbolizer.v8.watch(obj, child.pid), e, 'watch says why, again');
        const entries = stacks.readStacks(obj).filter((x) => x.pid === child.pid && x.v8);
        const frames = entries.flatMap((x) => symbolizer.v8.namesOf(/** @type {number} */ (child.pid), symbolizer.v8.align(x.user, x.v8)).flatMap((n) => n ?? []));
        assert.ok(frames.length > 0 && frames.every((f) => /ERR_V8_LAYOUT/.test(f.name) && f.kind === 'unnamed'), frames.slice(0, 3).map((f) => f.name).join());
        const addresses = [...new Set(entries.flatMap((x) => x.user))];
        const perfMap = symbolizer.symbolizer.perfMap(child.pid, addresses).map((f) => f.name);
        assert.ok(perfMap.some((n) => /hotLoopNf/.test(n)), `the perf map names hotLoopNf: ${perfMap.slice(0, 8).join(' | ')}`);
      } finally {
        obj.close();
        child.stdin.end();
        child.kill();
        fs.rmSync(`/tmp/perf-${child.pid}.map`, { force: true });
      }
    });
  });

  /** Where dynamic symbol `name`'s bytes are in ELF file `file` (readelf, as hostile_binary.test.js reads it). */
  function symbolOffset(file, name) {
    const { execFileSync } = require('node:child_process');
    const text = execFileSync('readelf', ['-W', '--dyn-syms', file], { encoding: 'utf8', maxBuffer: 256 << 20 });
    const m = new RegExp(`^\\s*\\d+:\\s+([0-9a-f]+)\\s+\\d+\\s+\\S+\\s+\\S+\\s+\\S+\\s+(\\d+)\\s+${name}$`, 'm').exec(text);
    assert.ok(m, `${name} in ${file}'s .dynsym`);
    const sections = execFileSync('readelf', ['-W', '-S', file], { encoding: 'utf8' }).split('\n');
    for (const line of sections) {
      const s = /^\s*\[\s*(\d+)\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)/.exec(line);
      if (s && Number(s[1]) === Number(m[2])) return parseInt(s[4], 16) + parseInt(m[1], 16) - parseInt(s[3], 16);
    }
    throw new Error(`section ${m[2]} of ${file}`);
  }
}
