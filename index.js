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
const { monitor, Monitor, excludeLibraryThreads } = require('./lib/service/monitor');
const { profile, Profiler, ProfileWindow } = require('./lib/service/profile');
const { kernelIds, kernelPid } = require('./lib/host/pidns');

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
