const bpf = require('..');
const client = require('prom-client');
async function measure(parts) {
  const m = bpf.monitor(parts);
  const reg = new client.Registry(); m.registerPrometheus(reg);
  const fs = require('fs'); for (let i = 0; i < 100; i++) fs.statSync('/');
  for (let i = 0; i < 30; i++) { await reg.metrics(); await new Promise((r) => setImmediate(r)); }
  const t2 = []; const gets = [];
  for (let i = 0; i < 100; i++) {
    const t = process.hrtime.bigint(); await reg.metrics(); t2.push(Number(process.hrtime.bigint() - t) / 1e3);
    await new Promise((r) => setImmediate(r));
    const g = process.hrtime.bigint(); await Promise.all(reg.getMetricsAsArray().map((x) => x.get())); gets.push(Number(process.hrtime.bigint() - g) / 1e3);
    await new Promise((r) => setImmediate(r));
  }
  t2.sort((a, b) => a - b); gets.sort((a, b) => a - b);
  console.log(m.parts.join(','), 'scrape us median', t2[50], 'read+values', gets[50], 'lines', (await reg.metrics()).split('\n').length);
  m.close();
}
(async () => { await measure({}); await measure({ syscalls: true }); })();
