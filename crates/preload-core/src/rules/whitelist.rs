//! Tool whitelists (`Tool(glob)` entries matched with `globset`) and engine command detection.

use serde_json::{Map, Value};

/// The `tool_input` field a `Tool(glob)` whitelist entry is matched against.
pub fn primary_field(tool: &str) -> Option<&'static str> {
    match tool {
        "Bash" => Some("command"),
        "Read" | "Edit" | "Write" => Some("file_path"),
        "Skill" => Some("skill"),
        "Glob" | "Grep" => Some("pattern"),
        _ => None,
    }
}

/// Shell-style glob match where `*` also matches `/` (`[[ value == glob ]]` in the engine):
/// `*`, `?`, `[...]` classes (with `!` or `^` negation and ranges) and `\` escapes, matched
/// with `globset`. A pattern `globset` cannot read (an unclosed `[`) matches itself only.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    // Braces are literal in the engine's `[[ == ]]`; `globset` would read them as alternatives.
    let mut literal_braces = String::with_capacity(pattern.len());
    let mut escaped = false;
    for c in pattern.chars() {
        if matches!(c, '{' | '}') && !escaped {
            literal_braces.push('\\');
        }
        escaped = c == '\\' && !escaped;
        literal_braces.push(c);
    }
    let glob = globset::GlobBuilder::new(&literal_braces)
        .literal_separator(false)
        .backslash_escape(true)
        .empty_alternates(true)
        .build();
    match glob {
        Ok(glob) => glob.compile_matcher().is_match(text),
        Err(_) => pattern == text,
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
