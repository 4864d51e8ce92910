#!/usr/bin/env bash
# `make e2e-setup`: installs the Claude Code client the end-to-end scenarios are pinned to
# (`CLIENT_VERSION` in tests/e2e/client.rs) into the gitignored .e2e/, with npm. The package
# ships the client's native binary; nothing else is downloaded. Does nothing when that version
# is already there. Fails when it cannot install or the installed client does not start.
#
# `--when-possible` (what `make test` runs first): the same, but without npm, or when the install
# fails (no registry), it says so and succeeds; the scenarios then say why they did not run.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ "${1:-}" = "--when-possible" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "e2e-setup: no npm here, so the pinned Claude Code client is not installed; the end-to-end scenarios will say they did not run"
    exit 0
  fi
  "$0" || echo "e2e-setup: the pinned Claude Code client could not be installed (above); the end-to-end scenarios will say they did not run"
  exit 0
fi

version="$(sed -n 's/^pub const CLIENT_VERSION: &str = "\(.*\)";/\1/p' tests/e2e/client.rs)"
if [ -z "$version" ]; then
  echo "e2e-setup: no CLIENT_VERSION in tests/e2e/client.rs" >&2
  exit 1
fi
package=".e2e/node_modules/@anthropic-ai/claude-code"
client="$package/bin/claude.exe"

installed() {
  [ -x "$client" ] && grep -q "\"version\": \"$version\"" "$package/package.json" 2>/dev/null
}

if installed; then
  echo "e2e-setup: @anthropic-ai/claude-code@$version is already in .e2e/"
else
  if ! command -v npm >/dev/null 2>&1; then
    echo "e2e-setup: npm is needed to install @anthropic-ai/claude-code@$version" >&2
    exit 1
  fi
  echo "e2e-setup: installing @anthropic-ai/claude-code@$version into .e2e/"
  npm install --prefix .e2e --no-save --no-audit --no-fund --loglevel=error \
    "@anthropic-ai/claude-code@$version"
  installed || { echo "e2e-setup: the install left no $client of version $version" >&2; exit 1; }
fi

answer="$(env -i HOME="$(mktemp -d)" PATH=/usr/bin:/bin DISABLE_AUTOUPDATER=1 "$client" --version)"
case "$answer" in
  "$version"*) echo "e2e-setup: $client answers $answer" ;;
  *) echo "e2e-setup: $client answers '$answer', expected $version" >&2; exit 1 ;;
esac
