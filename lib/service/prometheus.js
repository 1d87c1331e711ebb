'use strict';
/**
 * The monitor's metrics in a prom-client registry: one collector per metric
 * (prom-client's metric interface: `name`, `help`, `type`, `get()`), whose
 * values are the kernel's counts read when the registry is scraped, one
 * read per scrape. prom-client (an optional peer dependency) is not
 * required here: the registry is yours.
 *
 *   const client = require('prom-client');
 *   const m = bpf.monitor();
 *   m.registerPrometheus(client.register);        // or a new client.Registry()
 *   // GET /metrics: res.end(await client.register.metrics())
 *
 * Histograms are cumulative `le` buckets in seconds, every bound always
 * there (1 µs, 2 µs, ... 67 s, +Inf: the kernel's log2 slots, summed).
 */
const { BUCKET_BOUNDS, metricsOf, snapshots } = require('./monitor_metrics');

/** Prometheus's text for a bucket bound. */
const LE = BUCKET_BOUNDS.map((b) => String(b));

/** The sample values of one metric, in prom-client's `get()` format. */
function values(def, snapshot) {
  const out = [];
  for (const [labels, value] of def.rows(snapshot)) {
    if (def.kind === 'counter') {
      out.push({ value, labels });
      continue;
    }
    const name = def.prom;
    value.buckets.forEach((count, k) => out.push({ value: count, labels: { ...labels, le: LE[k] }, metricName: `${name}_bucket` }));
    out.push({ value: value.count, labels: { ...labels, le: '+Inf' }, metricName: `${name}_bucket` });
    out.push({ value: value.sum, labels, metricName: `${name}_sum` });
    out.push({ value: value.count, labels, metricName: `${name}_count` });
  }
  return out;
}

/**
 * Registers the metrics of `monitor`'s parts in `registry` (a prom-client
 * `Registry`, e.g. `client.register`). Returns their names.
 */
function registerPrometheus(monitor, registry) {
  if (!registry || typeof registry.registerMetric !== 'function') {
    const err = /** @type {NodeJS.ErrnoException} */ (new TypeError('registerPrometheus(registry): registry must be a prom-client Registry (require(\'prom-client\').register, or new Registry())'));
    err.code = 'ERR_INVALID_ARG_TYPE';
    throw err;
  }
  const snapshot = snapshots(monitor);
  const names = [];
  for (const def of metricsOf(monitor)) {
    const type = def.kind;
    const metric = {
      name: def.prom,
      help: def.help,
      type,
      aggregator: 'sum',
      get: () => ({ name: def.prom, help: def.help, type, aggregator: 'sum', values: monitor.closed ? [] : values(def, snapshot()) }),
      reset() {},
    };
    registry.registerMetric(metric);
    names.push(def.prom);
  }
  return names;
}

module.exports = { registerPrometheus };
