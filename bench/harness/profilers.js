'use strict';
// The profile rows' profilers (bench/profile_server.js, bench/profile_work.js),
// by the row's name:
//   none          no profiler: windows that do nothing (the noise)
//   pprof         @datadog/pprof's time profiler at 100 Hz (V8's
//                 CpuProfiler), its profile encoded as the pull
//   pprof:US      the same, a sample every US µs
//   bpf:OPTIONS   bpf.profile(OPTIONS as JSON), both pprofs encoded
//   interrupt:HZ  no profile: a cpu-clock perf event at HZ on every CPU
//                 whose program only counts this process's samples
//                 (__test__/bpf/perf_sample.bpf.c): what the timer's
//                 interrupt alone costs the sampled thread
const fs = require('node:fs');
const { execFileSync } = require('node:child_process');
const bpf = require('../..');

const names = new Map(); // program id -> name
/** { name: { runs, ns } } of this process's BPF programs now (/proc/self/fdinfo: run_cnt, run_time_ns). */
function programCounters() {
  const out = {};
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    let link;
    try {
      link = fs.readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue;
    }
    if (link !== 'anon_inode:bpf-prog') continue;
    const info = Object.fromEntries(fs.readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8').split('\n').map((l) => l.split(/:\s+/)));
    const id = info.prog_id;
    if (!names.has(id)) {
      try {
        names.set(id, JSON.parse(execFileSync('bpftool', ['-j', 'prog', 'show', 'id', id], { encoding: 'utf8' })).name);
      } catch {
        names.set(id, `prog ${id}`);
      }
    }
    const c = (out[names.get(id)] ??= { runs: 0, ns: 0 });
    c.runs += Number(info.run_cnt ?? 0);
    c.ns += Number(info.run_time_ns ?? 0);
  }
  return out;
}

/** The row's profiler as { start(), async stop() -> samples (the window's pull: its profile made and encoded), close() }. */
function profilerOf(row) {
  if (row === 'none') return { start() {}, async stop() { return 0; }, close() {} };
  if (row === 'pprof' || row.startsWith('pprof:')) {
    const { time, encode } = require('@datadog/pprof');
    const intervalMicros = row === 'pprof' ? 10_000 : Number(row.slice(6));
    return {
      start: () => time.start({ intervalMicros }),
      async stop() {
        const p = time.stop();
        await encode(p);
        return p.sample.reduce((n, s) => n + Number(s.value[0]), 0);
      },
      close() {},
    };
  }
  if (row.startsWith('interrupt:')) {
    const { bpfArch } = require('../../lib/core/objects');
    const obj = bpf.loadBpfProgram(require('node:path').join(__dirname, '..', '..', '__test__', 'bpf', bpfArch(), 'perf_sample.bpf.o'));
    obj.setGlobalVariable('target_pid', process.pid);
    obj.load();
    let link;
    let before = 0n;
    return {
      start() {
        before = obj.getGlobalVariable('samples');
        link = obj.attachPerfEvent('handle_cpu_clock', { event: 'cpu-clock', frequency: Number(row.slice(10)) });
      },
      async stop() {
        link.detach();
        return Number(obj.getGlobalVariable('samples') - before);
      },
      close: () => obj.close(),
    };
  }
  if (!row.startsWith('bpf:')) throw new Error(`row ${row}: none, pprof, pprof:US, interrupt:HZ or bpf:OPTIONS`);
  const profiler = bpf.profile(JSON.parse(row.slice(4)));
  let ended;
  let window;
  return {
    start() {
      ended = new AbortController();
      window = profiler.collect({ seconds: 60, signal: ended.signal });
    },
    async stop() {
      ended.abort();
      const w = await window;
      w.pprof('cpu');
      w.pprof('offCpu');
      return w.cpu.reduce((n, s) => n + s.count, 0);
    },
    close: () => profiler.close(),
  };
}

module.exports = { profilerOf, programCounters };
