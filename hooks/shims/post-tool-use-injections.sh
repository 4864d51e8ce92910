#!/usr/bin/env bash
# preload-hooks shim: the engine's post-tool-use-injections.sh, replaced by the native preload-injections.
exec "$HOME/.claude/engine/bin/preload-injections"
