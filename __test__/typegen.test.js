'use strict';
// `npx node-libbpf types prog.bpf.o` writes TypeScript declarations that
// type-check real usage with tsc, and reject wrong usage.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync, spawnSync } = require('node:child_process');
const { root, objectPath } = require('./helpers');

const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');

/** A project dir with the generated types, `node-libbpf` resolvable, and `code` in main.ts. */
function project(code) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-libbpf-ts-'));
  execFileSync(process.execPath, [path.join(root, 'lib', 'tools', 'cli.js'), 'types', objectPath('types'), '-o', path.join(dir, 'types.d.ts')]);
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(root, path.join(dir, 'node_modules', 'node-libbpf'));
  fs.symlinkSync(path.join(root, 'node_modules', '@types'), path.join(dir, 'node_modules', '@types'));
  fs.writeFileSync(path.join(dir, 'main.ts'), code);
  return dir;
}

function typecheck(dir) {
  return spawnSync(process.execPath, [tsc, '--noEmit', '--strict', '--target', 'es2022', '--module', 'commonjs', '--moduleResolution', 'node', '--types', 'node', 'main.ts'], { cwd: dir, encoding: 'utf8' });
}

const GOOD = `
import * as bpf from 'node-libbpf';
import type { TypesTypes, Kinds, Counter } from './types';

const obj = bpf.loadBpfProgram<TypesTypes>('types.bpf.o');
obj.setGlobalVariable('target_pid', process.pid);
obj.setGlobalVariable('settings', { delta: 3, color: 'BLUE' });
const settings: Counter = obj.getGlobalVariable('settings');
const greeting: string = obj.getGlobalVariable('greeting');
const inHash = obj.getMap('in_hash');
inHash.set({ id: 1, name: 'one' }, { count: 1n, delta: 2 });
const v = inHash.get({ id: 1, name: 'one' });
const count: bigint | undefined = v?.count;
for (const [key, value] of obj.getMap('lru')) {
  const k: number = key;
  const c: bigint = value.count;
}
const perCpu: bigint[] | undefined = obj.getMap('percpu_hash').get(7);
const stack: bigint[] | undefined = obj.getMap('stacks').get(0);
obj.getMap('rb').openRingBuffer((k) => {
  const record: Kinds = k;
  const comm: string = k.comm;
  const big: bigint = k.big;
  const nested: number = k.nested.a;
}, { type: 'kinds' });
obj.getMap('pb').openPerfBuffer((cpu, k) => { const n: number = cpu + k.small; }, { type: 'struct kinds' });
obj.getMap('rb').openRingBuffer((raw) => { const b: Buffer = raw; });
const prog: bpf.BpfProgram = obj.programs.handle_enter_getppid;
obj.attachTracepoint('syscalls', 'sys_enter_getppid', 'handle_enter_getppid');
obj.attachTracepoint('syscalls', 'sys_enter_getppid', prog);
const untyped = bpf.loadBpfProgram(bpf.objectPath('file_io', { arch: 'arm64' }));
const shipped: string[] = bpf.objectNames();
untyped.getMap('anything').get(1);
const features: boolean = bpf.features().kprobes;
console.log(settings, greeting, count, perCpu, stack, features, shipped);
`;

test('the generated declarations type-check real usage (tsc --strict)', () => {
  const dir = project(GOOD);
  const text = fs.readFileSync(path.join(dir, 'types.d.ts'), 'utf8');
  assert.match(text, /export interface Kinds \{[^}]*big: bigint;[^}]*comm: string;[^}]*nested: Inner;/s);
  assert.match(text, /export type Color = "RED" \| "GREEN" \| "BLUE" \| number;/);
  assert.match(text, /in_hash: \{ key: NameKey; value: Counter \};/);
  assert.match(text, /percpu_arr: \{ key: number; value: Array<Counter> \};/);
  const r = typecheck(dir);
  assert.strictEqual(r.status, 0, r.stdout + r.stderr);
});

test('the declarations reject wrong usage', () => {
  const dir = project(`
import * as bpf from 'node-libbpf';
import type { TypesTypes } from './types';
const obj = bpf.loadBpfProgram<TypesTypes>('types.bpf.o');
obj.getMap('no_such_map');
obj.setGlobalVariable('target_pid', 'five');
obj.getMap('rb').openRingBuffer((k) => k.no_such_field, { type: 'kinds' });
obj.getMap('in_hash').set({ id: 'one' }, {});
obj.attachTracepoint('syscalls', 'sys_enter_getppid', 'no_such_program');
obj.getMap('rb').openRingBuffer((k) => { void k; }, { type: 'no_such_struct' });
`);
  const r = typecheck(dir);
  assert.notStrictEqual(r.status, 0);
  assert.match(r.stdout, /'"no_such_map"' is not assignable/);
  assert.match(r.stdout, /'string' is not assignable to parameter of type 'number'/);
  assert.match(r.stdout, /Property 'no_such_field' does not exist on type 'Kinds'/);
  assert.match(r.stdout, /Type 'string' is not assignable to type 'number'/);
  assert.match(r.stdout, /'"no_such_program"' is not assignable to parameter of type 'BpfProgram \| "handle_enter_getppid"'/);
  assert.match(r.stdout, /No overload matches this call\.[^]*Type '"no_such_struct"' is not assignable/);
});

test('the CLI says how to use it and fails clearly on a bad file', () => {
  const cli = path.join(root, 'lib', 'tools', 'cli.js');
  const usage = spawnSync(process.execPath, [cli], { encoding: 'utf8' });
  assert.strictEqual(usage.status, 2);
  assert.match(usage.stderr, /usage: node-libbpf <command>[^]*types PROG\.bpf\.o \[-o PROG\.d\.ts\]/);
  const missing = spawnSync(process.execPath, [cli, 'types', '/no/such.bpf.o'], { encoding: 'utf8' });
  assert.strictEqual(missing.status, 1);
  assert.match(missing.stderr, /\/no\/such\.bpf\.o does not exist/);
  const help = spawnSync(process.execPath, [cli, '--help'], { encoding: 'utf8' });
  assert.strictEqual(help.status, 0);
  assert.match(help.stdout, /syscalls +syscall latency histograms/);
});
