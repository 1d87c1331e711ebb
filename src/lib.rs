#![deny(clippy::all)]
// The unit tests (`cargo test --lib`) see the `#[napi]` exports as dead: napi-derive registers them with
// Node only outside cfg(test), and JavaScript is what calls them.
#![cfg_attr(test, allow(dead_code))]
//! node-libbpf: drive eBPF from Node.js. This file only declares the
//! modules; each registers its own exports with `#[napi]`. The JavaScript
//! entry (index.js, lib/) wraps them: Rust owns the kernel, JavaScript owns
//! the JavaScript (the codec and the dispatcher).

mod attach;
mod btf;
mod buffer;
mod diagnose;
mod elf_check;
mod error;
mod globals;
mod iter;
mod kernel;
mod labels;
mod libbpf_log;
mod map;
mod mmap;
mod names;
mod object;
mod options;
mod perf_event;
mod poller;
mod privileges;
mod program;
mod queue;
mod release;
mod signals;
mod state;
mod symbols;
mod threads;
mod tids;
mod tsfn;
