package replication

import (
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/replicaset"
)

// Name is the controller's name in logs and the manager: kube-controller-manager's, which its
// --controllers also takes as "replicationcontroller".
const Name = "replicationcontroller-controller"

// EventSource is the component its events report, as Kubernetes' replication manager's.
const EventSource = "replication-controller"

var controllerKind = corev1.SchemeGroupVersion.WithKind("ReplicationController")

// Options tune the controller; zero values mean the defaults.
type Options struct {
	BurstReplicas int
	Logger        *slog.Logger
	// Now is the clock used for availability (minReadySeconds); tests pin it.
	Now func() time.Time
}

// New returns the ReplicaSet controller driven through ReplicationControllers: it reads them from
// rcInformer and writes their status as ReplicaSets converted back, and the pods it creates and
// adopts name the ReplicationController as their controller. Call it before the informer factory
// is started.
func New(client kubernetes.Interface, rcInformer coreinformers.ReplicationControllerInformer, podInformer coreinformers.PodInformer, rec record.EventRecorder, opts Options) (*replicaset.Controller, error) {
	if client == nil || rcInformer == nil || podInformer == nil || rec == nil {
		return nil, fmt.Errorf("replication: client, informers and recorder are required")
	}
	return replicaset.New(client, informer{rcInformer}, podInformer, recorder{rec}, replicaset.Options{
		BurstReplicas: opts.BurstReplicas,
		Logger:        opts.Logger,
		Now:           opts.Now,
		Kind:          controllerKind,
		Name:          Name,
		ReplicaSets: func(namespace string) replicaset.Client {
			return rcClient{client.CoreV1().ReplicationControllers(namespace)}
		},
	})
}
