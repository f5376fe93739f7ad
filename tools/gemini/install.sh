#!/bin/sh
# Installs the pinned Gemini CLI (see package.json and package-lock.json)
# into tools/gemini/node_modules. Does nothing when that version is already
# there, so `make test` can call it every time.
set -eu

dir=$(cd "$(dirname "$0")" && pwd)
want=$(sed -n 's/.*"@google\/gemini-cli": *"\([^"]*\)".*/\1/p' "$dir/package.json" | head -n 1)
if [ -z "$want" ]; then
	echo "install.sh: no @google/gemini-cli version in $dir/package.json" >&2
	exit 1
fi

# installed_version prints the version of the installed CLI ("0.61.0"), or
# nothing. GEMINI_CLI_NO_RELAUNCH keeps it one process.
installed_version() {
	bin="$dir/node_modules/.bin/gemini"
	[ -x "$bin" ] || return 0
	GEMINI_CLI_NO_RELAUNCH=true "$bin" --version 2>/dev/null | awk 'NR==1 {print $1}' || true
}

have=$(installed_version)
if [ "$have" = "$want" ]; then
	exit 0
fi
if [ -n "$have" ]; then
	echo "install.sh: found Gemini CLI $have, want $want; reinstalling" >&2
fi

command -v npm >/dev/null 2>&1 || {
	echo "install.sh: npm not found (run 'make node', or install nodejs and npm)" >&2
	exit 1
}
# The install scripts npm 11 warns about (@github/keytar, node-pty) are not
# needed: the prebuilt @lydell/node-pty-* package serves the shell tool.
npm ci --prefix "$dir" --no-audit --no-fund

have=$(installed_version)
if [ "$have" != "$want" ]; then
	echo "install.sh: after npm ci, the installed Gemini CLI reports '$have', want $want" >&2
	exit 1
fi
echo "install.sh: Gemini CLI $want installed in $dir/node_modules"
