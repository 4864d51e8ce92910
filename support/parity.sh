#!/usr/bin/env bash
# make parity ENGINE=<engine checkout>: runs the engine's own black-box hook suites twice in a
# throwaway HOME, once on the engine's bash hooks and once on the native binaries installed with
# `preload install --shims` (also over the engine's own hooks/ copies, which some suites call
# directly), and prints, per suite, the assertions passed on each side plus every assertion that
# passes on bash only. docs/parity.md explains each remaining difference.
#
# Needs: a checkout of the engine (idealic-ai/engine; never copied into this repository), jq 1.7
# or newer (JQ=/path/to/jq, else the first jq on PATH), the release binaries (built here).
# Exit status: 0 when it ran, whatever the comparison says; 2 when it could not run.
set -uo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
engine="${ENGINE:-}"
suites_default="overflow-v2 heartbeat-v2 overflow-v2-subagent post-tool-use-templates post-tool-use-injections user-prompt-submit-session-gate prompt-gate session-start-restore session-start-skill-delivery session-start-chunk session-start-fleet-priority pre-tool-use-discovery precompact-hook preload-pipeline"
suites="${SUITES:-$suites_default}"
per_suite_timeout="${PARITY_TIMEOUT:-300}"

die() { echo "parity: $*" >&2; exit 2; }

[ -n "$engine" ] || die "usage: make parity ENGINE=/path/to/engine/checkout (idealic-ai/engine)"
engine="$(cd "$engine" 2>/dev/null && pwd)" || die "no engine checkout at ${ENGINE}"
[ -f "$engine/scripts/lib.sh" ] && [ -f "$engine/scripts/setup-lib.sh" ] \
  || die "$engine does not look like the engine (no scripts/lib.sh, scripts/setup-lib.sh)"

jq_bin="${JQ:-$(command -v jq || true)}"
[ -x "$jq_bin" ] || die "jq not found; pass JQ=/path/to/jq (1.7 or newer)"
jq_version="$("$jq_bin" --version 2>/dev/null)"
case "$jq_version" in
  jq-1.[7-9]*|jq-1.[1-9][0-9]*|jq-[2-9]*) ;;
  *) die "the engine's scripts need jq 1.7 or newer; $jq_bin is ${jq_version:-unknown} (pass JQ=...)" ;;
esac

bin="${BIN:-$here/target/release}"
for b in preload preload-overflow preload-session-start; do
  [ -x "$bin/$b" ] || die "missing $bin/$b: run make release first"
done

# The engine's discovery ignores any path with a component named tmp, sessions, build, dist,
# node_modules or .git, so the whole run lives under target/parity (none of those names).
run_root="$here/target/parity"
rm -rf "$run_root"
mkdir -p "$run_root"
jq_dir="$run_root/jq-bin"
mkdir -p "$jq_dir"
ln -s "$jq_bin" "$jq_dir/jq"

# One throwaway HOME with the engine installed the way its setup does (setup_engine_symlinks).
make_home() {
  local home="$1"
  mkdir -p "$home/.claude"
  if git -C "$engine" rev-parse --git-dir >/dev/null 2>&1; then
    mkdir -p "$home/.claude/engine"
    git -C "$engine" archive --format=tar HEAD | tar -x -C "$home/.claude/engine"
  else
    cp -a "$engine" "$home/.claude/engine"
  fi
  (
    export HOME="$home"
    # shellcheck disable=SC1091
    ACTIONS=()
    source "$home/.claude/engine/scripts/setup-lib.sh" >/dev/null 2>&1
    setup_engine_symlinks "$home/.claude/engine" "$home/.claude" >/dev/null 2>&1
  ) || die "setup_engine_symlinks failed in $home"
}

