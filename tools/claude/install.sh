#!/bin/sh
# Installs the pinned Claude Code CLI (see package.json and
# package-lock.json) into tools/claude/node_modules. Does nothing when that
# version is already there, so `make test` can call it every time.
set -eu

dir=$(cd "$(dirname "$0")" && pwd)
want=$(sed -n 's/.*"@anthropic-ai\/claude-code": *"\([^"]*\)".*/\1/p' "$dir/package.json" | head -n 1)
if [ -z "$want" ]; then
	echo "install.sh: no @anthropic-ai/claude-code version in $dir/package.json" >&2
	exit 1
fi

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

have=$(installed_version)
if [ "$have" = "$want" ]; then
	exit 0
fi
if [ -n "$have" ]; then
	echo "install.sh: found Claude Code $have, want $want; reinstalling" >&2
fi

command -v npm >/dev/null 2>&1 || {
	echo "install.sh: npm not found (run 'make node', or install nodejs and npm)" >&2
	exit 1
}
npm ci --prefix "$dir" --no-audit --no-fund

have=$(installed_version)
if [ "$have" != "$want" ]; then
	echo "install.sh: after npm ci, the installed Claude Code reports '$have', want $want" >&2
	exit 1
fi
echo "install.sh: Claude Code $want installed in $dir/node_modules"
