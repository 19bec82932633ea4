// Command testdriver runs logdriver.Main for tests, standing in for the
// `skiff log-driver` command that the skiff binary provides.
package main

import (
	"fmt"
	"os"

	"github.com/skiffkube/skiff/kubelet/logdriver"
)

func main() {
	if err := logdriver.Main(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
