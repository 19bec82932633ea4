package tables

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubectlBinaries are the versioned kubectl builds on the project machines
// (see the wire notes); each one present is tested.
var kubectlBinaries = []string{
	"/usr/lib/google-cloud-sdk/bin/kubectl.1.27",
	"/usr/lib/google-cloud-sdk/bin/kubectl.1.33",
}

// tableServer serves just enough of the API for `kubectl get pods`: legacy
// discovery for core/v1 and a pod list answered with ConvertToTable when
// kubectl asks for a Table.
func tableServer(t *testing.T, pods *corev1.PodList) string {
	t.Helper()
	writeJSON := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(v); err != nil {
			t.Errorf("encode: %v", err)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}}})
	})
	mux.HandleFunc("/apis", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}})
	})
	mux.HandleFunc("/api/v1", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1",
			APIResources: []metav1.APIResource{{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod", ShortNames: []string{"po"},
				Verbs: metav1.Verbs{"get", "list"}}}})
	})
	listPods := func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept"), "as=Table") {
			http.Error(w, "this test server only answers Table requests", http.StatusNotAcceptable)
			return
		}
		policy, err := ParseIncludeObject(r.URL.Query().Get("includeObject"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		table, err := ConvertToTable(pods, Options{IncludeObject: policy})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, table)
	}
	mux.HandleFunc("/api/v1/pods", listPods)
	mux.HandleFunc("/api/v1/namespaces/default/pods", listPods)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestRealKubectlRendersTables runs the real kubectl against the tables this
// package produces, so column layout, wide columns and the row metadata
// (namespace for -A, labels for --show-labels) are checked by the client
// that consumes them.
func TestRealKubectlRendersTables(t *testing.T) {
	// The server measures ages from the wall clock, so the fixture does too.
	wall := time.Now()
	status := waiting("app", "CrashLoopBackOff", 4)
	status.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: metav1.NewTime(wall.Add(-90 * time.Second))}
	crashing := makePod("web-1").containers("app").phase(corev1.PodRunning).status(status).pod
	crashing.CreationTimestamp = metav1.NewTime(wall.Add(-10 * time.Minute))
	crashing.Labels = map[string]string{"app": "web"}
	crashing.Spec.NodeName = "node-a"
	crashing.Status.PodIPs = []corev1.PodIP{{IP: "10.42.0.7"}}
	url := tableServer(t, &corev1.PodList{Items: []corev1.Pod{*crashing}})

	found := false
	for _, bin := range kubectlBinaries {
		if _, err := os.Stat(bin); err != nil {
			continue
		}
		found = true
		t.Run(filepath.Base(bin), func(t *testing.T) {
			home := t.TempDir()
			kubeconfig := filepath.Join(home, "kubeconfig")
			if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			run := func(args ...string) string {
				t.Helper()
				base := []string{"--server=" + url, "--cache-dir=" + filepath.Join(home, "cache"), "--request-timeout=20s"}
				cmd := exec.Command(bin, append(base, args...)...)
				cmd.Env = []string{"HOME=" + home, "KUBECONFIG=" + kubeconfig}
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("kubectl %v: %v\n%s", args, err, out)
				}
				return string(out)
			}
			cases := []struct {
				args []string
				want []string
				not  []string
			}{
				{[]string{"get", "pods", "-n", "default"},
					[]string{"NAME", "READY", "STATUS", "RESTARTS", "AGE", "web-1", "0/1", "CrashLoopBackOff", "4 (", "s ago)", "10m"},
					[]string{"NODE", "10.42.0.7"}},
				{[]string{"get", "pods", "-n", "default", "-o", "wide"},
					[]string{"IP", "NODE", "NOMINATED NODE", "READINESS GATES", "10.42.0.7", "node-a", "<none>"}, nil},
				{[]string{"get", "pods", "-A"}, []string{"NAMESPACE", "default", "web-1"}, nil},
				{[]string{"get", "pods", "-n", "default", "--show-labels"}, []string{"LABELS", "app=web"}, nil},
				{[]string{"get", "pods", "-n", "default", "-L", "app"}, []string{"APP", "web"}, nil},
			}
			for _, tc := range cases {
				out := run(tc.args...)
				for _, w := range tc.want {
					if !strings.Contains(out, w) {
						t.Errorf("kubectl %v output lacks %q:\n%s", tc.args, w, out)
					}
				}
				for _, n := range tc.not {
					if strings.Contains(out, n) {
						t.Errorf("kubectl %v output has wide-only %q:\n%s", tc.args, n, out)
					}
				}
			}
		})
	}
	if !found {
		t.Skip("no versioned kubectl binary on this machine")
	}
}
