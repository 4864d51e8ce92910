#!/usr/bin/env bash
# preload-hooks shim: the engine's pre-tool-use-overflow-v2.sh, replaced by the native preload-overflow.
exec "$HOME/.claude/engine/bin/preload-overflow"
