package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/skiffkube/skiff/kubelet/imagegc"
)

// Bad image garbage collection flags of `skiff agent` are refused before
// anything starts, naming the flag.
func TestAgentRejectsBadImageGCFlags(t *testing.T) {
	for _, tc := range []struct {
		policy imagegc.Policy
		fsPath string
		want   string
	}{
		{imagegc.Policy{HighThresholdPercent: 101, LowThresholdPercent: 80}, "", "invalid flags: --image-gc-high-threshold 101 must be between 0 and 100"},
		{imagegc.Policy{HighThresholdPercent: 85, LowThresholdPercent: 85}, "", "--image-gc-low-threshold 85 must be less than --image-gc-high-threshold 85"},
		{imagegc.Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: -time.Minute}, "", "--image-minimum-gc-age -1m0s must not be negative"},
		{imagegc.DefaultPolicy(), "relative/dir", `invalid --image-fs-path "relative/dir": must be an absolute path`},
	} {
		o := &agentOptions{count: 1, nodeAPIAddress: "0.0.0.0", nodeAPIPort: 10250, imageGC: tc.policy, imageFSPath: tc.fsPath}
		err := runContainerdAgent(context.Background(), o, nil, slog.New(slog.DiscardHandler))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v %q: %v, want %q", tc.policy, tc.fsPath, err, tc.want)
		}
	}
}
