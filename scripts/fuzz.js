#!/usr/bin/env node
'use strict';
// npm run fuzz: the long random campaigns against the object loader.
//
//   1. the coverage-guided one: fuzz/object/ (libFuzzer, libbpf under ASan,
//      our ELF check in front), for --time seconds or --runs executions;
//   2. the random-seed mutation run of __test__/fuzz.test.js (--cases cases
//      of one random seed, through the real addon and kernel).
//
// Crashes of either become fixtures in __test__/fixtures/fuzz/ (one per new
// class), which `npm test` then replays. --keep-corpus merges the campaign's
// corpus into fuzz/object/corpus/ (at most --corpus-max files), which
// `npm test` replays too.
//
//   npm run fuzz -- [--time 600] [--runs N] [--cases 5000] [--only libfuzzer|mutation] [--keep-corpus]
//   (the symbol parsers apart, not run here: cd fuzz/parsers && cargo +nightly fuzz run --fuzz-dir . v8dbg, or perf_map)
const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');
const { spawn, spawnSync } = require('node:child_process');

const root = path.join(__dirname, '..');
const here = path.join(root, 'fuzz', 'object');
const out = path.join(here, 'out');
const binary = path.join(out, 'fuzz-object');
const fixtures = path.join(root, '__test__', 'fixtures', 'fuzz');
const corpus = path.join(here, 'corpus');

