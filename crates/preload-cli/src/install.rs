//! `preload install` and `preload uninstall`: put the native hooks in place and wire them into
//! a Claude Code settings file, or take them out again.
//!
//! Everything derives from two tables: [`WIRING`] (which binary serves which event and matcher,
//! with which arguments and timeout) and [`SHIMS`] (which engine script each binary replaces).
//! The committed `hooks/settings.json` and `hooks/shims/*` are renderings of these tables and a
//! test keeps them in step.
//!
//! Merging keeps everything that is not ours: foreign hooks, other keys, key order and the
//! file's indentation. Our handlers are recognised by the file name of their command (any
//! directory), the engine's bash handlers by the script name in their command line. A second
//! run writes nothing. The first install keeps the file as it was in `<settings>.preload-backup`;
//! uninstall restores that backup byte for byte when nothing else changed since, and otherwise
//! removes exactly our handlers and puts the replaced bash handlers back.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Serialize;
use serde_json::{Map, Value, json};

use preload_core::env::{self, Env};
use preload_core::paths::{self, EnginePaths};
use preload_core::runner;
use preload_core::state;

/// How many `--chunk I/N` registrations `SessionStart` gets.
///
/// Each slice stays within the 9,500-character output budget, so 32 slices carry up to 304,000
/// characters. The engine's six core standards alone are about 160,000 (the three large ones go
/// out in parts of 8,500, one slice each); with the active skill's SKILL.md, the current
/// phase's commands and templates, the session's artifacts and a dehydrated session's restore,
/// they all reach the first context window, as they did with the engine's 48 bash slots. What still does not fit stays queued
/// and goes out first on the next tool calls. An unused registration costs one process start
/// (about a millisecond, in parallel) and prints nothing.
pub const SESSION_START_CHUNKS: usize = 32;

/// Suffix of the backup kept next to a settings file or a replaced script.
pub const BACKUP_SUFFIX: &str = ".preload-backup";

/// The install directory under `$HOME` when `--prefix` is not given.
pub const DEFAULT_PREFIX: &str = ".claude/engine/bin";

/// How `hooks/settings.json` spells the install directory (exec form does not expand `~`, so
/// `preload install` writes absolute paths instead).
pub const TEMPLATE_PREFIX: &str = "~/.claude/engine/bin";

/// The first line after the shebang of every shim; marks a script as ours.
pub const SHIM_MARKER: &str = "# preload-hooks shim";

/// Every binary `preload install` copies (the e2e auto-answer hook included, though it is
/// never wired: it is for test sessions only).
pub const BINARIES: &[&str] = &[
    "preload",
    "preload-session-start",
    "preload-prompt-submit",
    "preload-templates",
    "preload-phase-commands",
    "preload-overflow",
    "preload-injections",
    "preload-compaction-reread",
    "preload-e2e-auto-answer",
];

/// One handler of the wiring: a binary with its arguments on one event and matcher.
#[derive(Debug, Clone, Copy)]
pub struct Wiring {
    /// Binary name.
    pub binary: &'static str,
    /// Arguments (exec form).
    pub args: &'static [&'static str],
    /// Claude Code event name.
    pub event: &'static str,
    /// Matcher; `None` for events without one or to match everything.
    pub matcher: Option<&'static str>,
    /// Timeout in seconds (the kill; each hook keeps to a far smaller budget of its own).
    pub timeout: u32,
    /// Wired as [`SESSION_START_CHUNKS`] registrations with `--chunk I/N`.
    pub chunked: bool,
}

