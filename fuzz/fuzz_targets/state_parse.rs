//! The lossless state document on arbitrary bytes: never panics, and whatever parses survives
//! a rewrite unchanged (the round trip every locked update relies on).

#![no_main]

use libfuzzer_sys::fuzz_target;
use preload_core::state::State;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(state) = State::parse(text) else {
        return;
    };
    let again = State::parse(&state.to_pretty()).expect("a rewrite parses");
    assert_eq!(state, again);
});
