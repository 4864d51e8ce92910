//! The § scanner on arbitrary text: never panics, and every reference it finds is a name of
//! `[A-Z0-9_]` (starting with a letter, no trailing underscore), so it can never name a path.

#![no_main]

use libfuzzer_sys::fuzz_target;
use preload_core::state::refs;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for reference in refs::scan(&text) {
        let name = &reference.name;
        assert!(name.starts_with(|c: char| c.is_ascii_uppercase()));
        assert!(!name.ends_with('_'));
        assert!(
            name.bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        );
        let file = reference.file_name();
        assert!(!file.contains('/') && !file.contains(".."));
    }
});