/// The one wiring table: every handler `preload install` writes, in order.
pub const WIRING: &[Wiring] = &[
    Wiring {
        binary: "preload-session-start",
        args: &[],
        event: "SessionStart",
        matcher: None,
        timeout: 15,
        chunked: true,
    },
    Wiring {
        binary: "preload-compaction-reread",
        args: &["sessionstart"],
        event: "SessionStart",
        matcher: Some("compact"),
        timeout: 10,
        chunked: false,
    },
    Wiring {
        binary: "preload-prompt-submit",
        args: &[],
        event: "UserPromptSubmit",
        matcher: None,
        timeout: 10,
        chunked: false,
    },
    Wiring {
        binary: "preload-overflow",
        args: &[],
        event: "PreToolUse",
        matcher: Some("*"),
        timeout: 5,
        chunked: false,
    },
    Wiring {
        binary: "preload-compaction-reread",
        args: &["pretooluse"],
        event: "PreToolUse",
        matcher: Some("*"),
        timeout: 5,
        chunked: false,
    },
    Wiring {
        binary: "preload-injections",
        args: &[],
        event: "PostToolUse",
        matcher: Some("*"),
        timeout: 5,
        chunked: false,
    },
    Wiring {
        binary: "preload-templates",
        args: &[],
        event: "PostToolUse",
        matcher: Some("Skill|Bash"),
        timeout: 10,
        chunked: false,
    },
    Wiring {
        binary: "preload-phase-commands",
        args: &[],
        event: "PostToolUse",
        matcher: Some("Bash"),
        timeout: 5,
        chunked: false,
    },
    Wiring {
        binary: "preload-compaction-reread",
        args: &["register"],
        event: "PostToolUse",
        matcher: Some("Skill"),
        timeout: 5,
        chunked: false,
    },
    Wiring {
        binary: "preload-compaction-reread",
        args: &["precompact"],
        event: "PreCompact",
        matcher: None,
        timeout: 5,
        chunked: false,
    },
    Wiring {
        binary: "preload-compaction-reread",
        args: &["stop"],
        event: "Stop",
        matcher: None,
        timeout: 5,
        chunked: false,
    },
];

/// One engine hook script and the binary that replaces it.
#[derive(Debug, Clone, Copy)]
pub struct Shim {
    /// The engine's script name under `~/.claude/hooks/`.
    pub script: &'static str,
    /// The binary that replaces it.
    pub binary: &'static str,
    /// Bash text appended to the `exec` line (argument mapping).
    pub args: &'static str,
}

/// The engine scripts the binaries replace, one shim each.
pub const SHIMS: &[Shim] = &[
    Shim {
        script: "pre-tool-use-overflow-v2.sh",
        binary: "preload-overflow",
        args: "",
    },
    Shim {
        script: "post-tool-use-injections.sh",
        binary: "preload-injections",
        args: "",
    },
    Shim {
        script: "post-tool-use-templates.sh",
        binary: "preload-templates",
        args: "",
    },
    Shim {
        script: "post-tool-use-phase-commands.sh",
        binary: "preload-phase-commands",
        args: "",
    },
    Shim {
        script: "user-prompt-submit-session-gate.sh",
        binary: "preload-prompt-submit",
        args: "",
    },
    Shim {
        script: "session-start-restore.sh",
        binary: "preload-session-start",
        args: "",
    },
    Shim {
        script: "session-start-chunk.sh",
        binary: "preload-session-start",
        args: " --chunk \"${1:-0}/${2:-1}\"",
    },
    Shim {
        script: "e2e-auto-answer.sh",
        binary: "preload-e2e-auto-answer",
        args: "",
    },
];

/// The text of the shim for `shim`, running binaries from `prefix` (default: the install
/// directory under `$HOME`, spelled so bash expands it).
pub fn shim_text(shim: &Shim, prefix: Option<&Path>) -> String {
    let dir = prefix.map_or_else(
        || format!("$HOME/{DEFAULT_PREFIX}"),
        |p| p.display().to_string(),
    );
    format!(
        "#!/usr/bin/env bash\n{SHIM_MARKER}: the engine's {script}, replaced by the native {binary}.\nexec \"{dir}/{binary}\"{args}\n",
        script = shim.script,
        binary = shim.binary,
        args = shim.args,
    )
}

/// True when `path` is a shim written by `preload install --shims`.
pub fn is_shim(path: &Path) -> bool {
    fs::read_to_string(path)
        .is_ok_and(|t| t.lines().nth(1).is_some_and(|l| l.starts_with(SHIM_MARKER)))
}

/// Scripts whose bash handlers the native wiring replaces (the e2e hook is never wired).
fn replaced_scripts() -> impl Iterator<Item = &'static str> {
    SHIMS
        .iter()
        .filter(|s| WIRING.iter().any(|w| w.binary == s.binary))
        .map(|s| s.script)
}

