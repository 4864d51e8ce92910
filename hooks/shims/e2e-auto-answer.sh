#!/usr/bin/env bash
# preload-hooks shim: the engine's e2e-auto-answer.sh, replaced by the native preload-e2e-auto-answer.
exec "$HOME/.claude/engine/bin/preload-e2e-auto-answer"
