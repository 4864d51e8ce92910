#!/usr/bin/env bash
# A writer that takes the engine's mkdir lock the way lib.sh does and increments one numeric
# field of a jq-style (2-space indented) JSON file with sed: read, modify, write a temporary,
# rename, release. No jq, no python. Usage: bash-counter-writer.sh FILE FIELD ITERATIONS.
# Prints "<increments done> <lock timeouts> <locks reclaimed from a dead holder>".
f=$1 field=$2 iterations=$3
lock="$f.lock"
ok=0 fail=0 reclaimed=0
for ((i = 0; i < iterations; i++)); do
  got=0
  for ((try = 0; try < 300; try++)); do
    if mkdir "$lock" 2>/dev/null; then
      echo $$ >"$lock/pid"
      got=1
      break
    fi
    holder=$(cat "$lock/pid" 2>/dev/null)
    if [[ -n $holder ]] && ! kill -0 "$holder" 2>/dev/null; then
      rm -f "$lock/pid"
      rmdir "$lock" 2>/dev/null && reclaimed=$((reclaimed + 1))
      continue
    fi
    sleep 0.01
  done
  if ((got == 0)); then
    fail=$((fail + 1))
    continue
  fi
  content=$(<"$f")
  n=$(printf '%s\n' "$content" | sed -n "s/^  \"$field\": \([0-9][0-9]*\).*/\1/p")
  m=$((${n:-0} + 1))
  printf '%s\n' "$content" | sed "s/^  \"$field\": [0-9][0-9]*/  \"$field\": $m/" >"$f.tmp.$$"
  mv -f "$f.tmp.$$" "$f"
  rm -f "$lock/pid"
  rmdir "$lock"
  ok=$((ok + 1))
done
echo "$ok $fail $reclaimed"
