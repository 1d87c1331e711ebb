'use strict';
/**
 * The command line of the example tools: `--pid N`, `--duration S`,
 * `--json`, `--help` and the options of a tool's own, with its usage.
 *
 *   const { parseArgs, intervalOption, seconds } = require('node-libbpf/lib/args');
 */
const path = require('path');
const util = require('util');

/**
 * Parses `--pid N`, `--duration S` and `--json`, and the tool's own options
 * (exits with the usage on `--help` or a bad option).
 *
 * `extra.options`: `{ name: { type: 'string' | 'boolean', short?, default?,
 * arg?, help, parse?, conflicts? } }`, as `util.parseArgs` takes them, plus
 * `arg` (the value's name in the usage, `--goid-offset N`), `help` (its
 * line in the usage), `parse(value)` (returns the option's value, throws an
 * Error whose message says what is wrong) and `conflicts` (an option it
 * cannot be given with). `extra.pidHelp` replaces the `--pid` line.
 * `extra.positionals`: `{ name: 'PROBE...', help, min? }` allows arguments
 * after the options, returned as `opts.positionals` (at least `min`).
 * `extra` may also be the argv array (the first form of this function).
 */
function parseArgs(description, extra = {}, argv = process.argv.slice(2)) {
  if (Array.isArray(extra)) [extra, argv] = [{}, extra];
  const own = extra.options ?? {};
  const flag = (name, o) => `${o.short ? `-${o.short}, ` : ''}--${name}${o.type === 'string' ? ` ${o.arg ?? 'VALUE'}` : ''}`;
  const line = (left, help) => `  ${left.padEnd(20)} ${help}`;
  const usage = [
    `usage: node ${process.argv[1] ? path.relative(process.cwd(), process.argv[1]) : 'SCRIPT'} [--pid N] ${Object.entries(own)
      .map(([name, o]) => `[${flag(name, o)}] `)
      .join('')}[--duration S] [--json]${extra.positionals ? ` ${extra.positionals.name}` : ''}`,
    '',
    description,
    '',
    line('--pid N', extra.pidHelp ?? 'trace process N (default: start the built-in workload and trace it)'),
    ...Object.entries(own).map(([name, o]) => line(flag(name, o), o.help ?? '')),
    line('--duration S', 'stop after S seconds (default: at Ctrl+C, SIGINT or SIGTERM)'),
    line('--json', 'print one JSON object per line instead of text'),
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
        pid: { type: 'string' },
        duration: { type: 'string' },
        json: { type: 'boolean', default: false },
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
  if (pid !== undefined && !(Number.isInteger(pid) && pid > 0)) usageError(`--pid: not a process id: ${values.pid}`, usage);
  const duration = values.duration === undefined ? undefined : Number(values.duration);
  if (duration !== undefined && !(duration > 0)) usageError(`--duration: not a number of seconds: ${values.duration}`, usage);
  const opts = { pid, duration, json: values.json };
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
  if (extra.positionals) {
    if (positionals.length < (extra.positionals.min ?? 0)) usageError(`missing ${extra.positionals.name}`, usage);
    opts.positionals = positionals;
  }
  return opts;
}

/** A number of seconds above 0, for an option's `parse`. */
function seconds(value) {
  const n = Number(value);
  if (!(n > 0)) throw new Error(`not a number of seconds: ${value}`);
  return n;
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

module.exports = { parseArgs, seconds, intervalOption };
