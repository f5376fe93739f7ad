#!/bin/sh
# fuzz.sh runs every Go fuzz target of the module, one at a time, for
# FUZZTIME each (default 30s), and prints a table: target, time, execs,
# result. Targets are found per package with `go test -list`, so a new
# Fuzz function is picked up without editing this file.
#
# Environment:
#   FUZZTIME   time per target, as go test's -fuzztime (default 30s)
#   FUZZPKGS   packages to search (default ./...)
#   FUZZMATCH  extended regexp a target ("pkg.FuzzX") must match (default all)
#   FUZZPAR    fuzz workers per target, as go test's -parallel (default: Go's)
#   FUZZTIMEOUT go test's -timeout for each target (default 10m): more than
#              FUZZTIME plus the time to replay the corpus
#   FUZZLOGS   directory for each target's log and the table (default: a
#              new temporary directory)
#   GO         the go command (default go)
#
# What a target finds is written by go test under the package's
# testdata/fuzz/FuzzX/, where the next `go test` replays it as a
# regression case. The script exits 1 when any target failed.
set -u
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-30s}
FUZZPKGS=${FUZZPKGS:-./...}
FUZZMATCH=${FUZZMATCH:-.}
FUZZPAR=${FUZZPAR:-}
FUZZTIMEOUT=${FUZZTIMEOUT:-10m}
par=""
if [ -n "$FUZZPAR" ]; then par="-parallel $FUZZPAR"; fi

module=$($GO list -m)
logdir=${FUZZLOGS:-$(mktemp -d)}
mkdir -p "$logdir"
table="$logdir/table.txt"
: >"$table"
failed=0
total=0

# Only packages with test files can hold targets; listing each costs a
# test build, so skip the rest up front.
pkgs=$($GO list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' $FUZZPKGS)

for pkg in $pkgs; do
  targets=$($GO test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true)
  for name in $targets; do
    short=${pkg#"$module"/}
    if ! echo "$short.$name" | grep -Eq "$FUZZMATCH"; then continue; fi
    total=$((total + 1))
    log="$logdir/$(echo "$short" | tr / _).$name.log"
    start=$(date +%s)
    # shellcheck disable=SC2086 # $par is empty or two words on purpose
    $GO test -run '^$' -fuzz "^$name\$" -fuzztime "$FUZZTIME" -timeout "$FUZZTIMEOUT" $par "$pkg" >"$log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    # The fuzzer's last progress line reads "fuzz: elapsed: 30s, execs: 12345 (...)".
    execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | awk '{print $2}')
    if [ $rc -eq 0 ]; then
      result=ok
    elif ! grep -q 'Failing input written to' "$log" && tail -5 "$log" | grep -q 'context deadline exceeded'; then
      # Go's fuzz coordinator (before Go 1.27, golang.org/issue/75804)
      # can report its own -fuzztime deadline as a failure when it ends
      # while a worker is mid-input: no input failed, none is written.
      result="ok (deadline race, go#75804)"
    else
      failed=$((failed + 1))
      result="FAIL (see $log)"
      if grep -q 'Failing input written to' "$log"; then
        result="FAIL: $(grep -o 'testdata/fuzz/[^ ]*' "$log" | head -1)"
      fi
    fi
    printf '%-60s %6ss %12s  %s\n' "$short.$name" "$secs" "${execs:-?}" "$result" | tee -a "$table"
  done
done

echo
printf '%-60s %7s %12s  %s\n' TARGET TIME EXECS RESULT
cat "$table"
echo "$total targets, $failed failed; logs in $logdir"
[ "$failed" -eq 0 ]
