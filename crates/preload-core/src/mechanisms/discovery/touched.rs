//! The paths a tool call touches, whose directories directive discovery walks: Claude Code's
//! file tools name theirs in `tool_input`; the Codex CLI reads through its shell and edits
//! through `apply_patch`, so the paths come out of the command line and the patch.

use crate::primitives::env::Agent;
use crate::primitives::input::HookInput;
use crate::primitives::shell;

/// Claude Code's tools whose path (`tool_input.file_path`, else `path`) discovery walks.
pub const FILE_TOOLS: [&str; 5] = ["Read", "Edit", "Write", "Glob", "Grep"];

/// Commands whose path arguments a Codex shell call reads.
const READERS: [&str; 7] = ["cat", "sed", "rg", "grep", "ls", "head", "tail"];

/// What one call touches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Touched {
    /// The paths, as the call wrote them (relative to its `cwd` or absolute).
    pub paths: Vec<String>,
    /// True when the call changes them (an edit arms a checklist).
    pub edits: bool,
}

/// The paths `input`'s tool call touches, as `agent` runs it.
pub fn touched(agent: Agent, input: &HookInput) -> Touched {
    let tool = input.tool_name().unwrap_or("");
    if FILE_TOOLS.contains(&tool) {
        let path = input
            .tool_input_str("file_path")
            .or_else(|| input.tool_input_str("path"));
        return Touched {
            paths: path.into_iter().map(str::to_owned).collect(),
            edits: matches!(tool, "Edit" | "Write"),
        };
    }
    if agent != Agent::Codex {
        return Touched::default();
    }
    let command = input.tool_input_str("command").unwrap_or("");
    match tool {
        "Bash" => Touched {
            paths: shell_reads(command),
            edits: false,
        },
        "apply_patch" => Touched {
            paths: patched(command),
            edits: true,
        },
        _ => Touched::default(),
    }
}

/// The files an `apply_patch` envelope names (`*** Update File:`, `*** Add File:`,
/// `*** Move to:`).
fn patched(patch: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in patch.lines() {
        let named = ["*** Update File:", "*** Add File:", "*** Move to:"]
            .iter()
            .find_map(|head| line.strip_prefix(head))
            .map(str::trim)
            .filter(|p| !p.is_empty());
        if let Some(path) = named {
            if !out.iter().any(|p| p == path) {
                out.push(path.to_owned());
            }
        }
    }
    out
}

/// The path arguments of the reading commands (`cat`, `sed`, `rg`, `grep`, `ls`, `head`,
/// `tail`) in a shell command line: each simple command of a list or pipeline, its leading
/// variable assignments skipped; a search's pattern and a `sed` script are not paths.
fn shell_reads(command: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for simple in shell::simple_commands(command) {
        let words: Vec<&str> = simple
            .iter()
            .map(String::as_str)
            .skip_while(|w| shell::is_assignment(w))
            .collect();
        let Some((&name, args)) = words.split_first() else {
            continue;
        };
        let name = name.rsplit('/').next().unwrap_or(name);
        if !READERS.contains(&name) {
            continue;
        }
        for path in path_args(name, args) {
            if !out.iter().any(|p| p == path) {
                out.push(path.to_owned());
            }
        }
    }
    out
}

