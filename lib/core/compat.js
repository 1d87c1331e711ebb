'use strict';
/**
 * Fallbacks for older kernels, chosen before load from what the running
 * kernel has (`bpf.features()`), for objects built with bpf/compat.bpf.h.
 */
const native = require('./native');

/**
 * Per-thread storage of an object with `THREAD_STORAGE(name, ...)`: task
 * storage where tracing programs can use it (5.11+), else the hash keyed by
 * thread id; the map not used is not made. Before load. Returns which.
 */
function chooseThreadStorage(obj, name = 'starts') {
  const task = native.features().taskStorage;
  obj.setGlobalVariable('use_task_storage', task);
  obj.setMapAutocreate(name, task);
  obj.setMapAutocreate(`${name}_by_tid`, !task);
  return task ? 'task storage' : 'hash by thread';
}

module.exports = { chooseThreadStorage };
