package defaultbinder

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
)

// Name is the plugin's registry name.
const Name = "DefaultBinder"

// DefaultBinder implements Bind.
type DefaultBinder struct{ h framework.Handle }

// New builds the plugin; the handle must carry a clientset.
func New(_ any, h framework.Handle) (framework.Plugin, error) {
	if h == nil || h.ClientSet() == nil {
		return nil, errors.New("DefaultBinder needs a clientset")
	}
	return &DefaultBinder{h: h}, nil
}

// Name implements framework.Plugin.
func (*DefaultBinder) Name() string { return Name }

// Bind posts a Binding for pod to nodeName. The pod's UID is a precondition,
// so a pod deleted and recreated under the same name is not bound by mistake.
func (b *DefaultBinder) Bind(ctx context.Context, _ *framework.CycleState, pod *v1.Pod, nodeName string) *framework.Status {
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	if err := b.h.ClientSet().CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return framework.AsStatus(fmt.Errorf("binding pod %s/%s to node %s: %w", pod.Namespace, pod.Name, nodeName, err))
	}
	return nil
}
