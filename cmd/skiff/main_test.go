package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"
)

// skiffBin is the binary under test, built once by TestMain with the version
// stamped in the way release builds do it.
var skiffBin string

const (
	testVersion = "v9.9.9-test"
	testCommit  = "0123456789abcdef"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "skiff-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	skiffBin = filepath.Join(dir, "skiff")
	// Built as the README says: -tags grpcnotrace keeps gRPC's tracing,
	// and the templates it runs, out (TestLinkerDropsUnusedMethods),
	// nomsgpack gin's MessagePack codec (TestBinaryLeavesOutMessagePack).
	build := exec.Command(goTool(), "build", "-tags", "grpcnotrace,nomsgpack", "-o", skiffBin,
		"-ldflags", "-X main.version="+testVersion+" -X main.gitCommit="+testCommit, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building skiff:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// goTool is the go command of the toolchain running the tests.
func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// skiffEnv is the environment for a child skiff: the test's, minus any
// SKIFF_* setting that would change what the test means.
func skiffEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SKIFF_") && !strings.HasPrefix(kv, "SKIFF_TEST_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

func TestVersionPrintsVersionCommitAndGo(t *testing.T) {
	out, err := exec.Command(skiffBin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("skiff version: %v\n%s", err, out)
	}
	for _, want := range []string{"skiff " + testVersion + "\n", "git commit: " + testCommit + "\n", "go version: " + runtime.Version() + "\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("skiff version printed %q, missing %q", out, want)
		}
	}
}

func TestServerRejectsBadSettingsBeforeTouchingDisk(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  []string
		file string
		want string
	}{
		{name: "port out of range", args: []string{"--https-listen-port", "70000"},
			want: `skiff server: invalid --https-listen-port "70000": must be 1-65535`},
		{name: "bad value from the environment", env: []string{"SKIFF_LOG_LEVEL=loud"},
			want: `skiff server: invalid --log-level "loud" (from SKIFF_LOG_LEVEL): must be debug, info, warn or error`},
		{name: "bad duration in the file", file: "compact-interval: soon\n",
			want: `skiff server: invalid --compact-interval "soon" (from `},
		{name: "bind address not an IP", args: []string{"--bind-address", "my-host"},
			want: `skiff server: invalid --bind-address "my-host": must be an IP address`},
		{name: "unparsable PostgreSQL URL", args: []string{"--datastore-endpoint", "postgres://u:pw@host:port/db"},
			want: `skiff server: invalid --datastore-endpoint: not a valid PostgreSQL URL`},
		{name: "unknown flag", args: []string{"--datastore", "x"},
			want: `skiff server: unknown flag: --datastore`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "data")
			args := append([]string{"server", "--data-dir", dataDir}, tc.args...)
			if tc.file != "" {
				path := filepath.Join(t.TempDir(), "skiff.yaml")
				if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--config", path)
			}
			cmd := exec.Command(skiffBin, args...)
			cmd.Env = skiffEnv(tc.env...)
			out, err := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); err == nil || code == 0 {
				t.Fatalf("skiff server exited with %d (%v), want non-zero\n%s", code, err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("output %q\ndoes not contain %q", out, tc.want)
			}
			if fileExists(dataDir) {
				t.Errorf("a rejected configuration created the data directory")
			}
		})
	}
}

