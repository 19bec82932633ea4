package rootcacert

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/skiffkube/skiff/controllers/controllertest"
	"github.com/skiffkube/skiff/controllers/runner"
)

const testCA = "-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n"

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
}

// published is the ConfigMap as the controller writes it, changed by edit.
func published(ns string, edit func(*corev1.ConfigMap)) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: ns, ResourceVersion: "7",
			Annotations: map[string]string{DescriptionAnnotation: Description}},
		Data: map[string]string{CAKey: testCA},
	}
	if edit != nil {
		edit(cm)
	}
	return cm
}

func newController(t *testing.T, client *fake.Clientset) (*Controller, informers.SharedInformerFactory) {
	t.Helper()
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, f.Core().V1().Namespaces(), f.Core().V1().ConfigMaps(), Options{Logger: quiet, RootCA: []byte(testCA)})
	if err != nil {
		t.Fatal(err)
	}
	return c, f
}

func TestSync(t *testing.T) {
	now := metav1.NewTime(time.Now())
	tests := []struct {
		name string
		ns   *corev1.Namespace // nil: the namespace is gone
		cm   *corev1.ConfigMap // nil: none yet
		// want is the ConfigMap after sync; nil: no write at all.
		want     *corev1.ConfigMap
		wantVerb string
	}{
		{
			name: "a new namespace gets the CA", ns: namespace("team"),
			want: published("team", func(cm *corev1.ConfigMap) { cm.ResourceVersion = "" }), wantVerb: "create",
		},
		{
			name: "a correct ConfigMap is left alone", ns: namespace("team"), cm: published("team", nil),
		},
		{
			name: "other labels, annotations and binaryData do not count", ns: namespace("team"),
			cm: published("team", func(cm *corev1.ConfigMap) {
				cm.Labels = map[string]string{"team": "blue"}
				cm.Annotations["owner"] = "ops"
				cm.BinaryData = map[string][]byte{"extra": []byte{1}}
			}),
		},
		{
			name: "an edited CA is put back", ns: namespace("team"),
			cm:   published("team", func(cm *corev1.ConfigMap) { cm.Data[CAKey] = "not a CA" }),
			want: published("team", nil), wantVerb: "update",
		},
		{
			name: "an added key is removed, other labels and annotations kept", ns: namespace("team"),
			cm: published("team", func(cm *corev1.ConfigMap) {
				cm.Data["extra"] = "x"
				cm.Labels = map[string]string{"team": "blue"}
				cm.Annotations["owner"] = "ops"
			}),
			want: published("team", func(cm *corev1.ConfigMap) {
				cm.Labels = map[string]string{"team": "blue"}
				cm.Annotations["owner"] = "ops"
			}),
			wantVerb: "update",
		},
		{
			name: "emptied data is filled", ns: namespace("team"),
			cm:   published("team", func(cm *corev1.ConfigMap) { cm.Data = nil }),
			want: published("team", nil), wantVerb: "update",
		},
		{
			name: "a missing description is put back, other annotations kept", ns: namespace("team"),
			cm:   published("team", func(cm *corev1.ConfigMap) { cm.Annotations = map[string]string{"owner": "ops"} }),
			want: published("team", func(cm *corev1.ConfigMap) { cm.Annotations["owner"] = "ops" }), wantVerb: "update",
		},
		{
			name: "no annotations at all", ns: namespace("team"),
			cm:   published("team", func(cm *corev1.ConfigMap) { cm.Annotations = nil }),
			want: published("team", nil), wantVerb: "update",
		},
		{
			// As Kubernetes: any description will do.
			name: "a description of one's own is kept", ns: namespace("team"),
			cm: published("team", func(cm *corev1.ConfigMap) { cm.Annotations[DescriptionAnnotation] = "mine" }),
		},
		{
			// As Kubernetes: the repair writes the standard description.
			name: "an edited CA is repaired, with the standard description", ns: namespace("team"),
			cm: published("team", func(cm *corev1.ConfigMap) {
				cm.Annotations[DescriptionAnnotation] = "mine"
				cm.Data[CAKey] = "old"
			}),
			want: published("team", nil), wantVerb: "update",
		},
		{
			name: "a namespace being deleted gets none",
			ns:   &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", DeletionTimestamp: &now}},
		},
		{
			name: "a namespace in phase Terminating gets none",
			ns:   &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
		},
		{
			name: "a terminating namespace's wrong ConfigMap is not repaired",
			ns:   &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", DeletionTimestamp: &now}},
			cm:   published("team", func(cm *corev1.ConfigMap) { cm.Data[CAKey] = "old" }),
		},
		{
			name: "a namespace that is gone gets none",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			if tc.ns != nil {
				objs = append(objs, tc.ns)
			}
			if tc.cm != nil {
				objs = append(objs, tc.cm)
			}
			client := controllertest.NewClient(objs...)
			c, f := newController(t, client)
			if tc.ns != nil {
				controllertest.Load(t, f.Core().V1().Namespaces().Informer(), tc.ns)
			}
			if tc.cm != nil {
				controllertest.Load(t, f.Core().V1().ConfigMaps().Informer(), tc.cm)
			}
			client.ClearActions()
			if err := c.sync(context.Background(), "team"); err != nil {
				t.Fatal(err)
			}
			writes := controllertest.Filter(client.Actions(), "", "")
			if tc.want == nil {
				if len(writes) != 0 {
					t.Fatalf("writes = %v, want none", writes)
				}
				return
			}
			if len(writes) != 1 || writes[0].GetVerb() != tc.wantVerb || writes[0].GetResource().Resource != "configmaps" {
				t.Fatalf("writes = %v, want one %s of a configmap", writes, tc.wantVerb)
			}
			got := writes[0].(interface{ GetObject() runtime.Object }).GetObject().(*corev1.ConfigMap)
			if got.Namespace != "team" || got.Name != ConfigMapName || got.ResourceVersion != tc.want.ResourceVersion ||
				!maps.Equal(got.Data, tc.want.Data) || !maps.Equal(got.Annotations, tc.want.Annotations) ||
				!maps.Equal(got.Labels, tc.want.Labels) {
				t.Errorf("wrote %s/%s rv %q data %q annotations %q labels %q\nwant data %q annotations %q labels %q",
					got.Namespace, got.Name, got.ResourceVersion, got.Data, got.Annotations, got.Labels,
					tc.want.Data, tc.want.Annotations, tc.want.Labels)
			}
		})
	}
}

