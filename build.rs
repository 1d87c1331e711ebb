//! Build script: the napi-rs setup, and libbpf's log callback in C.
//!
//! No BPF is compiled here: `npm run build:bpf` (scripts/build-bpf.js)
//! compiles the BPF programs against the vendored `include/<arch>/vmlinux.h`,
//! so building the addon needs neither clang nor the host's BTF, and
//! cross-building it works.

fn main() {
  napi_build::setup();

  // libbpf's print callback takes a va_list: formatted in C (src/libbpf_log.rs)
  println!("cargo:rerun-if-changed=src/libbpf_log.c");
  cc::Build::new().file("src/libbpf_log.c").warnings(true).compile("node_libbpf_log");
}
