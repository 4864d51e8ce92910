#!/usr/bin/env bash
# preload-hooks shim: the engine's session-start-restore.sh, replaced by the native preload-session-start.
exec "$HOME/.claude/engine/bin/preload-session-start"
