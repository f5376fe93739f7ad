#!/bin/sh
# Installs the pinned Codex CLI (see package.json and package-lock.json) into
# tools/codex/node_modules. Does nothing when that version is already there,
# so `make test` can call it every time.
set -eu

dir=$(cd "$(dirname "$0")" && pwd)
want=$(sed -n 's/.*"@openai\/codex": *"\([^"]*\)".*/\1/p' "$dir/package.json" | head -n 1)
if [ -z "$want" ]; then
	echo "install.sh: no @openai/codex version in $dir/package.json" >&2
	exit 1
fi

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

have=$(installed_version)
if [ "$have" = "$want" ]; then
	exit 0
fi
if [ -n "$have" ]; then
	echo "install.sh: found Codex $have, want $want; reinstalling" >&2
fi

command -v npm >/dev/null 2>&1 || {
	echo "install.sh: npm not found (run 'make node', or install nodejs and npm)" >&2
	exit 1
}
npm ci --prefix "$dir" --no-audit --no-fund

have=$(installed_version)
if [ "$have" != "$want" ]; then
	echo "install.sh: after npm ci, the installed Codex reports '$have', want $want" >&2
	exit 1
fi
echo "install.sh: Codex $want installed in $dir/node_modules"
