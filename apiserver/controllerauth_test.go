package apiserver_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
	"github.com/skiffkube/skiff/apiserver/authz/bootstrap"
	"github.com/skiffkube/skiff/controllers/endpointslice"
	"github.com/skiffkube/skiff/controllers/endpointslicemirroring"
	"github.com/skiffkube/skiff/controllers/job"
	"github.com/skiffkube/skiff/controllers/legacytokencleaner"
	"github.com/skiffkube/skiff/controllers/manager"
	namespacectrl "github.com/skiffkube/skiff/controllers/namespace"
	"github.com/skiffkube/skiff/controllers/nodelifecycle"
	"github.com/skiffkube/skiff/controllers/replicaset"
	"github.com/skiffkube/skiff/controllers/rootcacert"
	"github.com/skiffkube/skiff/controllers/serviceaccount"
)

// TestControllerIdentities: each controller acts as its own kube-system
// service account (tokens from the TokenRequest API, asked for by the
// controller manager's identity), bound to its system:controller:* role;
// the matrix checks, over HTTPS, what a few of them may and may not do.
func TestControllerIdentities(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()

	// Every account the manager hands out has its role and binding.
	for ctrl, account := range manager.ServiceAccounts {
		if !slices.Contains(bootstrap.ControllerServiceAccounts(), account) {
			t.Errorf("controller %s acts as %s, which the default policy does not bind", ctrl, account)
		}
		b, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, bootstrap.ControllerRolePrefix+account, metav1.GetOptions{})
		if err != nil || len(b.Subjects) != 1 || b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Namespace != "kube-system" ||
			b.Subjects[0].Name != account || b.RoleRef.Name != bootstrap.ControllerRolePrefix+account {
			t.Errorf("binding of %s: %+v %v", account, b, err)
		}
	}

	root := clientsetFor(t, srv.UserConfig(t, bootstrap.ControllerManagerUser))
	creds := manager.ServiceAccountCredentials(root, srv.Config)
	as := func(ctrl string) *kubernetes.Clientset {
		rc, err := creds(manager.ServiceAccounts[ctrl])
		if err != nil {
			t.Fatal(err)
		}
		return clientsetFor(t, rc)
	}
	jobs, rs, ns, node, sa, rootca := as(job.Name), as(replicaset.Name), as(namespacectrl.Name), as(nodelifecycle.Name),
		as(serviceaccount.Name), as(rootcacert.Name)
	mirror, slicer := as(endpointslicemirroring.Name), as(endpointslice.Name)
	cleaner := as(legacytokencleaner.Name)

	// The token is the account's (the first request creates the account).
	review, err := jobs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || review.Status.UserInfo.Username != "system:serviceaccount:kube-system:job-controller" {
		t.Fatalf("job controller's identity: %+v %v", review, err)
	}

	if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := func(name string) *corev1.Pod {
		p := testPod(name)
		p.Spec.ServiceAccountName = "robot"
		return p
	}
	emptyPatch := []byte(`{}`)
	cases := []struct {
		who   string
		what  string
		do    func() error
		allow bool
	}{
		{"job", "create a pod", func() error {
			_, err := jobs.CoreV1().Pods("default").Create(ctx, pod("from-job"), metav1.CreateOptions{})
			return err
		}, true},
		{"job", "patch a pod", func() error {
			_, err := jobs.CoreV1().Pods("default").Patch(ctx, "from-job", types.MergePatchType, emptyPatch, metav1.PatchOptions{})
			return err
		}, true},
		{"job", "update a job's status", func() error {
			j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: pod("x").Spec.Containers}}}}
			j, err := admin.BatchV1().Jobs("default").Create(ctx, j, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("admin creating the job: %w", err)
			}
			_, err = jobs.BatchV1().Jobs("default").UpdateStatus(ctx, j, metav1.UpdateOptions{})
			return err
		}, true},
		{"job", "delete a node", func() error { return jobs.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}) }, false},
		{"job", "read a secret", func() error {
			_, err := jobs.CoreV1().Secrets("default").Get(ctx, "s", metav1.GetOptions{})
			return err
		}, false},
		{"job", "create a replica set", func() error {
			_, err := jobs.AppsV1().ReplicaSets("default").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs"}}, metav1.CreateOptions{})
			return err
		}, false},
		{"replicaset", "create a pod", func() error {
			_, err := rs.CoreV1().Pods("default").Create(ctx, pod("from-rs"), metav1.CreateOptions{})
			return err
		}, true},
		{"replicaset", "create a job", func() error {
			_, err := rs.BatchV1().Jobs("default").Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j2"}}, metav1.CreateOptions{})
			return err
		}, false},
		{"replicaset", "delete a namespace", func() error {
			return rs.CoreV1().Namespaces().Delete(ctx, "default", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		}, false},
		{"node", "update a node", func() error {
			n, err := admin.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
			if err != nil {
				return err
			}
			_, err = node.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			return err
		}, true},
		{"node", "create a pod", func() error {
			_, err := node.CoreV1().Pods("default").Create(ctx, pod("from-node"), metav1.CreateOptions{})
			return err
		}, false},
		{"namespace", "delete a secret", func() error {
			return ns.CoreV1().Secrets("default").Delete(ctx, "s", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		}, true},
		{"namespace", "create a secret", func() error {
			_, err := ns.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s2"}}, metav1.CreateOptions{})
			return err
		}, false},
		{"serviceaccount", "create a service account", func() error {
			_, err := sa.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "made"}}, metav1.CreateOptions{})
			return err
		}, true},
		{"serviceaccount", "delete a service account", func() error {
			return sa.CoreV1().ServiceAccounts("default").Delete(ctx, "made", metav1.DeleteOptions{})
		}, false},
		{"root CA publisher", "create a config map", func() error {
			_, err := rootca.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ca-probe"}}, metav1.CreateOptions{})
			return err
		}, true},
		{"root CA publisher", "update a config map", func() error {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ca-probe"}, Data: map[string]string{"ca.crt": "x"}}
			_, err := rootca.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{})
			return err
		}, true},
		{"root CA publisher", "delete a config map", func() error {
			return rootca.CoreV1().ConfigMaps("default").Delete(ctx, "ca-probe", metav1.DeleteOptions{})
		}, false},
		{"root CA publisher", "read a secret", func() error {
			_, err := rootca.CoreV1().Secrets("default").Get(ctx, "s", metav1.GetOptions{})
			return err
		}, false},
		{"endpointslice mirroring", "create an endpoint slice", func() error {
			es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "mirror-probe"}, AddressType: discoveryv1.AddressTypeIPv4}
			_, err := mirror.DiscoveryV1().EndpointSlices("default").Create(ctx, es, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}, true},
		{"endpointslice mirroring", "list endpoints", func() error {
			_, err := mirror.CoreV1().Endpoints("default").List(ctx, metav1.ListOptions{})
			return err
		}, true},
		{"endpointslice mirroring", "delete endpoints", func() error {
			return mirror.CoreV1().Endpoints("default").Delete(ctx, "kubernetes", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		}, false},
		{"endpointslice mirroring", "list pods", func() error {
			_, err := mirror.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
			return err
		}, false},
		// The EndpointSlice controller reads nodes (their zones) as Kubernetes' role allows.
		{"endpointslice", "list nodes", func() error {
			_, err := slicer.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			return err
		}, true},
		{"endpointslice", "create an endpoint slice", func() error {
			es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "slice-probe"}, AddressType: discoveryv1.AddressTypeIPv4}
			_, err := slicer.DiscoveryV1().EndpointSlices("default").Create(ctx, es, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}, true},
		{"endpointslice", "delete a node", func() error {
			return slicer.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		}, false},
		// The legacy token cleaner reads the tracking ConfigMap and labels or deletes token Secrets.
		{"legacy token cleaner", "read the tracking config map", func() error {
			_, err := cleaner.CoreV1().ConfigMaps("kube-system").Get(ctx, "kube-apiserver-legacy-service-account-token-tracking", metav1.GetOptions{})
			return err
		}, true},
		{"legacy token cleaner", "read another config map", func() error {
			_, err := cleaner.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
			return err
		}, false},
		{"legacy token cleaner", "patch a secret", func() error {
			_, err := cleaner.CoreV1().Secrets("default").Patch(ctx, "s", types.MergePatchType, emptyPatch, metav1.PatchOptions{})
			return err
		}, true},
		{"legacy token cleaner", "delete a secret", func() error {
			return cleaner.CoreV1().Secrets("default").Delete(ctx, "s", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		}, true},
		{"legacy token cleaner", "read a secret", func() error {
			_, err := cleaner.CoreV1().Secrets("default").Get(ctx, "s", metav1.GetOptions{})
			return err
		}, false},
		// The manager's own identity only watches, elects, records and mints.
		{"manager", "list pods", func() error {
			_, err := root.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			return err
		}, true},
		{"manager", "create a pod", func() error {
			_, err := root.CoreV1().Pods("default").Create(ctx, pod("from-manager"), metav1.CreateOptions{})
			return err
		}, false},
		{"manager", "delete a node", func() error { return root.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}) }, false},
	}
	for _, c := range cases {
		err := c.do()
		switch {
		case c.allow && err != nil:
			t.Errorf("%s may %s: %v", c.who, c.what, err)
		case !c.allow && !apierrors.IsForbidden(err):
			t.Errorf("%s may not %s: got %v, want 403", c.who, c.what, err)
		}
	}
}
