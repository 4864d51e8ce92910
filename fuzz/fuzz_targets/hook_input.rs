//! The stdin parser on arbitrary bytes: never panics; when it accepts, every typed accessor
//! answers without panicking.

#![no_main]

use libfuzzer_sys::fuzz_target;
use preload_core::HookInput;

fuzz_target!(|data: &[u8]| {
    let Ok(input) = HookInput::parse(data) else {
        return;
    };
    let _ = (
        input.session_id(),
        input.transcript_path(),
        input.cwd(),
        input.event_name(),
    );
    let _ = (
        input.tool_name(),
        input.prompt(),
        input.source(),
        input.trigger(),
    );
    let _ = (
        input.agent_id(),
        input.stop_hook_active(),
        input.tool_input(),
    );
    let _ = (
        input.tool_input_str("command"),
        input.transcript_key(),
        input.tool_stdout(),
    );
});
