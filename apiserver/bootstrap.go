package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffkube/skiff/storage"
)

// systemNamespaces exist in every Kubernetes cluster from the start.
var systemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// bootstrapActor is recorded in history for objects the server creates itself.
const bootstrapActor = "system:apiserver"

// ensureSystemNamespaces creates the namespaces every cluster has, as
// Kubernetes' bootstrap controller does. Existing ones are left alone.
func (s *Server) ensureSystemNamespaces(ctx context.Context) error {
	ctx = storage.WithActor(ctx, bootstrapActor)
	for _, name := range systemNamespaces {
		ns := &corev1.Namespace{
			TypeMeta: metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{
				Name: name, UID: types.UID(uuid.NewString()),
				CreationTimestamp: metav1.NewTime(time.Now().UTC().Truncate(time.Second)),
				Labels:            map[string]string{corev1.LabelMetadataName: name},
			},
			Spec:   corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
			Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
		}
		data, err := json.Marshal(ns)
		if err != nil {
			return err
		}
		if _, err := s.cfg.Store.Create(ctx, "/registry/namespaces/"+name, data, 0); err != nil && !errors.Is(err, storage.ErrKeyExists) {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
	}
	return nil
}

// systemPriorityClasses are the two classes every Kubernetes cluster has
// for its own critical pods.
var systemPriorityClasses = []struct {
	name  string
	value int32
	desc  string
}{
	{"system-node-critical", 2000001000, "Used for system critical pods that must not be moved from their current node."},
	{"system-cluster-critical", 2000000000, "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."},
}

// ensureSystemPriorityClasses creates the system priority classes, as
// Kubernetes' scheduling bootstrap does. Existing ones are left alone.
func (s *Server) ensureSystemPriorityClasses(ctx context.Context) error {
	ctx = storage.WithActor(ctx, bootstrapActor)
	policy := corev1.PreemptLowerPriority
	for _, c := range systemPriorityClasses {
		pc := &schedulingv1.PriorityClass{
			TypeMeta: metav1.TypeMeta{Kind: "PriorityClass", APIVersion: "scheduling.k8s.io/v1"},
			ObjectMeta: metav1.ObjectMeta{
				Name: c.name, UID: types.UID(uuid.NewString()),
				CreationTimestamp: metav1.NewTime(time.Now().UTC().Truncate(time.Second)),
			},
			Value: c.value, Description: c.desc, PreemptionPolicy: &policy,
		}
		data, err := json.Marshal(pc)
		if err != nil {
			return err
		}
		if _, err := s.cfg.Store.Create(ctx, "/registry/scheduling.k8s.io/priorityclasses/"+c.name, data, 0); err != nil && !errors.Is(err, storage.ErrKeyExists) {
			return fmt.Errorf("creating priority class %s: %w", c.name, err)
		}
	}
	return nil
}
