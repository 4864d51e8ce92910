//! The `preload` command line: activate, phase, install, uninstall, doctor, status, report.

fn main() -> std::process::ExitCode {
    preload_cli::main()
}
