//! Merging the wiring into a parsed settings document, and taking it out again.
//!
//! Reading and writing the file is [`super::settings`]. Everything that is not ours is kept:
//! foreign hooks, other keys and key order. Our handlers are recognised by the file name of
//! their command (any directory), the engine's bash handlers by the script name in their
//! command line. Our handlers go where the bash handlers they replace were, else into the first
//! group with their matcher, else into a new group.

use serde_json::{Map, Value};

use super::wiring::{
    Agent, WiringMode, all_handlers, group, matcher_of, our_binary, replaced_script, wanted_for,
};

/// True when two matchers select the same calls (no matcher and `*` both match everything).
fn same_matcher(a: &str, b: Option<&str>) -> bool {
    let b = b.unwrap_or("");
    a == b || (a.is_empty() && b == "*") || (a == "*" && b.is_empty())
}

/// What [`strip`] removed: the first position per (event, matcher) where a handler went, as
/// (event, matcher, group index, handler index), and the groups it emptied.
#[derive(Debug, Default)]
struct Stripped {
    first: Vec<(String, String, usize, usize)>,
    emptied: Vec<(String, usize)>,
}

/// Remove the handlers `drop` selects from every event. Emptied groups stay in place (so
/// positions hold while handlers are inserted) until [`tidy`] removes them.
fn strip(hooks: &mut Map<String, Value>, drop: &dyn Fn(&Value) -> bool) -> Stripped {
    let mut out = Stripped::default();
    for (event, groups) in hooks.iter_mut() {
        let Value::Array(groups) = groups else {
            continue;
        };
        for (gi, g) in groups.iter_mut().enumerate() {
            let matcher = matcher_of(g).to_owned();
            let Some(Value::Array(list)) = g.get_mut("hooks") else {
                continue;
            };
            let before = list.len();
            let mut kept = 0;
            let mut at = None;
            list.retain(|h| {
                let remove = drop(h);
                if remove && at.is_none() {
                    at = Some(kept);
                }
                if !remove {
                    kept += 1;
                }
                !remove
            });
            if let Some(h) = at {
                if !out
                    .first
                    .iter()
                    .any(|(e, m, _, _)| e == event && *m == matcher)
                {
                    out.first.push((event.clone(), matcher, gi, h));
                }
            }
            if before > 0 && list.is_empty() {
                out.emptied.push((event.clone(), gi));
            }
        }
    }
    out
}

/// Remove the groups [`strip`] emptied that are still empty, and events left with no group.
fn tidy(hooks: &mut Map<String, Value>, stripped: &Stripped) {
    for (event, gi) in stripped.emptied.iter().rev() {
        if let Some(Value::Array(groups)) = hooks.get_mut(event) {
            let empty = groups
                .get(*gi)
                .and_then(|g| g.get("hooks"))
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty);
            if empty {
                groups.remove(*gi);
            }
        }
    }
    let mut seen: Vec<&String> = stripped.emptied.iter().map(|(e, _)| e).collect();
    seen.dedup();
    for event in seen {
        if hooks
            .get(event)
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
        {
            hooks.shift_remove(event);
        }
    }
}

/// Insert `handlers` into the group of `event` + `matcher`: at `at` when given, else appended
/// to the first group with that matcher, else as a new group at the end.
fn insert(
    hooks: &mut Map<String, Value>,
    event: &str,
    matcher: Option<&str>,
    handlers: Vec<Value>,
    at: Option<(usize, usize)>,
) {
    let groups = hooks
        .entry(event.to_owned())
        .or_insert_with(|| Value::Array(Vec::new()));
    if !groups.is_array() {
        *groups = Value::Array(Vec::new());
    }
    let Value::Array(groups) = groups else { return };
    let index = match at {
        Some((g, _))
            if groups
                .get(g)
                .is_some_and(|x| same_matcher(matcher_of(x), matcher)) =>
        {
            Some(g)
        }
        _ => groups.iter().position(|g| {
            same_matcher(matcher_of(g), matcher) && g.get("hooks").is_some_and(Value::is_array)
        }),
    };
    match index {
        Some(g) => {
            if let Some(Value::Array(list)) = groups[g].get_mut("hooks") {
                let h = at
                    .filter(|(ag, _)| *ag == g)
                    .map_or(list.len(), |(_, h)| h.min(list.len()));
                for (offset, handler) in handlers.into_iter().enumerate() {
                    list.insert(h + offset, handler);
                }
            }
        }
        None => groups.push(group(matcher, handlers)),
    }
}

/// The settings document with our wiring merged in (bash handlers we replace and any earlier
/// wiring of ours removed). With `native` false only the removal of our handlers happens
/// (`--shims`, where the bash handlers stay and run the shims).
pub fn wire(settings: &Value, prefix: &str, native: bool) -> Value {
    wire_in(
        settings,
        prefix,
        native,
        WiringMode::Binaries,
        Agent::ClaudeCode,
    )
}

