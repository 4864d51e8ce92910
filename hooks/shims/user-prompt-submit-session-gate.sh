#!/usr/bin/env bash
# preload-hooks shim: the engine's user-prompt-submit-session-gate.sh, replaced by the native preload-prompt-submit.
exec "$HOME/.claude/engine/bin/preload-prompt-submit"
