#!/bin/sh
# Installs the pinned Gemini CLI (see package.json and package-lock.json)
# into tools/gemini/node_modules (tools/pinned.sh). The install scripts npm
# 11 warns about (@github/keytar, node-pty) are not needed: the prebuilt
# @lydell/node-pty-* package serves the shell tool.
set -eu

dir=$(cd "$(dirname "$0")" && pwd)
pkg=@google/gemini-cli
name="Gemini CLI"

# installed_version prints the version of the installed CLI ("0.61.0"), or
# nothing. GEMINI_CLI_NO_RELAUNCH keeps it one process.
installed_version() {
	bin="$dir/node_modules/.bin/gemini"
	[ -x "$bin" ] || return 0
	GEMINI_CLI_NO_RELAUNCH=true "$bin" --version 2>/dev/null | awk 'NR==1 {print $1}' || true
}

. "$dir/../pinned.sh"
install_pinned
