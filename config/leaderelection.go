package config

import (
	"fmt"
	"time"

	"k8s.io/client-go/tools/leaderelection"
)

// The --leader-elect-* settings, as kube-controller-manager's and
// kube-scheduler's flags name them.
const (
	keyLeaderElectLeaseDuration = "leader-elect-lease-duration"
	keyLeaderElectRenewDeadline = "leader-elect-renew-deadline"
	keyLeaderElectRetryPeriod   = "leader-elect-retry-period"
)

// CheckLeaderElection refuses leader-election timing that client-go's
// elector would refuse, or that would let a standby take the Lease while
// the leader still acts. The error names the --leader-elect-* settings, so
// the server and the standalone loops report it alike.
func CheckLeaderElection(leaseDuration, renewDeadline, retryPeriod time.Duration) error {
	switch {
	case leaseDuration <= 0 || renewDeadline <= 0 || retryPeriod <= 0:
		return fmt.Errorf("invalid --%s %s, --%s %s, --%s %s: each must be positive",
			keyLeaderElectLeaseDuration, leaseDuration, keyLeaderElectRenewDeadline, renewDeadline, keyLeaderElectRetryPeriod, retryPeriod)
	case leaseDuration <= renewDeadline:
		return fmt.Errorf("invalid --%s %s: must be less than --%s %s, or standbys could take the Lease while the leader still acts",
			keyLeaderElectRenewDeadline, renewDeadline, keyLeaderElectLeaseDuration, leaseDuration)
	case float64(renewDeadline) <= leaderelection.JitterFactor*float64(retryPeriod):
		return fmt.Errorf("invalid --%s %s: must be less than --%s %s divided by %.1f, or the leader gets no retry before its deadline",
			keyLeaderElectRetryPeriod, retryPeriod, keyLeaderElectRenewDeadline, renewDeadline, leaderelection.JitterFactor)
	}
	return nil
}
