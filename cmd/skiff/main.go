// Command skiff is the one binary of a skiff cluster: `skiff server` runs the
// control plane on SQLite or PostgreSQL, `skiff version` says what was built.
// It only parses configuration and wires packages together; the work is done
// in config/, storage/ and the packages that follow them.
package main

import "os"

func main() {
	os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr))
}
