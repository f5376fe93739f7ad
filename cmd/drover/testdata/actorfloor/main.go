// Command actorfloor is BenchmarkProcessActorFloor's program: it links
// protoactor-go's actor package, as every drover binary must for its
// supervisor, and does nothing else. Its start time, beside the runtime-only
// floor and `drover hook` with hooks disabled, shows what the actor
// library's dependency tree (protobuf, OpenTelemetry, Prometheus, with their
// package initialisers) costs each hook process.
package main

import (
	"os"

	_ "github.com/asynkron/protoactor-go/actor"
)

func main() { os.Stdout.WriteString("{}\n") }
