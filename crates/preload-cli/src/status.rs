//! `preload status`: the active session or seed of this Claude process.
//!
//! What it has delivered and queued (the context packs loaded with their cost), and about how
//! much of the context it fills, for people or (`--json`) scripts.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Value, json};

use crate::exit::Exit;
use preload_core::mechanisms::context::Context;
use preload_core::mechanisms::packs;
use preload_core::mechanisms::session;
use preload_core::pipeline::runner;
use preload_core::primitives::delivery;
use preload_core::primitives::env::Env;
use preload_core::primitives::input::HookInput;
use preload_core::state::fields;
use preload_core::state::stamps;
use preload_core::state::{self, Audience, IN_CONTEXT, Phase, QUEUED, State};

/// `preload status`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct StatusArgs {
    /// Print JSON, for scripts.
    #[arg(long)]
    pub json: bool,
}

/// Run `preload status`.
pub fn run(args: &StatusArgs) -> ExitCode {
    let json_out = args.json;
    let input = HookInput::from_value(json!({ "cwd": crate::process_cwd() }));
    let ctx = Context::new(
        Env::from_process(),
        "preload",
        &input,
        Duration::from_secs(1),
    );
    let status = status(&ctx);
    let failed = status.get("error").is_some();
    if json_out {
        runner::print_text(&status.to_string());
    } else {
        runner::print_text(&render_status(&status));
    }
    if failed {
        Exit::Failure.into()
    } else {
        Exit::Success.into()
    }
}

fn file_entry(path: &str) -> Value {
    if let Some(name) = packs::name_of_key(path) {
        return json!({"path": path, "pack": name});
    }
    let size = fs::metadata(path)
        .ok()
        .filter(fs::Metadata::is_file)
        .map(|m| m.len());
    json!({"path": path, "bytes": size})
}

/// The status of the owner's session or seed as a JSON value.
pub fn status(ctx: &Context) -> Value {
    // The project is where a `.claude/` is; without one there is none (as `doctor` says).
    let project = preload_core::primitives::paths::find_project_root(&ctx.cwd);
    let mut out = json!({
        "project": project,
        "cwd": ctx.cwd,
        "ownerPid": ctx.owner_pid,
    });
    if project.is_none() {
        out["state"] = Value::Null;
        return out;
    }
    let Some(found) = session::existing_preload_state(ctx) else {
        out["state"] = Value::Null;
        return out;
    };
    out["state"] = json!(found.path);
    out["kind"] = json!(if found.is_session { "session" } else { "seed" });
    let state = match state::load(&found.path) {
        Ok(s) => s,
        Err(e) => {
            out["error"] = json!(e.to_string());
            return out;
        }
    };
    out[fields::LIFECYCLE] = json!(state.str(fields::LIFECYCLE));
    out[fields::SKILL] = json!(state.str(fields::SKILL));
    out["phase"] = json!(state.current_phase().map(Phase::as_str));
    let counters = state.counter_mirror();
    out["counters"] = json!({
        (fields::TOOL_CALLS_BY_TRANSCRIPT): counters.counts,
        (fields::TOOL_CALLS_SINCE_LAST_LOG): counters.since_last_log,
    });
    let (loaded_packs, files): (Vec<String>, Vec<String>) = state
        .path_list(IN_CONTEXT)
        .into_iter()
        .partition(|p| packs::is_key(p));
    let preloaded: Vec<Value> = files.iter().map(|p| file_entry(p)).collect();
    let pack_entries: Vec<Value> = loaded_packs
        .iter()
        .map(|key| pack_entry(ctx, &state, key))
        .collect();
    let pending: Vec<Value> = state
        .path_list(QUEUED)
        .iter()
        .map(|p| file_entry(p))
        .collect();
    out["preloaded"] = json!(preloaded);
    out["packs"] = json!(pack_entries);
    out["pending"] = json!(pending);
    out["parts"] = parts(&state);
    out["stashed"] = json!(stashed(&state));
    let pack_chars: usize = pack_entries
        .iter()
        .filter_map(|p| p["chars"].as_u64())
        .filter_map(|n| usize::try_from(n).ok())
        .sum();
    let chars = context_chars(&state, ctx.max_file_bytes()) + pack_chars;
    out["contextChars"] = json!(chars);
    out["estimatedTokens"] = json!(chars / 4);
    out
}

/// A loaded pack: its name and what it cost (as sent, else as it renders now).
fn pack_entry(ctx: &Context, state: &State, key: &str) -> Value {
    let chars = stamps::get(state, key).and_then(|s| s.chars).or_else(|| {
        let loaded = ctx.packs();
        let pack = loaded.by_key(key)?;
        Some(delivery::chars(
            &packs::render(loaded, pack, ctx.max_file_bytes()).text,
        ))
    });
    json!({
        "name": packs::name_of_key(key),
        "key": key,
        "chars": chars,
        "tokens": chars.map(|c| c.div_ceil(4)),
    })
}