function options(argv) {
  const o = { time: 600, runs: 0, cases: 5000, only: '', keepCorpus: false, corpusMax: 200 };
  for (let i = 0; i < argv.length; i++) {
    const [flag, value] = [argv[i], argv[i + 1]];
    const number = () => {
      const n = Number(value);
      if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${flag} takes a whole number, not ${value}`);
      i++;
      return n;
    };
    if (flag === '--time') o.time = number();
    else if (flag === '--runs') o.runs = number();
    else if (flag === '--cases') o.cases = number();
    else if (flag === '--corpus-max') o.corpusMax = number();
    else if (flag === '--only' && ['libfuzzer', 'mutation'].includes(value)) (o.only = value), i++;
    else if (flag === '--keep-corpus') o.keepCorpus = true;
    else throw new Error(`unknown option ${flag} (see the top of scripts/fuzz.js)`);
  }
  return o;
}

/** Builds the fuzzer when a source is newer than it. */
function build() {
  const sources = ['harness.c', 'check.rs', 'build.sh'].map((f) => path.join(here, f)).concat(path.join(root, 'src', 'elf_check.rs'));
  const built = fs.existsSync(binary) ? fs.statSync(binary).mtimeMs : 0;
  if (sources.every((f) => fs.statSync(f).mtimeMs < built)) return;
  const r = spawnSync(path.join(here, 'build.sh'), { stdio: 'inherit' });
  if (r.status !== 0) throw new Error('fuzz/object/build.sh failed');
}

/** The seed inputs: the corpus kept, every compiled object, the crashers. */
function seedDir() {
  const seeds = path.join(out, 'seeds');
  fs.rmSync(seeds, { recursive: true, force: true });
  fs.mkdirSync(seeds, { recursive: true });
  const dirs = [path.join(root, 'bpf', 'x86'), path.join(root, 'bpf', 'arm64'), path.join(root, '__test__', 'bpf', 'x86'), fixtures];
  for (const dir of dirs.filter((d) => fs.existsSync(d))) {
    for (const f of fs.readdirSync(dir).filter((f) => f.endsWith('.bpf.o'))) {
      fs.copyFileSync(path.join(dir, f), path.join(seeds, `${path.relative(root, dir).replace(/\W+/g, '-')}-${f}`));
    }
  }
  return seeds;
}

/** What a crash input does to the fuzzer: its sanitizer's verdict and the top frame, as a class name. */
function classify(file) {
  const r = spawnSync(binary, [file], { encoding: 'utf8', env: { ...process.env, ASAN_OPTIONS: 'detect_leaks=0' }, timeout: 60_000 });
  const text = `${r.stdout}${r.stderr}`;
  const kind = /ERROR: (?:AddressSanitizer|libFuzzer): ([\w-]+)/.exec(text)?.[1] || (r.signal ? r.signal : 'timeout');
  const frame = /#0 0x[0-9a-f]+ in (\w+)/.exec(text)?.[1] || 'unknown';
  return { slug: `${kind}-${frame}`.toLowerCase().replace(/[^a-z0-9]+/g, '-'), text };
}

/** Runs libFuzzer in fork mode (one job: crashes are recorded and the campaign goes on) until the time or count. */
function campaign(o) {
  build();
  const work = path.join(out, 'corpus');
  const crashes = path.join(out, 'crashes');
  fs.mkdirSync(work, { recursive: true });
  fs.mkdirSync(crashes, { recursive: true });
  const dirs = [work, ...(fs.existsSync(corpus) ? [corpus] : []), seedDir()];
  const args = ['-fork=1', '-ignore_crashes=1', '-ignore_timeouts=1', '-ignore_ooms=1', '-timeout=10', '-rss_limit_mb=2048',
    `-max_total_time=${o.runs ? 7 * 24 * 3600 : o.time}`, `-artifact_prefix=${crashes}/`, ...dirs];
  const log = fs.createWriteStream(path.join(out, 'campaign.log'));
  console.log(`libFuzzer: ${binary} ${args.join(' ')}${o.runs ? ` (until ${o.runs} executions)` : ''}`);
  const before = new Set(fs.readdirSync(crashes));
  return new Promise((resolve) => {
    const child = spawn('nice', ['-n', '19', binary, ...args], { env: { ...process.env, ASAN_OPTIONS: 'detect_leaks=0' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let last = '';
    let rest = '';
    const onData = (d) => {
      log.write(d);
      const lines = (rest + d).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines.filter((l) => /^#\d+: cov:/.test(l))) {
        last = line;
        if (o.runs && Number(/^#(\d+)/.exec(line)[1]) >= o.runs) child.kill('SIGINT');
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const stop = () => child.kill('SIGINT');
    process.on('SIGINT', stop);
    child.on('close', () => {
      process.off('SIGINT', stop);
      log.end();
      const found = fs.readdirSync(crashes).filter((f) => !before.has(f));
      console.log(`libFuzzer: ${last.replace(/ dft_time.*/, '')}`);
      console.log(`libFuzzer: ${found.length} new crash inputs in ${path.relative(root, crashes)}/`);
      resolve(found.map((f) => path.join(crashes, f)));
    });
  });
}

/** One fixture per new class of crash, minimized for a while. */
function keep(inputs) {
  const known = new Set(fs.readdirSync(fixtures).map((f) => f.replace(/--.*$/, '')));
  for (const file of inputs) {
    const { slug } = classify(file);
    if (known.has(slug)) continue;
    known.add(slug);
    const small = `${file}.min`;
    spawnSync(binary, ['-minimize_crash=1', '-max_total_time=60', `-exact_artifact_path=${small}`, file], { stdio: 'ignore', env: { ...process.env, ASAN_OPTIONS: 'detect_leaks=0' } });
    const name = `${slug}--fuzz-object.bpf.o`;
    fs.copyFileSync(fs.existsSync(small) ? small : file, path.join(fixtures, name));
    console.log(`new crasher: __test__/fixtures/fuzz/${name} (from ${path.relative(root, file)}); add it to the README there`);
  }
}

/**
 * Merges the campaign's corpus into fuzz/object/corpus/: the inputs of at
 * most 32 KiB (copies of the largest objects add size more than coverage),
 * a set cover of their features, and past `max` files the largest (they
 * carry the most: 200 of 281 kept 2,871 of 3,113 features, the smallest 200
 * only 2,595).
 */
function keepCorpus(max) {
  const small = path.join(out, 'corpus.small');
  const merged = path.join(out, 'corpus.merged');
  for (const d of [small, merged]) {
    fs.rmSync(d, { recursive: true, force: true });
    fs.mkdirSync(d);
  }
  for (const dir of [corpus, path.join(out, 'corpus')].filter((d) => fs.existsSync(d))) {
    for (const f of fs.readdirSync(dir)) {
      if (fs.statSync(path.join(dir, f)).size <= 32 << 10) fs.copyFileSync(path.join(dir, f), path.join(small, f));
    }
  }
  spawnSync(binary, ['-set_cover_merge=1', merged, small], { stdio: 'ignore', env: { ...process.env, ASAN_OPTIONS: 'detect_leaks=0' } });
  const files = fs.readdirSync(merged).map((f) => ({ f, size: fs.statSync(path.join(merged, f)).size })).sort((a, b) => b.size - a.size || (a.f < b.f ? -1 : 1)).slice(0, max);
  fs.rmSync(corpus, { recursive: true, force: true });
  fs.mkdirSync(corpus);
  for (const { f } of files) fs.copyFileSync(path.join(merged, f), path.join(corpus, f));
  const bytes = files.reduce((n, x) => n + x.size, 0);
  console.log(`fuzz/object/corpus/: ${files.length} files, ${(bytes / 1024).toFixed(0)} KiB`);
}

async function main() {
  const o = options(process.argv.slice(2));
  let failed = false;
  if (o.only !== 'mutation') {
    keep(await campaign(o));
    if (o.keepCorpus) keepCorpus(o.corpusMax);
  }
  if (o.only !== 'libfuzzer') {
    const seed = crypto.randomInt(1, 2 ** 31);
    console.log(`mutation run: FUZZ_SEED=${seed} FUZZ_CASES=${o.cases} node --test __test__/fuzz.test.js`);
    const r = spawnSync(process.execPath, ['--test', path.join(root, '__test__', 'fuzz.test.js')], {
      stdio: 'inherit',
      env: { ...process.env, FUZZ_SEED: String(seed), FUZZ_CASES: String(o.cases) },
    });
    failed = r.status !== 0;
  }
  process.exitCode = failed ? 1 : 0;
}

main().catch((e) => {
  console.error(e.message);
  process.exitCode = 1;
});