func TestServerOnSQLiteStartsAndStopsCleanly(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	ready := runUntilReady(t, "--data-dir", dataDir)
	if want := filepath.Join(dataDir, "db", "state.db"); ready["endpoint"] != want {
		t.Errorf("ready endpoint %v, want %s", ready["endpoint"], want)
	}
	// --write-kubeconfig defaults to <data-dir>/kubeconfig.yaml.
	if !fileExists(filepath.Join(dataDir, "kubeconfig.yaml")) {
		t.Error("no admin kubeconfig at <data-dir>/kubeconfig.yaml")
	}
	token, err := os.ReadFile(filepath.Join(dataDir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(filepath.Join(dataDir, "cred", "encryption.key"))
	if err != nil || len(key) != 32 {
		t.Fatalf("encryption key: %d bytes, %v", len(key), err)
	}

	// The store was migrated: skiff's tables are in the file.
	db, err := sql.Open("sqlite", filepath.Join(dataDir, "db", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, table := range []string{"kv", "history", "meta"} {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&n); err != nil || n != 1 {
			t.Errorf("table %s: count %d, %v", table, n, err)
		}
	}

	// A second start reuses the token and the key.
	runUntilReady(t, "--data-dir", dataDir)
	token2, _ := os.ReadFile(filepath.Join(dataDir, "token"))
	key2, _ := os.ReadFile(filepath.Join(dataDir, "cred", "encryption.key"))
	if string(token2) != string(token) || string(key2) != string(key) {
		t.Error("the second start replaced the token or the encryption key")
	}
}

func TestServerOnPostgresStartsAndStopsCleanly(t *testing.T) {
	dsn := freshPostgresDatabase(t)
	ready := runUntilReady(t, "--data-dir", t.TempDir(), "--datastore-endpoint", dsn)
	if ep, _ := ready["endpoint"].(string); !strings.HasPrefix(ep, "postgres") {
		t.Errorf("ready endpoint %q is not the PostgreSQL database", ep)
	}

	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	err = conn.QueryRow(context.Background(),
		`SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name IN ('kv', 'history', 'meta')`).Scan(&n)
	if err != nil || n != 3 {
		t.Errorf("skiff's tables in the database: %d of 3, %v", n, err)
	}
}

// runUntilReady starts `skiff server` bound to loopback with JSON logs,
// waits for its readiness line, stops it with SIGTERM and checks that it
// closed the store and exited with 0. It returns the readiness log record.
func runUntilReady(t *testing.T, args ...string) map[string]any {
	t.Helper()
	// No node agent: these tests are about the server's life cycle, and an
	// agent would touch containerd and the host network.
	args = append([]string{"server", "--bind-address", "127.0.0.1", "--https-listen-port", freePort(t), "--log-format", "json", "--disable-agent"}, args...)
	cmd := exec.Command(skiffBin, args...)
	cmd.Env = skiffEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() // only matters if the test fails before Wait

	records := make(chan map[string]any, 100)
	raw := &logBuffer{}
	go readRecords(io.TeeReader(stderr, raw), records)

	var ready map[string]any
	timeout := time.After(60 * time.Second)
	for ready == nil {
		select {
		case r, ok := <-records:
			if !ok {
				cmd.Wait()
				t.Fatalf("skiff server exited before it was ready (%v):\n%s", cmd.ProcessState, raw.String())
			}
			if r["msg"] == "skiff is ready" {
				ready = r
			}
		case <-timeout:
			t.Fatalf("skiff server not ready after 60s:\n%s", raw.String())
		}
	}
	if ready["revision"] == nil {
		t.Errorf("readiness record %v has no revision", ready)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var msgs []string
	deadline := time.After(30 * time.Second)
	for open := true; open; {
		select {
		case r, ok := <-records:
			if ok {
				msgs = append(msgs, fmt.Sprint(r["msg"]))
			}
			open = ok
		case <-deadline:
			t.Fatalf("skiff server still running 30s after SIGTERM:\n%s", raw.String())
		}
	}
	// The log stream has ended, so the process is exiting.
	if err := cmd.Wait(); err != nil {
		t.Fatalf("skiff server did not exit cleanly after SIGTERM: %v\n%s", err, raw.String())
	}
	if !strings.Contains(strings.Join(msgs, "\n"), "datastore closed") {
		t.Errorf("no \"datastore closed\" after SIGTERM; logged %q", msgs)
	}
	return ready
}

// freePort returns a loopback port that was free a moment ago, so that the
// server under test does not collide with anything on 6443.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func readRecords(r io.Reader, out chan<- map[string]any) {
	defer close(out)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) == nil {
			out <- rec
		}
	}
	io.Copy(io.Discard, r)
}

// logBuffer keeps the child's raw log for failure messages; the reading
// goroutine writes while the test may read.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// freshPostgresDatabase creates a database of its own on the server of
// SKIFF_TEST_POSTGRES_DSN, so that this test cannot collide with the storage
// tests using the same server, and drops it afterwards. It returns its URL.
func freshPostgresDatabase(t *testing.T) string {
	t.Helper()
	base := os.Getenv("SKIFF_TEST_POSTGRES_DSN")
	if base == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but SKIFF_TEST_POSTGRES_DSN is unset: PostgreSQL tests must run in CI (hack/test.sh sets it)")
		}
		t.Skip("SKIFF_TEST_POSTGRES_DSN is unset; set it to a postgres:// URL of a role that may create databases (hack/test.sh does) to run this test")
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connecting to SKIFF_TEST_POSTGRES_DSN: %v", err)
	}
	defer admin.Close(ctx)
	buf := make([]byte, 6)
	rand.Read(buf)
	name := "skiff_cmd_" + hex.EncodeToString(buf)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("dropping database %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("SKIFF_TEST_POSTGRES_DSN is not a URL: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

func TestAgentRejectsBadEvictionFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--eviction-hard", "memory.available>1Gi"},
			`invalid --eviction-hard "memory.available>1Gi": "memory.available>1Gi": only the operator < is supported`},
		{[]string{"--eviction-hard", "nodefs.available<120%", "--runtime", "fake"},
			`invalid --eviction-hard "nodefs.available<120%": nodefs.available: percentage "120%" must be a number above 0 and at most 100`},
		{[]string{"--eviction-pressure-transition-period", "soon"},
			`invalid argument "soon" for "--eviction-pressure-transition-period" flag`},
	} {
		cmd := exec.Command(skiffBin, append([]string{"agent", "--kubeconfig", "/nonexistent"}, tc.args...)...)
		cmd.Env = skiffEnv()
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: %v, output %q does not contain %q", tc.args, err, out, tc.want)
		}
	}
}

