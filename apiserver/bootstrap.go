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
	storagev1 "k8s.io/api/storage/v1"
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

// Local-path storage: the default StorageClass, served by the controller
// manager's local-path provisioner (controllers/localpath), which gives each
// claim a directory on the node its first pod is scheduled to.
const (
	LocalPathClass       = "local-path"
	LocalPathProvisioner = "skiff.io/local-path"
)

// ensureDefaultStorageClass creates the local-path class, marked default,
// as k3s ships its local-path provisioner. An existing class of that name is
// left alone (an operator may have unmarked it); a deleted one comes back at
// the next start.
func (s *Server) ensureDefaultStorageClass(ctx context.Context) error {
	ctx = storage.WithActor(ctx, bootstrapActor)
	reclaim := corev1.PersistentVolumeReclaimDelete
	binding := storagev1.VolumeBindingWaitForFirstConsumer
	sc := &storagev1.StorageClass{
		TypeMeta: metav1.TypeMeta{Kind: "StorageClass", APIVersion: "storage.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: LocalPathClass, UID: types.UID(uuid.NewString()),
			CreationTimestamp: metav1.NewTime(time.Now().UTC().Truncate(time.Second)),
			Annotations:       map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner: LocalPathProvisioner, ReclaimPolicy: &reclaim, VolumeBindingMode: &binding,
	}
	data, err := json.Marshal(sc)
	if err != nil {
		return err
	}
	if _, err := s.cfg.Store.Create(ctx, "/registry/storage.k8s.io/storageclasses/"+LocalPathClass, data, 0); err != nil && !errors.Is(err, storage.ErrKeyExists) {
		return fmt.Errorf("creating storage class %s: %w", LocalPathClass, err)
	}
	return nil
}
