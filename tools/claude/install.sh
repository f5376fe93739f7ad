#!/bin/sh
# Installs the pinned Claude Code CLI (see package.json and
# package-lock.json) into tools/claude/node_modules (tools/pinned.sh).
set -eu

dir=$(cd "$(dirname "$0")" && pwd)
pkg=@anthropic-ai/claude-code
name="Claude Code"

# installed_version prints the version of the installed CLI, or nothing.
# It asks the package's bin link first, then the platform package's native
# binary (all there is if npm skipped the postinstall step that copies it
# over the link's placeholder); test/claudecli.Find looks in the same order.
installed_version() {
	for bin in "$dir/node_modules/.bin/claude" "$dir"/node_modules/@anthropic-ai/claude-code-*/claude; do
		[ -x "$bin" ] || continue
		# Prints e.g. "2.1.197 (Claude Code)".
		v=$(DISABLE_AUTOUPDATER=1 "$bin" --version 2>/dev/null | awk 'NR==1 {print $1}') || v=""
		if [ -n "$v" ]; then
			echo "$v"
			return
		fi
	done
}

. "$dir/../pinned.sh"
install_pinned
