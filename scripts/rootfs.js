'use strict';
// A Debian root filesystem made with debootstrap (minbase), cached: shared
// by npm run test:package (a chroot) and npm run test:containers (the
// containers' root). No registry pulls: the packages come from the host's
// Debian mirror.
const fs = require('node:fs');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');

/** The host's Debian archive and security mirrors (from the apt sources it reads), deb.debian.org by default. */
function hostMirrors() {
  const texts = [];
  const add = (f) => {
    try {
      texts.push(fs.readFileSync(f, 'utf8'));
    } catch {
      // unreadable: skip
    }
  };
  add('/etc/apt/sources.list');
  const dir = '/etc/apt/sources.list.d';
  if (fs.existsSync(dir)) for (const f of fs.readdirSync(dir).filter((x) => /\.(list|sources)$/.test(x))) add(path.join(dir, f));
  const uris = [];
  for (const t of texts) {
    for (const m of t.matchAll(/^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+\S+/gm)) uris.push(m[1]);
    for (const m of t.matchAll(/^URIs:\s*(.+)$/gim)) uris.push(...m[1].trim().split(/\s+/));
  }
  return {
    // the archive itself, not -security or a third party's
    archive: uris.find((u) => /\/debian\/?$/.test(u)) || 'http://deb.debian.org/debian',
    security: uris.find((u) => /\/debian-security\/?$/.test(u)) || 'http://deb.debian.org/debian-security',
  };
}

/** The host's Debian mirror (the URI its apt uses for the main archive). */
function debianMirror() {
  return hostMirrors().archive;
}

const have = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

/**
 * Installs Debian packages on the host with apt-get (apt-get update first)
 * when what they bring is missing: `need` is the command they bring, or the
 * absolute path of a file they bring. Throws when it is still missing after.
 * @param {string} need
 * @param {string[]} packages
 * @param {(line: string) => void} log
 */
function aptInstall(need, packages, log) {
  const present = () => (need.startsWith('/') ? fs.existsSync(need) : have(need));
  if (present()) return;
  log(`installing ${packages.join(' ')} (apt-get)`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const lock = ['-o', 'DPkg::Lock::Timeout=600'];
  spawnSync('apt-get', ['update', '-qq', ...lock], { stdio: 'ignore', env });
  const r = spawnSync('apt-get', ['install', '-y', '-qq', ...lock, ...packages], { encoding: 'utf8', env });
  if (r.status !== 0) throw new Error(`apt-get install ${packages.join(' ')} exited ${r.status}: ${(r.stderr || '').trim().slice(-1000)}`);
  if (!present()) throw new Error(`${need} is still missing after apt-get install ${packages.join(' ')}`);
}

/**
 * The pristine tree `base` of Debian `suite`, made with debootstrap when
 * missing (its facts in `base + '.json'`): `{ made, suite, mirror, seconds, date }`.
 * @param {string} base
 * @param {{ suite?: string, log?: (line: string) => void }} [options]
 */
async function ensureDebianRoot(base, { suite = 'bullseye', log = () => {} } = {}) {
  const info = `${base}.json`;
  if (fs.existsSync(info) && fs.existsSync(path.join(base, 'usr', 'bin'))) {
    return { made: false, ...JSON.parse(fs.readFileSync(info, 'utf8')) };
  }
  aptInstall('debootstrap', ['debootstrap'], log);
  const mirror = debianMirror();
  const partial = `${base}.partial`;
  fs.rmSync(partial, { recursive: true, force: true });
  fs.rmSync(base, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(base), { recursive: true });
  log(`debootstrap --variant=minbase ${suite} from ${mirror} (once; cached in ${base}/)`);
  const start = Date.now();
  const r = await new Promise((resolve) => {
    const child = spawn('debootstrap', ['--variant=minbase', suite, partial, mirror], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 900000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal, stderr });
    });
  });
  if (r.code !== 0) {
    throw new Error(`debootstrap ${suite} failed (${r.code}): ${r.stderr.trim().split('\n').slice(-5).join(' | ')}; look at ${partial}/debootstrap/debootstrap.log`);
  }
  // <suite>-updates beside the main archive, from the host's mirror
  fs.writeFileSync(path.join(partial, 'etc', 'apt', 'sources.list'), `deb ${mirror} ${suite} main\ndeb ${mirror} ${suite}-updates main\n`);
  fs.renameSync(partial, base);
  const facts = { suite, mirror, seconds: Math.round((Date.now() - start) / 1000), date: new Date().toISOString() };
  fs.writeFileSync(info, `${JSON.stringify(facts, null, 2)}\n`);
  return { made: true, ...facts };
}

module.exports = { hostMirrors, debianMirror, ensureDebianRoot, aptInstall, have };
