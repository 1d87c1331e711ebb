'use strict';
// What the package offers besides its entry: the helper modules of lib/
// that are public as `node-libbpf/lib/<name>` (with generated types), and
// the internal ones the exports map hides. package.json's "exports" says
// the same (each public name mapped to its room: lib/<room>/<name>.js);
// __test__/package.test.js checks that the two agree.

/** Helpers for your own tools, each typed (npm run build:types). */
const PUBLIC_LIB = [
  'args', 'cgroup', 'compat', 'compile', 'event_loop', 'format', 'go', 'hist', 'jitdump', 'latency', 'names', 'netns', 'objects', 'probes',
  'procfs', 'pty', 'report', 'run', 'stacks', 'syscalls', 'target', 'trace_syscalls', 'typegen',
];

/** The library's own machinery: reached through the entry, not by path. */
const INTERNAL_LIB = ['buffer', 'cli', 'codec', 'cpuprofile', 'dispatch', 'labels', 'map', 'monitor', 'monitor_metrics', 'native', 'object', 'opentelemetry', 'otlp', 'pidns', 'pprof', 'profile', 'prometheus', 'raw_record', 'sourcemap', 'tick', 'trace_context', 'v8', 'v8_heap', 'v8_names', 'validate'];

const fs = require('node:fs');
const path = require('node:path');

/** The file of lib module `name` (its room's folder: lib/<room>/<name>.js), relative to the package root, without extension. */
function libFile(name) {
  const lib = path.join(__dirname, '..', 'lib');
  const room = fs.readdirSync(lib, { withFileTypes: true }).find((d) => d.isDirectory() && fs.existsSync(path.join(lib, d.name, `${name}.js`)));
  if (!room) throw new Error(`lib module ${name} is in no room of lib/`);
  return `lib/${room.name}/${name}`;
}

module.exports = { PUBLIC_LIB, INTERNAL_LIB, libFile };
