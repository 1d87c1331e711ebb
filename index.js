'use strict';
/**
 * node-libbpf: drive eBPF from Node.js.
 *
 * The package's entry. Rust (the addon, loaded by the generated binding.js
 * through lib/core/native.js) owns the kernel: objects, programs, links, maps as
 * bytes, the poller that reads ring and perf buffers. JavaScript owns the
 * JavaScript (lib/): the codec that turns BTF layouts into decoders and
 * encoders, the dispatcher that calls your callbacks, and the classes you
 * use. Every export is a plain name, so that `import { loadBpfProgram } from
 * 'node-libbpf'` works from ES modules too.
 */
const { BpfProgram, BpfLink, features, fentryCanAttach, kprobeExists, libraryThreads, Symbolizer, elfSymbols, dwarfMemberOffset, flameGraph, errnoName, syscallNames } = require('./lib/core/native');
const { BpfObject, loadBpfProgram } = require('./lib/core/object');
const { BpfMap } = require('./lib/core/map');
const { EventBuffer } = require('./lib/core/buffer');
const { objectPath, objectNames } = require('./lib/core/objects');

// The service and host modules load on first use: a script that only loads
// and attaches programs does not pay for the monitor, the profiler (and its
// frames, pprof and exporters) or the pid-namespace reader at require()
// (about 20 ms of a 30 ms require on the bench machine). The names stay in
// the literal below, so that Node's ES module loader (cjs-module-lexer)
// still finds every export; each is replaced by a getter at the end.
const lazyFrom = {
  monitor: './lib/service/monitor',
  Monitor: './lib/service/monitor',
  excludeLibraryThreads: './lib/service/monitor',
  profile: './lib/service/profile',
  Profiler: './lib/service/profile',
  ProfileWindow: './lib/service/profile',
  withLabels: './lib/service/labels',
  setLabels: './lib/service/labels',
  getLabels: './lib/service/labels',
  kernelPid: './lib/host/pidns',
  kernelIds: './lib/host/pidns',
};
const monitor = undefined;
const Monitor = undefined;
const excludeLibraryThreads = undefined;
const profile = undefined;
const Profiler = undefined;
const ProfileWindow = undefined;
const withLabels = undefined;
const setLabels = undefined;
const getLabels = undefined;
const kernelPid = undefined;
const kernelIds = undefined;

module.exports = {
  loadBpfProgram,
  objectPath,
  objectNames,
  BpfObject,
  BpfMap,
  EventBuffer,
  BpfProgram,
  BpfLink,
  features,
  fentryCanAttach,
  kprobeExists,
  monitor,
  Monitor,
  profile,
  Profiler,
  ProfileWindow,
  withLabels,
  setLabels,
  getLabels,
  libraryThreads,
  excludeLibraryThreads,
  kernelPid,
  kernelIds,
  Symbolizer,
  elfSymbols,
  dwarfMemberOffset,
  flameGraph,
  errnoName,
  syscallNames,
};

for (const [name, file] of Object.entries(lazyFrom)) {
  Object.defineProperty(module.exports, name, {
    enumerable: true,
    configurable: true,
    get() {
      const value = require(file)[name];
      Object.defineProperty(module.exports, name, { value, enumerable: true, configurable: true, writable: true });
      return value;
    },
    set(value) {
      Object.defineProperty(module.exports, name, { value, enumerable: true, configurable: true, writable: true });
    },
  });
}
