//! BPF maps mapped into this process and read in place, with no syscall:
//! ring buffers (`ring`) and BPF_F_MMAPABLE arrays (`array`). They depend
//! on the error type alone; nothing here knows who reads them.

pub(crate) mod array;
pub(crate) mod ring;
