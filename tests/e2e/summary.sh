#!/usr/bin/env bash
# Prints the one line that ends `make test`: how many end-to-end scenarios ran and why the
# others did not, from the records the scenarios leave in DIR (PRELOAD_E2E_STATUS; one file per
# scenario holding `ran`, `skipped: <reason>` or `failed: <reason>`).
set -uo pipefail
dir="${1:?usage: summary.sh DIR}"

total=0
ran=0
reasons=""
for record in "$dir"/*; do
  [ -f "$record" ] || continue
  total=$((total + 1))
  outcome="$(head -n 1 "$record")"
  case "$outcome" in
    ran) ran=$((ran + 1)) ;;
    *) reasons="$reasons${outcome#*: }"$'\n' ;;
  esac
done

if [ "$total" -eq 0 ]; then
  echo "e2e: no end-to-end scenario was run (none left a record in $dir)"
elif [ "$ran" -eq "$total" ]; then
  echo "e2e: all $total end-to-end scenarios ran against the real Claude Code client"
else
  why="$(printf '%s' "$reasons" | sort | uniq -c | sed 's/^ *\([0-9]*\) \(.*\)$/\2 (\1)/' | paste -sd ';' -)"
  echo "e2e: $ran of $total end-to-end scenarios ran; $((total - ran)) did not: $why." \
    "To run them: make e2e-setup (installs the pinned client into .e2e/), then make test"
fi
