#!/usr/bin/env bash
# preload-hooks shim: the engine's post-tool-use-templates.sh, replaced by the native preload-templates.
exec "$HOME/.claude/engine/bin/preload-templates"
