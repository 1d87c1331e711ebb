'use strict';
/**
 * The command line of the tools, with bcc's options: `-p PID`,
 * `-d/--duration S`, `-j/--json`, `--demo`, `-h/--help`, and the options of
 * a tool's own, with its usage.
 *
 *   const { parseArgs, intervalOption } = require('node-libbpf/lib/args');
 */
const path = require('path');
const util = require('util');
const { resolveCgroup } = require('../host/cgroup');

/** The most seconds `-d` and `-i` take: setTimeout's longest delay (2^31 - 1 ms), in whole seconds. */
const MAX_SECONDS = 2_147_483;
/** The highest process id (PID_MAX_LIMIT, the most /proc/sys/kernel/pid_max can be). */
const MAX_PID = 4_194_304;

/** How the usage names the tool: `node-libbpf syscalls` (lib/tools/cli.js sets it), or `node examples/x.js`. */
function programName() {
  const script = process.argv[1];
  if (!script) return 'SCRIPT';
  return script.startsWith('node-libbpf ') ? script : `node ${path.relative(process.cwd(), script)}`;
}

/**
 * What parseArgs returns: the common options, then the tool's own ones
 * under their camelCase names (`--goid-offset` -> `goidOffset`).
 * @typedef {{
 *   pid?: number,
 *   demo: boolean,
 *   systemWide?: string,
 *   duration?: number,
 *   json: boolean,
 *   cgroup?: { id: bigint, path: string, level: number },
 *   perContainer?: boolean,
 *   positionals?: string[],
 *   [option: string]: any,
 * }} ToolOptions
 */

/**
 * Parses `-p PID`, `-d S`, `-j` and `--demo`, and the tool's own options
 * (exits with the usage on `--help` or a bad option).
 *
 * `extra.options`: `{ name: { type: 'string' | 'boolean', short?, default?,
 * arg?, help, parse?, conflicts? } }`, as `util.parseArgs` takes them, plus
 * `arg` (the value's name in the usage, `--goid-offset N`), `help` (its
 * line in the usage), `parse(value)` (returns the option's value, throws an
 * Error whose message says what is wrong) and `conflicts` (an option it
 * cannot be given with). `extra.pidHelp` replaces the `-p` line.
 * `extra.systemWide`: what the tool traces without `-p` (`'every process'`,
 * `'every bash'`), returned as `opts.systemWide`; a tool without it needs
 * `-p PID` or `--demo`. `extra.positionals`: `{ name: 'PROBE...', help, min? }`
 * allows arguments after the options, returned as `opts.positionals` (at
 * least `min`). `extra.perContainer`: the tool takes `--per-container`.
 * A tool with `systemWide` takes `--cgroup PATH` (`opts.cgroup`: `{ id,
 * path, level }` of lib/host/cgroup.js `resolveCgroup`). `extra` may also be the
 * argv array (the first form of this function).
 * @param {string} description
 * @param {object | string[]} [extra]
 * @param {string[]} [argv]
 * @returns {ToolOptions}
 */
