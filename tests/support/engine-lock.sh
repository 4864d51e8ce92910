#!/usr/bin/env bash
# The engine's lock, as lib.sh `_acquire_lock` / `_release_lock` (idealic-ai/engine at d716b97,
# lines 275-318) takes and releases it, written for these tests: `mkdir <file>.lock`; on
# failure read the holder from `pid`, and when that process is dead remove `pid` and the
# directory and retry at once; otherwise the age backstop with BSD `stat -f %m` (which on Linux
# prints something that is not a number, so the arithmetic aborts the script, as it aborts the
# engine's writers); give up after 100 tries 10 ms apart. Usage: engine-lock.sh FILE.
# Exit 0: the lock was taken and released; 1: timed out; anything else: aborted.
set -u
lock_dir="$1.lock"
retries=0
while ! mkdir "$lock_dir" 2>/dev/null; do
  retries=$((retries + 1))
  if [ "$retries" -ge 100 ]; then
    exit 1
  fi
  holder=$(cat "$lock_dir/pid" 2>/dev/null || echo "")
  if [ -n "$holder" ] && ! kill -0 "$holder" 2>/dev/null; then
    rm -f "$lock_dir/pid" 2>/dev/null || true
    rmdir "$lock_dir" 2>/dev/null || true
    continue
  fi
  if [ -d "$lock_dir" ]; then
    lock_mtime=$(stat -f "%m" "$lock_dir" 2>/dev/null || echo "0")
    now_epoch=$(date +%s)
    lock_age=$((now_epoch - lock_mtime))
    if [ "$lock_age" -gt 10 ]; then
      rm -f "$lock_dir/pid" 2>/dev/null || true
      rmdir "$lock_dir" 2>/dev/null || true
      continue
    fi
  fi
  sleep 0.01
done
echo "$$" >"$lock_dir/pid"
rm -f "$lock_dir/pid"
rmdir "$lock_dir"
exit 0
