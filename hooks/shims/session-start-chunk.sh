#!/usr/bin/env bash
# preload-hooks shim: the engine's session-start-chunk.sh, replaced by the native preload-session-start.
exec "$HOME/.claude/engine/bin/preload-session-start" --chunk "${1:-0}/${2:-1}"
