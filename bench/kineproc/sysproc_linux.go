package kineproc

import (
	"os/exec"
	"syscall"
)

// bindToParent makes the kernel kill kine if the benchmark dies without
// stopping it, so an interrupted run leaves no server behind.
func bindToParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
