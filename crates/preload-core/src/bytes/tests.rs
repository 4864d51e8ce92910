//! Unit tests of `bytes`: the same answers as a plain search, at every length and alignment.

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