/// The handlers of one wiring row, expanded (`--chunk I/N` for `SessionStart`).
fn handlers_of(row: &Wiring, prefix: &str) -> Vec<Value> {
    let command = format!("{prefix}/{}", row.binary);
    let handler = |args: Vec<String>| json!({"type": "command", "command": command, "args": args, "timeout": row.timeout});
    if row.chunked {
        (0..SESSION_START_CHUNKS)
            .map(|i| {
                let mut args: Vec<String> = row.args.iter().map(|a| (*a).to_owned()).collect();
                args.push("--chunk".into());
                args.push(format!("{i}/{SESSION_START_CHUNKS}"));
                handler(args)
            })
            .collect()
    } else {
        vec![handler(row.args.iter().map(|a| (*a).to_owned()).collect())]
    }
}

/// Our handlers grouped by (event, matcher), in table order.
fn wanted(prefix: &str) -> Vec<(&'static str, Option<&'static str>, Vec<Value>)> {
    let mut groups: Vec<(&str, Option<&str>, Vec<Value>)> = Vec::new();
    for row in WIRING {
        let handlers = handlers_of(row, prefix);
        match groups
            .iter_mut()
            .find(|(e, m, _)| *e == row.event && *m == row.matcher)
        {
            Some((_, _, list)) => list.extend(handlers),
            None => groups.push((row.event, row.matcher, handlers)),
        }
    }
    groups
}

/// The `hooks` object for binaries in `prefix`.
pub fn hooks_value(prefix: &str) -> Value {
    let mut hooks = Map::new();
    for (event, matcher, handlers) in wanted(prefix) {
        let list = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = list {
            list.push(group(matcher, handlers));
        }
    }
    Value::Object(hooks)
}

/// `hooks/settings.json`: the wiring with [`TEMPLATE_PREFIX`].
pub fn settings_template() -> String {
    let mut text = to_pretty(&json!({ "hooks": hooks_value(TEMPLATE_PREFIX) }), b"  ");
    text.push('\n');
    text
}

fn group(matcher: Option<&str>, handlers: Vec<Value>) -> Value {
    let mut g = Map::new();
    if let Some(m) = matcher {
        g.insert("matcher".into(), json!(m));
    }
    g.insert("hooks".into(), Value::Array(handlers));
    Value::Object(g)
}

fn matcher_of(group: &Value) -> &str {
    group.get("matcher").and_then(Value::as_str).unwrap_or("")
}

fn same_matcher(a: &str, b: Option<&str>) -> bool {
    let b = b.unwrap_or("");
    a == b || (a.is_empty() && b == "*") || (a == "*" && b.is_empty())
}

/// The binary a handler runs, when it is one of ours.
pub fn our_binary(handler: &Value) -> Option<&'static str> {
    let command = handler.get("command")?.as_str()?;
    let first = command.split_whitespace().next()?;
    let name = Path::new(first.trim_matches(|c| c == '"' || c == '\''))
        .file_name()?
        .to_str()?;
    WIRING.iter().map(|w| w.binary).find(|b| *b == name)
}

/// The engine script a bash handler runs, when it is one of those the wiring replaces.
pub fn replaced_script(handler: &Value) -> Option<&'static str> {
    if our_binary(handler).is_some() {
        return None;
    }
    let command = handler.get("command")?.as_str()?;
    command
        .split_whitespace()
        .map(|t| t.trim_matches(|c| c == '"' || c == '\''))
        .filter_map(|t| Path::new(t).file_name().and_then(|n| n.to_str()))
        .find_map(|name| replaced_scripts().find(|s| *s == name))
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
            for (event, matcher, handlers) in wanted(prefix) {
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

/// Every handler of a settings document: (event, matcher, handler).
pub fn all_handlers(settings: &Value) -> impl Iterator<Item = (&str, &str, &Value)> {
    settings
        .get("hooks")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|hooks| hooks.iter())
        .flat_map(|(event, groups)| {
            groups.as_array().into_iter().flatten().flat_map(move |g| {
                g.get("hooks")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(move |h| (event.as_str(), matcher_of(g), h))
            })
        })
}

