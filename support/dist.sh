#!/usr/bin/env bash
# `make dist`: the release tarballs, one per target, and their checksums. The Makefile passes
# everything in the environment:
#
#   DIST_TARGETS      the targets
#   DIST_DIR          where the tarballs go
#   DIST_TOOLS        where support/dist-tools.sh installs zig and cargo-zigbuild
#   VERSION           the package's version
#   BINARIES          every [[bin]] name: bin/ holds the binary under each of them
#   RELEASE_TARGET    `make release`'s target: built as it builds it (RELEASE_RUSTFLAGS)
#   STATIC_FLAGS      the flags of a static, position-dependent Linux executable
#   RUSTFLAGS         the caller's, added to every target's flags (may be empty)
#   MACOSX_DEPLOYMENT_TARGET, CARGO, BUILD_DIR
#
# A target of this machine's own architecture and system is linked by its own linker; another
# Linux target by the toolchain's own rust-lld, against the musl the Rust target ships (static,
# nothing to install); macOS from another system by zig, through cargo-zigbuild. Every tarball holds bin/ (`preload`, and every hook
# name as a hard link to it), README.md, CHANGELOG.md, LICENSE, docs/install.md and hooks/
# (settings.json, guards.json, shims/); beside it, `<tarball>.sha256`. When one of the targets
# runs on this machine, `preload-hooks-<version>-plugin.tar.gz` too: the Claude Code plugin
# carrying the binary of every target built. SHA256SUMS covers them all, and
# support/check-dist.py then checks what was written.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${DIST_TARGETS:?}" "${DIST_DIR:?}" "${DIST_TOOLS:?}" "${VERSION:?}" "${BINARIES:?}"
: "${RELEASE_TARGET:?}" "${STATIC_FLAGS:?}" "${MACOSX_DEPLOYMENT_TARGET:?}" "${BUILD_DIR:?}"
CARGO=${CARGO:-cargo}
RUSTFLAGS=${RUSTFLAGS:-}
RELEASE_RUSTFLAGS=${RELEASE_RUSTFLAGS:-$RUSTFLAGS}

# shellcheck disable=SC2086
support/dist-tools.sh "$DIST_TOOLS" $DIST_TARGETS
DIST_TOOLS=$(cd "$DIST_TOOLS" && pwd)

host=$(rustc -vV | sed -n 's/^host: //p')
native() {
  [ "${1%%-*}" = "${host%%-*}" ] || return 1
  case "$1/$host" in *-linux-*/*-linux-* | *-darwin/*-darwin) return 0 ;; *) return 1 ;; esac
}
# A static musl target of another architecture, linked by rust-lld (see above).
linux_cross() {
  case "$1" in *-linux-musl) ! native "$1" ;; *) return 1 ;; esac
}

if command -v sha256sum >/dev/null 2>&1; then sum=(sha256sum); else sum=(shasum -a 256); fi
tarflags=()
if tar --version 2>/dev/null | grep -q GNU; then
  stamp=$(git log -1 --format=%ct 2>/dev/null || echo 0)
  tarflags=(--sort=name --owner=0 --group=0 --numeric-owner "--mtime=@$stamp")
fi

mkdir -p "$DIST_DIR"
DIST_DIR=$(cd "$DIST_DIR" && pwd)
tarballs=()
stages=()
runs_here=
for target in $DIST_TARGETS; do
  case "$target" in
    *-linux-musl) flags="${RUSTFLAGS:+$RUSTFLAGS }$STATIC_FLAGS" ;;
    *) flags="$RUSTFLAGS" ;;
  esac
  if [ "$target" = "$RELEASE_TARGET" ]; then flags="$RELEASE_RUSTFLAGS"; fi
  if native "$target"; then
    build=("$CARGO" build)
  elif linux_cross "$target"; then
    build=("$CARGO" build)
    flags="$flags -C linker=rust-lld"
  else
    # zig from DIST_TOOLS, whatever else is installed (cargo-zigbuild asks `python3 -m
    # ziglang` first, then `zig` on PATH).
    export PYTHONPATH="$DIST_TOOLS/zig${PYTHONPATH:+:$PYTHONPATH}"
    export CARGO_ZIGBUILD_ZIG_PATH="$DIST_TOOLS/bin/zig"
    export CARGO_ZIGBUILD_CACHE_DIR="$DIST_TOOLS/cache"
    build=("$DIST_TOOLS/bin/cargo-zigbuild" zigbuild)
  fi
  echo "dist: building $target (${build[*]##*/})"
  started=$(date +%s)
  RUSTFLAGS="$flags" MACOSX_DEPLOYMENT_TARGET="$MACOSX_DEPLOYMENT_TARGET" \
    "${build[@]}" --release --locked --bin preload --target "$target"
  echo "dist: $target built in $(($(date +%s) - started)) s"

  name="preload-hooks-$VERSION-$target"
  stage="$DIST_DIR/$name"
  rm -rf "$stage"
  mkdir -p "$stage/bin" "$stage/docs" "$stage/hooks"
  cp "$BUILD_DIR/$target/release/preload" "$stage/bin/preload"
  for bin in $BINARIES; do
    [ "$bin" = preload ] || ln "$stage/bin/preload" "$stage/bin/$bin"
  done
  cp README.md CHANGELOG.md LICENSE "$stage/"
  cp docs/install.md "$stage/docs/"
  cp hooks/settings.json hooks/guards.json "$stage/hooks/"
  cp -R hooks/shims "$stage/hooks/shims"
  tar -C "$DIST_DIR" "${tarflags[@]}" -czf "$DIST_DIR/$name.tar.gz" "$name"
  (cd "$DIST_DIR" && "${sum[@]}" "$name.tar.gz" >"$name.tar.gz.sha256")
  tarballs+=("$name.tar.gz")
  stages+=("$stage")
  if native "$target"; then runs_here=$stage/bin/preload; fi
  echo "dist: $DIST_DIR/$name.tar.gz"
done

# The Claude Code plugin carrying every platform built: written by this machine's own
# `preload plugin --dist`, from the unpacked stages above.
if [ -n "$runs_here" ]; then
  name="preload-hooks-$VERSION-plugin"
  rm -rf "${DIST_DIR:?}/$name"
  "$runs_here" plugin "$DIST_DIR/$name" --dist "$DIST_DIR" | sed 's/^/dist: /'
  tar -C "$DIST_DIR" "${tarflags[@]}" -czf "$DIST_DIR/$name.tar.gz" "$name"
  rm -rf "${DIST_DIR:?}/$name"
  (cd "$DIST_DIR" && "${sum[@]}" "$name.tar.gz" >"$name.tar.gz.sha256")
  tarballs+=("$name.tar.gz")
  echo "dist: $DIST_DIR/$name.tar.gz"
else
  echo "dist: no plugin: none of the targets runs on this machine to write it"
fi
rm -rf "${stages[@]}"
(cd "$DIST_DIR" && "${sum[@]}" "${tarballs[@]}" >SHA256SUMS)
echo "dist: $DIST_DIR/SHA256SUMS"

# shellcheck disable=SC2086
python3 support/check-dist.py --dist "$DIST_DIR" --version "$VERSION" --names "$BINARIES" \
  --macos-min "$MACOSX_DEPLOYMENT_TARGET" $DIST_TARGETS
