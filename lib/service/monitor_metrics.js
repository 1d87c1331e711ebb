'use strict';
/**
 * The monitor's metrics, once for both exporters: for each, the part it
 * belongs to (or the `parts`, any of which), its kind (a monotonic counter or a histogram), its name in
 * Prometheus (`node_libbpf_*`, base units, counters `_total`) and in
 * OpenTelemetry (`node_libbpf.*`, with a UCUM unit; the OTel Prometheus
 * exporter 0.2xx makes `node_libbpf.syscall.duration` into
 * `node_libbpf_syscall_duration`, counters `_total`), and its rows in a snapshot
 * (`monitor.read()`): `[labels, value]`, a value being a number or a
 * histogram. lib/service/prometheus.js and lib/service/opentelemetry.js format them.
 */

/**
 * The histogram buckets every histogram has, always all of them, in
 * seconds: `le` = 2^k µs for k = 0..26 (1 µs .. 67 s), then +Inf. Slot 0
 * of the kernel's log2 slots (under 1 µs) falls in the first, slot k
 * ([2^(k-1), 2^k) µs) in the k-th: each bucket is a sum of whole slots.
 */
const BUCKET_BOUNDS = Array.from({ length: 27 }, (_, k) => 2 ** k / 1e6);

/** The syscalls, files and endpoints of a snapshot hold what they were counted since the monitor started. */
const METRICS = [
  {
    part: 'syscalls', kind: 'counter', prom: 'node_libbpf_syscalls_total', otel: 'node_libbpf.syscall.calls', unit: '{call}',
    help: 'Syscalls made by this process (node-libbpf\'s own threads left out), by syscall',
    rows: (s) => s.syscalls.map((r) => [{ syscall: r.syscall }, r.count]),
  },
  {
    part: 'syscalls', kind: 'counter', prom: 'node_libbpf_syscall_errors_total', otel: 'node_libbpf.syscall.errors', unit: '{call}',
    help: 'Syscalls of this process that returned an error (EAGAIN and EINPROGRESS are not errors), by syscall',
    rows: (s) => s.syscalls.map((r) => [{ syscall: r.syscall }, r.errors]),
  },
  {
    part: 'syscalls', kind: 'histogram', prom: 'node_libbpf_syscall_duration_seconds', otel: 'node_libbpf.syscall.duration', unit: 's',
    help: 'Time from entry to return of each syscall of this process, by syscall',
    rows: (s) => s.syscalls.map((r) => [{ syscall: r.syscall }, r.duration]),
  },
  {
    part: 'eventLoop', kind: 'histogram', prom: 'node_libbpf_event_loop_phase_duration_seconds', otel: 'node_libbpf.eventloop.phase.duration', unit: 's',
    help: 'Time of each run of each libuv phase of the main thread\'s event loop (poll includes waiting for I/O)',
    rows: (s) => s.eventLoop.map((r) => [{ phase: r.phase }, r.duration]),
  },
  {
    part: 'offCpu', kind: 'counter', prom: 'node_libbpf_main_thread_offcpu_seconds_total', otel: 'node_libbpf.main_thread.offcpu.time', unit: 's',
    help: 'Time the main thread spent off the CPU, by reason: the syscall it slept in, preempted (runnable, waiting for a CPU), or other (a page fault)',
    rows: (s) => s.offCpu.reasons.map((r) => [{ reason: r.reason }, r.seconds]),
  },
  {
    part: 'offCpu', kind: 'counter', prom: 'node_libbpf_main_thread_offcpu_switches_total', otel: 'node_libbpf.main_thread.offcpu.switches', unit: '{switch}',
    help: 'Times the main thread was switched off the CPU, by reason',
    rows: (s) => s.offCpu.reasons.map((r) => [{ reason: r.reason }, r.count]),
  },
  {
    part: 'offCpu', kind: 'histogram', prom: 'node_libbpf_main_thread_offcpu_duration_seconds', otel: 'node_libbpf.main_thread.offcpu.duration', unit: 's',
    help: 'Each interval the main thread was off the CPU: blocked (the loop could not run: a blocking syscall, preemption, a fault) or idle (waiting for I/O in epoll)',
    rows: (s) => [[{ state: 'blocked' }, s.offCpu.blocked], [{ state: 'idle' }, s.offCpu.idle]],
  },
  {
    part: 'files', kind: 'counter', prom: 'node_libbpf_file_opens_total', otel: 'node_libbpf.file.opens', unit: '{open}',
    help: 'Files this process opened (open, openat, openat2), the top N paths',
    rows: (s) => s.files.map((r) => [{ path: r.path }, r.count]),
  },
  {
    part: 'files', kind: 'counter', prom: 'node_libbpf_file_open_errors_total', otel: 'node_libbpf.file.open.errors', unit: '{open}',
    help: 'Opens that failed, of the top N paths',
    rows: (s) => s.files.map((r) => [{ path: r.path }, r.errors]),
  },
  {
    part: 'connects', kind: 'counter', prom: 'node_libbpf_connects_total', otel: 'node_libbpf.connect.calls', unit: '{call}',
    help: 'connect() calls of this process, the top N endpoints',
    rows: (s) => s.connects.map((r) => [{ endpoint: r.endpoint }, r.count]),
  },
  {
    part: 'connects', kind: 'counter', prom: 'node_libbpf_connect_errors_total', otel: 'node_libbpf.connect.errors', unit: '{call}',
    help: 'connect() calls that failed (not EINPROGRESS: a non-blocking connect under way), the top N endpoints',
    rows: (s) => s.connects.map((r) => [{ endpoint: r.endpoint }, r.errors]),
  },
  {
    parts: ['files', 'connects', 'tcpRetransmits'], kind: 'counter', prom: 'node_libbpf_monitor_table_overflow_total', otel: 'node_libbpf.monitor.table.overflows', unit: '{insert}',
    help: 'Inserts a table of the monitor in the kernel refused because it was full (files, connects, tcpRetransmits, listeningPorts): those calls or segments went uncounted',
    rows: (s) => Object.entries(s.tableOverflows).map(([table, n]) => [{ table }, n]),
  },
  {
    part: 'tcpRetransmits', kind: 'counter', prom: 'node_libbpf_tcp_retransmitted_segments_total', otel: 'node_libbpf.tcp.retransmits', unit: '{segment}',
    help: 'TCP segments retransmitted on this process\'s sockets, by remote endpoint (top N)',
    rows: (s) => s.tcpRetransmits.map((r) => [{ endpoint: r.endpoint }, r.segments]),
  },
];

/** The metrics of the parts `monitor` counts (a metric of several `parts`: when one of them is on). */
function metricsOf(monitor) {
  const parts = new Set(monitor.parts);
  return METRICS.filter((m) => (m.parts ?? [m.part]).some((p) => parts.has(p)));
}

/**
 * `monitor.read()`, once per turn of the event loop: an exporter asks for
 * every metric in one go, each from the same snapshot.
 */
function snapshots(monitor) {
  let current = null;
  return () => {
    if (current === null) {
      current = monitor.read();
      setImmediate(() => (current = null));
    }
    return current;
  };
}

module.exports = { BUCKET_BOUNDS, METRICS, metricsOf, snapshots };
