#!/usr/bin/env bash
# `make dist-test`: `make dist` run as a user's machine runs it, then its tarballs checked.
#
#   support/dist-test.sh DIST_DIR TARGET...
#
# 1. `make dist` in an empty environment (`env -i`: a new HOME, no RUSTFLAGS or CARGO_*
#    variables, only PATH and where rustup keeps the toolchain), into DIST_DIR: it installs
#    what it needs itself and checks what it wrote (support/check-dist.py).
# 2. The check again, this time requiring every Linux binary to run `--version` under each of
#    its names: natively, or an aarch64 one under qemu's user mode (installed here with apt-get
#    when missing, support/dist-tools.sh --qemu).
# 3. The check is no rubber stamp: it must refuse the same tarballs against a wrong minimum
#    macOS version, and a SHA256SUMS with one digit changed.
# 4. What docs/install.md tells a user to do, with this machine's tarball: verify it against
#    SHA256SUMS, unpack it, and run `bin/preload install` in a project of a new HOME; every
#    name must then answer `--version` from the install directory.
# Exit 1 on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: support/dist-test.sh DIST_DIR TARGET..." >&2; exit 2; }
dist=$1
shift
targets="$*"

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
names=$(sed -n '/^\[\[bin\]\]/{n;s/^name = "\(.*\)"/\1/p;}' Cargo.toml | tr '\n' ' ')
tools=${DIST_TOOLS:-$PWD/.tools}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/home"

say() { echo "dist-test: $*"; }
fail() { echo "dist-test: FAIL: $*" >&2; exit 1; }

rm -rf "$dist"
say "make dist DIST_TARGETS=\"$targets\" in an empty environment (HOME=$scratch/home)"
started=$(date +%s)
env -i HOME="$scratch/home" PATH="$PATH" \
  RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" \
  ${RUSTUP_TOOLCHAIN:+RUSTUP_TOOLCHAIN="$RUSTUP_TOOLCHAIN"} \
  make --no-print-directory dist DIST_TARGETS="$targets" DIST_DIR="$dist" DIST_TOOLS="$tools" \
  || fail "make dist failed in an empty environment"
say "make dist took $(($(date +%s) - started)) s"

linux=""
for target in $targets; do
  case "$target" in *-linux-*) linux="$linux${linux:+,}$target" ;; esac
done
case "$linux" in *aarch64*) support/dist-tools.sh --qemu "$tools" ;; esac
check=(python3 support/check-dist.py --dist "$dist" --version "$version" --names "$names")
# shellcheck disable=SC2086
"${check[@]}" --macos-min "${MACOSX_DEPLOYMENT_TARGET:-11.0}" --require-run "$linux" $targets \
  || fail "the tarballs do not pass their check"

case "$targets" in
  *-apple-darwin*)
    # shellcheck disable=SC2086
    if "${check[@]}" --macos-min 10.12 $targets >"$scratch/wrong" 2>&1; then
      fail "the check passed the macOS binaries against minimum macOS 10.12"
    fi
    grep -q "minimum macOS .*, not 10.12" "$scratch/wrong" \
      || fail "the check refused the wrong minimum macOS for another reason: $(cat "$scratch/wrong")"
    ;;
esac
cp -R "$dist" "$scratch/tampered"
python3 - "$scratch/tampered/SHA256SUMS" <<'EOF'
import sys
path = sys.argv[1]
text = open(path).read()
open(path, "w").write(("1" if text[0] != "1" else "2") + text[1:])
EOF
# shellcheck disable=SC2086
if "${check[@]}" --dist "$scratch/tampered" $targets >"$scratch/tampered.out" 2>&1; then
  fail "the check passed a SHA256SUMS with a changed digit"
fi
host=$(rustc -vV | sed -n 's/^host: //p')
for target in $targets; do
  [ "${target%%-*}" = "${host%%-*}" ] || continue
  case "$target/$host" in *-linux-*/*-linux-* | *-darwin/*-darwin) ;; *) continue ;; esac
  name="preload-hooks-$version-$target"
  mkdir -p "$scratch/user/home/.claude/engine" "$scratch/user/project/.claude"
  cp "$dist/SHA256SUMS" "$dist/$name.tar.gz" "$scratch/user/"
  if command -v sha256sum >/dev/null 2>&1; then verify=(sha256sum); else verify=(shasum -a 256); fi
  (cd "$scratch/user" && "${verify[@]}" -c --ignore-missing SHA256SUMS >/dev/null) \
    || fail "$name.tar.gz does not verify against SHA256SUMS"
  tar -xzf "$scratch/user/$name.tar.gz" -C "$scratch/user"
  (cd "$scratch/user/project" && env -i HOME="$scratch/user/home" PATH="$PATH" \
    "$scratch/user/$name/bin/preload" install >"$scratch/install.out" 2>&1) \
    || fail "bin/preload install failed: $(cat "$scratch/install.out")"
  grep -q "$scratch/user/home/.claude/engine/bin/preload-overflow" \
    "$scratch/user/project/.claude/settings.local.json" \
    || fail "bin/preload install did not wire preload-overflow"
  for bin in $names; do
    out=$("$scratch/user/home/.claude/engine/bin/$bin" --version </dev/null) \
      || fail "the installed $bin does not run"
    [ "$out" = "$bin $version" ] || fail "the installed $bin says $out"
  done
  say "$name: verified, unpacked and installed into a project; every name runs"

  # The plugin, as a user gets it: verified, unpacked, and its SessionStart launcher run with a
  # data directory of its own; every hook is then linked there and answers from the link.
  plugin="preload-hooks-$version-plugin"
  [ -f "$dist/$plugin.tar.gz" ] || fail "no $plugin.tar.gz, though $target runs here"
  cp "$dist/$plugin.tar.gz" "$scratch/user/"
  (cd "$scratch/user" && "${verify[@]}" -c --ignore-missing SHA256SUMS >/dev/null) \
    || fail "$plugin.tar.gz does not verify against SHA256SUMS"
  tar -xzf "$scratch/user/$plugin.tar.gz" -C "$scratch/user"
  data=$scratch/user/plugin-data
  (cd "$scratch/user/project" && echo '{"hook_event_name":"SessionStart","source":"startup"}' \
    | env -i HOME="$scratch/user/home" PATH="$PATH" CLAUDE_PLUGIN_DATA="$data" \
      CLAUDE_PLUGIN_ROOT="$scratch/user/$plugin" \
      "$scratch/user/$plugin/bin/preload-session-start" --chunk 1/32 >"$scratch/plugin.out" 2>&1) \
    || fail "the plugin's SessionStart launcher failed: $(cat "$scratch/plugin.out")"
  for bin in $names; do
    out=$("$data/bin/$bin" --version </dev/null) || fail "the plugin's link $bin does not run"
    [ "$out" = "$bin $version" ] || fail "the plugin's link $bin says $out"
  done
  say "$plugin: verified, unpacked, linked by its launcher; every link runs"
done
say "ok: $targets"
