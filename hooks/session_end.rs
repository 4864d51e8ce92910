//! SessionEnd (every reason): the ended context window's compaction marker and, when the Claude
//! process ends, the owner's seed go; sessions stay.

fn main() -> std::process::ExitCode {
    preload_core::hooks::session_end::main()
}
