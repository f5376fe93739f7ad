#!/bin/sh
# benchtable.sh turns `go test -bench` output on stdin into an aligned table:
# one row per benchmark (its package named within the module), one column
# per reported unit.
set -eu
awk '
/^pkg: / { pkg = $2; sub(/^github\.com\/drover-dev\/drover\//, "", pkg); next }
/^Benchmark/ {
  name = $1; sub(/-[0-9]+$/, "", name)
  row = sprintf("%-60s %12s", pkg "." name, $2)
  for (i = 3; i + 1 <= NF; i += 2) row = row sprintf("  %14s %-10s", $i, $(i + 1))
  print row
  n++
}
END { if (n == 0) { print "no benchmark results"; exit 1 } }
'
