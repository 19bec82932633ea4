package serviceaccount

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllertest"
	"github.com/skiffkube/skiff/controllers/runner"
)

func TestDefaultServiceAccount(t *testing.T) {
	ts := metav1.NewTime(time.Now())
	tests := []struct {
		name       string
		ns         *corev1.Namespace
		existing   []runtime.Object
		wantCreate bool
	}{
		{"a new namespace gets one", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, nil, true},
		{"an existing one is kept", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}},
			[]runtime.Object{&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "team"}}}, false},
		{"other service accounts do not count", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}},
			[]runtime.Object{&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder", Namespace: "team"}}}, true},
		{"a terminating namespace gets none", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", DeletionTimestamp: &ts}}, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := append([]runtime.Object{tc.ns}, tc.existing...)
			client := controllertest.NewClient(objs...)
			f := informers.NewSharedInformerFactory(client, 0)
			c, err := New(client, f.Core().V1().Namespaces(), f.Core().V1().ServiceAccounts(), record.NewFakeRecorder(1), Options{})
			if err != nil {
				t.Fatal(err)
			}
			controllertest.Load(t, f.Core().V1().Namespaces().Informer(), tc.ns)
			controllertest.Load(t, f.Core().V1().ServiceAccounts().Informer(), tc.existing...)
			client.ClearActions()
			if err := c.sync(context.Background(), "team"); err != nil {
				t.Fatal(err)
			}
			creates := controllertest.Filter(client.Actions(), "create", "serviceaccounts")
			if (len(creates) == 1) != tc.wantCreate || len(creates) > 1 {
				t.Fatalf("creates = %d, want create %v", len(creates), tc.wantCreate)
			}
			if tc.wantCreate {
				if _, err := client.CoreV1().ServiceAccounts("team").Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// As Kubernetes' service account controller: a namespace whose default
// ServiceAccount cannot be created (an API server away, a webhook or quota
// refusing it) is retried until the create succeeds, however many tries that
// takes. Nothing else brings the namespace back soon: its informer resyncs
// twice a day, and pods cannot be created there without the account.
func TestFailingCreateIsRetriedUntilItSucceeds(t *testing.T) {
	client := controllertest.NewClient(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}})
	failures := controllertest.RefuseFirst(client, "create", "serviceaccounts", runner.MaxRetries+5, apierrors.NewInternalError(errors.New("etcd away")))
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, f.Core().V1().Namespaces(), f.Core().V1().ServiceAccounts(), record.NewFakeRecorder(1),
		Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	c.queue = runner.NewQueueWithRateLimiter(Name, controllertest.FastBackoff())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	defer func() { cancel(); <-done; f.Shutdown() }()
	f.Start(ctx.Done())
	go func() { defer close(done); c.Run(ctx, 1) }()

	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts("team").Get(ctx, DefaultName, metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("no default ServiceAccount after %d creates, the first %d failing", failures.Load(), runner.MaxRetries+5)
	}
}
