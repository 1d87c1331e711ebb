'use strict';
/**
 * The addon, loaded through the generated binding.js (`napi build`), with
 * a load failure that says what happened: the platform and the package it
 * looked for, or the shared library or glibc version that was missing, and
 * what to do. Every module of the package reaches the addon through here.
 */
/** napi-rs's platform name of this process: `linux-x64-gnu`, `linux-arm64-musl`, ... */
function platformName() {
  let libc = '';
  if (process.platform === 'linux') {
    const report = /** @type {{ header?: { glibcVersionRuntime?: string } } | undefined} */ (process.report?.getReport?.());
    const glibc = report?.header?.glibcVersionRuntime;
    libc = glibc ? '-gnu' : '-musl';
  }
  return `${process.platform}-${process.arch}${libc}`;
}

/** The messages of an error and of its causes, outermost first. */
function messages(err) {
  const out = [];
  for (let e = err; e && out.length < 16; e = e.cause) out.push(String(e.message ?? e));
  return out;
}

/** What went wrong and what to do, from the loader's error and this platform. */
function diagnose(err) {
  const platform = platformName();
  const pkg = `node-libbpf-${platform}`;
  const all = messages(err);
  const SUPPORTED = ['linux-x64-gnu', 'linux-arm64-gnu', 'linux-x64-musl', 'linux-arm64-musl'];
  if (process.platform !== 'linux') return `node-libbpf runs on Linux only (eBPF is a Linux kernel feature); this is ${process.platform}`;
  if (!SUPPORTED.includes(platform)) {
    return `node-libbpf has no prebuilt addon for ${platform}; it ships ${SUPPORTED.join(', ')}`;
  }
  // the platform package or the local build was found, and the dynamic loader refused it
  const dlopen = all.find((m) => !/^Cannot find module/.test(m) && /\.node: |\.so\b|GLIBC_|cannot open shared object|ELF|undefined symbol/.test(m));
  if (dlopen) {
    return `node-libbpf's addon for ${platform} was found but did not load: ${dlopen}. ${
      /GLIBC_/.test(dlopen) ? 'The prebuilt gnu addon needs glibc 2.17 or newer; a local build needs the glibc it was built with' : 'Reinstall node-libbpf; if you built it yourself, rebuild it (npm run build:addon)'
    }`;
  }
  const mismatch = all.find((m) => /version mismatch/.test(m));
  if (mismatch) return `node-libbpf's addon package does not match it: ${mismatch}`;
  let installed = false;
  try {
    require.resolve(`${pkg}/package.json`);
    installed = true;
  } catch {
    // not installed
  }
  if (!installed) {
    return `node-libbpf's addon package ${pkg} is not installed: npm installs it as an optional dependency of node-libbpf for this platform. Install it (npm install ${pkg}), or reinstall without --omit=optional / --no-optional; from a source checkout, build it: npm run build`;
  }
  return `node-libbpf could not load its addon for ${platform} (${pkg}): ${all.at(-1)}`;
}

/**
 * The addon built or installed beside the package (`npm run build`, or
 * the prebuilt file of a published package), when exactly one of this
 * platform's two libc flavours is there: loaded directly, it skips the
 * generated binding.js's search (about 3 ms of a 10 ms require on the bench
 * machine). Anything else (none, both, an override, a load failure) goes
 * through binding.js, which finds the platform package and says what failed.
 */
function besideThePackage() {
  if (process.platform !== 'linux' || process.env.NAPI_RS_NATIVE_LIBRARY_PATH) return undefined;
  const fs = require('node:fs');
  const path = require('node:path');
  const root = path.join(__dirname, '..', '..');
  const found = ['gnu', 'musl'].map((libc) => path.join(root, `node-libbpf.linux-${process.arch}-${libc}.node`)).filter((f) => fs.existsSync(f));
  if (found.length !== 1) return undefined;
  try {
    return require(found[0]);
  } catch {
    return undefined; // binding.js tries again, and its error is the one reported
  }
}

function load() {
  try {
    return besideThePackage() ?? require('../../binding');
  } catch (err) {
    const e = /** @type {NodeJS.ErrnoException} */ (new Error(diagnose(err), { cause: err }));
    e.code = 'ERR_BPF_NATIVE_LOAD';
    throw e;
  }
}

module.exports = load();
