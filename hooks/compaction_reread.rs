//! Hook binary: see `preload_core::hooks::compaction_reread`.

fn main() -> std::process::ExitCode {
    preload_core::hooks::compaction_reread::main()
}
