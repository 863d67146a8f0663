// Command operator reconciles OpenTelemetryCollector and TargetAllocator
// resources into sharded collector fleets.
package main

import (
	"fmt"
	"os"
)

func main() { os.Exit(run()) }

func run() int {
	fmt.Fprintln(os.Stderr, "operator: not wired yet")
	return 1
}
