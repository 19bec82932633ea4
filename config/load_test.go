package config

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// loadWith parses args as `skiff server` flags with env set (every other
// SKIFF_* setting variable cleared) and, when file is not empty, a YAML config
// file with that content passed through --config.
func loadWith(t *testing.T, args []string, env map[string]string, file string) (*Server, error) {
	t.Helper()
	for _, st := range serverSettings("") {
		t.Setenv(EnvVar(st.name), "")
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	if file != "" {
		path := filepath.Join(t.TempDir(), "skiff.yaml")
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", path)
	}
	fs := pflag.NewFlagSet("server", pflag.ContinueOnError)
	AddServerFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing flags %q: %v", args, err)
	}
	return LoadServer(fs)
}

func TestPrecedenceFlagBeatsEnvBeatsFileBeatsDefault(t *testing.T) {
	type layer struct{ file, env, flag string }
	cases := []struct {
		setting string
		values  layer // the raw value each layer sets
		get     func(*Server) any
		want    [4]any // default, file, file+env, file+env+flag
	}{
		{keyHTTPSListenPort, layer{"7000", "7001", "7002"},
			func(s *Server) any { return s.HTTPSListenPort }, [4]any{6443, 7000, 7001, 7002}},
		{keyCompactInterval, layer{"1m", "2m", "3m"},
			func(s *Server) any { return s.CompactInterval }, [4]any{5 * time.Minute, time.Minute, 2 * time.Minute, 3 * time.Minute}},
		{keyBindAddress, layer{"10.0.0.1", "10.0.0.2", "127.0.0.1"},
			func(s *Server) any { return s.BindAddress }, [4]any{"0.0.0.0", "10.0.0.1", "10.0.0.2", "127.0.0.1"}},
		{keyLogLevel, layer{"debug", "warn", "error"},
			func(s *Server) any { return s.LogLevel.String() }, [4]any{"INFO", "DEBUG", "WARN", "ERROR"}},
		{keyDisableAgent, layer{"true", "false", "true"},
			func(s *Server) any { return s.DisableAgent }, [4]any{false, true, false, true}},
		{keyProfiling, layer{"false", "true", "false"},
			func(s *Server) any { return s.Profiling }, [4]any{true, false, true, false}},
		{keyTLSSAN, layer{"file.example.com", "env.example.com,10.1.1.1", "flag.example.com"},
			func(s *Server) any { return strings.Join(s.TLSSANs, ",") }, [4]any{"", "file.example.com", "env.example.com,10.1.1.1", "flag.example.com"}},
		{keyDatastoreEndpoint, layer{"postgres://file@db/skiff", "postgres://env@db/skiff", "/tmp/flag.db"},
			func(s *Server) any { return s.DatastoreEndpoint }, [4]any{"", "postgres://file@db/skiff", "postgres://env@db/skiff", "/tmp/flag.db"}},
		{keyHistoryRetention, layer{"48h", "72h", "96h"},
			func(s *Server) any { return s.HistoryRetention }, [4]any{24 * time.Hour, 48 * time.Hour, 72 * time.Hour, 96 * time.Hour}},
	}
	for _, tc := range cases {
		for depth := 0; depth < 4; depth++ {
			name := tc.setting + "/" + []string{"default", "file", "env over file", "flag over env"}[depth]
			t.Run(name, func(t *testing.T) {
				var args []string
				env := map[string]string{}
				file := "data-dir: " + t.TempDir() + "\n"
				if depth >= 1 {
					file += tc.setting + ": " + tc.values.file + "\n"
				}
				if depth >= 2 {
					env[EnvVar(tc.setting)] = tc.values.env
				}
				if depth >= 3 {
					args = append(args, "--"+tc.setting+"="+tc.values.flag)
				}
				s, err := loadWith(t, args, env, file)
				if err != nil {
					t.Fatalf("LoadServer: %v", err)
				}
				if got := tc.get(s); got != tc.want[depth] {
					t.Errorf("%s = %v, want %v", tc.setting, got, tc.want[depth])
				}
			})
		}
	}
}

