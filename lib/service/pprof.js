'use strict';
/**
 * A profile window (lib/service/profile.js) as pprof: the gzipped protobuf that
 * `go tool pprof`, Pyroscope and Parca read, encoded with `pprof-format`
 * (a dependency of node-libbpf: pure JavaScript, no dependencies of its own).
 *
 * CPU: sample types `samples/count` and `cpu/nanoseconds` (the default),
 * period `cpu/nanoseconds`, as Go's CPU profiles. Off-CPU: `intervals/count`
 * and `off_cpu/nanoseconds`. Every sample has the labels `thread_name`,
 * `thread_id` (a number) and `thread_kind` (main, libuv pool, V8 worker,
 * node-libbpf, ...); off-CPU ones `off_cpu_state` (`blocked`: it slept;
 * `preempted`: runnable, waiting for a CPU), and each the request labels
 * it ran under (`withLabels`: strings as `str`, numbers as `num`). Locations carry their mapping (the ELF file, `[jit]`,
 * `[kernel]`) and a line per function; JavaScript functions have the file
 * and line V8's data gives (lib/frames/v8.js), or the perf map's
 * `file:line:column`; where the script has a source map, the original
 * file and line (lib/frames/sourcemap.js: the profile maps its frames
 * before they reach here).
 */
const zlib = require('node:zlib');

const KINDS = {
  cpu: { types: [['samples', 'count'], ['cpu', 'nanoseconds']], period: ['cpu', 'nanoseconds'] },
  offCpu: { types: [['intervals', 'count'], ['off_cpu', 'nanoseconds']], period: ['off_cpu', 'nanoseconds'] },
};

let format;
function pprofFormat() {
  if (format) return format;
  try {
    format = require('pprof-format');
  } catch (err) {
    const e = /** @type {NodeJS.ErrnoException} */ (new Error(`profiles as pprof need the package pprof-format: npm install pprof-format (${err.message})`, { cause: err }));
    e.code = 'MODULE_NOT_FOUND';
    throw e;
  }
  return format;
}

/**
 * The pprof Profile (not encoded) of `window`'s `kind` ('cpu' or 'offCpu').
 * `window`: `{ startNs, durationNs, periodNs, cpu, offCpu, notes }`, its
 * stacks `[{ frames, count, ns?, tid, thread, threadKind }]`, frames
 * innermost first `{ name, kind, file?, line?, mapping?, address }`.
 */
function toProfile(window, kind) {
  const { Profile, StringTable, ValueType, Sample, Label, Location, Line, Function: Fn, Mapping } = pprofFormat();
  const spec = KINDS[kind];
  const strings = new StringTable();
  const str = (s) => strings.dedup(String(s ?? ''));
  const mappings = new Map(); // key -> Mapping
  const functions = new Map(); // name \0 file -> Function
  const locations = new Map(); // key -> Location
  const mappingOf = (m) => {
    if (!m) return 0;
    const key = `${m.start}-${m.path}`;
    if (!mappings.has(key)) {
      mappings.set(
        key,
        new Mapping({
          id: mappings.size + 1,
          memoryStart: m.start,
          memoryLimit: m.end,
          fileOffset: m.offset ?? 0,
          filename: str(m.path),
          hasFunctions: true,
          hasFilenames: !!m.hasFilenames,
          hasLineNumbers: !!m.hasFilenames,
        }),
      );
    }
    return mappings.get(key).id;
  };
  const functionOf = (f) => {
    const key = `${f.name}\0${f.file ?? ''}`;
    if (!functions.has(key)) {
      functions.set(key, new Fn({ id: functions.size + 1, name: str(f.name), systemName: str(f.name), filename: str(f.file ?? f.module ?? ''), startLine: f.line ?? 0 }));
    }
    return functions.get(key).id;
  };
  const locationOf = (f) => {
    // one location per address (and per name: a lost stack or a note has no address)
    // (and per line: interpreted JS frames share the interpreter's address)
    const key = `${f.kind}:${f.address ?? ''}:${f.name}:${f.file ?? ''}:${f.line ?? ''}:${(f.inlined ?? []).map((i) => `${i.name}@${i.line}`).join(',')}`;
    if (!locations.has(key)) {
      locations.set(
        key,
        new Location({
          id: locations.size + 1,
          mappingId: mappingOf(f.mapping),
          address: f.address ?? 0,
          // the functions inlined here first, the physical one last (pprof's order)
          line: [...(f.inlined ?? []), f].map((g) => new Line({ functionId: functionOf(g), line: g.line ?? 0 })),
        }),
      );
    }
    return locations.get(key).id;
  };
  const samples = window[kind].map(
    (s) =>
      new Sample({
        locationId: s.frames.map(locationOf),
        value: kind === 'cpu' ? [s.count, s.count * window.periodNs] : [s.count, s.ns],
        label: [
          new Label({ key: str('thread_name'), str: str(s.thread) }),
          new Label({ key: str('thread_id'), num: s.tid }),
          new Label({ key: str('thread_kind'), str: str(s.threadKind) }),
          ...(s.state ? [new Label({ key: str('off_cpu_state'), str: str(s.state) })] : []),
          // the request's labels (lib/service/labels.js): numbers as num
          ...Object.entries(s.labels ?? {}).map(([k, v]) => (typeof v === 'number' ? new Label({ key: str(k), num: v }) : new Label({ key: str(k), str: str(v) }))),
        ],
      }),
  );
  const sampleType = spec.types.map(([type, unit]) => new ValueType({ type: str(type), unit: str(unit) }));
  return new Profile({
    sampleType,
    sample: samples,
    mapping: [...mappings.values()],
    location: [...locations.values()],
    function: [...functions.values()],
    stringTable: strings,
    timeNanos: window.startNs,
    durationNanos: window.durationNs,
    periodType: new ValueType({ type: str(spec.period[0]), unit: str(spec.period[1]) }),
    period: kind === 'cpu' ? window.periodNs : 1,
    comment: window.notes.map(str),
    defaultSampleType: sampleType[1].type,
  });
}

/** `window`'s `kind` profile, encoded and gzipped (a Buffer). */
function encode(window, kind) {
  return zlib.gzipSync(toProfile(window, kind).encode());
}

module.exports = { encode, toProfile, KINDS };
