//! Unit tests of `bytes`: the same answers as a plain search or comparison, at every length and
//! alignment.

use super::*;

proptest::proptest! {
    #[test]
    fn searches_agree_with_a_plain_scan(
        haystack in proptest::collection::vec(proptest::sample::select(vec![b'a', b'\n', 0xA7, b'`']), 0..200),
        needle in proptest::sample::select(vec![b'a', b'\n', 0xA7, b'`', b'z']),
        skip in 0usize..40,
    ) {
        let haystack = haystack.get(skip.min(haystack.len())..).unwrap_or_default();
        let plain: Vec<usize> = haystack
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == needle)
            .map(|(i, _)| i)
            .collect();
        proptest::prop_assert_eq!(find(needle, haystack), plain.first().copied());
        proptest::prop_assert_eq!(rfind(needle, haystack), plain.last().copied());
        proptest::prop_assert_eq!(find_iter(needle, haystack).collect::<Vec<_>>(), plain);
    }
}

proptest::proptest! {
    /// Strings that share a prefix and then differ in a byte or in length, within and across
    /// words: equal exactly when the slices are.
    #[test]
    fn same_agrees_with_slice_equality(
        prefix in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
        a in proptest::collection::vec(proptest::sample::select(vec![0u8, 1, 0xFF]), 0..12),
        b in proptest::collection::vec(proptest::sample::select(vec![0u8, 1, 0xFF]), 0..12),
        skip in 0usize..8,
    ) {
        let x = [prefix.as_slice(), &a].concat();
        let y = [prefix.as_slice(), &b].concat();
        let x = x.get(skip.min(x.len())..).unwrap_or_default();
        let y = y.get(skip.min(y.len())..).unwrap_or_default();
        proptest::prop_assert_eq!(same(x, y), x == y);
        proptest::prop_assert!(same(x, x));
    }
}

proptest::proptest! {
    /// Over an alphabet that makes near misses likely: the answer of a plain window search.
    #[test]
    fn contains_agrees_with_a_plain_window_search(
        haystack in proptest::collection::vec(proptest::sample::select(vec![b'a', b'b', b'C', b'"']), 0..120),
        needle in proptest::collection::vec(proptest::sample::select(vec![b'a', b'b', b'C', b'"']), 0..5),
    ) {
        let plain = needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle.as_slice());
        proptest::prop_assert_eq!(contains(&haystack, &needle), plain);
    }
}

#[test]
fn contains_finds_a_key_at_either_end_and_not_a_near_miss() {
    let key = b"dehydratedContext";
    assert!(contains(b"dehydratedContext", key));
    assert!(contains(b"{\"a\": 1, \"dehydratedContext\": {}}", key));
    assert!(!contains(b"{\"dehydratedcontext\": {}}", key));
    assert!(!contains(b"hydratedContext", key));
    assert!(!contains(b"dehydratedContex", key));
    assert!(!contains(b"Context dehydrated", key));
}
