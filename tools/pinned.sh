# pinned.sh is sourced by tools/*/install.sh, which set dir (their folder),
# pkg (the npm package), name (for messages) and define installed_version
# (the installed CLI's version, or nothing). install_pinned installs the
# version that package.json pins, with npm ci from package-lock.json (its
# sha512 hashes), and does nothing when that version is already there, so
# `make test` can call it every time.

install_pinned() {
	want=$(awk -v p="\"$pkg\"" 'index($0, p) { sub(/.*: *"/, ""); sub(/".*/, ""); print; exit }' "$dir/package.json")
	if [ -z "$want" ]; then
		echo "install.sh: no $pkg version in $dir/package.json" >&2
		exit 1
	fi

	have=$(installed_version)
	if [ "$have" = "$want" ]; then
		exit 0
	fi
	if [ -n "$have" ]; then
		echo "install.sh: found $name $have, want $want; reinstalling" >&2
	fi

	command -v npm >/dev/null 2>&1 || {
		echo "install.sh: npm not found (run 'make node', or install nodejs and npm)" >&2
		exit 1
	}
	npm ci --prefix "$dir" --no-audit --no-fund

	have=$(installed_version)
	if [ "$have" != "$want" ]; then
		echo "install.sh: after npm ci, the installed $name reports '$have', want $want" >&2
		exit 1
	fi
	echo "install.sh: $name $want installed in $dir/node_modules"
}
