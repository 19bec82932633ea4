package main

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	schedv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// startStandalone runs `skiff <component>` against api with args until the
// test ends, and returns the address of its --secure-port.
func startStandalone(t *testing.T, api *apiservertest.Running, component string, args ...string) string {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(skiffBin, append([]string{component, "--kubeconfig", api.Kubeconfig, "--secure-port", port}, args...)...)
	cmd.Env = skiffEnv()
	log := &logBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("skiff %s's log:\n%s", component, log.String())
		}
	})
	return net.JoinHostPort("127.0.0.1", port)
}

// getConfigz is the componentconfig a standalone component serves on
// /configz to the admin, waiting for its endpoint to come up.
func getConfigz(t *testing.T, addr string) json.RawMessage {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the component's self-signed certificate
	}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/configz", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+apiservertest.AdminToken)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("GET /configz: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			var configz struct {
				ComponentConfig json.RawMessage `json:"componentconfig"`
			}
			if err := json.Unmarshal(body, &configz); err != nil || configz.ComponentConfig == nil {
				t.Fatalf("/configz is not {\"componentconfig\": ...}: %v\n%s", err, body)
			}
			return configz.ComponentConfig
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /configz: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// The standalone components serve their effective configuration on
// /configz, as kube-scheduler and kube-controller-manager do: what their
// flags and files set, and the defaults for the rest.
func TestStandaloneComponentsServeConfigz(t *testing.T) {
	api := apiservertest.Start(t)
	schedConfig := filepath.Join(t.TempDir(), "scheduler.yaml")
	if err := os.WriteFile(schedConfig, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nparallelism: 4\n"+
		"profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: MostAllocated}}}]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sched := startStandalone(t, api, "scheduler", "--config", schedConfig, "--kube-api-qps", "40", "--kube-api-burst", "80",
		"--leader-elect-lease-duration", "30s", "--profiling=false")

	var s schedv1.KubeSchedulerConfiguration
	if raw := getConfigz(t, sched); json.Unmarshal(raw, &s) != nil || s.Kind != "KubeSchedulerConfiguration" || s.APIVersion != "kubescheduler.config.k8s.io/v1" {
		t.Fatalf("scheduler's /configz: %s", raw)
	}
	if *s.Parallelism != 4 || *s.PodMaxBackoffSeconds != 10 || s.ClientConnection.QPS != 40 || s.ClientConnection.Burst != 80 ||
		s.ClientConnection.Kubeconfig != api.Kubeconfig || s.LeaderElection.LeaseDuration.Duration != 30*time.Second ||
		s.LeaderElection.RenewDeadline.Duration != 10*time.Second || *s.EnableProfiling {
		t.Errorf("scheduler's /configz: parallelism %d, podMaxBackoffSeconds %d, clientConnection %+v, leaderElection %+v, enableProfiling %v",
			*s.Parallelism, *s.PodMaxBackoffSeconds, s.ClientConnection, s.LeaderElection, *s.EnableProfiling)
	}
	if len(s.Profiles) != 1 || *s.Profiles[0].SchedulerName != "default-scheduler" || len(s.Profiles[0].PluginConfig) == 0 ||
		s.Profiles[0].PluginConfig[0].Name != "NodeResourcesFit" || !json.Valid(s.Profiles[0].PluginConfig[0].Args.Raw) {
		t.Fatalf("scheduler's profiles: %+v", s.Profiles)
	}
	var fit schedv1.NodeResourcesFitArgs
	if err := json.Unmarshal(s.Profiles[0].PluginConfig[0].Args.Raw, &fit); err != nil || fit.ScoringStrategy == nil || fit.ScoringStrategy.Type != schedv1.MostAllocated {
		t.Errorf("NodeResourcesFit's args: %s (%v)", s.Profiles[0].PluginConfig[0].Args.Raw, err)
	}
}
