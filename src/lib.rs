#![deny(clippy::all)]
//! node-libbpf: drive eBPF from Node.js. This file only declares the
//! modules; each registers its own exports with `#[napi]`. The JavaScript
//! entry (index.js, lib/) wraps them: Rust owns the kernel, JavaScript owns
//! the JavaScript (the codec and the dispatcher).

mod attach;
mod btf;
mod buffer;
mod diagnose;
mod error;
mod globals;
mod iter;
mod kernel;
mod libbpf_log;
mod map;
mod names;
mod object;
mod options;
mod perf_event;
mod poller;
mod program;
mod release;
mod ring;
mod symbols;
mod threads;
mod tsfn;
