//! Running one client event's hooks as Claude Code wires them (`preload install`, or
//! `preload install --dispatch` under `PRELOAD_WIRING=dispatch`): every registration of the
//! event at once, each a real process; one of them optionally killed mid-call.

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};

use preload_test_support::sandbox::{Answer, Sandbox, Wiring};

/// A registration: binary and arguments.
pub type Reg = (&'static str, Vec<String>);

fn reg(binary: &'static str, args: &[&str]) -> Reg {
    (binary, args.iter().map(|a| (*a).to_owned()).collect())
}

/// Whether a Bash command line matches a `Bash(<prefix> *)` filter of the wiring.
fn bash_matches(input: &Value, prefixes: &[&str]) -> bool {
    let command = input["tool_input"]["command"].as_str().unwrap_or("");
    prefixes.iter().any(|p| command.trim_start().starts_with(p))
}

/// The variable `preload install --agent codex` writes into every command.
pub const AGENT_ENV: &str = "PRELOAD_AGENT";

/// The registrations of `event` for `input` on `wiring`; `codex`: as `preload install --agent
/// codex` wires them (no `if` filters: the templates and phase-commands hooks start on every
/// shell call and tell an engine command themselves).
pub fn registrations(wiring: Wiring, codex: bool, event: &str, input: &Value) -> Vec<Reg> {
    let tool = input["tool_name"].as_str().unwrap_or("");
    let chunks = preload_cli::install::wiring::SESSION_START_CHUNKS;
    if wiring == Wiring::Dispatch {
        if event == "SessionStart" {
            return (0..chunks)
                .map(|i| {
                    (
                        "preload-dispatch",
                        vec![
                            "SessionStart".into(),
                            "--chunk".into(),
                            format!("{i}/{chunks}"),
                        ],
                    )
                })
                .collect();
        }
        return vec![reg("preload-dispatch", &[event])];
    }
    match event {
        "SessionStart" => {
            let mut regs: Vec<Reg> = (0..chunks)
                .map(|i| {
                    (
                        "preload-session-start",
                        vec!["--chunk".into(), format!("{i}/{chunks}")],
                    )
                })
                .collect();
            if input["source"] == "compact" {
                regs.push(reg("preload-compaction-reread", &["sessionstart"]));
            }
            regs
        }
        "UserPromptSubmit" => vec![reg("preload-prompt-submit", &[])],
        "PreToolUse" => vec![
            reg("preload-overflow", &[]),
            reg("preload-compaction-reread", &["pretooluse"]),
        ],
        "PostToolUse" => {
            let mut regs = Vec::new();
            let activation = [
                "engine session activate ",
                "engine session continue ",
                "preload activate ",
            ];
            let bash = tool == "Bash";
            if tool == "Skill" || (bash && (codex || bash_matches(input, &activation))) {
                regs.push(reg("preload-templates", &[]));
            }
            let phase = ["engine session phase ", "preload phase "];
            if bash && (codex || bash_matches(input, &phase)) {
                regs.push(reg("preload-phase-commands", &[]));
            }
            regs.push(reg("preload-injections", &[]));
            if tool == "Skill" {
                regs.push(reg("preload-compaction-reread", &["register"]));
            }
            regs
        }
        "PreCompact" => vec![reg("preload-compaction-reread", &["precompact"])],
        "SessionEnd" => vec![reg("preload-session-end", &[])],
        "SubagentStart" => vec![reg("preload-subagent-start", &[])],
        _ => Vec::new(),
    }
}

/// The current conversation's transcript, `<session_id>.jsonl` as the client names it.
pub fn transcript(sb: &Sandbox) -> std::path::PathBuf {
    sb.root()
        .join("transcripts")
        .join(format!("{}.jsonl", sb.conversation))
}

/// Append the main agent's response making the calls `ids` to the current conversation's
/// transcript, as the client writes it: one line per `tool_use` block, each with the message's
/// id (what a compaction keeps is read from it), linked by `uuid` / `parentUuid` from `parent`
/// (the entries' `uuids`, one per call).
pub fn respond(sb: &Sandbox, ids: &[&str], parent: Option<&str>, uuids: &[String]) {
    let Some(first) = ids.first() else {
        return;
    };
    let mut parent = parent.map(str::to_owned);
    let rows: Vec<Value> = ids
        .iter()
        .zip(uuids)
        .map(|(id, uuid)| {
            let row = json!({"type": "assistant", "uuid": uuid, "parentUuid": parent,
                "sessionId": sb.conversation, "message": {"id": format!("msg_{first}"),
                "role": "assistant", "content": [{"type": "tool_use", "id": id}]}});
            parent = Some(uuid.clone());
            row
        })
        .collect();
    append(sb, &rows);
}

/// Append `rows` to the current conversation's transcript.
pub fn append(sb: &Sandbox, rows: &[Value]) {
    use std::io::Write;
    let path = transcript(sb);
    let mut lines = String::new();
    for row in rows {
        lines.push_str(&row.to_string());
        lines.push('\n');
    }
    std::fs::create_dir_all(path.parent().expect("a directory")).expect("transcripts/");
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(lines.as_bytes()))
        .expect("the transcript written");
}

/// The input as the client sends it (cwd, session id, transcript defaulted).
fn completed(sb: &Sandbox, mut input: Value) -> Value {
    if let Some(obj) = input.as_object_mut() {
        obj.entry("cwd").or_insert_with(|| json!(sb.project));
        obj.entry("session_id")
            .or_insert_with(|| json!(sb.conversation));
        obj.entry("transcript_path")
            .or_insert_with(|| json!(transcript(sb)));
    }
    input
}

/// One registration, killed after `kill` when given (then the client gets nothing: `None`).
fn run_one(sb: &Sandbox, r: &Reg, input: &Value, kill: Option<Duration>) -> Option<Answer> {
    let args: Vec<&str> = r.1.iter().map(String::as_str).collect();
    let Some(delay) = kill else {
        return Some(sb.run_args(r.0, &args, input.clone()));
    };
    let mut cmd = sb.std_command(r.0);
    cmd.args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("spawn a hook");
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input.to_string().as_bytes());
    }
    std::thread::sleep(delay);
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Every registration of `event` at once; the answers the client got, with the label of each
/// (`kill`: the index of a registration to kill and when).
pub fn event(
    sb: &Sandbox,
    event: &str,
    input: Value,
    kill: Option<(usize, Duration)>,
) -> Vec<(String, Answer)> {
    let input = completed(sb, input);
    let codex = sb
        .extra_env
        .iter()
        .any(|(k, v)| k == AGENT_ENV && v == "codex");
    let regs = registrations(sb.wiring, codex, event, &input);
    std::thread::scope(|scope| {
        let handles: Vec<_> = regs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let input = &input;
                let k = kill.filter(|(at, _)| *at % regs.len() == i).map(|(_, d)| d);
                scope.spawn(move || {
                    let label = format!("{event} {} {}", r.0, r.1.join(" "));
                    run_one(sb, r, input, k).map(|a| (label, a))
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().expect("a hook thread"))
            .collect()
    })
}
