//! Counted nouns in what the commands print: `1 problem`, `2 problems`.

/// `n` and the noun: `one` when `n` is 1, else `many` (`plural(1, "pack", "packs")` is
/// `1 pack`).
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(plural(1, "problem", "problems"), "1 problem");
        assert_eq!(plural(0, "problem", "problems"), "0 problems");
        assert_eq!(plural(2, "entry", "entries"), "2 entries");
    }
}
