#!/usr/bin/env bash
# `make npm`: the npm packages, packed from the release tarballs of `make dist`:
#
#   preload-hooks                 the `preload` command (bin/preload.js, which runs the native
#                                 binary) with one optional dependency per platform
#   @preload-hooks/<os>-<cpu>     one per target: `os` and `cpu`, and bin/preload, the
#                                 tarball's binary (`preload install` gives it the hooks' names)
#
# The Makefile passes DIST_DIR (where the tarballs are), NPM_DIR (where the .tgz files go),
# VERSION, NPM_TARGETS (the targets to pack: every target of `make dist` unless narrowed) and
# LICENSE_ID, REPOSITORY (from Cargo.toml). The main package always names all four platform
# packages, as it is published; one whose tarball is missing stops the run, naming it.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${DIST_DIR:?}" "${NPM_DIR:?}" "${VERSION:?}" "${NPM_TARGETS:?}" "${LICENSE_ID:?}" "${REPOSITORY:?}"

say() { echo "npm: $*"; }
die() { echo "npm: $*" >&2; exit 1; }
command -v npm >/dev/null 2>&1 || die "npm is not installed (node 16 or later and npm are needed to pack)"

# The platform package of each target: its name's suffix, then npm's `os` and `cpu`.
platform_of() {
  case "$1" in
    x86_64-unknown-linux-musl) echo "linux-x64 linux x64" ;;
    aarch64-unknown-linux-musl) echo "linux-arm64 linux arm64" ;;
    x86_64-apple-darwin) echo "darwin-x64 darwin x64" ;;
    aarch64-apple-darwin) echo "darwin-arm64 darwin arm64" ;;
    *) return 1 ;;
  esac
}
ALL_TARGETS="x86_64-unknown-linux-musl aarch64-unknown-linux-musl x86_64-apple-darwin aarch64-apple-darwin"

missing=()
for target in $NPM_TARGETS; do
  platform_of "$target" >/dev/null || die "no npm platform for the target $target (there are: $ALL_TARGETS)"
  [ -f "$DIST_DIR/preload-hooks-$VERSION-$target.tar.gz" ] || missing+=("$target")
done
if [ ${#missing[@]} -gt 0 ]; then
  for target in "${missing[@]}"; do echo "npm: missing $DIST_DIR/preload-hooks-$VERSION-$target.tar.gz" >&2; done
  die "build the release tarballs first (make dist), or pack fewer platforms: make npm NPM_TARGETS=\"${NPM_TARGETS%% *}\""
fi

if command -v sha256sum >/dev/null 2>&1; then sum=(sha256sum); else sum=(shasum -a 256); fi
mkdir -p "$NPM_DIR"
NPM_DIR=$(cd "$NPM_DIR" && pwd)
stage="$NPM_DIR/stage"
rm -rf "$stage" "$NPM_DIR"/*.tgz
mkdir -p "$stage"

pack() {
  (cd "$1" && npm pack --silent --pack-destination "$NPM_DIR" >/dev/null)
}

optional=""
for target in $ALL_TARGETS; do
  read -r suffix _ _ < <(platform_of "$target")
  optional="$optional${optional:+,}
    \"@preload-hooks/$suffix\": \"$VERSION\""
done

for target in $NPM_TARGETS; do
  read -r suffix os cpu < <(platform_of "$target")
  name="preload-hooks-$VERSION-$target"
  if [ -f "$DIST_DIR/$name.tar.gz.sha256" ]; then
    (cd "$DIST_DIR" && "${sum[@]}" -c --status "$name.tar.gz.sha256") \
      || die "$DIST_DIR/$name.tar.gz does not match $name.tar.gz.sha256"
  fi
  dir="$stage/$suffix"
  mkdir -p "$dir/bin" "$stage/unpacked"
  tar -xzf "$DIST_DIR/$name.tar.gz" -C "$stage/unpacked" "$name/bin/preload" "$name/LICENSE"
  # One file: npm leaves hard links out of what it installs, so the hook names are made by
  # `preload install` (and `preload plugin`) from this one binary.
  cp "$stage/unpacked/$name/bin/preload" "$dir/bin/preload"
  chmod 755 "$dir/bin/preload"
  cp "$stage/unpacked/$name/LICENSE" "$dir/LICENSE"
  cat >"$dir/README.md" <<README
# @preload-hooks/$suffix

The native binary of [preload-hooks](https://www.npmjs.com/package/preload-hooks) for $os on
$cpu ($target). Install \`preload-hooks\`, which depends on it; this package alone has no command.
README
  cat >"$dir/package.json" <<JSON
{
  "name": "@preload-hooks/$suffix",
  "version": "$VERSION",
  "description": "The native preload-hooks binary for $os $cpu ($target)",
  "license": "$LICENSE_ID",
  "repository": {"type": "git", "url": "git+$REPOSITORY.git"},
  "os": ["$os"],
  "cpu": ["$cpu"],
  "files": ["bin/preload", "README.md", "LICENSE"],
  "preferUnplugged": true
}
JSON
  pack "$dir"
  say "$NPM_DIR/preload-hooks-$suffix-$VERSION.tgz ($target)"
done

main="$stage/preload-hooks"
mkdir -p "$main/bin"
cp npm/preload-hooks/bin/preload.js "$main/bin/preload.js"
chmod 755 "$main/bin/preload.js"
cp npm/preload-hooks/README.md LICENSE "$main/"
cat >"$main/package.json" <<JSON
{
  "name": "preload-hooks",
  "version": "$VERSION",
  "description": "Native preload hooks for the workflow engine of Claude Code: the hooks and the preload command line",
  "license": "$LICENSE_ID",
  "repository": {"type": "git", "url": "git+$REPOSITORY.git"},
  "keywords": ["claude-code", "hooks", "preload", "codex"],
  "bin": {"preload": "bin/preload.js"},
  "files": ["bin/preload.js", "README.md", "LICENSE"],
  "engines": {"node": ">=16"},
  "optionalDependencies": {$optional
  }
}
JSON
pack "$main"
rm -rf "$stage"
say "$NPM_DIR/preload-hooks-$VERSION.tgz (the preload command; its optional dependencies: @preload-hooks/linux-x64, linux-arm64, darwin-x64, darwin-arm64)"
