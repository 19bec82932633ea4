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

	kcmconfig "k8s.io/kube-controller-manager/config/v1alpha1"
	schedv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
	"github.com/skiffkube/skiff/controllers/manager"
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
	cm := startStandalone(t, api, "controller-manager", "--controllers", "*,-nodeipam", "--cluster-cidr", "10.50.0.0/16", "--service-cluster-ip-range", "10.60.0.0/16",
		"--node-cidr-mask-size", "26", "--node-eviction-rate", "0.5", "--concurrent-deployment-syncs", "3", "--concurrent-gc-syncs", "7",
		"--max-endpoints-per-slice", "50", "--terminated-pod-gc-threshold", "200", "--kube-api-qps", "25",
		"--leader-elect-renew-deadline", "12s", "--node-monitor-grace-period", "1m", "--legacy-service-account-token-clean-up-period", "720h")
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

	var c kcmconfig.KubeControllerManagerConfiguration
	if raw := getConfigz(t, cm); json.Unmarshal(raw, &c) != nil || c.Kind != "KubeControllerManagerConfiguration" || c.APIVersion != "kubecontrollermanager.config.k8s.io/v1alpha1" {
		t.Fatalf("controller manager's /configz: %s", raw)
	}
	g := c.Generic
	if g.Address != "127.0.0.1" || g.Port == 0 || len(g.Controllers) != 2 || g.Controllers[1] != "-nodeipam" || g.ClientConnection.QPS != 25 ||
		g.ClientConnection.Burst != 1000 || g.ClientConnection.Kubeconfig != api.Kubeconfig {
		t.Errorf("controller manager's Generic: %+v", g)
	}
	if le := g.LeaderElection; le.LeaderElect == nil || !*le.LeaderElect || le.RenewDeadline.Duration != 12*time.Second || le.LeaseDuration.Duration != 15*time.Second ||
		le.ResourceLock != "leases" || le.ResourceNamespace != "kube-system" || le.ResourceName != manager.DefaultLeaseName {
		t.Errorf("controller manager's leader election: %+v", le)
	}
	if c.KubeCloudShared.ClusterCIDR != "10.50.0.0/16" || !c.KubeCloudShared.AllocateNodeCIDRs || c.NodeIPAMController.NodeCIDRMaskSize != 26 ||
		c.NodeIPAMController.ServiceCIDR != "10.60.0.0/16" {
		t.Errorf("controller manager's node CIDRs: %+v, %+v", c.KubeCloudShared, c.NodeIPAMController)
	}
	if nl := c.NodeLifecycleController; nl.NodeEvictionRate != 0.5 || nl.SecondaryNodeEvictionRate != 0.01 || nl.NodeMonitorGracePeriod.Duration != time.Minute || nl.LargeClusterSizeThreshold != 50 {
		t.Errorf("controller manager's node lifecycle: %+v", nl)
	}
	if c.DeploymentController.ConcurrentDeploymentSyncs != 3 || c.GarbageCollectorController.ConcurrentGCSyncs != 7 || c.ReplicaSetController.ConcurrentRSSyncs != int32(manager.DefaultWorkers) ||
		c.EndpointSliceController.MaxEndpointsPerSlice != 50 || c.PodGCController.TerminatedPodGCThreshold != 200 || c.SAController.RootCAFile != "" ||
		c.LegacySATokenCleaner.CleanUpPeriod.Duration != 720*time.Hour {
		t.Errorf("controller manager's controllers: deployment %+v, gc %+v, replicaset %+v, endpointslice %+v, podgc %+v, sa %+v, legacy token cleaner %+v", c.DeploymentController,
			c.GarbageCollectorController, c.ReplicaSetController, c.EndpointSliceController, c.PodGCController, c.SAController, c.LegacySATokenCleaner)
	}

	// --allocate-node-cidrs=false is kube-controller-manager's way to leave the
	// node IPAM controller out: /configz says so, --controllers stays as given.
	off := startStandalone(t, api, "controller-manager", "--allocate-node-cidrs=false")
	var o kcmconfig.KubeControllerManagerConfiguration
	if raw := getConfigz(t, off); json.Unmarshal(raw, &o) != nil || o.KubeCloudShared.AllocateNodeCIDRs || len(o.Generic.Controllers) != 1 || o.Generic.Controllers[0] != "*" {
		t.Errorf("controller manager with --allocate-node-cidrs=false: %+v, controllers %v", o.KubeCloudShared, o.Generic.Controllers)
	}
}

// Every --concurrent-* flag of the controller manager sets its field of
// kube-controller-manager's configuration on /configz.
func TestEveryConcurrentSyncsFlagHasAConfigzField(t *testing.T) {
	var c kcmconfig.KubeControllerManagerConfiguration
	seen := map[*int32]string{}
	for _, f := range manager.ConcurrentSyncsFlags {
		field := concurrentSyncsField(&c, f.Flag)
		if field == nil {
			t.Errorf("--%s has no field in KubeControllerManagerConfiguration", f.Flag)
		} else if other, ok := seen[field]; ok {
			t.Errorf("--%s and --%s set the same field", f.Flag, other)
		}
		seen[field] = f.Flag
	}
}
