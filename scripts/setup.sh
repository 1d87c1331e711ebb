#!/usr/bin/env bash
# Installs what building and running node-libbpf needs on a Debian/Ubuntu
# machine (as root), once: clang (BPF compiler), make, pkg-config and the
# autotools, flex, bison and gawk (the addon builds libbpf, libelf and zlib
# from libbpf-sys's vendored sources and links them statically), bpftool
# (the tests' leak checks), gcc (test binaries), systemtap-sdt-dev
# (<sys/sdt.h>, for the USDT test binary), prometheus (the monitor's
# end-to-end test scrapes with a real server); the npm dev dependencies;
# and tracefs mounted.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v clang >/dev/null || need+=(clang)
command -v bpftool >/dev/null || need+=(bpftool)
command -v pkg-config >/dev/null || need+=(pkg-config)
command -v gcc >/dev/null || need+=(gcc)
command -v make >/dev/null || need+=(make)
for tool in autoreconf:autoconf automake:automake autopoint:autopoint flex:flex bison:bison gawk:gawk; do
  command -v "${tool%%:*}" >/dev/null || need+=("${tool#*:}")
done
command -v go >/dev/null || need+=(golang-go)
command -v nft >/dev/null || need+=(nftables)
command -v prometheus >/dev/null || need+=(prometheus)
[ -f /usr/include/x86_64-linux-gnu/sys/sdt.h ] || [ -f /usr/include/sys/sdt.h ] || need+=(systemtap-sdt-dev)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "setup: missing ${need[*]}; install them (Debian/Ubuntu: apt-get install ${need[*]})" >&2
    exit 1
  fi
  echo "setup: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# npm run lint: rustfmt and clippy (rustup's components, where rustup is)
if command -v rustup >/dev/null; then
  cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
  cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
fi

if [ ! -x node_modules/.bin/napi ] || [ ! -d node_modules/prom-client ] || [ ! -d node_modules/@opentelemetry/sdk-metrics ]; then
  echo "setup: installing npm dev dependencies"
  npm install --no-audit --no-fund --loglevel=error >/dev/null
fi

if [ ! -d /sys/kernel/tracing/events ] && [ ! -d /sys/kernel/debug/tracing/events ]; then
  if [ "$(id -u)" = 0 ]; then
    mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || echo "setup: could not mount tracefs (the library will say how when it needs it)" >&2
  fi
fi
