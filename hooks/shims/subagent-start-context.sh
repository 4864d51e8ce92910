#!/usr/bin/env bash
# preload-hooks shim: the engine's subagent-start-context.sh, replaced by the native preload-subagent-start.
exec "$HOME/.claude/engine/bin/preload-subagent-start"
