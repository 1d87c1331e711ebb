'use strict';
// The case of issue 23: l() calls hotLoopX() (a million Math.sqrt) from
// setImmediate, over and over. Node 24 and 26's Maglev inlines both into
// node's processImmediate, whose code object alone a perf map names. Runs
// until killed, its parent goes away or, with an argument, for that many ms.
function hotLoopX() {
  let x = 0;
  for (let i = 0; i < 1e6; i++) x += Math.sqrt(i);
  return x;
}

let sink = 0;
function l() {
  sink += hotLoopX();
  setImmediate(l);
}

setImmediate(l);
if (process.argv[2]) setTimeout(() => process.exit(sink > 0 ? 0 : 1), Number(process.argv[2]));
process.on('disconnect', () => process.exit(0));
process.send?.({ hot: 'hotLoopX' });
