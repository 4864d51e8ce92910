#!/bin/sh
# The preload-hooks plugin's launcher, written by `preload plugin` under every hook's name in
# bin/. It runs the hook named like this file with the plugin's binary for this machine
# (bin/<platform>/preload, one multi-call binary that runs the hook its name says).
#
# Claude Code runs it for SessionStart and UserPromptSubmit. The hooks of every tool call
# (PreToolUse, PostToolUse, ...) exec ${CLAUDE_PLUGIN_DATA}/bin/<hook> directly, with no shell
# in front: links to this machine's binary, which this launcher makes when they are missing or
# point into another copy of the plugin (the stamp bin/.root says which). Each link is made
# under a temporary name and renamed into place, so a hook never sees a half-made one.
set -u
name=${0##*/}
root=${0%/*}
root=${root%/*}

platform() {
  case $(uname -sm) in
    # @PLATFORMS@ (one arm each, written by `preload plugin`)
    *) echo "" ;;
  esac
}

if [ "$name" = preload ]; then
  # The command line, run by hand: it needs no links.
  exec "$root/bin/$(platform)/preload" "$@"
fi

data=${CLAUDE_PLUGIN_DATA:-}
if [ -z "$data" ]; then
  echo "preload-hooks: CLAUDE_PLUGIN_DATA is not set; this Claude Code is too old for the plugin, or $name was run by hand" >&2
  exit 1
fi
links=$data/bin
if { read -r linked <"$links/.root"; } 2>/dev/null && [ "$linked" = "$root" ]; then
  exec "$links/$name" "$@"
fi

# The first registration of an event makes every link and the stamp; the other chunks of
# SessionStart, which run beside it, make only their own.
first=yes
case " $* " in
  *" --chunk 1/"*) ;;
  *" --chunk "*) first= ;;
esac
link() { # link TARGET HOOK...
  target=$1
  shift
  for hook in "$@"; do
    ln -sf "$target" "$links/.$hook.$$" && mv -f "$links/.$hook.$$" "$links/$hook" || return 1
  done
}
mkdir -p "$links" || exit 1
machine=$(platform)
binary=$root/bin/$machine/preload
if [ -z "$machine" ] || [ ! -x "$binary" ]; then
  # Nothing to run here: every hook is linked to `true`, so the tool calls stay quiet, and the
  # first registration of SessionStart says why once per session.
  noop=/usr/bin/true
  [ -x "$noop" ] || noop=/bin/true
  if [ -n "$first" ]; then link "$noop" @HOOKS@; else link "$noop" "$name"; fi
  if [ -n "$first" ] && [ "$name" = preload-session-start ]; then
    carried=
    for found in "$root"/bin/*/preload; do
      [ -x "$found" ] || continue
      found=${found%/preload}
      carried="$carried ${found##*/}"
    done
    echo "preload-hooks: this plugin carries no binary for $(uname -sm) (it carries:${carried:- none}), so its hooks do nothing here; build one from source (preload plugin DIR)" >&2
    exit 1
  fi
  exit 0
fi
if [ -n "$first" ]; then
  link "$binary" @HOOKS@ || exit 1
  printf '%s\n' "$root" >"$links/.root.$$" && mv -f "$links/.root.$$" "$links/.root"
else
  link "$binary" "$name" || exit 1
fi
exec "$links/$name" "$@"
