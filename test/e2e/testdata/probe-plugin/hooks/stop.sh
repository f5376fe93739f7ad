#!/bin/sh
# Stop hook of the probe plugin: blocks the first Stop of a project with a
# known reason, allows every later one. The marker and a log of the hook's
# stdin live in the project's .git directory, out of the work tree.
set -eu
dir="${CLAUDE_PROJECT_DIR:?CLAUDE_PROJECT_DIR not set}/.git"
input=$(cat)
printf '%s\n' "$input" >>"$dir/probe-stop-inputs.jsonl"
if [ -e "$dir/probe-stop-blocked" ]; then
	exit 0
fi
: >"$dir/probe-stop-blocked"
printf '%s\n' '{"decision":"block","reason":"probe-stop-block: say the magic word"}'