function parseArgs(description, extra = {}, argv = process.argv.slice(2)) {
  if (Array.isArray(extra)) [extra, argv] = [{}, extra];
  const own = { ...(extra.systemWide && cgroupOptions(extra.perContainer)), ...extra.options };
  const flag = (name, o) => `${o.short ? `-${o.short}, ` : ''}--${name}${o.type === 'string' ? ` ${o.arg ?? 'VALUE'}` : ''}`;
  const line = (left, help) => `  ${left.padEnd(20)} ${help}`;
  const usage = [
    `usage: ${programName()} [-p PID | --demo] ${Object.entries(own)
      .map(([name, o]) => `[${flag(name, o)}] `)
      .join('')}[-d S] [-j]${extra.positionals ? ` ${extra.positionals.name}` : ''}`,
    '',
    description,
    '',
    line('-p, --pid PID', extra.pidHelp ?? `trace process PID (default: ${extra.systemWide ?? 'none: -p or --demo is needed'})`),
    line('--demo', 'start the built-in workload and trace it'),
    ...Object.entries(own).map(([name, o]) => line(flag(name, o), o.help ?? '')),
    line('-d, --duration S', 'stop after S seconds (default: at Ctrl+C, SIGINT or SIGTERM)'),
    line('-j, --json', 'print one JSON object per line instead of text'),
    ...(extra.positionals?.help ? [line(extra.positionals.name, extra.positionals.help)] : []),
  ].join('\n');
  const parserOptions = {};
  for (const [name, o] of Object.entries(own)) {
    const dflt = o.default ?? (o.type === 'boolean' ? false : undefined);
    parserOptions[name] = { type: o.type, ...(o.short && { short: o.short }), ...(dflt !== undefined && { default: dflt }) };
  }
  let values, positionals;
  try {
    ({ values, positionals } = util.parseArgs({
      args: argv,
      allowPositionals: Boolean(extra.positionals),
      options: {
        pid: { type: 'string', short: 'p' },
        demo: { type: 'boolean', default: false },
        duration: { type: 'string', short: 'd' },
        json: { type: 'boolean', short: 'j', default: false },
        help: { type: 'boolean', short: 'h', default: false },
        ...parserOptions,
      },
    }));
  } catch (err) {
    usageError(err.message, usage);
  }
  if (values.help) {
    console.log(usage);
    process.exit(0);
  }
  const pid = values.pid === undefined ? undefined : Number(values.pid);
  if (pid !== undefined && !(Number.isInteger(pid) && pid >= 1 && pid <= MAX_PID && values.pid.trim() !== '')) {
    usageError(`-p: not a process id (an integer from 1 to ${MAX_PID}): ${values.pid}`, usage);
  }
  if (pid !== undefined && values.demo) usageError('-p and --demo do not go together', usage);
  let duration;
  if (values.duration !== undefined) {
    try {
      duration = seconds(values.duration);
    } catch (err) {
      usageError(`-d: ${err.message}`, usage);
    }
  }
  if (pid === undefined && !values.demo && !extra.systemWide) usageError('which process? give -p PID, or --demo to trace the built-in workload', usage);
  /** @type {ToolOptions} */
  const opts = { pid, demo: values.demo, systemWide: extra.systemWide, duration, json: values.json };
  for (const [name, o] of Object.entries(own)) {
    let value = values[name];
    const given = (v) => v !== undefined && v !== false;
    if (given(value) && o.conflicts && given(values[o.conflicts])) usageError(`--${name} and --${o.conflicts} do not go together`, usage);
    if (value !== undefined && o.parse && value !== o.default) {
      try {
        value = o.parse(value);
      } catch (err) {
        usageError(`--${name}: ${err.message}`, usage);
      }
    }
    opts[camelCase(name)] = value;
  }
  if (opts.cgroup && opts.systemWide) opts.systemWide += ` in cgroup ${opts.cgroup.path}`;
  if (extra.positionals) {
    if (positionals.length < (extra.positionals.min ?? 0)) usageError(`missing ${extra.positionals.name}`, usage);
    opts.positionals = positionals;
  }
  return opts;
}

/** `--cgroup PATH` of the system-wide tools, and `--per-container` of those that count per key. */
function cgroupOptions(perContainer) {
  return {
    cgroup: { type: 'string', arg: 'PATH', help: 'only the processes of this cgroup v2 directory and below (absolute, or relative to the v2 mount)', parse: (p) => resolveCgroup(p) },
    ...(perContainer && { 'per-container': { type: 'boolean', help: 'count per cgroup: a CONTAINER column (-j: cgroupId, cgroup, containerId, podUid)' } }),
  };
}

/** A number of seconds above 0 and at most MAX_SECONDS (fractions allowed), for an option's `parse`. */
function seconds(value) {
  const n = Number(value);
  if (!(n > 0 && n <= MAX_SECONDS)) {
    throw new Error(`not a number of seconds above 0 and at most ${MAX_SECONDS}: ${value}`);
  }
  return n;
}

/**
 * An option's `parse` for an integer from `min` to `max` (a count, an
 * offset): `top: { type: 'string', parse: integer(1, 10000) }`.
 */
function integer(min, max) {
  return (value) => {
    const n = Number(value);
    if (!(Number.isInteger(n) && n >= min && n <= max) || String(value).trim() === '') {
      throw new Error(`not an integer from ${min} to ${max}: ${value}`);
    }
    return n;
  };
}

/**
 * The option `-i S, --interval S` (`opts.interval`): print every S seconds
 * (see `untilStopped`); `when` says in the usage what happens without it.
 */
function intervalOption(when = 'only at the end') {
  return { type: 'string', short: 'i', arg: 'S', help: `print every S seconds (default: ${when})`, parse: seconds };
}

/** `goid-offset` -> `goidOffset`, the key of an option in what parseArgs returns. */
function camelCase(name) {
  return name.replace(/-([a-z])/g, (_, c) => c.toUpperCase());
}

function usageError(message, usage) {
  console.error(`${message}\n\n${usage}`);
  process.exit(2);
}

module.exports = { parseArgs, seconds, integer, intervalOption, MAX_SECONDS, MAX_PID };
