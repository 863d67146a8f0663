// Command allocator runs service discovery and serves each collector its share
// of the scrape targets.
package main

import (
	"fmt"
	"os"
)

func main() { os.Exit(run()) }

func run() int {
	fmt.Fprintln(os.Stderr, "allocator: not wired yet")
	return 1
}