// Failed writes the informers will bring back anyway, or that a namespace
// being deleted explains, are not retried; others are.
func TestSyncErrors(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	terminating := apierrors.NewForbidden(gr, ConfigMapName, errors.New("namespace team is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	tests := []struct {
		name    string
		exists  bool // the cache holds a wrong ConfigMap: sync updates, else creates
		err     error
		wantErr bool
	}{
		{"someone else created it first", false, apierrors.NewAlreadyExists(gr, ConfigMapName), false},
		{"the namespace is gone", false, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "team"), false},
		{"the namespace is being terminated", false, terminating, false},
		{"a create the server failed", false, apierrors.NewInternalError(errors.New("boom")), true},
		{"a create RBAC refused", false, apierrors.NewForbidden(gr, ConfigMapName, errors.New("no")), true},
		{"deleted since the cache saw it", true, apierrors.NewNotFound(gr, ConfigMapName), false},
		{"changed since the cache saw it", true, apierrors.NewConflict(gr, ConfigMapName, errors.New("rv")), false},
		{"an update the server failed", true, apierrors.NewInternalError(errors.New("boom")), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := controllertest.NewClient()
			verb := "create"
			if tc.exists {
				verb = "update"
			}
			client.PrependReactor(verb, "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, tc.err })
			c, f := newController(t, client)
			controllertest.Load(t, f.Core().V1().Namespaces().Informer(), namespace("team"))
			if tc.exists {
				controllertest.Load(t, f.Core().V1().ConfigMaps().Informer(), published("team", func(cm *corev1.ConfigMap) { cm.Data = nil }))
			}
			err := c.sync(context.Background(), "team")
			if (err != nil) != tc.wantErr {
				t.Errorf("sync = %v, want an error: %v", err, tc.wantErr)
			}
			if n := len(controllertest.Filter(client.Actions(), verb, "configmaps")); n != 1 {
				t.Errorf("%d %ss, want 1", n, verb)
			}
		})
	}
}