/// How a settings file is laid out, so a rewrite changes only what it must.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Layout {
    indent: Vec<u8>,
    final_newline: bool,
}

impl Layout {
    fn of(text: &str) -> Self {
        let indent = text
            .lines()
            .skip(1)
            .find(|l| !l.trim().is_empty())
            .map(|l| {
                l.bytes()
                    .take_while(|b| *b == b' ' || *b == b'\t')
                    .collect::<Vec<u8>>()
            })
            .filter(|i| !i.is_empty())
            .unwrap_or_else(|| b"  ".to_vec());
        Self {
            indent,
            final_newline: text.is_empty() || text.ends_with('\n'),
        }
    }

    fn render(&self, value: &Value) -> String {
        let mut text = to_pretty(value, &self.indent);
        if self.final_newline {
            text.push('\n');
        }
        text
    }
}

fn to_pretty(value: &Value, indent: &[u8]) -> String {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(indent);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    if value.serialize(&mut ser).is_err() {
        return value.to_string();
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Why install or uninstall stopped.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// A file operation failed.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The settings file is not a JSON object; it is left as it is.
    #[error("{path} is not a JSON object ({why}); fix it first, it was not changed")]
    BadSettings {
        /// The settings file.
        path: PathBuf,
        /// The parse error.
        why: String,
    },
    /// Binaries to install are missing next to the running `preload`.
    #[error("missing in {dir}: {names}; build them first with `cargo build --release --locked`")]
    MissingBinaries {
        /// Where they were looked for.
        dir: PathBuf,
        /// Which are missing.
        names: String,
    },
    /// The command line was wrong.
    #[error("{0}")]
    Usage(String),
}

fn io_err(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> InstallError + use<> {
    let path = path.to_path_buf();
    move |source| InstallError::Io {
        action,
        path,
        source,
    }
}

/// `preload install`: where the binaries and the wiring go.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Options {
    /// Where the binaries go (default: ~/.claude/engine/bin).
    #[arg(long, value_name = "DIR", value_parser = crate::path_arg)]
    pub prefix: Option<PathBuf>,
    /// The settings file to wire (default: the project's .claude/settings.local.json).
    #[arg(long, value_name = "PATH", value_parser = crate::path_arg)]
    pub settings: Option<PathBuf>,
    /// Leave the settings alone and replace the engine's hook scripts by shims instead.
    #[arg(long)]
    pub shims: bool,
    /// Print the wiring and change nothing.
    #[arg(long)]
    pub print: bool,
}

/// `preload uninstall`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct UninstallArgs {
    /// Where the binaries were installed (default: ~/.claude/engine/bin).
    #[arg(long, value_name = "DIR", value_parser = crate::path_arg)]
    pub prefix: Option<PathBuf>,
    /// The settings file to unwire (default: the project's .claude/settings.local.json).
    #[arg(long, value_name = "PATH", value_parser = crate::path_arg)]
    pub settings: Option<PathBuf>,
}

/// Where things go: resolved from options, `HOME` and the working directory.
#[derive(Debug, Clone)]
pub struct Targets {
    /// `$HOME`.
    pub home: PathBuf,
    /// The binary directory.
    pub prefix: PathBuf,
    /// The settings file.
    pub settings: PathBuf,
}

impl Targets {
    /// Resolve the targets; the default settings file is the project's
    /// `.claude/settings.local.json` (project root = nearest ancestor of `cwd` with `.claude/`).
    pub fn resolve(opts: &Options, vars: &Env, cwd: &Path) -> Result<Self, InstallError> {
        let home = vars
            .get(env::HOME)
            .map(PathBuf::from)
            .ok_or_else(|| InstallError::Usage("HOME is not set".into()))?;
        let absolute = |p: &Path| {
            paths::lexical_clean(&cwd.join(paths::expand_tilde(&p.to_string_lossy(), &home)))
        };
        let prefix = opts
            .prefix
            .as_deref()
            .map_or_else(|| home.join(DEFAULT_PREFIX), absolute);
        let settings = match &opts.settings {
            Some(p) => absolute(p),
            None => paths::find_project_root(cwd)
                .map(|root| root.join(".claude/settings.local.json"))
                .ok_or_else(|| {
                    InstallError::Usage(format!(
                        "no project here: neither {} nor a parent has a .claude/ directory; run it in your project or pass --settings PATH",
                        cwd.display()
                    ))
                })?,
        };
        Ok(Self {
            home,
            prefix,
            settings,
        })
    }

