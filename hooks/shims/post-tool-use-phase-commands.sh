#!/usr/bin/env bash
# preload-hooks shim: the engine's post-tool-use-phase-commands.sh, replaced by the native preload-phase-commands.
exec "$HOME/.claude/engine/bin/preload-phase-commands"
