#!/usr/bin/env bash
# make bench-bash ENGINE=<engine checkout> [JQ=<jq 1.7+>] [N=9]: the engine's bash hooks and the
# preload binaries that replace them, timed one after the other on the same inputs in the same
# sandbox (a HOME with the engine installed as its setup does, one active session owned by this
# script), the state restored before every call. Prints one line per hook: the median and p95
# wall time of each, in ms, over N calls (a call is killed after 10 s and counts as 10,000 ms). The figures docs/performance.md puts beside ours.
set -uo pipefail

die() { echo "bench-bash: $*" >&2; exit 2; }
here="$(cd "$(dirname "$0")/.." && pwd)"
engine="${ENGINE:-}"
[ -n "$engine" ] || die "usage: make bench-bash ENGINE=/path/to/engine/checkout [JQ=/path/to/jq]"
engine="$(cd "$engine" 2>/dev/null && pwd)" || die "no engine checkout at ${ENGINE}"
jq_bin="${JQ:-$(command -v jq || true)}"
[ -x "$jq_bin" ] || die "jq not found; pass JQ=/path/to/jq (1.7 or newer)"
n="${N:-9}"
bin="${BIN:-$here/target/release}"
[ -x "$bin/preload-overflow" ] || die "no release binaries in $bin (make release)"

root="$here/target/bench-bash"
rm -rf "$root"
mkdir -p "$root/jq-bin" "$root/tmp"
ln -s "$jq_bin" "$root/jq-bin/jq"
home="$root/home"
project="$root/project"
mkdir -p "$home/.claude/engine" "$project/.claude" "$project/sessions/bench" "$project/src"
if git -C "$engine" rev-parse --git-dir >/dev/null 2>&1; then
  git -C "$engine" archive --format=tar HEAD | tar -x -C "$home/.claude/engine"
else
  cp -a "$engine/." "$home/.claude/engine"
fi
(
  export HOME="$home"
  ACTIONS=()
  # shellcheck disable=SC1091
  source "$home/.claude/engine/scripts/setup-lib.sh" >/dev/null 2>&1
  setup_engine_symlinks "$home/.claude/engine" "$home/.claude" >/dev/null 2>&1
) || die "setup_engine_symlinks failed"
echo 'export const x = 1;' >"$project/src/a.ts"

# The active session: owned by this script, in phase 1 of /implement, 50 files preloaded.
state="$project/sessions/bench/.state.json"
files=$(for i in $(seq 1 50); do printf '"%s/src/f%d.ts",' "$project" "$i"; done)
cat >"$root/state.json" <<EOF
{"pid": $$, "skill": "implement", "lifecycle": "active", "currentPhase": "1: Interrogation",
 "startedAt": "2026-01-01T00:00:00Z", "toolCallsByTranscript": {}, "toolCallsSinceLastLog": 0,
 "preloadedFiles": [${files%,}], "pendingPreloads": [], "pendingAllowInjections": []}
EOF

now_ns() { date +%s%N; }
# median and p95 (ms, 2 decimals) of the numbers (ns) on stdin
stats() {
  sort -n | awk '{a[NR]=$1} END {m=a[int((NR+1)/2)]; p=a[int((NR*95+99)/100)];
    printf "%7.2f %7.2f", m/1e6, p/1e6}'
}
# time <input> <command...>: N calls, each on a restored state; prints "median p95"
time_calls() {
  local input="$1"; shift
  local i t0 t1
  for i in $(seq 1 "$n"); do
    cp "$root/state.json" "$state"
    rm -rf "$root/tmp/"* 2>/dev/null
    t0=$(now_ns)
    printf '%s' "$input" | (cd "$project" && env -i HOME="$home" PATH="$root/jq-bin:/usr/bin:/bin" \
      TMPDIR="$root/tmp" CLAUDE_SUPERVISOR_PID=$$ CLAUDE_PROJECT_DIR="$project" \
      PRELOAD_CACHE_DIR="$root/tmp" LANG=C.UTF-8 timeout 10 "$@") >/dev/null 2>&1
    t1=$(now_ns)
    echo $((t1 - t0))
  done | stats
}

hooks="$home/.claude/engine/hooks"
cwd="\"cwd\": \"$project\", \"session_id\": \"bench\", \"transcript_path\": \"$root/t.jsonl\""
pre_ls="{\"hook_event_name\": \"PreToolUse\", \"tool_name\": \"Bash\", \"tool_input\": {\"command\": \"ls\"}, $cwd}"
post_ls="{\"hook_event_name\": \"PostToolUse\", \"tool_name\": \"Bash\", \"tool_input\": {\"command\": \"ls\"}, \"tool_response\": {\"stdout\": \"a\"}, $cwd}"
post_phase="{\"hook_event_name\": \"PostToolUse\", \"tool_name\": \"Bash\", \"tool_input\": {\"command\": \"engine session phase sessions/bench \\\"2: Planning\\\"\"}, \"tool_response\": {\"stdout\": \"Phase: 2: Planning\\n\"}, $cwd}"
prompt="{\"hook_event_name\": \"UserPromptSubmit\", \"prompt\": \"Go ahead\", $cwd}"
start="{\"hook_event_name\": \"SessionStart\", \"source\": \"startup\", $cwd}"

printf '%-52s %17s %17s\n' "call (typical: 1 active session, 50 preloaded)" "bash median p95" "ours median p95"
row() {
  local what="$1" input="$2" script="$3" ours="$4"; shift 4
  local b o
  b=$(time_calls "$input" bash "$hooks/$script" "$@")
  o=$(time_calls "$input" "$bin/$ours" "${OURS_ARGS[@]}")
  printf '%-52s %17s %17s\n' "$what" "$b" "$o"
}
OURS_ARGS=()
row "PreToolUse Bash ls (overflow)" "$pre_ls" pre-tool-use-overflow-v2.sh preload-overflow
row "PostToolUse Bash ls (injections)" "$post_ls" post-tool-use-injections.sh preload-injections
row "PostToolUse Bash ls (templates)" "$post_ls" post-tool-use-templates.sh preload-templates
row "PostToolUse phase (phase commands)" "$post_phase" post-tool-use-phase-commands.sh preload-phase-commands
row "UserPromptSubmit (session gate)" "$prompt" user-prompt-submit-session-gate.sh preload-prompt-submit
OURS_ARGS=(--chunk 0/32)
row "SessionStart startup, slice 0 (generates the text)" "$start" session-start-chunk.sh preload-session-start 0 32