/// How many parts of each file going out in parts are out to the main agent's window (an entry
/// that reads as no progress, none: the file goes out again from its first part).
fn parts(state: &State) -> Value {
    let files = state.files_in_parts(Audience::Main);
    if files.is_empty() {
        return Value::Null;
    }
    files
        .into_iter()
        .map(|path| {
            let done = state.parts_done(Audience::Main, &path).unwrap_or(0);
            (path, json!(done))
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// The stash's entries: the rule, the agent and the length of each.
fn stashed(state: &State) -> Vec<Value> {
    state
        .stash()
        .iter()
        .map(|e| {
            json!({
                "ruleId": e.rule_id(),
                "agentId": e.agent_id(),
                "chars": delivery::chars(e.content()),
            })
        })
        .collect()
}

/// Characters the preloaded files put in context (content only, as delivered).
fn context_chars(state: &State, max: u64) -> usize {
    state
        .path_list(IN_CONTEXT)
        .iter()
        .map(|p| match delivery::read_for_delivery(Path::new(p), max) {
            delivery::FileBody::Text(t) => delivery::chars(delivery::trim_trailing_newlines(&t)),
            _ => 0,
        })
        .sum()
}

fn render_status(s: &Value) -> String {
    let mut out = String::new();
    let text = |v: &Value| v.as_str().map_or_else(|| "-".to_owned(), str::to_owned);
    if s["project"].is_null() {
        let _ = write!(
            out,
            "project:   none (no .claude/ above {}), nothing to show",
            text(&s["cwd"])
        );
        return out;
    }
    let _ = writeln!(out, "project:   {}", text(&s["project"]));
    let _ = writeln!(out, "owner PID: {}", s["ownerPid"]);
    if s["state"].is_null() {
        let _ = write!(
            out,
            "no session or seed for this process yet (SessionStart creates the seed)"
        );
        return out;
    }
    let _ = writeln!(out, "{}:  {}", text(&s["kind"]), text(&s["state"]));
    if let Some(err) = s.get("error") {
        let _ = write!(out, "cannot read it: {}", text(err));
        return out;
    }
    let _ = writeln!(out, "lifecycle: {}", text(&s[fields::LIFECYCLE]));
    let _ = writeln!(out, "skill:     {}", text(&s[fields::SKILL]));
    let _ = writeln!(out, "phase:     {}", text(&s["phase"]));
    let since = &s["counters"][fields::TOOL_CALLS_SINCE_LAST_LOG];
    let by_transcript: Vec<String> = s["counters"][fields::TOOL_CALLS_BY_TRANSCRIPT]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(key, n)| format!("{key} {n}"))
        .collect();
    let _ = writeln!(
        out,
        "counters:  since last log {}, by transcript {}",
        if since.is_number() {
            since.to_string()
        } else {
            "-".to_owned()
        },
        if by_transcript.is_empty() {
            "-".to_owned()
        } else {
            by_transcript.join(", ")
        }
    );
    for (title, key) in [("preloaded", "preloaded"), ("pending", "pending")] {
        let list = s[key].as_array().cloned().unwrap_or_default();
        let _ = writeln!(out, "{title} ({}):", list.len());
        for f in list {
            let size = match (f["bytes"].as_u64(), f["pack"].as_str()) {
                (Some(b), _) => format!("{b} B"),
                (None, Some(_)) => "context pack".to_owned(),
                (None, None) => "missing".to_owned(),
            };
            let _ = writeln!(out, "  {}  {size}", text(&f["path"]));
        }
    }
    let loaded = s["packs"].as_array().cloned().unwrap_or_default();
    let _ = writeln!(out, "context packs loaded ({}):", loaded.len());
    for p in loaded {
        let cost = p["tokens"]
            .as_u64()
            .map_or_else(|| "cost unknown".to_owned(), |t| format!("~{t} tokens"));
        let _ = writeln!(out, "  {}  {cost}  ({})", text(&p["name"]), text(&p["key"]));
    }
    if let Some(parts) = s["parts"].as_object() {
        for (path, done) in parts {
            let done = match done.as_u64().and_then(|n| usize::try_from(n).ok()) {
                Some(n) => crate::words::plural(n, "part", "parts"),
                None => format!("{done} parts"),
            };
            let _ = writeln!(out, "  partly delivered: {path} ({done} out)");
        }
    }
    let stash = s["stashed"].as_array().cloned().unwrap_or_default();
    let _ = writeln!(out, "stashed injections ({}):", stash.len());
    for e in stash {
        let _ = writeln!(
            out,
            "  {} agent '{}' {} chars",
            text(&e["ruleId"]),
            text(&e["agentId"]),
            e["chars"]
        );
    }
    let _ = write!(
        out,
        "in context: {} chars, about {} tokens",
        s["contextChars"], s["estimatedTokens"]
    );
    out
}
