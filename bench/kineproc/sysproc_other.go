//go:build !linux

package kineproc

import "os/exec"

// bindToParent has no portable equivalent of Linux's parent-death signal;
// Stop is the only way kine ends there.
func bindToParent(cmd *exec.Cmd) {}
