#![deny(clippy::all)]
//! node-libbpf: drive eBPF from Node.js. This file only declares the
//! modules; each registers its own exports with `#[napi]`.

mod attach;
mod btf;
mod buffer;
mod error;
mod globals;
mod kernel;
mod libbpf_log;
mod map;
mod names;
mod object;
mod poller;
mod runtime;
mod symbols;
mod tsfn;
