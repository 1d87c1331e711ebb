'use strict';
// What vm-skips.js and arm64-skips.js share: preloaded into a test file
// (`node --require`), they make node:test skip the tests of that file named
// in a list, with the reason printed (`# SKIP <prefix>: <reason>`).
const Module = require('node:module');
const path = require('node:path');

/** Skips the entries `{ file, name: RegExp, reason }` of `skips` that belong to the running test file. */
function skipTests(skips, prefix) {
  const file = path.basename(process.argv[1] || '');
  const mine = skips.filter((s) => s.file === file);
  if (!mine.length) return;
  const internal = /** @type {any} */ (Module); // Module._load is internal: @types/node does not declare it
  const load = internal._load;
  let wrapped;
  internal._load = function (request, ...rest) {
    const real = load.call(this, request, ...rest);
    if (request !== 'node:test' && request !== 'test') return real;
    if (!wrapped) {
      const wrap = (fn) =>
        function (name, options, body) {
          const skip = typeof name === 'string' && mine.find((s) => s.name.test(name));
          if (!skip) return fn.apply(this, arguments);
          if (typeof options === 'function') [options, body] = [{}, options];
          return fn.call(this, name, { ...(options || {}), skip: `${prefix}: ${skip.reason}` }, body);
        };
      wrapped = Object.assign(wrap(real), real);
      wrapped.test = wrapped;
      wrapped.it = wrap(real.it);
    }
    return wrapped;
  };
}

module.exports = { skipTests };