/// [`wire`] with the handlers of `mode`, as `agent` runs them.
pub fn wire_in(
    settings: &Value,
    prefix: &str,
    native: bool,
    mode: WiringMode,
    agent: Agent,
) -> Value {
    let mut doc = match settings {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    let had_hooks = doc.contains_key("hooks");
    let hooks = doc
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    if !hooks.is_object() {
        *hooks = Value::Object(Map::new());
    }
    if let Value::Object(hooks) = hooks {
        let drop: &dyn Fn(&Value) -> bool = if native {
            &|h: &Value| our_binary(h).is_some() || replaced_script(h).is_some()
        } else {
            &|h: &Value| our_binary(h).is_some()
        };
        let stripped = strip(hooks, drop);
        if native {
            for (event, matcher, handlers) in wanted_for(prefix, mode, agent) {
                let at = stripped
                    .first
                    .iter()
                    .find(|(e, m, _, _)| e == event && same_matcher(m, matcher))
                    .map(|(_, _, g, h)| (*g, *h));
                insert(hooks, event, matcher, handlers, at);
            }
        }
        tidy(hooks, &stripped);
    }
    if !had_hooks
        && doc
            .get("hooks")
            .is_some_and(|h| h.as_object().is_some_and(Map::is_empty))
    {
        doc.shift_remove("hooks");
    }
    Value::Object(doc)
}

/// The settings document without our handlers, with the bash handlers of `backup` that the
/// wiring had replaced put back where they were.
pub fn unwire(settings: &Value, backup: Option<&Value>) -> Value {
    let mut doc = wire(settings, "", false);
    let restore = backup.map(replaced_handlers).unwrap_or_default();
    if restore.is_empty() {
        return doc;
    }
    if let Value::Object(map) = &mut doc {
        let hooks = map
            .entry("hooks")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(hooks) = hooks {
            for (event, matcher, gi, hi, handler) in restore {
                let present = hooks
                    .get(&event)
                    .and_then(Value::as_array)
                    .is_some_and(|gs| {
                        gs.iter().any(|g| {
                            g.get("hooks")
                                .and_then(Value::as_array)
                                .is_some_and(|l| l.contains(&handler))
                        })
                    });
                if !present {
                    let matcher = (!matcher.is_empty()).then_some(matcher.as_str());
                    insert(hooks, &event, matcher, vec![handler], Some((gi, hi)));
                }
            }
        }
    }
    doc
}

/// The replaced bash handlers of a settings document: (event, matcher, group, index, handler).
fn replaced_handlers(settings: &Value) -> Vec<(String, String, usize, usize, Value)> {
    let mut out = Vec::new();
    let Some(hooks) = settings.get("hooks").and_then(Value::as_object) else {
        return out;
    };
    for (event, groups) in hooks {
        for (gi, g) in groups.as_array().into_iter().flatten().enumerate() {
            for (hi, h) in g
                .get("hooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                if replaced_script(h).is_some() {
                    out.push((event.clone(), matcher_of(g).to_owned(), gi, hi, h.clone()));
                }
            }
        }
    }
    out
}

/// True when the document wires any binary of ours.
pub fn has_our_handlers(settings: &Value) -> bool {
    all_handlers(settings).any(|(_, _, h)| our_binary(h).is_some())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bash(cmd: &str) -> Value {
        json!({"type": "command", "command": cmd, "timeout": 5})
    }

    #[test]
    fn wiring_replaces_bash_in_place_and_keeps_the_rest() {
        let settings = json!({
            "permissions": {"allow": ["Bash"]},
            "hooks": {
                "PreToolUse": [{"matcher": "*", "hooks": [
                    bash("~/.claude/hooks/pre-tool-use-overflow-v2.sh"),
                    bash("~/.claude/hooks/pre-tool-use-one-strike.sh"),
                ]}],
                "Stop": [{"hooks": [bash("~/.claude/hooks/stop-notify.sh")]}]
            },
            "model": "x"
        });
        let wired = wire(&settings, "/bin", true);
        let keys: Vec<&String> = wired.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["permissions", "hooks", "model"]);
        let pre = &wired["hooks"]["PreToolUse"][0]["hooks"];
        assert_eq!(pre[0]["command"], "/bin/preload-overflow");
        assert_eq!(pre[1]["args"], json!(["pretooluse"]));
        assert_eq!(
            pre[2]["command"],
            "~/.claude/hooks/pre-tool-use-one-strike.sh"
        );
        assert_eq!(
            wired["hooks"]["Stop"][0]["hooks"][0]["command"],
            "~/.claude/hooks/stop-notify.sh"
        );
        assert_eq!(wire(&wired, "/bin", true), wired, "idempotent");
        let back = unwire(&wired, Some(&settings));
        assert_eq!(back, settings);
    }
}
