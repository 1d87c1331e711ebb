#!/usr/bin/env bash
# Installs what the benchmark needs beyond `npm run setup` (as root, Debian),
# only what is missing, with at most one apt-get update:
#   required: libbpf-dev (the C consumer), clang, gcc
#   optional: bpftrace, wrk (the HTTP row), python3-bpfcc (the BCC rows):
#             without one, its rows say "not available" and why
#   and, for BCC, kernel headers: this kernel has none, so Debian's nearest
#   linux-headers-<version>-<arch> and its -common package are downloaded
#   (apt-get download) and unpacked (dpkg -x) into bench/.build/kheaders/src,
#   which bench/run.js passes to BCC in BCC_KERNEL_SOURCE.
# Run again at will: what is there is left alone.
set -euo pipefail
cd "$(dirname "$0")"

export DEBIAN_FRONTEND=noninteractive
updated=
apt_update_once() {
  [ -n "$updated" ] && return 0
  updated=1
  echo "bench/setup: apt-get update"
  apt-get update -qq
}
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "bench/setup: needs root and apt-get (Debian/Ubuntu)" >&2
  exit 1
fi

need=()
for p in libbpf-dev clang gcc; do installed "$p" || need+=("$p"); done
if [ ${#need[@]} -gt 0 ]; then
  apt_update_once
  echo "bench/setup: installing ${need[*]}"
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# one at a time: one that fails leaves the others installed
for p in bpftrace wrk python3-bpfcc; do
  installed "$p" && continue
  apt_update_once
  echo "bench/setup: installing $p"
  apt-get install -y -qq "$p" >/dev/null || echo "bench/setup: could not install $p: its rows will say not available" >&2
done

# kernel headers for BCC
running=$(uname -r)
dest=.build/kheaders
if ! installed python3-bpfcc; then
  exit 0
elif [ -d "/lib/modules/$running/build/include" ]; then
  exit 0
elif [ -f "$dest/version" ] && [ -f "$dest/src/include/linux/kconfig.h" ]; then
  exit 0
fi
apt_update_once
arch=$(dpkg --print-architecture)
# the newest not newer than the running kernel, else the oldest
pick=
first=
while read -r v; do
  [ -z "$first" ] && first=$v
  [ "$(printf '%s\n%s\n' "$v" "$running" | sort -V | head -1)" = "$v" ] && pick=$v
done < <(apt-cache search --names-only '^linux-headers-[0-9]' | awk '{print $1}' |
  grep -E -- "^linux-headers-[0-9].*-$arch\$" | grep -vE -- "-(cloud|rt)-$arch\$" |
  sed -e 's/^linux-headers-//' -e "s/-$arch\$//" | sort -V)
pick=${pick:-$first}
if [ -z "$pick" ]; then
  echo "bench/setup: no linux-headers package in the apt lists: the BCC rows will say not available" >&2
  exit 0
fi
headers=linux-headers-$pick-$arch
common=$(apt-cache depends "$headers" | sed -n 's/^ *Depends: \(linux-headers-[^ ]*-common\)$/\1/p' | head -1)
if [ -z "$common" ]; then
  echo "bench/setup: $headers: no -common headers package: the BCC rows will say not available" >&2
  exit 0
fi
echo "bench/setup: unpacking $headers and $common into bench/$dest"
rm -rf "$dest"
mkdir -p "$dest/debs"
if ! (cd "$dest/debs" && apt-get download -qq "$headers" "$common"); then
  echo "bench/setup: apt-get download $headers $common failed: the BCC rows will say not available" >&2
  rm -rf "$dest"
  exit 0
fi
for deb in "$dest"/debs/*.deb; do dpkg -x "$deb" "$dest/root"; done
# Debian splits the tree: -common has the sources, -<arch> the config and
# generated headers; BCC wants them in one directory
cp -a "$dest"/root/usr/src/linux-headers-*-common "$dest/src"
cp -a "$dest"/root/usr/src/linux-headers-*-"$arch"/. "$dest/src"
rm -rf "$dest/debs" "$dest/root"
echo "$pick" >"$dest/version"
