//! The rule engine of `guards.json`: triggers, payload references, whitelists, composition.
