#!/usr/bin/env bash
# `make e2e-setup`: installs the clients the end-to-end scenarios are pinned to into the
# gitignored .e2e/, with npm: Claude Code (`CLIENT_VERSION` in tests/e2e/client.rs) and the Codex
# CLI (`CODEX_VERSION` in tests/e2e/codex_client.rs). The packages ship the clients' native
# binaries; nothing else is downloaded. Does nothing when those versions are already there.
# Fails when it cannot install or an installed client does not start.
#
# `--when-possible` (what `make test` runs first): the same, but without npm, or when the install
# fails (no registry), it says so and succeeds; the scenarios then say why they did not run.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ "${1:-}" = "--when-possible" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "e2e-setup: no npm here, so the pinned Claude Code and Codex CLI clients are not installed; the end-to-end scenarios will say they did not run"
    exit 0
  fi
  "$0" || echo "e2e-setup: the pinned Claude Code and Codex CLI clients could not be installed (above); the end-to-end scenarios will say they did not run"
  exit 0
fi

version="$(sed -n 's/^pub const CLIENT_VERSION: &str = "\(.*\)";/\1/p' tests/e2e/client.rs)"
if [ -z "$version" ]; then
  echo "e2e-setup: no CLIENT_VERSION in tests/e2e/client.rs" >&2
  exit 1
fi
codex_version="$(sed -n 's/^pub const CODEX_VERSION: &str = "\(.*\)";/\1/p' tests/e2e/codex_client.rs)"
if [ -z "$codex_version" ]; then
  echo "e2e-setup: no CODEX_VERSION in tests/e2e/codex_client.rs" >&2
  exit 1
fi
package=".e2e/node_modules/@anthropic-ai/claude-code"
client="$package/bin/claude.exe"
codex_package=".e2e/node_modules/@openai/codex"
# The native binary of this platform's package, which the scenarios run directly.
codex_native() {
  local arch
  case "$(uname -m)" in
    x86_64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch64 ;;
    *) return 1 ;;
  esac
  local triple
  case "$(uname -s)" in
    Linux) triple="$arch-unknown-linux-musl" ;;
    Darwin) triple="$arch-apple-darwin" ;;
    *) return 1 ;;
  esac
  ls .e2e/node_modules/@openai/codex-*/vendor/"$triple"/bin/codex 2>/dev/null | head -n 1
}

installed() {
  [ -x "$client" ] && grep -q "\"version\": \"$version\"" "$package/package.json" 2>/dev/null
}
codex_installed() {
  local native
  native="$(codex_native)" && [ -x "$native" ] \
    && grep -q "\"version\": \"$codex_version\"" "$codex_package/package.json" 2>/dev/null
}

if installed && codex_installed; then
  echo "e2e-setup: @anthropic-ai/claude-code@$version and @openai/codex@$codex_version are already in .e2e/"
else
  if ! command -v npm >/dev/null 2>&1; then
    echo "e2e-setup: npm is needed to install @anthropic-ai/claude-code@$version and @openai/codex@$codex_version" >&2
    exit 1
  fi
  # Both in one command: .e2e/ has no package.json, and npm removes from it whatever the
  # command does not name.
  echo "e2e-setup: installing @anthropic-ai/claude-code@$version and @openai/codex@$codex_version into .e2e/"
  npm install --prefix .e2e --no-save --no-audit --no-fund --loglevel=error \
    "@anthropic-ai/claude-code@$version" "@openai/codex@$codex_version"
  installed || { echo "e2e-setup: the install left no $client of version $version" >&2; exit 1; }
  codex_installed || {
    echo "e2e-setup: the install left no native codex of version $codex_version under .e2e/node_modules/@openai/" >&2
    exit 1
  }
fi

answer="$(env -i HOME="$(mktemp -d)" PATH=/usr/bin:/bin DISABLE_AUTOUPDATER=1 "$client" --version)"
case "$answer" in
  "$version"*) echo "e2e-setup: $client answers $answer" ;;
  *) echo "e2e-setup: $client answers '$answer', expected $version" >&2; exit 1 ;;
esac

codex="$(codex_native)"
codex_home="$(mktemp -d)"
# Its stderr only when it fails (a CODEX_HOME under /tmp draws a harmless warning).
answer="$(env -i HOME="$codex_home" CODEX_HOME="$codex_home" PATH=/usr/bin:/bin "$codex" --version \
  </dev/null 2>"$codex_home/stderr")" || true
case "$answer" in
  "codex-cli $codex_version") echo "e2e-setup: $codex answers $answer" ;;
  *) echo "e2e-setup: $codex answers '$answer', expected codex-cli $codex_version" >&2
     cat "$codex_home/stderr" >&2; rm -rf "$codex_home"; exit 1 ;;
esac
rm -rf "$codex_home"
