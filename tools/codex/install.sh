#!/bin/sh
# Installs the pinned Codex CLI (see package.json and package-lock.json) into
# tools/codex/node_modules (tools/pinned.sh).
set -eu

dir=$(cd "$(dirname "$0")" && pwd)
pkg=@openai/codex
name=Codex

# installed_version prints the version of the installed CLI, or nothing. It
# asks the package's node launcher first, then the platform package's static
# binary; test/othercli.FindCodex looks in the same order.
installed_version() {
	for bin in "$dir/node_modules/.bin/codex" "$dir"/node_modules/@openai/codex-linux-*/vendor/*/bin/codex; do
		[ -x "$bin" ] || continue
		# Prints "codex-cli 0.169.0". CODEX_HOME points at an empty
		# directory so that a user's config cannot change the answer.
		v=$(CODEX_HOME=$(mktemp -d) "$bin" --version 2>/dev/null | awk 'NR==1 {print $2}') || v=""
		if [ -n "$v" ]; then
			echo "$v"
			return
		fi
	done
}

. "$dir/../pinned.sh"
install_pinned
