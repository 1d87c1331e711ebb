'use strict';
/**
 * The monitor's metrics for the OpenTelemetry metrics SDK
 * (`@opentelemetry/sdk-metrics`, an optional peer dependency): a
 * `MetricProducer` handing the SDK the kernel's pre-aggregated counts as
 * cumulative sums and explicit-bucket histograms, read at each collection.
 * Give it to a MetricReader:
 *
 *   const { PrometheusExporter } = require('@opentelemetry/exporter-prometheus');
 *   const m = bpf.monitor();
 *   const exporter = new PrometheusExporter({ port: 9464, metricProducers: [m.metricProducer()] });
 *   new MeterProvider({ readers: [exporter] });
 *
 * or `new PeriodicExportingMetricReader({ exporter, metricProducers: [...] })`
 * for OTLP. Names are `node_libbpf.*` with UCUM units (`s`, `{call}`);
 * endpoints become `network.peer.address` and `network.peer.port`, paths
 * `file.path`.
 */
const { BUCKET_BOUNDS, metricsOf, snapshots } = require('./monitor_metrics');

/** The SDK's enums, from the application's own @opentelemetry/sdk-metrics and api. */
function sdk() {
  try {
    const { DataPointType, AggregationTemporality } = require('@opentelemetry/sdk-metrics');
    const { ValueType } = require('@opentelemetry/api');
    return { DataPointType, AggregationTemporality, ValueType };
  } catch (cause) {
    const err = /** @type {NodeJS.ErrnoException} */ (new Error('monitor.metricProducer() needs @opentelemetry/sdk-metrics and @opentelemetry/api: npm install @opentelemetry/sdk-metrics @opentelemetry/api', { cause }));
    err.code = 'MODULE_NOT_FOUND';
    throw err;
  }
}

/** OTel attributes for a metric's labels (semantic-convention names where one exists). */
function attributes(labels) {
  const out = {};
  for (const [k, v] of Object.entries(labels)) {
    if (k === 'endpoint') {
      // `1.2.3.4:80`, `[::1]:80` or `unix:PATH` (lib/service/monitor.js endpointName): a socket path is all address
      const unix = v.startsWith('unix:');
      const m = !unix && (/^\[([^\]]*)\]:(\d+)$/.exec(v) ?? /^([^:]*):(\d+)$/.exec(v));
      if (unix) {
        out['network.peer.address'] = v.slice(5);
        out['network.transport'] = 'unix';
      } else if (m) {
        out['network.peer.address'] = m[1];
        out['network.peer.port'] = Number(m[2]);
      } else {
        out['network.peer.address'] = v;
      }
    } else if (k === 'path') {
      out['file.path'] = v;
    } else if (k === 'phase') {
      out['nodejs.eventloop.phase'] = v;
    } else {
      out[k] = v;
    }
  }
  return out;
}

/** Now as the SDK's HrTime. */
function hrTime(ms = performance.timeOrigin + performance.now()) {
  const s = Math.floor(ms / 1000);
  return [s, Math.round((ms - s * 1000) * 1e6)];
}

/** A MetricProducer of `monitor`'s metrics. */
function metricProducer(monitor) {
  const { DataPointType, AggregationTemporality, ValueType } = sdk();
  const snapshot = snapshots(monitor);
  const startTime = hrTime();
  const scope = { name: 'node-libbpf', version: require('../../package.json').version };
  return {
    async collect() {
      const endTime = hrTime();
      const metrics = [];
      if (!monitor.closed) {
        const s = snapshot();
        for (const def of metricsOf(monitor)) {
          const descriptor = { name: def.otel, description: def.help, unit: def.unit, valueType: ValueType.DOUBLE };
          const point = (labels, value) => ({ attributes: attributes(labels), startTime, endTime, value });
          if (def.kind === 'counter') {
            metrics.push({
              descriptor, aggregationTemporality: AggregationTemporality.CUMULATIVE, dataPointType: DataPointType.SUM, isMonotonic: true,
              dataPoints: def.rows(s).map(([labels, value]) => point(labels, value)),
            });
            continue;
          }
          metrics.push({
            descriptor, aggregationTemporality: AggregationTemporality.CUMULATIVE, dataPointType: DataPointType.HISTOGRAM,
            dataPoints: def.rows(s).map(([labels, h]) => point(labels, {
              // per bucket, not cumulative; the last one is above the last bound
              buckets: { boundaries: BUCKET_BOUNDS, counts: [...h.buckets.map((c, k) => c - (k ? h.buckets[k - 1] : 0)), h.count - h.buckets.at(-1)] },
              sum: h.sum,
              count: h.count,
            })),
          });
        }
      }
      return { resourceMetrics: { resource: undefined, scopeMetrics: [{ scope, metrics }] }, errors: [] };
    },
  };
}

module.exports = { metricProducer, attributes };