    /// `~/.claude/hooks`.
    pub fn hooks_dir(&self) -> PathBuf {
        self.home.join(".claude/hooks")
    }
}

/// The shipped default rules (`hooks/guards.json`): the engine's own rule set.
pub const DEFAULT_GUARDS: &str = include_str!("../../../hooks/guards.json");

/// Write the default rules to `~/.claude/engine/guards.json` when the engine has none; an
/// existing file (even a broken one, which `preload doctor` reports) is never replaced. True
/// when written.
pub fn install_default_guards(home: &Path) -> Result<bool, InstallError> {
    let path = EnginePaths::new(home).guards;
    if fs::symlink_metadata(&path).is_ok() {
        return Ok(false);
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(io_err("create", dir))?;
    }
    preload_core::state::write_atomic(&path, DEFAULT_GUARDS.as_bytes())
        .map_err(|e| e.source)
        .map_err(io_err("write", &path))?;
    Ok(true)
}

/// The backup path of a file.
pub fn backup_of(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(BACKUP_SUFFIX);
    PathBuf::from(name)
}

/// A settings file read: its text (`None` when absent) and its parsed document.
struct SettingsFile {
    text: Option<String>,
    doc: Value,
}

fn read_settings(path: &Path) -> Result<SettingsFile, InstallError> {
    match fs::read_to_string(path) {
        Ok(text) => {
            let doc = if text.trim().is_empty() {
                Value::Object(Map::new())
            } else {
                match serde_json::from_str::<Value>(&text) {
                    Ok(v @ Value::Object(_)) => v,
                    Ok(_) => {
                        return Err(InstallError::BadSettings {
                            path: path.into(),
                            why: "top level is not an object".into(),
                        });
                    }
                    Err(e) => {
                        return Err(InstallError::BadSettings {
                            path: path.into(),
                            why: e.to_string(),
                        });
                    }
                }
            };
            Ok(SettingsFile {
                text: Some(text),
                doc,
            })
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(SettingsFile {
            text: None,
            doc: Value::Object(Map::new()),
        }),
        Err(e) => Err(io_err("read", path)(e)),
    }
}

fn write_file(path: &Path, text: &str) -> Result<(), InstallError> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(io_err("create", dir))?;
    }
    state::write_atomic(path, text.as_bytes())
        .map_err(|e| e.source)
        .map_err(io_err("write", path))
}

/// What a settings change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The file already said exactly this.
    Unchanged,
    /// The file was written.
    Written,
    /// The backup was put back byte for byte (or the file removed, when it did not exist before).
    Restored,
}

/// Wire the settings file; keeps the backup. `native` false only removes our handlers.
pub fn install_settings(path: &Path, prefix: &Path, native: bool) -> Result<Change, InstallError> {
    let file = read_settings(path)?;
    let old = file.text.clone().unwrap_or_default();
    let layout = Layout::of(&old);
    let new_doc = wire(&file.doc, &prefix.to_string_lossy(), native);
    let new = layout.render(&new_doc);
    if file.text.as_deref() == Some(new.as_str()) || (file.text.is_none() && !native) {
        return Ok(Change::Unchanged);
    }
    let backup = backup_of(path);
    if !backup.exists() || !has_our_handlers(&file.doc) {
        // The state before preload was wired; an empty backup stands for "no file".
        write_file(&backup, &old)?;
    }
    write_file(path, &new)?;
    Ok(Change::Written)
}

