//! Layer 2, the pipeline: the protocol and the decisions every hook shares: [`runner`] (stdin to
//! stdout, for one policy or an event's several), [`rules`] (`guards.json`), [`preload`] (queue,
//! claim, deliver), [`activation`].

pub mod activation;
pub mod preload;
pub mod rules;
pub mod runner;
