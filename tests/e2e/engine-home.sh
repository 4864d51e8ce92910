#!/usr/bin/env bash
# Installs a checkout of the engine (idealic-ai/engine) into a throwaway HOME the way the engine's
# own setup does, for the opt-in real-engine scenario (`make e2e-engine`, tests/e2e/real_engine.rs):
#
#   engine-home.sh ENGINE_CHECKOUT HOME SETTINGS_FILE
#
# 1. the checkout's working tree (without .git) is copied to HOME/.claude/engine, where a user's
#    clone lives;
# 2. the engine's scripts/setup-lib.sh is sourced (with ACTIONS=()) and setup_engine_symlinks
#    links scripts/, hooks/, skills/, agents/, .directives and tools/ into HOME/.claude;
# 3. its configure_hooks writes the engine's own hook wiring into SETTINGS_FILE (a project's
#    .claude/settings.local.json; created as {} when missing).
#
# Nothing of the engine is copied into this repository: the checkout is the caller's and HOME is
# a temporary directory. The engine's scripts need jq 1.7 or newer first on PATH.
set -euo pipefail

engine="${1:?usage: engine-home.sh ENGINE_CHECKOUT HOME SETTINGS_FILE}"
home="${2:?usage: engine-home.sh ENGINE_CHECKOUT HOME SETTINGS_FILE}"
settings="${3:?usage: engine-home.sh ENGINE_CHECKOUT HOME SETTINGS_FILE}"

engine="$(cd "$engine" && pwd)"
[ -f "$engine/scripts/setup-lib.sh" ] && [ -f "$engine/scripts/session.sh" ] \
  || { echo "engine-home: $engine does not look like the engine (no scripts/setup-lib.sh)" >&2; exit 2; }
case "$(jq --version 2>/dev/null)" in
  jq-1.[7-9]*|jq-1.[1-9][0-9]*|jq-[2-9]*) ;;
  *) echo "engine-home: the engine's scripts need jq 1.7 or newer first on PATH" \
       "(found: $(jq --version 2>/dev/null || echo none))" >&2; exit 2 ;;
esac

claude="$home/.claude"
rm -rf "$claude/engine"
mkdir -p "$claude/engine"
tar -C "$engine" --exclude=./.git -cf - . | tar -x -C "$claude/engine"

[ -f "$settings" ] || { mkdir -p "$(dirname "$settings")"; echo '{}' > "$settings"; }

export HOME="$home"
ACTIONS=()
# shellcheck disable=SC1091
source "$claude/engine/scripts/setup-lib.sh"
setup_engine_symlinks "$claude/engine" "$claude" >/dev/null
configure_hooks "$settings" \
  || { echo "engine-home: the engine's configure_hooks failed on $settings" >&2; exit 1; }
printf 'engine-home: %s\n' "${ACTIONS[@]}"