/// Take our wiring out of the settings file (see the module docs for restore vs. merge).
pub fn uninstall_settings(path: &Path) -> Result<Change, InstallError> {
    let file = read_settings(path)?;
    let backup_path = backup_of(path);
    let backup = match fs::read_to_string(&backup_path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_err("read", &backup_path)(e)),
    };
    let Some(current) = file.text else {
        return Ok(Change::Unchanged);
    };
    let backup_doc = backup.as_deref().and_then(|t| {
        if t.trim().is_empty() {
            Some(Value::Object(Map::new()))
        } else {
            serde_json::from_str::<Value>(t)
                .ok()
                .filter(Value::is_object)
        }
    });
    if let (Some(text), Some(doc)) = (&backup, &backup_doc) {
        // Nothing changed since install: what install would write from the backup is exactly
        // what is there. Then the backup is the previous wiring, byte for byte.
        let installed_prefix = installed_prefix(&file.doc);
        if let Some(prefix) = installed_prefix {
            let expected = Layout::of(text).render(&wire(doc, &prefix, true));
            if expected == current {
                if text.is_empty() {
                    fs::remove_file(path).map_err(io_err("remove", path))?;
                } else {
                    write_file(path, text)?;
                }
                fs::remove_file(&backup_path).map_err(io_err("remove", &backup_path))?;
                return Ok(Change::Restored);
            }
        }
    }
    let new = Layout::of(&current).render(&unwire(&file.doc, backup_doc.as_ref()));
    if new == current {
        return Ok(Change::Unchanged);
    }
    write_file(path, &new)?;
    Ok(Change::Written)
}

/// The directory our handlers' commands live in, when they all agree.
fn installed_prefix(settings: &Value) -> Option<String> {
    let mut dirs = all_handlers(settings)
        .filter(|(_, _, h)| our_binary(h).is_some())
        .filter_map(|(_, _, h)| {
            let cmd = h.get("command")?.as_str()?;
            Path::new(cmd)
                .parent()
                .map(|p| p.to_string_lossy().into_owned())
        });
    let first = dirs.next()?;
    dirs.all(|d| d == first).then_some(first)
}

/// Copy the binaries from `from` into `prefix`; returns how many were (re)written.
pub fn install_binaries(from: &Path, prefix: &Path) -> Result<usize, InstallError> {
    let missing: Vec<&str> = BINARIES
        .iter()
        .copied()
        .filter(|b| !from.join(b).is_file())
        .collect();
    if !missing.is_empty() {
        return Err(InstallError::MissingBinaries {
            dir: from.to_path_buf(),
            names: missing.join(", "),
        });
    }
    if same_dir(from, prefix) {
        return Ok(0);
    }
    fs::create_dir_all(prefix).map_err(io_err("create", prefix))?;
    let mut copied = 0;
    for name in BINARIES {
        let source = from.join(name);
        let target = prefix.join(name);
        let bytes = fs::read(&source).map_err(io_err("read", &source))?;
        if fs::read(&target).is_ok_and(|old| old == bytes) {
            continue;
        }
        // A new file renamed over the old one: a running hook keeps its own copy.
        state::write_atomic(&target, &bytes)
            .map_err(|e| e.source)
            .map_err(io_err("write", &target))?;
        make_executable(&target)?;
        copied += 1;
    }
    Ok(copied)
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn make_executable(path: &Path) -> Result<(), InstallError> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).map_err(io_err("chmod", path))
}

/// Write the shims over the engine's scripts in `hooks_dir` (originals renamed to
/// `<script>.preload-backup`); returns (written, skipped because the engine has no such script).
pub fn install_shims(
    hooks_dir: &Path,
    prefix: &Path,
) -> Result<(Vec<&'static str>, Vec<&'static str>), InstallError> {
    let mut written = Vec::new();
    let mut skipped = Vec::new();
    for shim in SHIMS {
        let target = hooks_dir.join(shim.script);
        let text = shim_text(shim, Some(prefix));
        let exists = fs::symlink_metadata(&target).is_ok();
        if !exists {
            skipped.push(shim.script);
            continue;
        }
        if is_shim(&target) {
            if fs::read_to_string(&target).is_ok_and(|t| t == text) {
                continue;
            }
        } else {
            let backup = backup_of(&target);
            if fs::symlink_metadata(&backup).is_err() {
                // The engine's hooks are symlinks into the engine checkout: move the link
                // itself aside, never write through it.
                fs::rename(&target, &backup).map_err(io_err("back up", &target))?;
            } else {
                fs::remove_file(&target).map_err(io_err("replace", &target))?;
            }
        }
        state::write_atomic(&target, text.as_bytes())
            .map_err(|e| e.source)
            .map_err(io_err("write", &target))?;
        make_executable(&target)?;
        written.push(shim.script);
    }
    Ok((written, skipped))
}

