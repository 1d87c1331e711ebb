#!/bin/sh
# Builds fuzz/object/out/fuzz-object: libbpf (libbpf-sys's vendored source)
# with ASan and libFuzzer's coverage, our ELF check (src/elf_check.rs) with
# the same coverage, and harness.c. Needs clang-19 and libfuzzer-19-dev
# (apt-get install clang-19 libfuzzer-19-dev) and a built addon (the static
# libelf and zlib that libbpf-sys's build left under target/).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$here/out"
CC=${CC:-clang-19}
command -v "$CC" >/dev/null || { echo "$CC is missing: apt-get install clang-19 libfuzzer-19-dev" >&2; exit 1; }

version=$(sed -n '/^name = "libbpf-sys"$/{n;s/^version = "\(.*\)"$/\1/p}' "$root/Cargo.lock")
sys=$(ls -d "$HOME"/.cargo/registry/src/*/"libbpf-sys-$version" 2>/dev/null | head -1)
[ -n "$sys" ] || { echo "libbpf-sys $version's source is not in ~/.cargo/registry: run npm run build:addon" >&2; exit 1; }
static=
for d in $(ls -td "$root"/target/*/release/build/libbpf-sys-*/out "$root"/target/release/build/libbpf-sys-*/out 2>/dev/null); do
  [ -f "$d/libelf.a" ] && [ -f "$d/libz.a" ] && { static=$d; break; }
done
[ -n "$static" ] || { echo "libbpf-sys's static libelf and zlib are not under target/: run npm run build:addon" >&2; exit 1; }

mkdir -p "$out/obj"
cov="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address"
for c in bpf btf libbpf libbpf_utils netlink nlattr libbpf_probes bpf_prog_linfo btf_dump hashmap ringbuf \
  strset linker gen_loader relo_core usdt zip elf features btf_iter btf_relocate; do
  src="$sys/libbpf/src/$c.c"
  obj="$out/obj/$c.o"
  [ "$obj" -nt "$src" ] && continue
  $CC $cov -D_LARGEFILE64_SOURCE -D_FILE_OFFSET_BITS=64 -I"$sys/libbpf/include" -I"$sys/libbpf/include/uapi" \
    -I"$sys/elfutils/libelf" -I"$sys/zlib" -c "$src" -o "$obj"
done

# the check: rustc alone (src/elf_check.rs uses std only), with libFuzzer's coverage
rustc --edition 2021 --crate-type staticlib -C opt-level=1 -C debuginfo=1 -C panic=abort \
  -C passes=sancov-module -C llvm-args=-sanitizer-coverage-level=4 \
  -C llvm-args=-sanitizer-coverage-inline-8bit-counters -C llvm-args=-sanitizer-coverage-pc-table \
  -C llvm-args=-sanitizer-coverage-trace-compares \
  -o "$out/libcheck.a" "$here/check.rs"

$CC -g -O1 -fsanitize=fuzzer,address -I"$sys/libbpf/src" -I"$sys/libbpf/include" -I"$sys/libbpf/include/uapi" \
  -I"$sys/elfutils/libelf" "$here/harness.c" "$out"/obj/*.o "$out/libcheck.a" \
  "$static/libelf.a" "$static/libz.a" -lpthread -ldl -lm -o "$out/fuzz-object"
echo "$out/fuzz-object"