func TestStandaloneComponentsRejectBadEndpointFlags(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	_, busyPort, _ := net.SplitHostPort(busy.Addr().String())
	for _, component := range []string{"scheduler", "controller-manager"} {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--secure-port", "70000"}, `invalid --secure-port 70000: must be 1-65535, or 0 to serve no health and metrics endpoint`},
			{[]string{"--bind-address", "my-host"}, `invalid --bind-address "my-host": must be an IP address`},
			{[]string{"--tls-cert-file", "/etc/x.crt"}, `invalid --tls-cert-file "/etc/x.crt" and --tls-private-key-file "": give both or neither`},
			{[]string{"--secure-port", busyPort}, `health and metrics endpoint (--bind-address 127.0.0.1, --secure-port ` + busyPort + `, --tls-cert-file ""): listen tcp 127.0.0.1:` + busyPort + `: bind: address already in use`},
			{[]string{"--tls-cert-file", "/nonexistent.crt", "--tls-private-key-file", "/nonexistent.key", "--secure-port", busyPort},
				`serving certificate /nonexistent.crt, key /nonexistent.key: open /nonexistent.crt: no such file or directory`},
			{[]string{"--leader-elect-retry-period", "0s"}, `invalid --leader-elect-lease-duration 15s, --leader-elect-renew-deadline 10s, --leader-elect-retry-period 0s: each must be positive`},
			{[]string{"--leader-elect-renew-deadline", "20s"}, `invalid --leader-elect-renew-deadline 20s: must be less than --leader-elect-lease-duration 15s`},
			{[]string{"--leader-elect-lease-duration", "1m", "--leader-elect-renew-deadline", "30s", "--leader-elect-retry-period", "25s"},
				`invalid --leader-elect-retry-period 25s: must be less than --leader-elect-renew-deadline 30s divided by 1.2`},
			{[]string{"--kube-api-qps", "0"}, `invalid --kube-api-qps 0, --kube-api-burst `},
			{[]string{"--kube-api-burst", "0"}, `--kube-api-burst 0: the rate must be positive and the burst at least 1`},
		} {
			cmd := exec.Command(skiffBin, append([]string{component, "--kubeconfig", kubeconfig}, tc.args...)...)
			cmd.Env = skiffEnv()
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Errorf("%s %v: %v, output %q does not contain %q", component, tc.args, err, out, tc.want)
			}
		}
	}
	schedConfig := filepath.Join(t.TempDir(), "scheduler.yaml")
	if err := os.WriteFile(schedConfig, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: Packed}}}]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(skiffBin, "scheduler", "--kubeconfig", kubeconfig, "--config", schedConfig)
	cmd.Env = skiffEnv()
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), `invalid --config `+schedConfig+`: profiles[0].pluginConfig[0] (NodeResourcesFit): scoringStrategy.type "Packed"`) {
		t.Errorf("scheduler --config with a bad scoring strategy: %v, output %q", err, out)
	}
	for args, want := range map[string]string{
		"--controllers=*,-bootstrapsigner":                  `invalid --controllers: unknown controller "bootstrapsigner" in "*,-bootstrapsigner" (known: "*", or a name or -name of cronjob-controller, `,
		"--controllers=job,-job-controller":                 `invalid --controllers: "job,-job-controller" leaves no controller to run`,
		"--node-monitor-grace-period=5s":                    `invalid --node-monitor-grace-period 5s: must be more than 10s`,
		"--node-startup-grace-period=10s":                   `invalid --node-startup-grace-period 10s: must be more than 10s`,
		"--controllers=*,-pv-protection":                    `invalid --controllers: "pv-protection" is part of skiff's volume-protection-controller`,
		"--node-eviction-rate=0":                            `invalid --node-eviction-rate 0: must be more than 0 nodes a second`,
		"--concurrent-gc-syncs=0":                           `invalid --concurrent-gc-syncs 0: must be at least 1`,
		"--max-endpoints-per-slice=1001":                    `invalid --max-endpoints-per-slice 1001: must be 1-1000`,
		"--mirroring-max-endpoints-per-subset=0":            `invalid --mirroring-max-endpoints-per-subset 0: must be 1-1000`,
		"--legacy-service-account-token-clean-up-period=0s": `invalid --legacy-service-account-token-clean-up-period 0s: must be a positive duration such as 8760h`,
		"--node-cidr-mask-size=16":                          `invalid --cluster-cidr 10.42.0.0/16 with --node-cidr-mask-size 16: node mask /16 must be longer than the cluster CIDR's /16`,
		// As the server's --cluster-cidr: one IPv4 range, the pod network being IPv4 only.
		"--cluster-cidr=10.42.0.0/16,fd00:42::/56":                      `invalid --cluster-cidr "10.42.0.0/16,fd00:42::/56": dual-stack pod CIDRs are not supported (skiff's pod network is IPv4 only): give one IPv4 CIDR such as 10.42.0.0/16`,
		"--cluster-cidr=fd00:42::/48":                                   `invalid --cluster-cidr "fd00:42::/48": must be an IPv4 CIDR such as 10.42.0.0/16 (skiff's pod network is IPv4 only)`,
		"--service-cluster-ip-range=10.32.0.0/12":                       `invalid --service-cluster-ip-range 10.32.0.0/12 with --cluster-cidr 10.42.0.0/16: the Service range 10.32.0.0/12 holds all of the cluster CIDR 10.42.0.0/16: no pod CIDR would be left`,
		"--service-cluster-ip-range=10.43.0.0/16,fd00:43::/112":         `invalid --service-cluster-ip-range "10.43.0.0/16,fd00:43::/112": dual-stack Service CIDRs are not supported`,
		"--cluster-cidr=10.0.0.0/4":                                     `invalid --cluster-cidr "10.0.0.0/4": prefix length must be between /8 and /29`,
		"--allocate-node-cidrs=false --controllers=nodeipam-controller": `invalid --controllers with --allocate-node-cidrs=false (which leaves node IPAM out): "nodeipam-controller,-nodeipam-controller" leaves no controller to run`,
		"--allocate-node-cidrs=false --node-eviction-rate=0":            `invalid --node-eviction-rate 0: must be more than 0 nodes a second`,
	} {
		// A setting wrongly accepted leaves the process campaigning against
		// an unreachable server: the deadline ends it.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, skiffBin, append([]string{"controller-manager", "--kubeconfig", kubeconfig}, strings.Fields(args)...)...)
		cmd.Env = skiffEnv()
		out, err := cmd.CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("controller-manager %s: %v, output %q does not contain %q", args, err, out, want)
		}
	}
	// Without node IPAM the CIDR flags are not judged, as kube-controller-manager
	// judges them only when it starts node IPAM: a dual-stack pair skiff's node
	// IPAM refuses is no error then (the process runs until the deadline).
	noIPAM, stop := context.WithTimeout(context.Background(), 3*time.Second)
	defer stop()
	cm := exec.CommandContext(noIPAM, skiffBin, "controller-manager", "--kubeconfig", kubeconfig, "--allocate-node-cidrs=false", "--cluster-cidr=10.42.0.0/16,fd00:42::/56")
	cm.Env = skiffEnv()
	if out, _ := cm.CombinedOutput(); noIPAM.Err() == nil || strings.Contains(string(out), "invalid") {
		t.Errorf("controller-manager --allocate-node-cidrs=false with a dual-stack --cluster-cidr ended before the deadline: %q", out)
	}
}