/// Put the engine's scripts back where shims were written; returns the restored names.
pub fn uninstall_shims(hooks_dir: &Path) -> Result<Vec<&'static str>, InstallError> {
    let mut restored = Vec::new();
    for shim in SHIMS {
        let target = hooks_dir.join(shim.script);
        let backup = backup_of(&target);
        if is_shim(&target) && fs::symlink_metadata(&backup).is_ok() {
            fs::rename(&backup, &target).map_err(io_err("restore", &target))?;
            restored.push(shim.script);
        }
    }
    Ok(restored)
}

/// Run `preload install`.
pub fn run_install(opts: &Options) -> ExitCode {
    run("install", opts, install)
}

/// Run `preload uninstall`.
pub fn run_uninstall(args: &UninstallArgs) -> ExitCode {
    let opts = Options {
        prefix: args.prefix.clone(),
        settings: args.settings.clone(),
        ..Options::default()
    };
    run("uninstall", &opts, |_, targets| uninstall(targets))
}

fn run(
    name: &str,
    opts: &Options,
    act: impl FnOnce(&Options, &Targets) -> Result<Vec<String>, InstallError>,
) -> ExitCode {
    let vars = Env::from_process();
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let result = Targets::resolve(opts, &vars, &cwd).and_then(|targets| act(opts, &targets));
    match result {
        Ok(lines) => {
            runner::print_text(&lines.join("\n"));
            ExitCode::SUCCESS
        }
        Err(err @ InstallError::Usage(_)) => {
            complain(&format!("preload {name}: {err}"));
            ExitCode::from(2)
        }
        Err(err) => {
            complain(&format!("preload {name}: {err}"));
            ExitCode::from(1)
        }
    }
}

/// Print an error of the command line to stderr.
#[allow(clippy::print_stderr)]
pub(crate) fn complain(message: &str) {
    eprintln!("{message}");
}

fn install(opts: &Options, targets: &Targets) -> Result<Vec<String>, InstallError> {
    if opts.print {
        let text = to_pretty(
            &json!({ "hooks": hooks_value(&targets.prefix.to_string_lossy()) }),
            b"  ",
        );
        return Ok(vec![text]);
    }
    let mut lines = Vec::new();
    let exe = std::env::current_exe().map_err(io_err("locate", Path::new("preload")))?;
    let from = exe.parent().unwrap_or(Path::new("."));
    let copied = install_binaries(from, &targets.prefix)?;
    lines.push(format!(
        "binaries: {} in {} ({copied} updated)",
        BINARIES.len(),
        targets.prefix.display()
    ));
    if install_default_guards(&targets.home)? {
        lines.push(format!(
            "rules: the engine had no guards.json; the default rules written to {}",
            EnginePaths::new(&targets.home).guards.display()
        ));
    }
    if opts.shims {
        let (written, skipped) = install_shims(&targets.hooks_dir(), &targets.prefix)?;
        lines.push(format!(
            "shims: {} written in {}{}",
            written.len(),
            targets.hooks_dir().display(),
            if skipped.is_empty() {
                String::new()
            } else {
                format!(" (no engine script to replace: {})", skipped.join(", "))
            }
        ));
    }
    let change = install_settings(&targets.settings, &targets.prefix, !opts.shims)?;
    let what = match (change, opts.shims) {
        (Change::Unchanged, false) => "already wired, nothing changed",
        (Change::Unchanged, true) => "no native wiring to remove",
        (_, false) => "wired (backup kept)",
        (_, true) => "native wiring removed (the bash entries run the shims)",
    };
    lines.push(format!("settings: {} {what}", targets.settings.display()));
    if change != Change::Unchanged {
        lines.push(format!(
            "backup: {}",
            backup_of(&targets.settings).display()
        ));
    }
    lines.push("check with: preload doctor".into());
    Ok(lines)
}

