//! Answers kept for one hook call: what a call looks up once (a directory's physical path, a
//! file's identity, a skill) is not looked up again however many of its steps ask. A hook
//! process lives for one call, so what it found does not change under it. Clones share what
//! they know.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

/// Answers by key. A lock another thread poisoned only makes the call look again.
#[derive(Debug)]
pub struct Memo<K, V>(Arc<Mutex<HashMap<K, V>>>);

impl<K, V> Default for Memo<K, V> {
    fn default() -> Self {
        Self(Arc::default())
    }
}

impl<K, V> Clone for Memo<K, V> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<K: Hash + Eq, V: Clone> Memo<K, V> {
    /// The answer kept for `key`.
    pub fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.0.lock().ok()?.get(key).cloned()
    }

    /// Keep `value` as the answer for `key`.
    pub fn keep(&self, key: K, value: V) {
        if let Ok(mut known) = self.0.lock() {
            known.insert(key, value);
        }
    }

    /// The answer for `key`: the one kept, else `make`'s, kept.
    pub fn get_or_keep<Q>(&self, key: &Q, make: impl FnOnce() -> V) -> V
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        if let Some(known) = self.get(key) {
            return known;
        }
        let value = make();
        self.keep(key.to_owned(), value.clone());
        value
    }
}

#[cfg(test)]
mod tests {
    use super::Memo;
    use std::cell::Cell;

    #[test]
    fn an_answer_is_made_once_and_shared_by_clones() {
        let memo: Memo<String, Option<u32>> = Memo::default();
        let calls = Cell::new(0);
        let answer = || {
            calls.set(calls.get() + 1);
            None
        };
        assert_eq!(memo.get_or_keep("a", answer), None);
        assert_eq!(
            memo.clone().get_or_keep("a", answer),
            None,
            "a kept None is an answer"
        );
        assert_eq!(calls.get(), 1);
        memo.keep("b".to_owned(), Some(2));
        assert_eq!(memo.clone().get("b"), Some(Some(2)));
        assert_eq!(memo.get("c"), None);
    }
}
