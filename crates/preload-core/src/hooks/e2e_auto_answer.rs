//! Placeholder for the `e2e_auto_answer` policy module.

/// Entry point of the binary.
pub fn main() -> std::process::ExitCode {
    std::process::ExitCode::SUCCESS
}