/// The arguments of `name` that are paths.
fn path_args<'a>(name: &str, args: &[&'a str]) -> Vec<&'a str> {
    // Options that take the next word as their value.
    let valued: &[&str] = match name {
        "head" | "tail" => &["-n", "-c"],
        "sed" => &["-e", "-f", "-l"],
        "rg" | "grep" => &[
            "-e",
            "-f",
            "-g",
            "-t",
            "-T",
            "-m",
            "-A",
            "-B",
            "-C",
            "--glob",
            "--type",
            "--type-not",
            "--max-count",
            "--regexp",
            "--file",
        ],
        _ => &[],
    };
    // A search's first operand is its pattern, and a sed's its script, unless given by -e/-f.
    let mut pattern_given = false;
    let mut operands = Vec::new();
    let mut i = 0;
    let mut options_end = false;
    while let Some(&word) = args.get(i) {
        i += 1;
        if !options_end && word == "--" {
            options_end = true;
            continue;
        }
        if !options_end && word.starts_with('-') && word.len() > 1 {
            let flag = word.split_once('=').map_or(word, |(f, _)| f);
            if matches!(flag, "-e" | "-f" | "--regexp" | "--file") {
                pattern_given = true;
            }
            if valued.contains(&word) {
                i += 1;
            }
            continue;
        }
        operands.push(word);
    }
    let skip = usize::from(matches!(name, "sed" | "rg" | "grep") && !pattern_given);
    operands.into_iter().skip(skip).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn codex(tool: &str, command: &str) -> Touched {
        let input = HookInput::from_value(json!({"hook_event_name": "PreToolUse",
            "tool_name": tool, "tool_input": {"command": command}}));
        touched(Agent::Codex, &input)
    }

    #[test]
    fn claude_codes_file_tools_name_their_path() {
        let input = HookInput::from_value(json!({"tool_name": "Edit",
            "tool_input": {"file_path": "/p/src/a.ts"}}));
        let t = touched(Agent::ClaudeCode, &input);
        assert_eq!(t.paths, ["/p/src/a.ts"]);
        assert!(t.edits);
        let grep = HookInput::from_value(json!({"tool_name": "Grep",
            "tool_input": {"pattern": "x", "path": "src"}}));
        assert_eq!(touched(Agent::Codex, &grep).paths, ["src"]);
        // Claude Code's shell is not read for paths.
        let bash = HookInput::from_value(json!({"tool_name": "Bash",
            "tool_input": {"command": "cat src/a.ts"}}));
        assert_eq!(touched(Agent::ClaudeCode, &bash), Touched::default());
    }

    #[test]
    fn a_codex_shell_call_touches_what_its_readers_name() {
        assert_eq!(
            codex("Bash", "cat README.md docs/x.md").paths,
            ["README.md", "docs/x.md"]
        );
        assert_eq!(
            codex("Bash", "sed -n 1,80p 'src/my file.ts'").paths,
            ["src/my file.ts"]
        );
        assert_eq!(
            codex("Bash", "sed -n -e 5p a.md b.md").paths,
            ["a.md", "b.md"]
        );
        assert_eq!(
            codex("Bash", "rg -n \"fn main\" src lib").paths,
            ["src", "lib"]
        );
        assert_eq!(
            codex("Bash", "rg --glob '*.rs' -e todo crates").paths,
            ["crates"]
        );
        assert_eq!(
            codex("Bash", "head -n 20 a.txt && tail -5 b.txt").paths,
            ["a.txt", "b.txt"]
        );
        assert_eq!(
            codex("Bash", "ls -la packages/estimate/src").paths,
            ["packages/estimate/src"]
        );
        assert_eq!(
            codex(
                "Bash",
                "cd . && LC_ALL=C cat x.md 2>/dev/null | grep -v y > out.txt"
            )
            .paths,
            ["x.md"]
        );
        assert_eq!(codex("Bash", "/bin/cat -- -odd.md").paths, ["-odd.md"]);
        assert!(codex("Bash", "cargo test; echo done").paths.is_empty());
        assert!(codex("Bash", "rg pattern").paths.is_empty());
        assert!(!codex("Bash", "cat a").edits);
    }

    #[test]
    fn a_codex_patch_touches_the_files_it_names_and_edits() {
        let patch = "*** Begin Patch\n*** Update File: docs/x.md\n@@\n a\n-b\n+B\n\
                     *** Add File: src/new.rs\n+fn f() {}\n\
                     *** Update File: docs/x.md\n*** Move to: docs/y.md\n*** End Patch\n";
        let t = codex("apply_patch", patch);
        assert_eq!(t.paths, ["docs/x.md", "src/new.rs", "docs/y.md"]);
        assert!(t.edits);
        assert_eq!(codex("spawn_agent", "cat a"), Touched::default());
    }
}
