//! The operating system's interfaces that need `unsafe`, and nothing else: a hook process's
//! entry without the standard library's start-up ([`entry`]), its time budget kept by a timer
//! signal ([`watchdog`]), `renameat2` ([`rename`]), on macOS libproc (`libproc`), and in a musl
//! build the process's allocator (`allocator`).
//!
//! The workspace denies `unsafe`; this module alone allows it, and every block says why it is
//! sound (`SAFETY`). `tests/architecture.rs` keeps it so and counts the uses
//! (docs/architecture.md states the count).
#![allow(unsafe_code)]
#![warn(clippy::undocumented_unsafe_blocks)]

#[cfg(target_env = "musl")]
mod allocator;
pub mod entry;
#[cfg(target_os = "macos")]
pub mod libproc;
pub mod rename;
pub mod watchdog;