func TestNewNeedsARootCA(t *testing.T) {
	client := fake.NewClientset()
	f := informers.NewSharedInformerFactory(client, 0)
	if _, err := New(client, f.Core().V1().Namespaces(), f.Core().V1().ConfigMaps(), Options{}); !errors.Is(err, ErrNoRootCA) {
		t.Errorf("New without a root CA = %v, want ErrNoRootCA", err)
	}
}

// Through informers and the queue: every namespace gets the CA, a deleted
// ConfigMap comes back, an edited one is repaired, a namespace created later
// gets one, and other ConfigMaps are not touched.
func TestRunKeepsEveryNamespacePublished(t *testing.T) {
	client := controllertest.NewClient(namespace("default"), namespace("kube-system"), namespace("team"),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "team"}, Data: map[string]string{"a": "b"}})
	c, f := newController(t, client)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	defer func() { cancel(); <-done; f.Shutdown() }()
	f.Start(ctx.Done())
	controllertest.WaitForWatches(t, client, "namespaces", "configmaps")
	go func() { defer close(done); c.Run(ctx, 2) }()

	cms := client.CoreV1().ConfigMaps
	waitPublished := func(ns string) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			cm, err := cms(ns).Get(ctx, ConfigMapName, metav1.GetOptions{})
			return err == nil && c.published(cm), nil
		})
		if err != nil {
			cm, getErr := cms(ns).Get(ctx, ConfigMapName, metav1.GetOptions{})
			t.Fatalf("%s/%s never published: %+v %v", ns, ConfigMapName, cm, getErr)
		}
	}
	for _, ns := range []string{"default", "kube-system", "team"} {
		waitPublished(ns)
	}

	if err := cms("team").Delete(ctx, ConfigMapName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPublished("team")

	cm, err := cms("default").Get(ctx, ConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[CAKey] = "tampered"
	delete(cm.Annotations, DescriptionAnnotation)
	cm.Labels = map[string]string{"keep": "me"}
	if _, err := cms("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPublished("default")
	if cm, _ := cms("default").Get(ctx, ConfigMapName, metav1.GetOptions{}); cm.Labels["keep"] != "me" {
		t.Errorf("repair dropped a label: %v", cm.Labels)
	}

	if _, err := client.CoreV1().Namespaces().Create(ctx, namespace("late"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPublished("late")

	if s, _ := cms("team").Get(ctx, "settings", metav1.GetOptions{}); len(s.Annotations) != 0 || s.Data["a"] != "b" || len(s.Data) != 1 {
		t.Errorf("another ConfigMap was changed: %+v", s)
	}
	for _, a := range controllertest.Filter(client.Actions(), "update", "configmaps") {
		if name := a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap).Name; name != ConfigMapName {
			t.Errorf("updated ConfigMap %s", name)
		}
	}
}

// As Kubernetes' publisher: a namespace whose kube-root-ca.crt cannot be
// created (an API server away, a webhook or a configmaps quota refusing it)
// is retried until the create succeeds, however many tries that takes.
// Nothing else brings the namespace back soon (its informer resyncs twice a
// day), and pods there cannot start without the CA.
func TestFailingCreateIsRetriedUntilItSucceeds(t *testing.T) {
	client := controllertest.NewClient(namespace("team"))
	failures := controllertest.RefuseFirst(client, "create", "configmaps", runner.MaxRetries+5, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, ConfigMapName, errors.New("exceeded quota")))
	c, f := newController(t, client)
	c.queue = runner.NewQueueWithRateLimiter(Name, controllertest.FastBackoff())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	defer func() { cancel(); <-done; f.Shutdown() }()
	f.Start(ctx.Done())
	go func() { defer close(done); c.Run(ctx, 1) }()

	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ConfigMaps("team").Get(ctx, ConfigMapName, metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("no %s after %d creates, the first %d failing", ConfigMapName, failures.Load(), runner.MaxRetries+5)
	}
}