# Install ours: binaries into the engine's bin/, shims over ~/.claude/hooks and over the
# engine's own hooks/ copies.
install_ours() {
  local home="$1"
  local prefix="$home/.claude/engine/bin"
  HOME="$home" "$bin/preload" install --shims --prefix "$prefix" \
    --settings "$home/.claude/parity-settings.json" >"$run_root/install.log" 2>&1 \
    || { cat "$run_root/install.log" >&2; die "preload install --shims failed"; }
  local shim
  for shim in "$home/.claude/hooks/"*.sh; do
    grep -q '^# preload-hooks shim' "$shim" 2>/dev/null || continue
    local name
    name="$(basename "$shim")"
    if [ -e "$home/.claude/engine/hooks/$name" ]; then
      cp "$shim" "$home/.claude/engine/hooks/$name"
      chmod +x "$home/.claude/engine/hooks/$name"
    fi
  done
}

# Run one suite; its PASS/FAIL lines (colours stripped) go to $out.
run_suite() {
  local home="$1" suite="$2" out="$3"
  local file="$home/.claude/engine/scripts/tests/test-$suite.sh"
  if [ ! -f "$file" ]; then
    echo "MISSING: test-$suite.sh" >"$out"
    return
  fi
  local work="$run_root/work-$(basename "$home")-$suite"
  mkdir -p "$work"
  (
    cd "$work" || exit 2
    env -i HOME="$home" PATH="$jq_dir:$PATH" TMPDIR="$work" TERM=dumb LANG=C.UTF-8 \
      timeout "$per_suite_timeout" bash "$file" 2>&1
  ) >"$out.raw" 2>&1
  local status=$?
  # Assertion lines, colours and indentation stripped.
  sed -e 's/\x1b\[[0-9;]*m//g' -e 's/^[[:space:]]*//' "$out.raw" | grep -E '^(PASS|FAIL): ' >"$out" || true
  if [ "$status" = 124 ]; then
    echo "FAIL: (suite timed out after ${per_suite_timeout}s)" >>"$out"
  fi
}

bash_home="$run_root/bash-home"
ours_home="$run_root/ours-home"
make_home "$bash_home"
make_home "$ours_home"
install_ours "$ours_home"

printf '%-34s %14s %14s\n' "suite" "bash pass/run" "ours pass/run"
total_bash=0; total_ours=0; total_runs_b=0; total_runs_o=0
report="$run_root/bash-only.txt"
: >"$report"
for suite in $suites; do
  run_suite "$bash_home" "$suite" "$run_root/$suite.bash"
  run_suite "$ours_home" "$suite" "$run_root/$suite.ours"
  pb=$(grep -c '^PASS: ' "$run_root/$suite.bash" || true)
  rb=$(grep -c -E '^(PASS|FAIL): ' "$run_root/$suite.bash" || true)
  po=$(grep -c '^PASS: ' "$run_root/$suite.ours" || true)
  ro=$(grep -c -E '^(PASS|FAIL): ' "$run_root/$suite.ours" || true)
  printf '%-34s %14s %14s\n' "$suite" "$pb/$rb" "$po/$ro"
  total_bash=$((total_bash + pb)); total_ours=$((total_ours + po))
  total_runs_b=$((total_runs_b + rb)); total_runs_o=$((total_runs_o + ro))
  # Assertions passing on bash and not on ours (as a multiset of messages).
  sed -n 's/^PASS: //p' "$run_root/$suite.bash" | sort >"$run_root/$suite.bash.pass"
  sed -n 's/^PASS: //p' "$run_root/$suite.ours" | sort >"$run_root/$suite.ours.pass"
  comm -23 "$run_root/$suite.bash.pass" "$run_root/$suite.ours.pass" | sed "s/^/$suite: /" >>"$report"
done
printf '%-34s %14s %14s\n' "total" "$total_bash/$total_runs_b" "$total_ours/$total_runs_o"
echo
if [ -s "$report" ]; then
  echo "passes on bash only ($(wc -l <"$report")):"
  sed 's/^/  /' "$report"
else
  echo "passes on bash only: none"
fi
echo
echo "raw suite output: $run_root/<suite>.{bash,ours}.raw"
