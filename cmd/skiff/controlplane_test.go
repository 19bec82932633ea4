package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
	"github.com/skiffkube/skiff/apiserver/authz/bootstrap"
	"github.com/skiffkube/skiff/config"
	"github.com/skiffkube/skiff/controllers/manager"
	"github.com/skiffkube/skiff/controllers/nodeipam"
)

// TestControlPlaneClientsSpeakProtobuf checks that the in-process loops'
// typed clients send and read protobuf, as Kubernetes' components do (in
// JSON each binding, Event and status write costs both ends several times
// the CPU), and that the caller's configuration is left as it was.
func TestControlPlaneClientsSpeakProtobuf(t *testing.T) {
	base := &rest.Config{Host: "https://127.0.0.1:6443"}
	_, managerConfig, err := controlPlaneClient(base)
	if err != nil {
		t.Fatal(err)
	}
	for name, rc := range map[string]*rest.Config{"scheduler": schedulerClientConfig(base), "controller manager": managerConfig} {
		if rc.ContentType != protobufContentType || rc.AcceptContentTypes != protobufContentType+",application/json" {
			t.Errorf("%s client: Content-Type %q, Accept %q; want protobuf first", name, rc.ContentType, rc.AcceptContentTypes)
		}
	}
	if rc := schedulerClientConfig(base); rc.QPS < 2000 {
		t.Errorf("scheduler client QPS %v: two writes per pod at 1,000 pods/s need 2,000", rc.QPS)
	}
	if base.ContentType != "" || base.QPS != 0 {
		t.Errorf("the caller's configuration changed: %+v", base)
	}
}

// The standalone components' --kube-api-qps and --kube-api-burst, set on
// the kubeconfig's configuration, are kept; unset, the loops' own apply.
func TestControlPlaneClientsKeepTheirSetRate(t *testing.T) {
	set := &rest.Config{Host: "https://127.0.0.1:6443", QPS: 20, Burst: 30}
	_, managerConfig, err := controlPlaneClient(set)
	if err != nil {
		t.Fatal(err)
	}
	for name, rc := range map[string]*rest.Config{"scheduler": schedulerClientConfig(set), "controller manager": managerConfig} {
		if rc.QPS != 20 || rc.Burst != 30 {
			t.Errorf("%s client: QPS %v, burst %d; want the set 20, 30", name, rc.QPS, rc.Burst)
		}
	}
	_, managerConfig, _ = controlPlaneClient(&rest.Config{Host: set.Host})
	if managerConfig.QPS != controlPlaneQPS || managerConfig.Burst != controlPlaneBurst {
		t.Errorf("controller manager client unset: QPS %v, burst %d", managerConfig.QPS, managerConfig.Burst)
	}
}

// TestComponentConfigDialsInMemory checks that the server's own loops
// reach it through its in-memory listener: their configuration works with
// an address nothing listens on, as their own least-privilege users.
func TestComponentConfigDialsInMemory(t *testing.T) {
	srv := apiservertest.Start(t)
	rc, err := componentConfig(srv.Bundle, srv.Server, bootstrap.SchedulerUser)
	if err != nil {
		t.Fatal(err)
	}
	rc.Host = "https://127.0.0.1:1"
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("the scheduler's client: %v", err)
	}
	if _, err := cs.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the scheduler listed secrets: %v, want Forbidden (it must act as itself, not as admin)", err)
	}
}

func TestClusterRootCAComesFromTheFlagElseTheKubeconfig(t *testing.T) {
	dir := t.TempDir()
	flagCA, _, err := certutil.GenerateSelfSignedCertKey("flag-ca", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfigCA, _, err := certutil.GenerateSelfSignedCertKey("kubeconfig-ca", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flagFile, kubeconfigFile, garbage := write("flag.crt", flagCA), write("kc.crt", kubeconfigCA), write("garbage.crt", []byte("not a certificate"))
	for _, tc := range []struct {
		name    string
		rc      rest.Config
		file    string
		want    []byte
		wantErr string
	}{
		{name: "the flag wins", rc: rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: kubeconfigCA}}, file: flagFile, want: flagCA},
		{name: "inline kubeconfig CA", rc: rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: kubeconfigCA}}, want: kubeconfigCA},
		{name: "kubeconfig CA file", rc: rest.Config{TLSClientConfig: rest.TLSClientConfig{CAFile: kubeconfigFile}}, want: kubeconfigCA},
		{name: "no CA anywhere", rc: rest.Config{}, want: nil},
		{name: "missing flag file", file: filepath.Join(dir, "none.crt"), wantErr: `invalid --root-ca-file "` + filepath.Join(dir, "none.crt") + `": open`},
		{name: "flag file without certificates", file: garbage, wantErr: `invalid --root-ca-file "` + garbage + `": data does not contain any valid RSA or ECDSA certificates`},
		{name: "kubeconfig CA file without certificates", rc: rest.Config{TLSClientConfig: rest.TLSClientConfig{CAFile: garbage}},
			wantErr: `invalid the kubeconfig's certificate-authority "` + garbage + `"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := clusterRootCA(&tc.rc, tc.file)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tc.want) {
				t.Fatalf("got %d bytes, %v; want %d bytes", len(got), err, len(tc.want))
			}
		})
	}
}

// The in-process node IPAM controller gets the server's --service-cidr, to
// carve it out of --cluster-cidr as skiff controller-manager does with
// --service-cluster-ip-range.
func TestServerGivesNodeIPAMItsServiceRange(t *testing.T) {
	cfg := &config.Server{ClusterCIDR: "10.0.0.0/8", NodeCIDRMaskSize: 24, ServiceCIDR: "10.43.0.0/16"}
	if got := controllerManagerConfig(cfg); got.ClusterCIDR != "10.0.0.0/8" || got.NodeCIDRMaskSize != 24 || got.ServiceCIDR != "10.43.0.0/16" {
		t.Errorf("controller manager's CIDRs: cluster %q /%d, service %q", got.ClusterCIDR, got.NodeCIDRMaskSize, got.ServiceCIDR)
	}
}

// --allocate-node-cidrs=false leaves the node IPAM controller out of
// whatever --controllers selects, and only it: an empty --controllers
// (every controller, as skiff reads it) still runs the others.
func TestAllocateNodeCIDRsFalseLeavesOnlyNodeIPAMOut(t *testing.T) {
	all, _, err := manager.SelectControllers([]string{"*"})
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range [][]string{{"*"}, {}, nil, {"*", "-job-controller"}} {
		for _, allocate := range []bool{true, false} {
			run, _, err := manager.SelectControllers(controllersToRun(spec, allocate))
			if err != nil {
				t.Errorf("--controllers=%q --allocate-node-cidrs=%v: %v", spec, allocate, err)
				continue
			}
			want := len(all)
			if len(spec) > 1 {
				want-- // -job-controller
			}
			if !allocate {
				want--
			}
			if len(run) != want || slices.Contains(run, nodeipam.Name) == !allocate {
				t.Errorf("--controllers=%q --allocate-node-cidrs=%v runs %d controllers %v, want %d, node IPAM %v", spec, allocate, len(run), run, want, allocate)
			}
		}
	}
}
