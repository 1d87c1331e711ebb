'use strict';
/**
 * node-libbpf: drive eBPF from Node.js.
 *
 * The package's entry. Rust (the addon, loaded by the generated binding.js)
 * owns the kernel: objects, programs, links, maps as bytes, the poller that
 * reads ring and perf buffers. JavaScript owns the JavaScript (lib/): the
 * codec that turns BTF layouts into decoders and encoders, the dispatcher
 * that calls your callbacks, and the classes you use.
 */
const native = require('./binding');
const { BpfObject, loadBpfProgram } = require('./lib/object');
const { BpfMap } = require('./lib/map');
const { EventBuffer } = require('./lib/buffer');
const { monitor, Monitor, excludeLibraryThreads } = require('./lib/monitor');

module.exports = {
  loadBpfProgram,
  BpfObject,
  BpfMap,
  EventBuffer,
  BpfProgram: native.BpfProgram,
  BpfLink: native.BpfLink,
  features: native.features,
  monitor,
  Monitor,
  libraryThreads: native.libraryThreads,
  excludeLibraryThreads,
  Symbolizer: native.Symbolizer,
  elfSymbols: native.elfSymbols,
  dwarfMemberOffset: native.dwarfMemberOffset,
  flameGraph: native.flameGraph,
  errnoName: native.errnoName,
  syscallNames: native.syscallNames,
};