func TestRejectsBadValuesNamingTheSetting(t *testing.T) {
	schedConfig := filepath.Join(t.TempDir(), "scheduler.yaml")
	if err := os.WriteFile(schedConfig, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		args    []string
		env     map[string]string
		file    string
		want    []string // substrings of the error
		notWant []string // never in the error (secrets)
	}{
		{name: "port out of range", args: []string{"--https-listen-port", "70000"},
			want: []string{`invalid --https-listen-port "70000": must be 1-65535`}},
		{name: "port zero", args: []string{"--https-listen-port=0"},
			want: []string{`invalid --https-listen-port "0": must be 1-65535`}},
		{name: "port not a number from env", env: map[string]string{"SKIFF_HTTPS_LISTEN_PORT": "abc"},
			want: []string{`invalid --https-listen-port "abc" (from SKIFF_HTTPS_LISTEN_PORT): must be a whole number`}},
		{name: "port fraction from file", file: "https-listen-port: 1.5\n",
			want: []string{`invalid --https-listen-port "1.5" (from `, `skiff.yaml): must be a whole number`}},
		{name: "duration without unit", args: []string{"--compact-interval", "5"},
			want: []string{`invalid --compact-interval "5": must be a duration with a unit`}},
		{name: "negative compact interval", args: []string{"--compact-interval=-1m"},
			want: []string{`invalid --compact-interval "-1m": must be 0 (disabled) or a positive duration`}},
		{name: "eviction threshold with another operator", args: []string{"--eviction-hard", "memory.available>1Gi"},
			want: []string{`invalid --eviction-hard "memory.available>1Gi": "memory.available>1Gi": only the operator < is supported`}},
		{name: "eviction threshold of an unknown signal from env", env: map[string]string{"SKIFF_EVICTION_HARD": "mem<1Gi"},
			want: []string{`invalid --eviction-hard "mem<1Gi" (from SKIFF_EVICTION_HARD): unknown signal "mem"`}},
		{name: "zero pressure transition period", args: []string{"--eviction-pressure-transition-period=0s"},
			want: []string{`invalid --eviction-pressure-transition-period "0s": must be a positive duration`}},
		{name: "poll interval too short", args: []string{"--datastore-poll-interval", "1ms"},
			want: []string{`invalid --datastore-poll-interval "1ms": must be at least 10ms`}},
		{name: "zero history retention", env: map[string]string{"SKIFF_HISTORY_RETENTION": "0s"},
			want: []string{`invalid --history-retention "0s" (from SKIFF_HISTORY_RETENTION): must be a positive duration`}},
		{name: "bind address is a host name", args: []string{"--bind-address", "localhost"},
			want: []string{`invalid --bind-address "localhost": must be an IP address`}},
		{name: "bind address out of range", args: []string{"--bind-address", "300.1.1.1"},
			want: []string{`invalid --bind-address "300.1.1.1": must be an IP address`}},
		{name: "unparsable postgres DSN hides the password", args: []string{"--datastore-endpoint", "postgres://skiff:hunter2@db:notaport/skiff"},
			want: []string{`invalid --datastore-endpoint: not a valid PostgreSQL URL`}, notWant: []string{"hunter2"}},
		{name: "unsupported endpoint scheme", args: []string{"--datastore-endpoint", "mysql://root@db/skiff"},
			want: []string{`invalid --datastore-endpoint: unsupported scheme "mysql"`}},
		{name: "sqlite scheme without a path", args: []string{"--datastore-endpoint", "sqlite://"},
			want: []string{`invalid --datastore-endpoint: sqlite:// needs a file path`}},
		{name: "log level", args: []string{"--log-level", "verbose"},
			want: []string{`invalid --log-level "verbose": must be debug, info, warn or error`}},
		{name: "log format", env: map[string]string{"SKIFF_LOG_FORMAT": "xml"},
			want: []string{`invalid --log-format "xml" (from SKIFF_LOG_FORMAT): must be text or json`}},
		{name: "tls san", args: []string{"--tls-san", "ok.example.com", "--tls-san", "Not_A_Name"},
			want: []string{`invalid --tls-san "ok.example.com,Not_A_Name": "Not_A_Name" is neither an IP address nor a lower-case DNS name`}},
		{name: "token with a space is not echoed", args: []string{"--token", "abc def"},
			want: []string{`invalid --token: must not contain spaces`}, notWant: []string{"abc def"}},
		{name: "agent token with a space is not echoed", env: map[string]string{"SKIFF_AGENT_TOKEN": "abc\tdef"},
			want: []string{`invalid --agent-token (from SKIFF_AGENT_TOKEN): must not contain spaces`}, notWant: []string{"abc\tdef"}},
		{name: "bool from env", env: map[string]string{"SKIFF_DISABLE_AGENT": "maybe"},
			want: []string{`invalid --disable-agent "maybe" (from SKIFF_DISABLE_AGENT): must be true or false`}},
		{name: "max conns", args: []string{"--datastore-max-conns", "0"},
			want: []string{`invalid --datastore-max-conns "0": must be 1-10000`}},
		{name: "compact retain", file: "compact-retain: 0\n",
			want: []string{`invalid --compact-retain "0" (from `, `must be a positive number of revisions`}},
		{name: "empty data dir", args: []string{"--data-dir="},
			want: []string{`invalid --data-dir "": must be a directory path`}},
		{name: "unknown key in file", file: "https-listen-prot: 7000\n",
			want: []string{`invalid --config "`, `unknown setting(s) https-listen-prot; the file may set: data-dir,`}},
		{name: "config key inside the file", file: "config: /etc/other.yaml\n",
			want: []string{`unknown setting(s) config`}},
		{name: "missing config file", args: []string{"--config", "/nonexistent/skiff.yaml"},
			want: []string{`invalid --config "/nonexistent/skiff.yaml": cannot read it`}},
		{name: "config file that is not YAML", file: "data-dir: [unclosed\n",
			want: []string{`invalid --config "`, `cannot read it`}},
		{name: "image gc threshold above 100", args: []string{"--image-gc-high-threshold", "101"},
			want: []string{`invalid --image-gc-high-threshold "101": must be 0-100`}, notWant: []string{"--image-gc-low-threshold"}},
		{name: "image gc low threshold not below the high one", env: map[string]string{"SKIFF_IMAGE_GC_LOW_THRESHOLD": "90"},
			want: []string{`invalid --image-gc-low-threshold "90" (from SKIFF_IMAGE_GC_LOW_THRESHOLD): must be less than --image-gc-high-threshold (85)`}},
		{name: "memory limit that is not a size", env: map[string]string{"SKIFF_GC_MEMORY_LIMIT": "lots"},
			want: []string{`invalid --gc-memory-limit "lots" (from SKIFF_GC_MEMORY_LIMIT): must be a non-negative size such as 400Mi or 1Gi`}},
		{name: "negative memory limit", args: []string{"--gc-memory-limit=-1Gi"},
			want: []string{`invalid --gc-memory-limit "-1Gi": must be a non-negative size`}},
		{name: "collector CPU budget over Go's own cap", args: []string{"--gc-cpu-budget", "60"},
			want: []string{`invalid --gc-cpu-budget "60": must be 0-50`}},
		{name: "negative image gc age", args: []string{"--image-minimum-gc-age=-1m"},
			want: []string{`invalid --image-minimum-gc-age "-1m": must be 0 (no minimum) or a positive duration such as 2m`}},
		{name: "node API port out of range", args: []string{"--node-api-port", "65536"},
			want: []string{`invalid --node-api-port "65536": must be 1-65535`}},
		{name: "unknown controller from env", env: map[string]string{"SKIFF_CONTROLLERS": "*,-bootstrapsigner"},
			want: []string{`invalid --controllers "*,-bootstrapsigner" (from SKIFF_CONTROLLERS): unknown controller "bootstrapsigner"`, "nodeipam-controller"}},
		{name: "no controller left", args: []string{"--controllers", "job,-job-controller"},
			want: []string{`invalid --controllers "job,-job-controller": "job,-job-controller" leaves no controller to run`}},
		{name: "scheduler config that does not exist", args: []string{"--scheduler-config", "/nonexistent/scheduler.yaml"},
			want: []string{`invalid --scheduler-config "/nonexistent/scheduler.yaml": open /nonexistent/scheduler.yaml: no such file or directory`}},
		{name: "scheduler config of another kind", env: map[string]string{"SKIFF_SCHEDULER_CONFIG": "../README.md"},
			want: []string{`invalid --scheduler-config "../README.md" (from SKIFF_SCHEDULER_CONFIG): not a KubeSchedulerConfiguration`}},
		{name: "node monitor grace period of one Lease renewal", args: []string{"--node-monitor-grace-period", "10s"},
			want: []string{`invalid --node-monitor-grace-period "10s": must be more than 10s: node agents renew their Leases every 10s`}},
		{name: "node startup grace period of one Lease renewal", env: map[string]string{"SKIFF_NODE_STARTUP_GRACE_PERIOD": "5s"},
			want: []string{`invalid --node-startup-grace-period "5s" (from SKIFF_NODE_STARTUP_GRACE_PERIOD): must be more than 10s`}},
		{name: "node mask no longer than the cluster CIDR", args: []string{"--cluster-cidr", "10.77.0.0/24"},
			want: []string{`invalid --cluster-cidr 10.77.0.0/24 with --node-cidr-mask-size 24: node mask /24 must be longer than the cluster CIDR's /24`}},
		{name: "node mask leaving no pod address", env: map[string]string{"SKIFF_NODE_CIDR_MASK_SIZE": "31"},
			want: []string{`invalid --node-cidr-mask-size "31" (from SKIFF_NODE_CIDR_MASK_SIZE): must be 9-30`}},
		{name: "node mask splitting the cluster CIDR too finely", args: []string{"--cluster-cidr", "10.0.0.0/8", "--node-cidr-mask-size", "29"},
			want: []string{`invalid --cluster-cidr 10.0.0.0/8 with --node-cidr-mask-size 29: node mask /29 splits the cluster CIDR's /8 into more than 2^20 subnets: at most /28`}},
		{name: "dual-stack cluster CIDR", args: []string{"--cluster-cidr", "10.42.0.0/16,fd00:42::/56"},
			want: []string{`invalid --cluster-cidr "10.42.0.0/16,fd00:42::/56": dual-stack pod CIDRs are not supported (skiff's pod network is IPv4 only): give one IPv4 CIDR such as 10.42.0.0/16`}},
		{name: "IPv6 cluster CIDR", env: map[string]string{"SKIFF_CLUSTER_CIDR": "fd00:42::/48"},
			want: []string{`invalid --cluster-cidr "fd00:42::/48" (from SKIFF_CLUSTER_CIDR): must be an IPv4 CIDR such as 10.42.0.0/16 (skiff's pod network is IPv4 only)`}},
		{name: "dual-stack service CIDR", args: []string{"--service-cidr", "10.43.0.0/16,fd00:43::/112"},
			want: []string{`invalid --service-cidr "10.43.0.0/16,fd00:43::/112": dual-stack Service CIDRs are not supported (skiff's Service IPs are IPv4 only): give one IPv4 CIDR such as 10.43.0.0/16`}},
		{name: "service range holding the cluster CIDR", args: []string{"--service-cidr", "10.32.0.0/12"},
			want: []string{`invalid --service-cidr 10.32.0.0/12 with --cluster-cidr 10.42.0.0/16: the Service range 10.32.0.0/12 holds all of the cluster CIDR 10.42.0.0/16: no pod CIDR would be left`}},
		{name: "eviction rate that is not a number", args: []string{"--node-eviction-rate", "fast"},
			want: []string{`invalid --node-eviction-rate "fast": must be a number such as 0.1`}},
		{name: "no eviction rate", env: map[string]string{"SKIFF_NODE_EVICTION_RATE": "0"},
			want: []string{`invalid --node-eviction-rate 0: must be more than 0 nodes a second`}},
		{name: "unhealthy zone threshold over one", args: []string{"--unhealthy-zone-threshold", "1.5"},
			want: []string{`invalid --unhealthy-zone-threshold 1.5: must be a share of a zone's nodes`}},
		{name: "terminated pod threshold that is not a number", env: map[string]string{"SKIFF_TERMINATED_POD_GC_THRESHOLD": "lots"},
			want: []string{`invalid --terminated-pod-gc-threshold "lots" (from SKIFF_TERMINATED_POD_GC_THRESHOLD)`}},
		{name: "no legacy token clean-up period", args: []string{"--legacy-service-account-token-clean-up-period", "0s"},
			want: []string{`invalid --legacy-service-account-token-clean-up-period "0s": must be a positive duration such as 8760h`}},
		{name: "no workers for a controller", env: map[string]string{"SKIFF_CONCURRENT_GC_SYNCS": "0"},
			want: []string{`invalid --concurrent-gc-syncs "0" (from SKIFF_CONCURRENT_GC_SYNCS): must be at least 1 (to stop a controller, leave it out of --controllers)`}},
		{name: "more endpoints per slice than Kubernetes allows", args: []string{"--max-endpoints-per-slice", "1001"},
			want: []string{`invalid --max-endpoints-per-slice "1001": must be 1-1000`}},
		{name: "no endpoints per mirrored subset", env: map[string]string{"SKIFF_MIRRORING_MAX_ENDPOINTS_PER_SUBSET": "0"},
			want: []string{`invalid --mirroring-max-endpoints-per-subset "0" (from SKIFF_MIRRORING_MAX_ENDPOINTS_PER_SUBSET): must be 1-1000`}},
		{name: "scheduler config for no scheduler", args: []string{"--scheduler-config", schedConfig, "--disable-scheduler"},
			want: []string{`--scheduler-config has no effect with --disable-scheduler: give the file to skiff scheduler --config`}},
		{name: "controllers for no controller manager", env: map[string]string{"SKIFF_CONTROLLERS": "*,-nodeipam", "SKIFF_DISABLE_CONTROLLER_MANAGER": "true"},
			want: []string{`--controllers has no effect with --disable-controller-manager`}},
		{name: "zero lease duration", args: []string{"--leader-elect-lease-duration", "0s"},
			want: []string{`invalid --leader-elect-lease-duration "0s": must be a positive duration such as 15s`}},
		{name: "renew deadline not under the lease duration", env: map[string]string{"SKIFF_LEADER_ELECT_RENEW_DEADLINE": "20s"},
			want: []string{`invalid --leader-elect-renew-deadline 20s: must be less than --leader-elect-lease-duration 15s`}},
		{name: "retry period leaves no retry before the deadline", file: "leader-elect-retry-period: 9s\n",
			want: []string{`invalid --leader-elect-retry-period 9s: must be less than --leader-elect-renew-deadline 10s divided by 1.2`}},
		{name: "every bad value is reported at once", args: []string{"--https-listen-port", "0", "--log-level", "loud"},
			want: []string{"invalid --https-listen-port", "invalid --log-level"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--data-dir", t.TempDir()}, tc.args...)
			if slices.Contains(tc.args, "--data-dir=") {
				args = tc.args
			}
			_, err := loadWith(t, args, tc.env, tc.file)
			if err == nil {
				t.Fatal("LoadServer accepted the configuration")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
			for _, nw := range tc.notWant {
				if strings.Contains(err.Error(), nw) {
					t.Errorf("error %q reveals %q", err, nw)
				}
			}
		})
	}
}

func TestAcceptsGoodValues(t *testing.T) {
	dir := t.TempDir()
	schedConfig := filepath.Join(t.TempDir(), "scheduler.yaml")
	if err := os.WriteFile(schedConfig, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npercentageOfNodesToScore: 70\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := loadWith(t, []string{
		"--data-dir", dir,
		"--datastore-endpoint", "postgres://skiff:pw@db.example.com:5432/skiff?sslmode=disable",
		"--bind-address", "::1",
		"--https-listen-port", "1",
		"--tls-san", "*.example.com,192.0.2.7", "--tls-san", "api.example.com",
		"--compact-interval", "0",
		"--datastore-poll-interval", "10ms",
		"--log-level", "DEBUG",
		"--log-format", "JSON",
		"--disable-agent",
		"--image-gc-high-threshold", "100", "--image-gc-low-threshold", "0", "--image-minimum-gc-age", "0s",
		"--gc-memory-limit", "400Mi", "--gc-cpu-budget", "0",
		"--controllers", "*,-nodeipam", "--controllers", "-local-path-provisioner",
		"--leader-elect-lease-duration", "60s", "--leader-elect-renew-deadline", "40s", "--leader-elect-retry-period", "5s",
		"--scheduler-config", schedConfig, "--node-monitor-grace-period", "15s", "--node-startup-grace-period", "2m",
		"--cluster-cidr", "10.77.0.0/24", "--node-cidr-mask-size", "26", "--terminated-pod-gc-threshold", "100",
		"--concurrent-gc-syncs", "20", "--max-endpoints-per-slice", "1000", "--mirroring-max-endpoints-per-subset", "1",
		"--node-eviction-rate", "0.5", "--secondary-node-eviction-rate", "0", "--unhealthy-zone-threshold", "0.7", "--large-cluster-size-threshold", "10",
	}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if s.BindAddress != "::1" || s.ListenAddress() != "[::1]:1" {
		t.Errorf("bind %q listen %q", s.BindAddress, s.ListenAddress())
	}
	if got := strings.Join(s.TLSSANs, " "); got != "*.example.com 192.0.2.7 api.example.com" {
		t.Errorf("TLSSANs = %q", got)
	}
	if s.CompactInterval != 0 || s.DatastorePollInterval != 10*time.Millisecond {
		t.Errorf("durations: compact %v poll %v", s.CompactInterval, s.DatastorePollInterval)
	}
	if s.LogLevel.String() != "DEBUG" || s.LogFormat != "json" || !s.DisableAgent {
		t.Errorf("log %v %q agent %v", s.LogLevel, s.LogFormat, s.DisableAgent)
	}
	if s.ImageGCHighThreshold != 100 || s.ImageGCLowThreshold != 0 || s.ImageMinimumGCAge != 0 {
		t.Errorf("image gc %d %d %v", s.ImageGCHighThreshold, s.ImageGCLowThreshold, s.ImageMinimumGCAge)
	}
	if s.GCMemoryLimit != 400<<20 || s.GCCPUBudget != 0 {
		t.Errorf("GCMemoryLimit = %d, GCCPUBudget = %d, want %d, 0", s.GCMemoryLimit, s.GCCPUBudget, 400<<20)
	}
	if got := strings.Join(s.Controllers, " "); got != "* -nodeipam -local-path-provisioner" {
		t.Errorf("Controllers = %q", got)
	}
	if s.NodeMonitorGracePeriod != 15*time.Second || s.NodeStartupGracePeriod != 2*time.Minute {
		t.Errorf("NodeMonitorGracePeriod = %s, NodeStartupGracePeriod = %s", s.NodeMonitorGracePeriod, s.NodeStartupGracePeriod)
	}
	if s.ConcurrentSyncs["garbage-collector-controller"] != 20 || s.ConcurrentSyncs["deployment-controller"] != 5 || len(s.ConcurrentSyncs) != 14 {
		t.Errorf("ConcurrentSyncs = %v, want 20 for the garbage collector, 5 for the other 13", s.ConcurrentSyncs)
	}
	if e := s.NodeEviction; e.Rate != 0.5 || e.SecondaryRate != 0 || e.UnhealthyZoneThreshold != 0.7 || e.LargeClusterSizeThreshold != 10 {
		t.Errorf("NodeEviction = %+v", e)
	}
	if s.MaxEndpointsPerSlice != 1000 || s.MirroringMaxEndpointsPerSubset != 1 {
		t.Errorf("MaxEndpointsPerSlice = %d, MirroringMaxEndpointsPerSubset = %d, want 1000, 1", s.MaxEndpointsPerSlice, s.MirroringMaxEndpointsPerSubset)
	}
	if s.TerminatedPodGCThreshold != 100 {
		t.Errorf("TerminatedPodGCThreshold = %d, want 100", s.TerminatedPodGCThreshold)
	}
	if s.ClusterCIDR != "10.77.0.0/24" || s.NodeCIDRMaskSize != 26 {
		t.Errorf("pod CIDRs: cluster %s, node /%d, want 10.77.0.0/24, /26", s.ClusterCIDR, s.NodeCIDRMaskSize)
	}
	if s.SchedulerConfig != schedConfig || s.Scheduler.PercentageOfNodesToScore != 70 {
		t.Errorf("scheduler config %q: %+v", s.SchedulerConfig, s.Scheduler)
	}
	if s.LeaderElectLeaseDuration != time.Minute || s.LeaderElectRenewDeadline != 40*time.Second || s.LeaderElectRetryPeriod != 5*time.Second {
		t.Errorf("leader election %s/%s/%s, want 1m/40s/5s", s.LeaderElectLeaseDuration, s.LeaderElectRenewDeadline, s.LeaderElectRetryPeriod)
	}
	if !s.IsPostgres() || s.Endpoint() != "postgres://skiff:pw@db.example.com:5432/skiff?sslmode=disable" {
		t.Errorf("endpoint %q", s.Endpoint())
	}
	if strings.Contains(s.RedactedEndpoint(), "pw") {
		t.Errorf("RedactedEndpoint %q shows the password", s.RedactedEndpoint())
	}
}

func TestPathsDeriveFromTheDataDir(t *testing.T) {
	base := t.TempDir()
	t.Chdir(base)
	s, err := loadWith(t, []string{"--data-dir", "rel"}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "rel")
	checks := map[string][2]string{
		"DataDir":           {s.DataDir, dir},
		"Endpoint":          {s.Endpoint(), filepath.Join(dir, "db", "state.db")},
		"WriteKubeconfig":   {s.WriteKubeconfig, filepath.Join(dir, "kubeconfig.yaml")},
		"EncryptionKeyFile": {s.EncryptionKeyFile, filepath.Join(dir, "cred", "encryption.key")},
		"TokenFile":         {s.TokenFile(), filepath.Join(dir, "token")},
		"AgentTokenFile":    {s.AgentTokenFile(), filepath.Join(dir, "agent-token")},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %q, want %q", name, c[0], c[1])
		}
	}

	s, err = loadWith(t, []string{"--data-dir", dir, "--datastore-endpoint", "sqlite://other.db"}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(base, "other.db"); s.Endpoint() != want {
		t.Errorf("sqlite:// endpoint resolves to %q, want %q", s.Endpoint(), want)
	}
}

func TestHomeIsExpandedInFileValues(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	s, err := loadWith(t, nil, nil, "data-dir: ~/skiffdata\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, "skiffdata"); s.DataDir != want {
		t.Errorf("DataDir = %q, want %q", s.DataDir, want)
	}
}

func TestDefaultDataDir(t *testing.T) {
	cases := []struct {
		uid  int
		home string
		want string
	}{
		{0, "/root", "/var/lib/skiff"},
		{1000, "/home/ana", "/home/ana/.skiff"},
		{1000, "", ""},
	}
	for _, tc := range cases {
		if got := defaultDataDir(tc.uid, tc.home); got != tc.want {
			t.Errorf("defaultDataDir(%d, %q) = %q, want %q", tc.uid, tc.home, got, tc.want)
		}
	}
}

func TestStorageConfigCarriesTheSettings(t *testing.T) {
	s, err := loadWith(t, []string{"--data-dir", t.TempDir(),
		"--datastore-poll-interval", "250ms", "--datastore-max-conns", "7",
		"--compact-interval", "0", "--compact-retain", "50", "--history-retention", "1h"}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Prepare(slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	c := s.StorageConfig(nil)
	if c.Endpoint != s.Endpoint() || len(c.EncryptionKey) != EncryptionKeySize {
		t.Errorf("endpoint %q key %d bytes", c.Endpoint, len(c.EncryptionKey))
	}
	if c.PollInterval != 250*time.Millisecond || c.MaxOpenConns != 7 || c.CompactRetain != 50 || c.HistoryRetention != time.Hour {
		t.Errorf("storage config %+v", c)
	}
	if c.CompactInterval >= 0 {
		t.Errorf("--compact-interval 0 must disable compaction (negative for storage), got %v", c.CompactInterval)
	}
}

func TestFlagsAreDeclaredForEverySetting(t *testing.T) {
	fs := pflag.NewFlagSet("server", pflag.ContinueOnError)
	AddServerFlags(fs)
	for _, st := range serverSettings("") {
		f := fs.Lookup(st.name)
		if f == nil {
			t.Errorf("no flag --%s", st.name)
			continue
		}
		if !strings.Contains(f.Usage, EnvVar(st.name)) {
			t.Errorf("--%s help does not name %s", st.name, EnvVar(st.name))
		}
	}
}

// The loops' own settings at their defaults go with the loops turned off.
func TestLoopsOffWithTheirDefaults(t *testing.T) {
	s, err := loadWith(t, []string{"--data-dir", t.TempDir(), "--disable-controller-manager", "--disable-scheduler"}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if !s.DisableControllerManager || !s.DisableScheduler || len(s.Controllers) > 0 || s.SchedulerConfig != "" {
		t.Errorf("%+v", s)
	}
	if _, err := loadWith(t, []string{"--data-dir", t.TempDir(), "--disable-controller-manager", "--controllers", "*"}, nil, ""); err != nil {
		t.Errorf("--controllers '*' with --disable-controller-manager: %v", err)
	}
}

func TestConfigFileNamedByEnvironmentWithYAMLList(t *testing.T) {
	path := filepath.Join(t.TempDir(), "skiff.conf") // the extension does not matter
	yaml := "data-dir: " + t.TempDir() + "\ntls-san:\n  - a.example.com\n  - 192.0.2.1\ndisable-agent: true\ncontrollers:\n  - \"*\"\n  - -node-ipam-controller\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := loadWith(t, nil, map[string]string{"SKIFF_CONFIG": path}, "")
	if err != nil {
		t.Fatal(err)
	}
	if s.ConfigFile != path || strings.Join(s.TLSSANs, ",") != "a.example.com,192.0.2.1" || !s.DisableAgent {
		t.Errorf("file %q SANs %q agent disabled %v", s.ConfigFile, s.TLSSANs, s.DisableAgent)
	}
	if got := strings.Join(s.Controllers, ","); got != "*,-node-ipam-controller" {
		t.Errorf("Controllers = %q", got)
	}
}

// kube-controller-manager's --terminated-pod-gc-threshold: 12500 unless
// set, and 0 or less keeps every terminated pod (stored as given: the
// controller manager's Config takes it through TerminatedPodGCThresholdFromFlag).
func TestTerminatedPodGCThreshold(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, 12500},
		{[]string{"--terminated-pod-gc-threshold", "0"}, 0},
		{[]string{"--terminated-pod-gc-threshold=-1"}, -1},
		{[]string{"--terminated-pod-gc-threshold", "50"}, 50},
	} {
		s, err := loadWith(t, append([]string{"--data-dir", t.TempDir()}, tc.args...), nil, "")
		if err != nil {
			t.Fatal(err)
		}
		if s.TerminatedPodGCThreshold != tc.want {
			t.Errorf("%v: TerminatedPodGCThreshold = %d, want %d", tc.args, s.TerminatedPodGCThreshold, tc.want)
		}
	}
}

// kube-controller-manager's --legacy-service-account-token-clean-up-period:
// a year unless set, from a flag, the environment or the file.
func TestLegacyServiceAccountTokenCleanUpPeriod(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		file string
		want time.Duration
	}{
		{nil, nil, "", 8760 * time.Hour},
		{[]string{"--legacy-service-account-token-clean-up-period", "720h"}, nil, "", 720 * time.Hour},
		{nil, map[string]string{"SKIFF_LEGACY_SERVICE_ACCOUNT_TOKEN_CLEAN_UP_PERIOD": "48h"}, "", 48 * time.Hour},
		{nil, nil, "legacy-service-account-token-clean-up-period: 24h\n", 24 * time.Hour},
	} {
		s, err := loadWith(t, append([]string{"--data-dir", t.TempDir()}, tc.args...), tc.env, tc.file)
		if err != nil {
			t.Fatal(err)
		}
		if s.LegacyServiceAccountTokenCleanUpPeriod != tc.want {
			t.Errorf("%v %v %q: LegacyServiceAccountTokenCleanUpPeriod = %s, want %s", tc.args, tc.env, tc.file, s.LegacyServiceAccountTokenCleanUpPeriod, tc.want)
		}
	}
}

// The float settings take a YAML number, whole or not, and the same text as
// a flag; --help names their type.
func TestFloatSettings(t *testing.T) {
	s, err := loadWith(t, []string{"--data-dir", t.TempDir()}, map[string]string{EnvVar("secondary-node-eviction-rate"): "0.02"},
		"node-eviction-rate: 2\nunhealthy-zone-threshold: 0.6\n")
	if err != nil {
		t.Fatal(err)
	}
	if e := s.NodeEviction; e.Rate != 2 || e.SecondaryRate != 0.02 || e.UnhealthyZoneThreshold != 0.6 {
		t.Errorf("NodeEviction = %+v, want rate 2, secondary 0.02, threshold 0.6", e)
	}
	if _, err := loadWith(t, []string{"--data-dir", t.TempDir()}, nil, "node-eviction-rate: [1]\n"); err == nil || !strings.Contains(err.Error(), "must be a number such as 0.1") {
		t.Errorf("a list as a rate: %v", err)
	}
	if _, err := loadWith(t, []string{"--data-dir", t.TempDir(), "--unhealthy-zone-threshold", "NaN"}, nil, ""); err == nil || !strings.Contains(err.Error(), "must be a finite number") {
		t.Errorf("NaN as a threshold: %v", err)
	}
	if _, err := loadWith(t, []string{"--data-dir", t.TempDir()}, nil, "node-eviction-rate: 1e300\n"); err == nil || !strings.Contains(err.Error(), "--node-eviction-rate +Inf: must be at most") {
		t.Errorf("a rate beyond float32: %v", err)
	}
	fs := pflag.NewFlagSet("server", pflag.ContinueOnError)
	AddServerFlags(fs)
	if got := fs.Lookup("node-eviction-rate").Value.Type(); got != "float" {
		t.Errorf("--node-eviction-rate's type is %q, want float", got)
	}
}
