#!/usr/bin/env bash
# Prints the one line that ends `make test`: how many end-to-end scenarios ran and why the
# others did not, from the records the scenarios leave in DIR (PRELOAD_E2E_STATUS; one file per
# scenario holding `ran`, `skipped: <reason>` or `failed: <reason>`).
set -uo pipefail
dir="${1:?usage: summary.sh DIR}"

total=0
ran=0
reasons=""
# True when some scenario did not run for want of the client (the opt-in real-engine scenario
# names its own way to run).
client_missing=0
for record in "$dir"/*; do
  [ -f "$record" ] || continue
  total=$((total + 1))
  outcome="$(head -n 1 "$record")"
  case "$outcome" in
    ran) ran=$((ran + 1)) ;;
    *) reasons="$reasons${outcome#*: }"$'\n'
       case "$outcome" in *PRELOAD_E2E_ENGINE*) ;; *) client_missing=1 ;; esac ;;
  esac
done

if [ "$total" -eq 0 ]; then
  echo "e2e: no end-to-end scenario was run (none left a record in $dir)"
elif [ "$ran" -eq "$total" ]; then
  echo "e2e: all $total end-to-end scenarios ran against the real clients (Claude Code and the Codex CLI)"
else
  why="$(printf '%s' "$reasons" | sort | uniq -c | sed 's/^ *\([0-9]*\) \(.*\)$/\2 (\1)/' \
    | awk 'NR > 1 { printf "; " } { printf "%s", $0 }')"
  hint=""
  if [ "$client_missing" -eq 1 ]; then
    hint=" To run them: make e2e-setup (installs the pinned clients into .e2e/), then make test"
  fi
  echo "e2e: $ran of $total end-to-end scenarios ran; $((total - ran)) did not: $why.$hint"
fi
