//! Tool whitelists (`Tool(glob)` entries, matched the way the engine's `[[ == ]]` does) and engine
//! command detection.

use serde_json::{Map, Value};

/// The `tool_input` field a `Tool(glob)` whitelist entry is matched against.
pub fn primary_field(tool: &str) -> Option<&'static str> {
    match tool {
        // Codex's shell is `Bash` too; its `apply_patch` carries the patch in `command`.
        "Bash" | "apply_patch" => Some("command"),
        "Read" | "Edit" | "Write" => Some("file_path"),
        "Skill" => Some("skill"),
        "Glob" | "Grep" => Some("pattern"),
        _ => None,
    }
}

/// The engine's `[[ value == glob ]]` (bash pattern matching, no extglob): `*` matches any run of
/// characters, `/` included; `?` one character; `[...]` one character of a bracket expression
/// (members, ranges `a-z`, negation with `!` or `^`, a leading `]` is a member, `\` escapes);
/// `\` makes the next character literal. As in bash, a `[` with no closing `]` is a literal `[`,
/// a range whose end is below its start matches nothing, and braces are plain characters.
///
/// Matched directly on the characters, with no compilation: whitelists are checked on the
/// PreToolUse path of every call a blocking rule stops.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    // Where the last `*` was, and the text position it is now taken to end at.
    let mut resume: Option<(usize, usize)> = None;
    loop {
        let step = match pattern.get(p) {
            None if t == text.len() => return true,
            None => None,
            Some('*') => {
                resume = Some((p + 1, t));
                p += 1;
                continue;
            }
            Some(_) if t == text.len() => None,
            Some('?') => Some(p + 1),
            Some('[') => match bracket(&pattern, p + 1, text[t]) {
                Bracket::Closed { matched, end } => matched.then_some(end),
                Bracket::Unclosed => (text[t] == '[').then_some(p + 1),
                Bracket::Broken => None,
            },
            Some('\\') if p + 1 < pattern.len() => (pattern[p + 1] == text[t]).then_some(p + 2),
            Some(&c) => (c == text[t]).then_some(p + 1),
        };
        match (step, resume) {
            (Some(next), _) => {
                p = next;
                t += 1;
            }
            // Let the last `*` take one more character and try again from after it.
            (None, Some((after_star, taken))) if taken < text.len() => {
                resume = Some((after_star, taken + 1));
                p = after_star;
                t = taken + 1;
            }
            (None, _) => return false,
        }
    }
}

/// What a bracket expression says about one character.
enum Bracket {
    /// Closed by a `]`: whether the character matched, and where the pattern goes on.
    Closed { matched: bool, end: usize },
    /// No closing `]`: the `[` is a literal.
    Unclosed,
    /// Cut off after a `\` or a range's `-`: matches nothing.
    Broken,
}

/// The bracket expression starting at `pattern[start]` (just after its `[`) against `c`,
/// member by member as bash reads it: the first member that matches ends the reading, and only
/// a closing `]` after it is looked for.
fn bracket(pattern: &[char], start: usize, c: char) -> Bracket {
    let at = |i: usize| pattern.get(i).copied();
    let mut i = start;
    let negated = matches!(at(i), Some('!' | '^'));
    if negated {
        i += 1;
    }
    // A member's character at `i` and the position after it, after a `\` when there is one.
    let literal = |i: usize| match at(i)? {
        '\\' => Some((at(i + 1)?, i + 2)),
        c => Some((c, i + 1)),
    };
    let mut first = true;
    loop {
        match at(i) {
            None => return Bracket::Unclosed,
            Some(']') if !first => {
                return Bracket::Closed {
                    matched: negated,
                    end: i + 1,
                };
            }
            Some(_) => first = false,
        }
        let Some((low, next)) = literal(i) else {
            return Bracket::Broken;
        };
        i = next;
        let mut high = low;
        match (at(i), at(i + 1)) {
            (None, _) => return Bracket::Unclosed,
            (Some('-'), Some(after)) if after != ']' => {
                let Some((end, next)) = literal(i + 1) else {
                    return Bracket::Broken;
                };
                high = end;
                i = next;
            }
            (Some('-'), None) => return Bracket::Broken,
            _ => {}
        }
        if low <= c && c <= high {
            return closing(pattern, i, !negated);
        }
    }
}

/// The rest of a bracket expression that has its answer (`matched`), from `i`: up to its `]`.
fn closing(pattern: &[char], mut i: usize, matched: bool) -> Bracket {
    loop {
        match pattern.get(i) {
            None => return Bracket::Unclosed,
            Some(']') => {
                return Bracket::Closed {
                    matched,
                    end: i + 1,
                };
            }
            Some('\\') if i + 1 == pattern.len() => return Bracket::Broken,
            Some('\\') => i += 2,
            Some(_) => i += 1,
        }
    }
}

/// One whitelist entry against a call: `Tool` matches any call of that tool; `Tool(glob)`
/// matches when the tool's primary input field matches the glob.
pub fn matches_entry(entry: &str, tool: &str, value: &str) -> bool {
    match entry.split_once('(') {
        Some((name, rest)) if rest.contains(')') => {
            let glob = rest.strip_suffix(')').unwrap_or(rest);
            name == tool && glob_match(glob, value)
        }
        _ => entry == tool,
    }
}

/// Whether a call passes a whitelist; an empty whitelist never matches.
pub fn matches_whitelist<S: AsRef<str>>(
    whitelist: &[S],
    tool: &str,
    input: Option<&Map<String, Value>>,
) -> bool {
    let value = primary_field(tool)
        .and_then(|f| input?.get(f))
        .and_then(Value::as_str)
        .unwrap_or("");
    whitelist
        .iter()
        .any(|entry| matches_entry(entry.as_ref(), tool, value))
}

/// `is_engine_cmd`: `engine <sub>` at the start of the command or right after `&&`, `;`, `|` or
/// a newline.
pub fn is_engine_cmd(command: &str, sub: &str) -> bool {
    let mut starts = vec![0];
    for (i, c) in command.char_indices() {
        if matches!(c, ';' | '|' | '\n') {
            starts.push(i + 1);
        } else if c == '&' && command[i + 1..].starts_with('&') {
            starts.push(i + 2);
        }
    }
    starts.into_iter().any(|at| {
        let seg = command[at..].trim_start();
        seg.strip_prefix("engine")
            .filter(|r| r.starts_with(char::is_whitespace))
            .map(str::trim_start)
            .and_then(|r| r.strip_prefix(sub))
            .is_some_and(|r| r.is_empty() || r.starts_with(char::is_whitespace))
    })
}