fn uninstall(targets: &Targets) -> Result<Vec<String>, InstallError> {
    let mut lines = Vec::new();
    let change = uninstall_settings(&targets.settings)?;
    lines.push(format!(
        "settings: {} {}",
        targets.settings.display(),
        match change {
            Change::Unchanged => "had no preload wiring",
            Change::Written => "preload wiring removed, the replaced bash hooks put back",
            Change::Restored => "restored from the backup",
        }
    ));
    let restored = uninstall_shims(&targets.hooks_dir())?;
    if !restored.is_empty() {
        lines.push(format!("shims: {} engine scripts restored", restored.len()));
    }
    lines.push(format!(
        "binaries left in {} (remove the directory to delete them)",
        targets.prefix.display()
    ));
    Ok(lines)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn bash(cmd: &str) -> Value {
        json!({"type": "command", "command": cmd, "timeout": 5})
    }

    #[test]
    fn default_rules_are_written_only_where_the_engine_has_none() {
        let tmp = tempfile::tempdir().unwrap();
        let guards = EnginePaths::new(tmp.path()).guards;
        assert!(install_default_guards(tmp.path()).unwrap());
        let rules = preload_core::rules::parse(&fs::read_to_string(&guards).unwrap()).unwrap();
        assert!(rules.iter().any(|r| r.id == "preload"));
        fs::write(&guards, "[]").unwrap();
        assert!(!install_default_guards(tmp.path()).unwrap());
        assert_eq!(fs::read_to_string(&guards).unwrap(), "[]");
    }

    #[test]
    fn every_binary_of_the_wiring_is_installed() {
        for row in WIRING {
            assert!(BINARIES.contains(&row.binary), "{}", row.binary);
        }
        assert!(!WIRING.iter().any(|w| w.binary == "preload-e2e-auto-answer"));
    }

    #[test]
    fn recognises_ours_and_the_engines() {
        assert_eq!(
            our_binary(&json!({"command": "/x/bin/preload-overflow", "args": []})),
            Some("preload-overflow")
        );
        assert_eq!(our_binary(&bash("/x/other-hook")), None);
        assert_eq!(
            replaced_script(&bash("~/.claude/hooks/session-start-chunk.sh 3 48")),
            Some("session-start-chunk.sh")
        );
        assert_eq!(
            replaced_script(&bash(
                "bash \"$HOME/.claude/hooks/pre-tool-use-overflow-v2.sh\""
            )),
            Some("pre-tool-use-overflow-v2.sh")
        );
        assert_eq!(
            replaced_script(&bash("~/.claude/hooks/stop-notify.sh")),
            None
        );
        assert_eq!(
            replaced_script(&bash("~/.claude/hooks/e2e-auto-answer.sh")),
            None
        );
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

    #[test]
    fn session_start_gets_n_chunks() {
        let hooks = hooks_value("/b");
        let list = hooks["SessionStart"][0]["hooks"].as_array().unwrap();
        let chunks: Vec<&Value> = list
            .iter()
            .filter(|h| h["command"] == "/b/preload-session-start")
            .collect();
        assert_eq!(chunks.len(), SESSION_START_CHUNKS);
        assert_eq!(
            chunks[3]["args"],
            json!(["--chunk", format!("3/{SESSION_START_CHUNKS}")])
        );
    }

    #[test]
    fn layout_keeps_indent_and_final_newline() {
        let layout = Layout::of("{\n    \"a\": 1\n}");
        assert_eq!(layout.render(&json!({"a": 1})), "{\n    \"a\": 1\n}");
        assert_eq!(
            Layout::of("").render(&json!({"a": 1})),
            "{\n  \"a\": 1\n}\n"
        );
    }

    #[test]
    fn chunk_shim_maps_positional_arguments() {
        let shim = SHIMS
            .iter()
            .find(|s| s.script == "session-start-chunk.sh")
            .unwrap();
        let text = shim_text(shim, Some(Path::new("/opt/b")));
        assert!(text.contains("exec \"/opt/b/preload-session-start\" --chunk \"${1:-0}/${2:-1}\""));
        assert_eq!(text.lines().filter(|l| l.starts_with("exec")).count(), 1);
    }
}
