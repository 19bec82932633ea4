package serviceaccount

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllertest"
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
