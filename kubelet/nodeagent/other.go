//go:build !linux

package nodeagent

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var getOptions = metav1.GetOptions{}

// Run fails: real pods need Linux (namespaces, cgroups, containerd).
func Run(ctx context.Context, o Options) error {
	return errors.New("nodeagent: running real pods needs Linux")
}
