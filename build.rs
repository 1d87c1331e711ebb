//! Build script: the napi-rs setup, then every BPF program of the project.
//!
//! `bpf/*.bpf.c` (the examples' kernel side) and `__test__/bpf/*.bpf.c` (the
//! test programs) are compiled with clang into `bpf/.output/<name>.bpf.o`,
//! next to the sources, so that examples and tests find them by a stable path.
//! `vmlinux.h` is dumped once from the running kernel's BTF with bpftool into
//! `bpf/.output/vmlinux.h`; CO-RE relocations make the objects portable to
//! other kernels with BTF. `npm run setup` installs clang and bpftool.

use std::{
    env, fs,
    path::{Path, PathBuf},
    process::Command,
};

use libbpf_cargo::SkeletonBuilder;

const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

fn main() {
    napi_build::setup();

    // libbpf's print callback takes a va_list: formatted in C (src/libbpf_log.rs)
    println!("cargo:rerun-if-changed=src/libbpf_log.c");
    cc::Build::new().file("src/libbpf_log.c").warnings(true).compile("node_libbpf_log");

    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = root.join("bpf/.output");
    fs::create_dir_all(&out).expect("create bpf/.output");
    generate_vmlinux_h(&out.join("vmlinux.h"));

    // <linux/*.h> (e.g. from usdt.bpf.h) include <asm/*.h>, which Debian
    // keeps under the multiarch directory that `-target bpf` does not search
    let multiarch = format!("/usr/include/{}-linux-gnu", env::var("CARGO_CFG_TARGET_ARCH").unwrap());

    for dir in ["bpf", "__test__/bpf"] {
        let dir = root.join(dir);
        println!("cargo:rerun-if-changed={}", dir.display());
        for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".h") {
                println!("cargo:rerun-if-changed={}", path.display());
            }
            let Some(stem) = name.strip_suffix(".bpf.c") else {
                continue;
            };
            println!("cargo:rerun-if-changed={}", path.display());
            // compiled aside, then renamed: a running example never sees half a file
            let obj = out.join(format!("{stem}.bpf.o"));
            let partial = out.join(format!(".{stem}.bpf.o.partial"));
            SkeletonBuilder::new()
                .source(&path)
                .obj(&partial)
                .clang_args([
                    format!("-I{}", out.display()),
                    format!("-I{}", root.join("bpf").display()),
                    format!("-idirafter{multiarch}"),
                    "-Wall".to_string(),
                    "-Wno-unused-function".to_string(),
                ])
                .build()
                .unwrap_or_else(|e| panic!("compiling {}: {e:#}", path.display()));
            fs::rename(&partial, &obj).expect("rename compiled BPF object");
        }
    }
}

/// Dumps the kernel's BTF as C (`vmlinux.h`), once per kernel BTF.
fn generate_vmlinux_h(dest: &Path) {
    println!("cargo:rerun-if-changed={VMLINUX_BTF}");
    if dest.exists() {
        return;
    }
    let output = Command::new("bpftool")
        .args(["btf", "dump", "file", VMLINUX_BTF, "format", "c"])
        .output()
        .unwrap_or_else(|e| {
            panic!("running bpftool to generate vmlinux.h: {e}; run `npm run setup` (installs bpftool and clang)")
        });
    assert!(
        output.status.success(),
        "bpftool btf dump failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    fs::write(dest, output.stdout).expect("write vmlinux.h");
}
