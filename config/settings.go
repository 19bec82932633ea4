package config

import (
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/skiffkube/skiff/controllers/endpointslice"
	"github.com/skiffkube/skiff/controllers/endpointslicemirroring"
	"github.com/skiffkube/skiff/controllers/legacytokencleaner"
	"github.com/skiffkube/skiff/controllers/manager"
	"github.com/skiffkube/skiff/controllers/nodeipam"
	"github.com/skiffkube/skiff/controllers/nodelifecycle"
	"github.com/skiffkube/skiff/controllers/podgc"
	"github.com/skiffkube/skiff/kubelet/eviction"
	"github.com/skiffkube/skiff/scheduler"
	"github.com/skiffkube/skiff/scheduler/configfile"
	"github.com/skiffkube/skiff/storage"
)

// Server is the validated configuration of `skiff server`. LoadServer fills
// every field; paths are absolute. Prepare then creates what the data
// directory needs and loads the secrets kept in it.
type Server struct {
	// ConfigFile is the YAML file the values were read from ("" = none).
	ConfigFile string
	// DataDir holds the SQLite database, the token and the encryption key.
	DataDir string
	// DatastoreEndpoint is the setting as given: "" (SQLite in the data dir),
	// a postgres:// URL, or a SQLite file path. Endpoint resolves it.
	DatastoreEndpoint string
	// BindAddress is the IP the API server listens on.
	BindAddress string
	// HTTPSListenPort is the API server's port.
	HTTPSListenPort int
	// WriteKubeconfig is where the admin kubeconfig is written.
	WriteKubeconfig string
	// Token authenticates the admin (system:masters); agents may still join
	// with it, as before AgentToken existed. "" until Prepare has read or
	// generated it.
	Token string
	// AgentToken authenticates node agents joining the cluster, and them
	// only: it may ask for a node client certificate and nothing else. ""
	// until Prepare has read or generated it.
	AgentToken string
	// TLSSANs are extra names and IPs for the serving certificate.
	TLSSANs []string
	// TokenAuthFile is a Kubernetes static token file (CSV: token, user,
	// uid, "group1,group2"); "" for none.
	TokenAuthFile string
	// EncryptionKeyFile holds the 32-byte AES-256 key for secrets at rest.
	EncryptionKeyFile string
	// DatastorePollInterval is the watch poller's fallback interval.
	DatastorePollInterval time.Duration
	// DatastoreMaxConns bounds the PostgreSQL connection pool.
	DatastoreMaxConns int
	// CompactInterval is how often old revisions are compacted; 0 disables it.
	CompactInterval time.Duration
	// CompactRetain is how many newest revisions stay readable after compaction.
	CompactRetain int64
	// HistoryRetention is how long superseded history stays queryable with SQL.
	HistoryRetention time.Duration
	// LogLevel is the minimum level logged.
	LogLevel slog.Level
	// LogFormat is "text" or "json".
	LogFormat string
	// DisableAgent keeps the server from running a node agent in its process.
	DisableAgent bool
	// NodeName is the embedded agent's node ("" = the host name).
	NodeName string
	// NodeIP is the embedded agent's InternalIP ("" = the bind address
	// when it is a single address, else the first non-loopback address).
	NodeIP string
	// NodeAPIPort is the embedded agent's node API port.
	NodeAPIPort int
	// ContainerdSocket is where the embedded agent reaches containerd.
	ContainerdSocket string
	// ImageGCHighThreshold and ImageGCLowThreshold (percent of the image
	// file system used) and ImageMinimumGCAge are the embedded agent's
	// image garbage collection, as the kubelet's flags.
	ImageGCHighThreshold int
	ImageGCLowThreshold  int
	ImageMinimumGCAge    time.Duration
	// EvictionHard are the embedded agent's hard eviction thresholds
	// (kubelet syntax; none disables eviction).
	EvictionHard []eviction.Threshold
	// EvictionPressureTransitionPeriod is how long a pressure condition
	// stays True after its signal recovered.
	EvictionPressureTransitionPeriod time.Duration
	// DisableControllerManager and DisableScheduler keep the server from
	// running those loops (run them with their own commands instead).
	DisableControllerManager bool
	DisableScheduler         bool
	// Controllers selects the in-process controllers as
	// kube-controller-manager's --controllers ("*", "name", "-name").
	Controllers []string
	// LeaderElectLeaseDuration, LeaderElectRenewDeadline and
	// LeaderElectRetryPeriod time the in-process controller manager's and
	// scheduler's leader election (CheckLeaderElection holds).
	LeaderElectLeaseDuration time.Duration
	LeaderElectRenewDeadline time.Duration
	LeaderElectRetryPeriod   time.Duration
	// NodeMonitorGracePeriod is how long a node may go without renewing
	// its Lease before it is marked unreachable.
	NodeMonitorGracePeriod time.Duration
	// NodeStartupGracePeriod replaces it for a node that has never posted
	// a Ready condition, counted from its registration.
	NodeStartupGracePeriod time.Duration
	// NodeEviction paces NoExecute taints of unreachable nodes by zone.
	NodeEviction nodelifecycle.Eviction
	// TerminatedPodGCThreshold is kube-controller-manager's
	// --terminated-pod-gc-threshold: terminated pods kept before the
	// oldest are deleted; 0 or less keeps them all.
	TerminatedPodGCThreshold int
	// LegacyServiceAccountTokenCleanUpPeriod is kube-controller-manager's
	// --legacy-service-account-token-clean-up-period: how long a legacy
	// service account token Secret goes unused before it is marked
	// invalid, and stays invalid before it is deleted.
	LegacyServiceAccountTokenCleanUpPeriod time.Duration
	// ConcurrentSyncs are the workers of each controller named by a
	// --concurrent-*-syncs setting (manager.ConcurrentSyncsFlags), by
	// skiff's controller name.
	ConcurrentSyncs map[string]int
	// MaxEndpointsPerSlice and MirroringMaxEndpointsPerSubset are
	// kube-controller-manager's --max-endpoints-per-slice and
	// --mirroring-max-endpoints-per-subset (manager.CheckEndpointsPerSlice).
	MaxEndpointsPerSlice           int
	MirroringMaxEndpointsPerSubset int
	// SchedulerConfig is kube-scheduler's configuration file for the
	// in-process scheduler ("" = none); Scheduler is what it says.
	SchedulerConfig string
	Scheduler       scheduler.Config
	// Profiling serves Go's pprof profiles on /debug/pprof/ (cluster
	// admins only), as kube-apiserver's --profiling.
	Profiling bool
	// ClusterCIDR is split into the nodes' pod CIDRs, of
	// NodeCIDRMaskSize bits each.
	ClusterCIDR      string
	NodeCIDRMaskSize int
	// ServiceCIDR is where Services get their cluster IPs.
	ServiceCIDR string
	// GCMemoryLimit is the floor of the Go runtime's soft memory limit in
	// bytes (runtime/debug.SetMemoryLimit), which the server raises to 1.5x
	// the live heap when that is more, and further while the collector is
	// over GCCPUBudget; 0 leaves the runtime's (GOMEMLIMIT).
	GCMemoryLimit int64
	// GCCPUBudget is the percent of the server's CPU the garbage collector
	// may take before the memory limit gives way to it; 0 keeps the limit.
	// Without a memory limit it has nothing to do.
	GCCPUBudget int

	// imageGCHighValid records that ImageGCHighThreshold was accepted, so
	// that the low threshold is compared with it only then.
	imageGCHighValid bool
	// tokenGiven records that Token came from configuration, not the data dir.
	tokenGiven bool
	// agentTokenGiven is tokenGiven for AgentToken.
	agentTokenGiven bool
	// keyFileGiven records that EncryptionKeyFile was set, so a missing file
	// is an error instead of a key to generate.
	keyFileGiven bool
	// encryptionKey is loaded by Prepare; it is unexported so that printing a
	// Server never shows it.
	encryptionKey []byte
}

// Setting names: each is the flag (--name), the YAML key (name) and, upper
// case with "_" and the SKIFF_ prefix, the environment variable.
const (
	keyConfig                = "config"
	keyDataDir               = "data-dir"
	keyDatastoreEndpoint     = "datastore-endpoint"
	keyBindAddress           = "bind-address"
	keyHTTPSListenPort       = "https-listen-port"
	keyWriteKubeconfig       = "write-kubeconfig"
	keyToken                 = "token"
	keyAgentToken            = "agent-token"
	keyTLSSAN                = "tls-san"
	keyTokenAuthFile         = "token-auth-file"
	keyEncryptionKeyFile     = "encryption-key-file"
	keyDatastorePollInterval = "datastore-poll-interval"
	keyDatastoreMaxConns     = "datastore-max-conns"
	keyCompactInterval       = "compact-interval"
	keyCompactRetain         = "compact-retain"
	keyHistoryRetention      = "history-retention"
	keyLogLevel              = "log-level"
	keyLogFormat             = "log-format"
	keyDisableAgent          = "disable-agent"
	keyNodeName              = "node-name"
	keyNodeIP                = "node-ip"
	keyNodeAPIPort           = "node-api-port"
	keyContainerdSocket      = "containerd-socket"
	keyImageGCHigh           = "image-gc-high-threshold"
	keyImageGCLow            = "image-gc-low-threshold"
	keyImageMinGCAge         = "image-minimum-gc-age"
	keyEvictionHard          = "eviction-hard"
	keyEvictionTransition    = "eviction-pressure-transition-period"
	keyDisableCM             = "disable-controller-manager"
	keyDisableScheduler      = "disable-scheduler"
	keyControllers           = "controllers"
	keySchedulerConfig       = "scheduler-config"
	keyNodeMonitorGrace      = "node-monitor-grace-period"
	keyNodeStartupGrace      = "node-startup-grace-period"
	keyTerminatedPodGC       = "terminated-pod-gc-threshold"
	keyLegacyTokenCleanUp    = "legacy-service-account-token-clean-up-period"
	keyMaxEndpointsPerSlice  = "max-endpoints-per-slice"
	keyMirroringMaxPerSubset = "mirroring-max-endpoints-per-subset"
	keyNodeEvictionRate      = "node-eviction-rate"
	keySecondaryEvictionRate = "secondary-node-eviction-rate"
	keyUnhealthyZone         = "unhealthy-zone-threshold"
	keyLargeClusterSize      = "large-cluster-size-threshold"
	keyProfiling             = "profiling"
	keyClusterCIDR           = "cluster-cidr"
	keyNodeCIDRMaskSize      = "node-cidr-mask-size"
	keyServiceCIDR           = "service-cidr"
	keyGCMemoryLimit         = "gc-memory-limit"
	keyGCCPUBudget           = "gc-cpu-budget"
)

// EnvPrefix is prepended to the upper-cased setting name to form its
// environment variable.
const EnvPrefix = "SKIFF"

// EnvVar returns the environment variable of a setting: data-dir →
// SKIFF_DATA_DIR.
func EnvVar(name string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// Defaults that do not depend on the data directory or the user.
const (
	DefaultBindAddress           = "0.0.0.0"
	DefaultHTTPSListenPort       = 6443
	DefaultDatastorePollInterval = storage.DefaultPollInterval
	DefaultDatastoreMaxConns     = storage.DefaultMaxOpenConns
	DefaultCompactInterval       = storage.DefaultCompactInterval
	DefaultCompactRetain         = storage.DefaultCompactRetain
	DefaultHistoryRetention      = storage.DefaultHistoryRetention
	DefaultLogLevel              = "info"
	DefaultLogFormat             = "text"
	DefaultClusterCIDR           = nodeipam.DefaultClusterCIDR
	DefaultNodeCIDRMaskSize      = nodeipam.DefaultNodeMaskSize
	DefaultServiceCIDR           = "10.43.0.0/16"
	DefaultGCMemoryLimit         = "400Mi"
	DefaultGCCPUBudget           = 25 // percent; why 25 and not 30: the README's Scale section, 2026-12-02
	DefaultNodeAPIPort           = 10250
	DefaultContainerdSocket      = "/run/containerd/containerd.sock"
	DefaultImageGCHighThreshold  = 85
	DefaultImageGCLowThreshold   = 80
	DefaultImageMinimumGCAge     = 2 * time.Minute
)

// Files inside the data directory.
const (
	sqliteFile        = "db/state.db"
	kubeconfigFile    = "kubeconfig.yaml"
	tokenFile         = "token"
	agentTokenFile    = "agent-token"
	encryptionKeyFile = "cred/encryption.key"
)

// concurrentSyncsSettings are kube-controller-manager's --concurrent-*-syncs
// for the controllers skiff has: the workers of one controller each.
func concurrentSyncsSettings() []setting {
	var out []setting
	for _, f := range manager.ConcurrentSyncsFlags {
		out = append(out, setting{name: f.Flag, kind: kindInt, def: fmt.Sprint(manager.DefaultWorkers),
			usage: fmt.Sprintf("workers of the %s, as kube-controller-manager's flag: objects it reconciles at once", f.Controller),
			apply: func(s *Server, v any) error {
				n := v.(int64)
				if n > math.MaxInt32 {
					return fmt.Errorf("must be at most %d", math.MaxInt32)
				}
				if err := manager.CheckConcurrentSyncs(int(n)); err != nil {
					return err
				}
				if s.ConcurrentSyncs == nil {
					s.ConcurrentSyncs = map[string]int{}
				}
				s.ConcurrentSyncs[f.Controller] = int(n)
				return nil
			}})
	}
	return out
}

// endpointLimitSettings are kube-controller-manager's limits on the
// endpoints of one EndpointSlice, mirrored or not.
func endpointLimitSettings() []setting {
	limit := func(field func(*Server) *int) func(*Server, any) error {
		return func(s *Server, v any) error {
			n, err := intRange(v, manager.MinEndpointsPerSlice, manager.MaxEndpointsPerSlice)
			*field(s) = int(n)
			return err
		}
	}
	return []setting{
		{name: keyMaxEndpointsPerSlice, kind: kindInt, def: fmt.Sprint(endpointslice.MaxEndpointsPerSlice),
			usage: "most endpoints the EndpointSlice controller puts in one slice, as kube-controller-manager's flag (1-1000)",
			apply: limit(func(s *Server) *int { return &s.MaxEndpointsPerSlice })},
		{name: keyMirroringMaxPerSubset, kind: kindInt, def: fmt.Sprint(endpointslicemirroring.MaxEndpointsPerSubset),
			usage: "most addresses of one Endpoints subset mirrored to EndpointSlices, as kube-controller-manager's flag (1-1000)",
			apply: limit(func(s *Server) *int { return &s.MirroringMaxEndpointsPerSubset })},
	}
}

// gracePeriod applies a node lifecycle grace period to the field field
// returns, refusing one within a Lease renewal (nodelifecycle.CheckGracePeriod).
func gracePeriod(field func(*Server) *time.Duration) func(*Server, any) error {
	return func(s *Server, v any) error {
		d := v.(time.Duration)
		if err := nodelifecycle.CheckGracePeriod(d); err != nil {
			return err
		}
		*field(s) = d
		return nil
	}
}

// minPollInterval keeps a mistyped poll interval (1ns) from spinning a core.
const minPollInterval = 10 * time.Millisecond

// kind is how a raw value (flag text, environment string, YAML scalar or
// list) is converted before the setting's own check runs.
type kind int

const (
	kindString kind = iota
	kindInt
	kindFloat
	kindDuration
	kindBool
	kindList
)

// flagType is what --help shows after the flag name.
func (k kind) flagType() string {
	switch k {
	case kindInt:
		return "int"
	case kindFloat:
		return "float"
	case kindDuration:
		return "duration"
	case kindBool:
		return "bool"
	case kindList:
		return "strings"
	}
	return "string"
}

// setting is one row of the configuration table. The table is the single
// source of names, defaults, help texts and checks.
type setting struct {
	name  string
	kind  kind
	def   string // the flag's default, as text
	usage string
	// secret settings are never echoed in error messages.
	secret bool
	// apply checks the converted value (string, int64, time.Duration, bool
	// or []string according to kind) and stores it. Its error says what would
	// be valid; the loader adds the setting's name, value and origin.
	apply func(s *Server, v any) error
}

// serverSettings lists every setting of `skiff server` in the order of --help
// and of the README's reference table.
func serverSettings(defaultDataDir string) []setting {
	all := []setting{
		{name: keyConfig, kind: kindString, usage: "YAML file with settings (keys are the flag names without --)",
			apply: func(s *Server, v any) error { return nil }},
		{name: keyDataDir, kind: kindString, def: defaultDataDir,
			usage: "directory for the SQLite database, the token and the encryption key; /var/lib/skiff as root, ~/.skiff otherwise",
			apply: func(s *Server, v any) error {
				if v.(string) == "" {
					return fmt.Errorf("must be a directory path (there is no default for a user without a home directory)")
				}
				dir, err := absPath(v.(string))
				s.DataDir = dir
				return err
			}},
		{name: keyDatastoreEndpoint, kind: kindString, secret: true,
			usage: "where state is kept: empty for SQLite at <data-dir>/db/state.db, postgres://user:pass@host:5432/db for PostgreSQL, or a SQLite file path",
			apply: applyEndpoint},
		{name: keyBindAddress, kind: kindString, def: DefaultBindAddress,
			usage: "IP address the API server listens on",
			apply: func(s *Server, v any) error {
				addr, err := netip.ParseAddr(v.(string))
				if err != nil || addr.Zone() != "" {
					return fmt.Errorf("must be an IP address such as 0.0.0.0, 127.0.0.1 or ::")
				}
				s.BindAddress = addr.String()
				return nil
			}},
		{name: keyHTTPSListenPort, kind: kindInt, def: fmt.Sprint(DefaultHTTPSListenPort),
			usage: "TCP port the API server listens on",
			apply: func(s *Server, v any) error {
				n, err := intRange(v, 1, 65535)
				s.HTTPSListenPort = int(n)
				return err
			}},
		{name: keyWriteKubeconfig, kind: kindString,
			usage: "where to write the admin kubeconfig (default <data-dir>/kubeconfig.yaml)",
			apply: func(s *Server, v any) error {
				var err error
				s.WriteKubeconfig, err = optionalPath(v.(string))
				return err
			}},
		{name: keyToken, kind: kindString, secret: true,
			usage: "the admin's bearer token (system:masters); generated and kept in <data-dir>/token when empty. Agents should join with --agent-token",
			apply: func(s *Server, v any) error {
				t := v.(string)
				if strings.IndexFunc(t, isSpaceOrControl) >= 0 {
					return fmt.Errorf("must not contain spaces or control characters")
				}
				s.Token, s.tokenGiven = t, t != ""
				return nil
			}},
		{name: keyAgentToken, kind: kindString, secret: true,
			usage: "shared secret node agents join with (skiff agent --token): it may only obtain a node client certificate; generated and kept in <data-dir>/agent-token when empty; must differ from --token",
			apply: func(s *Server, v any) error {
				t := v.(string)
				if strings.IndexFunc(t, isSpaceOrControl) >= 0 {
					return fmt.Errorf("must not contain spaces or control characters")
				}
				s.AgentToken, s.agentTokenGiven = t, t != ""
				return nil
			}},
		{name: keyTLSSAN, kind: kindList,
			usage: "extra DNS name or IP address for the serving certificate (repeatable, or comma-separated)",
			apply: func(s *Server, v any) error {
				for _, san := range v.([]string) {
					if _, err := netip.ParseAddr(san); err == nil {
						continue
					}
					if len(validation.IsWildcardDNS1123Subdomain(san)) == 0 || len(validation.IsDNS1123Subdomain(san)) == 0 {
						continue
					}
					return fmt.Errorf("%q is neither an IP address nor a lower-case DNS name", san)
				}
				s.TLSSANs = v.([]string)
				return nil
			}},
		{name: keyTokenAuthFile, kind: kindString,
			usage: "static token file in Kubernetes' CSV format: token,user,uid,\"group1,group2\" per line",
			apply: func(s *Server, v any) error {
				path, err := optionalPath(v.(string))
				if err != nil || path == "" {
					s.TokenAuthFile = path
					return err
				}
				if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
					return fmt.Errorf("must be a readable file")
				}
				s.TokenAuthFile = path
				return nil
			}},
		{name: keyEncryptionKeyFile, kind: kindString,
			usage: "file with the 32-byte AES-256 key that encrypts secrets at rest (default <data-dir>/cred/encryption.key, created on first start)",
			apply: func(s *Server, v any) error {
				var err error
				s.EncryptionKeyFile, err = optionalPath(v.(string))
				s.keyFileGiven = s.EncryptionKeyFile != ""
				return err
			}},
		{name: keyDatastorePollInterval, kind: kindDuration, def: DefaultDatastorePollInterval.String(),
			usage: "how often watches poll the database for changes a notification missed",
			apply: func(s *Server, v any) error {
				d, err := durationAtLeast(v, minPollInterval)
				s.DatastorePollInterval = d
				return err
			}},
		{name: keyDatastoreMaxConns, kind: kindInt, def: fmt.Sprint(DefaultDatastoreMaxConns),
			usage: "maximum open PostgreSQL connections of this server",
			apply: func(s *Server, v any) error {
				n, err := intRange(v, 1, 10000)
				s.DatastoreMaxConns = int(n)
				return err
			}},
		{name: keyCompactInterval, kind: kindDuration, def: DefaultCompactInterval.String(),
			usage: "how often superseded revisions are compacted; 0 disables compaction",
			apply: func(s *Server, v any) error {
				d, err := nonNegativeDuration(v, "disabled", "5m")
				s.CompactInterval = d
				return err
			}},
		{name: keyCompactRetain, kind: kindInt, def: fmt.Sprint(DefaultCompactRetain),
			usage: "how many of the newest revisions stay readable (watch and list from) after compaction",
			apply: func(s *Server, v any) error {
				n, err := positiveInt(v, "revisions")
				s.CompactRetain = n
				return err
			}},
		{name: keyHistoryRetention, kind: kindDuration, def: DefaultHistoryRetention.String(),
			usage: "how long superseded history rows stay queryable with SQL for audit",
			apply: func(s *Server, v any) error {
				d, err := positiveDuration(v, "24h or 720h")
				s.HistoryRetention = d
				return err
			}},
		{name: keyLogLevel, kind: kindString, def: DefaultLogLevel,
			usage: "minimum level logged: debug, info, warn or error",
			apply: func(s *Server, v any) error {
				switch lvl := strings.ToLower(v.(string)); lvl {
				case "debug", "info", "warn", "error":
					return s.LogLevel.UnmarshalText([]byte(lvl))
				}
				return fmt.Errorf("must be debug, info, warn or error")
			}},
		{name: keyLogFormat, kind: kindString, def: DefaultLogFormat,
			usage: "log format: text or json",
			apply: func(s *Server, v any) error {
				switch f := strings.ToLower(v.(string)); f {
				case "text", "json":
					s.LogFormat = f
					return nil
				}
				return fmt.Errorf("must be text or json")
			}},
		{name: keyDisableAgent, kind: kindBool, def: "false",
			usage: "do not run a node agent in the server process",
			apply: func(s *Server, v any) error {
				s.DisableAgent = v.(bool)
				return nil
			}},
		{name: keyNodeName, kind: kindString,
			usage: "the embedded agent's node name (default: the host name, lower case)",
			apply: func(s *Server, v any) error {
				name := strings.TrimSpace(v.(string))
				if name != "" && len(validation.IsDNS1123Subdomain(name)) > 0 {
					return fmt.Errorf("must be a lower-case DNS name such as node-1")
				}
				s.NodeName = name
				return nil
			}},
		{name: keyNodeIP, kind: kindString,
			usage: "the embedded agent's node address, where the API server reaches its node API (default: --bind-address when it is one address, else the first non-loopback address)",
			apply: func(s *Server, v any) error {
				ip := strings.TrimSpace(v.(string))
				if ip != "" {
					addr, err := netip.ParseAddr(ip)
					if err != nil || addr.IsUnspecified() || addr.Zone() != "" {
						return fmt.Errorf("must be an IP address of this host such as 192.168.1.10")
					}
					ip = addr.String()
				}
				s.NodeIP = ip
				return nil
			}},
		{name: keyNodeAPIPort, kind: kindInt, def: fmt.Sprint(DefaultNodeAPIPort),
			usage: "TCP port of the embedded agent's node API (logs, exec, port-forward; only the API server may call it)",
			apply: func(s *Server, v any) error {
				n, err := intRange(v, 1, 65535)
				s.NodeAPIPort = int(n)
				return err
			}},
		{name: keyContainerdSocket, kind: kindString, def: DefaultContainerdSocket,
			usage: "containerd's socket, for the embedded agent",
			apply: func(s *Server, v any) error {
				p := strings.TrimSpace(v.(string))
				if !filepath.IsAbs(p) {
					return fmt.Errorf("must be an absolute path such as %s", DefaultContainerdSocket)
				}
				s.ContainerdSocket = p
				return nil
			}},
		{name: keyImageGCHigh, kind: kindInt, def: fmt.Sprint(DefaultImageGCHighThreshold),
			usage: "percent of the image file system used above which the embedded agent removes unused images; 100 disables it",
			apply: func(s *Server, v any) error {
				n, err := intRange(v, 0, 100)
				s.ImageGCHighThreshold, s.imageGCHighValid = int(n), err == nil
				return err
			}},
		{name: keyImageGCLow, kind: kindInt, def: fmt.Sprint(DefaultImageGCLowThreshold),
			usage: "percent of the image file system used that image garbage collection frees down to",
			apply: func(s *Server, v any) error {
				n, err := intRange(v, 0, 100)
				if err != nil {
					return err
				}
				// --image-gc-high-threshold is applied before.
				if s.imageGCHighValid && int(n) >= s.ImageGCHighThreshold {
					return fmt.Errorf("must be less than --%s (%d)", keyImageGCHigh, s.ImageGCHighThreshold)
				}
				s.ImageGCLowThreshold = int(n)
				return nil
			}},
		{name: keyImageMinGCAge, kind: kindDuration, def: DefaultImageMinimumGCAge.String(),
			usage: "how long an image must have been on the node before image garbage collection may remove it",
			apply: func(s *Server, v any) error {
				d, err := nonNegativeDuration(v, "no minimum", "2m")
				s.ImageMinimumGCAge = d
				return err
			}},
		{name: keyEvictionHard, kind: kindString, def: eviction.DefaultEvictionHard,
			usage: "the embedded agent's hard eviction thresholds, as the kubelet's: signal<quantity or signal<percentage, comma-separated (memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available); empty disables eviction",
			apply: func(s *Server, v any) error {
				ts, err := eviction.ParseThresholds("", v.(string))
				if err != nil {
					return err
				}
				s.EvictionHard = ts
				return nil
			}},
		{name: keyEvictionTransition, kind: kindDuration, def: eviction.DefaultPressureTransitionPeriod.String(),
			usage: "how long the embedded agent keeps a pressure condition True after its signal went back above the threshold",
			apply: func(s *Server, v any) error {
				d, err := positiveDuration(v, "5m")
				s.EvictionPressureTransitionPeriod = d
				return err
			}},
		{name: keyDisableCM, kind: kindBool, def: "false",
			usage: "do not run the controllers in the server process (run skiff controller-manager instead)",
			apply: func(s *Server, v any) error {
				s.DisableControllerManager = v.(bool)
				return nil
			}},
		{name: keyDisableScheduler, kind: kindBool, def: "false",
			usage: "do not run the scheduler in the server process (run skiff scheduler instead)",
			apply: func(s *Server, v any) error {
				s.DisableScheduler = v.(bool)
				return nil
			}},
		{name: keyControllers, kind: kindList,
			usage: `controllers the server runs, as kube-controller-manager's --controllers: "*" is all, "name" adds one, "-name" leaves one out (skiff's names, as in the workqueue metrics, or kube-controller-manager's)`,
			apply: func(s *Server, v any) error {
				if _, _, err := manager.SelectControllers(v.([]string)); err != nil {
					return err
				}
				s.Controllers = v.([]string)
				return nil
			}},
		{name: keyNodeMonitorGrace, kind: kindDuration, def: nodelifecycle.DefaultGracePeriod.String(),
			usage: "how long a node may go without renewing its Lease before it is marked Ready=Unknown and tainted unreachable, as kube-controller-manager's --node-monitor-grace-period",
			apply: gracePeriod(func(s *Server) *time.Duration { return &s.NodeMonitorGracePeriod })},
		{name: keyNodeStartupGrace, kind: kindDuration, def: nodelifecycle.DefaultStartupGracePeriod.String(),
			usage: "how long a node that has never posted a Ready condition (an agent still starting) may stay silent after registering before it is marked Ready=Unknown, as kube-controller-manager's --node-startup-grace-period",
			apply: gracePeriod(func(s *Server) *time.Duration { return &s.NodeStartupGracePeriod })},
		{name: keyNodeEvictionRate, kind: kindFloat, def: fmt.Sprint(nodelifecycle.DefaultEviction().Rate),
			usage: "nodes a second the node lifecycle controller taints NoExecute (so their pods are evicted) in a healthy zone, as kube-controller-manager's flag",
			apply: func(s *Server, v any) error {
				s.NodeEviction.Rate = float32(v.(float64))
				return nil
			}},
		{name: keySecondaryEvictionRate, kind: kindFloat, def: fmt.Sprint(nodelifecycle.DefaultEviction().SecondaryRate),
			usage: "nodes a second tainted NoExecute in a partly disrupted zone larger than --large-cluster-size-threshold; 0 none",
			apply: func(s *Server, v any) error {
				s.NodeEviction.SecondaryRate = float32(v.(float64))
				return nil
			}},
		{name: keyUnhealthyZone, kind: kindFloat, def: fmt.Sprint(nodelifecycle.DefaultEviction().UnhealthyZoneThreshold),
			usage: "share of a zone's nodes (more than two) not Ready that makes it partly disrupted",
			apply: func(s *Server, v any) error {
				s.NodeEviction.UnhealthyZoneThreshold = v.(float64)
				return nil
			}},
		{name: keyLargeClusterSize, kind: kindInt, def: fmt.Sprint(nodelifecycle.DefaultEviction().LargeClusterSizeThreshold),
			usage: "nodes a zone needs to be large: in a partly disrupted zone of at most this many no node is tainted NoExecute",
			apply: func(s *Server, v any) error {
				n, err := intRange(v, 0, math.MaxInt32)
				s.NodeEviction.LargeClusterSizeThreshold = int(n)
				return err
			}},
		{name: keyTerminatedPodGC, kind: kindInt, def: fmt.Sprint(podgc.DefaultThreshold),
			usage: "terminated pods (Succeeded or Failed) kept before the pod garbage collector deletes the oldest, as kube-controller-manager's --terminated-pod-gc-threshold; 0 or less keeps them all",
			apply: func(s *Server, v any) error {
				n, err := intRange(v, math.MinInt32, math.MaxInt32)
				s.TerminatedPodGCThreshold = int(n)
				return err
			}},
		{name: keyLegacyTokenCleanUp, kind: kindDuration, def: legacytokencleaner.DefaultCleanUpPeriod.String(),
			usage: "how long an auto-generated legacy service account token Secret goes unused before the legacy token cleaner labels it invalid, and stays invalid before it is deleted, as kube-controller-manager's --legacy-service-account-token-clean-up-period",
			apply: func(s *Server, v any) error {
				d, err := positiveDuration(v, "8760h")
				s.LegacyServiceAccountTokenCleanUpPeriod = d
				return err
			}},
		{name: keySchedulerConfig, kind: kindString,
			usage: "kube-scheduler's configuration file (a KubeSchedulerConfiguration of kubescheduler.config.k8s.io/v1) for the server's scheduler: scoring strategy (LeastAllocated spreads, MostAllocated packs, RequestedToCapacityRatio follows a shape), plugins and their args, backoff; empty: Kubernetes' defaults",
			apply: func(s *Server, v any) error {
				path, err := optionalPath(v.(string))
				if err != nil || path == "" {
					return err
				}
				if s.Scheduler, err = configfile.Load(path); err != nil {
					return err
				}
				s.SchedulerConfig = path
				return nil
			}},
		{name: keyLeaderElectLeaseDuration, kind: kindDuration, def: manager.DefaultLeaseDuration.String(),
			usage: "how long the other servers wait after the leading controller manager's or scheduler's last renewal before taking its Lease",
			apply: func(s *Server, v any) error {
				d, err := positiveDuration(v, "15s")
				s.LeaderElectLeaseDuration = d
				return err
			}},
		{name: keyLeaderElectRenewDeadline, kind: kindDuration, def: manager.DefaultRenewDeadline.String(),
			usage: "how long a leading loop keeps retrying to renew its Lease before it stops leading; less than --leader-elect-lease-duration",
			apply: func(s *Server, v any) error {
				d, err := positiveDuration(v, "10s")
				s.LeaderElectRenewDeadline = d
				return err
			}},
		{name: keyLeaderElectRetryPeriod, kind: kindDuration, def: manager.DefaultRetryPeriod.String(),
			usage: "how often the loops try to take or renew their Leases",
			apply: func(s *Server, v any) error {
				d, err := positiveDuration(v, "2s")
				s.LeaderElectRetryPeriod = d
				return err
			}},
		{name: keyProfiling, kind: kindBool, def: "true",
			usage: "serve Go's pprof profiles on /debug/pprof/ to cluster admins (system:masters), as kube-apiserver's --profiling",
			apply: func(s *Server, v any) error {
				s.Profiling = v.(bool)
				return nil
			}},
		{name: keyClusterCIDR, kind: kindString, def: DefaultClusterCIDR,
			usage: "IPv4 range split into one pod CIDR per node, of --node-cidr-mask-size bits each",
			apply: func(s *Server, v any) error {
				// Its length against the mask's is checked once both are read.
				p, err := ParseClusterCIDR(v.(string))
				s.ClusterCIDR = p
				return err
			}},
		{name: keyNodeCIDRMaskSize, kind: kindInt, def: fmt.Sprint(DefaultNodeCIDRMaskSize),
			usage: "prefix length of each node's pod CIDR, as kube-controller-manager's --node-cidr-mask-size: /24 gives a node 253 pod addresses and a /16 cluster CIDR 256 nodes",
			apply: func(s *Server, v any) error {
				n, err := intRange(v, 9, 30)
				s.NodeCIDRMaskSize = int(n)
				return err
			}},
		{name: keyServiceCIDR, kind: kindString, def: DefaultServiceCIDR,
			usage: "IPv4 range Services get their cluster IPs from",
			apply: func(s *Server, v any) error {
				p, err := ParseServiceCIDR(v.(string))
				s.ServiceCIDR = p
				return err
			}},
		{name: keyGCMemoryLimit, kind: kindString, def: DefaultGCMemoryLimit,
			usage: "the server's Go soft memory limit, raised to 1.5x the live heap when that is more: near it the garbage collector runs more often, trading CPU for memory; 0 (or GOMEMLIMIT set) leaves Go's",
			apply: func(s *Server, v any) error {
				q, err := resource.ParseQuantity(strings.TrimSpace(v.(string)))
				if err != nil || q.Sign() < 0 {
					return fmt.Errorf("must be a non-negative size such as 400Mi or 1Gi")
				}
				s.GCMemoryLimit = q.Value()
				return nil
			}},
		{name: keyGCCPUBudget, kind: kindInt, def: fmt.Sprint(DefaultGCCPUBudget),
			usage: "percent of the CPU the server uses that its garbage collector may take before --gc-memory-limit is raised to bring it back (50 is Go's own cap under a limit); 0 keeps the limit",
			apply: func(s *Server, v any) error {
				n, err := intRange(v, 0, 50)
				s.GCCPUBudget = int(n)
				return err
			}},
	}
	// Beside --terminated-pod-gc-threshold and the token clean-up period, the other controller tunings.
	at := slices.IndexFunc(all, func(st setting) bool { return st.name == keyLegacyTokenCleanUp }) + 1
	return slices.Insert(all, at, append(concurrentSyncsSettings(), endpointLimitSettings()...)...)
}

// The range checks of int (kindInt: v is an int64) and duration
// (kindDuration) settings. Each returns the value when it is in range, else
// 0 and an error that says what would be, as every apply's must.

// intRange accepts lo <= v <= hi.
func intRange(v any, lo, hi int64) (int64, error) {
	if n := v.(int64); n >= lo && n <= hi {
		return n, nil
	}
	return 0, fmt.Errorf("must be %d-%d", lo, hi)
}

// positiveInt accepts v >= 1, a count of unit.
func positiveInt(v any, unit string) (int64, error) {
	if n := v.(int64); n >= 1 {
		return n, nil
	}
	return 0, fmt.Errorf("must be a positive number of %s", unit)
}

// durationAtLeast accepts v >= lo.
func durationAtLeast(v any, lo time.Duration) (time.Duration, error) {
	if d := v.(time.Duration); d >= lo {
		return d, nil
	}
	return 0, fmt.Errorf("must be at least %s", lo)
}

// positiveDuration accepts v > 0; example is a valid value for the message.
func positiveDuration(v any, example string) (time.Duration, error) {
	if d := v.(time.Duration); d > 0 {
		return d, nil
	}
	return 0, fmt.Errorf("must be a positive duration such as %s", example)
}

// nonNegativeDuration accepts v >= 0; zero says what 0 means.
func nonNegativeDuration(v any, zero, example string) (time.Duration, error) {
	if d := v.(time.Duration); d >= 0 {
		return d, nil
	}
	return 0, fmt.Errorf("must be 0 (%s) or a positive duration such as %s", zero, example)
}

// applyEndpoint accepts "" (SQLite in the data dir), a PostgreSQL URL that
// pgx can parse, sqlite://<path>, or a plain path. Other URL schemes are
// rejected rather than taken for odd file names.
func applyEndpoint(s *Server, v any) error {
	ep := v.(string)
	s.DatastoreEndpoint = ep
	switch {
	case ep == "":
		return nil
	case storage.IsPostgres(ep):
		if _, err := pgconn.ParseConfig(ep); err != nil {
			// pgconn's errors redact the password.
			return fmt.Errorf("not a valid PostgreSQL URL (postgres://user:password@host:5432/database?sslmode=disable): %w", err)
		}
		return nil
	case strings.HasPrefix(ep, sqlitePrefix):
		if strings.TrimPrefix(ep, sqlitePrefix) == "" {
			return fmt.Errorf("sqlite:// needs a file path, e.g. sqlite:///var/lib/skiff/db/state.db")
		}
		return nil
	case strings.Contains(ep, "://"):
		scheme, _, _ := strings.Cut(ep, "://")
		return fmt.Errorf("unsupported scheme %q: use postgres://user:password@host:5432/database, sqlite://<path>, a file path, or nothing for <data-dir>/%s", scheme, sqliteFile)
	}
	return nil
}

const sqlitePrefix = "sqlite://"

// DefaultDataDir is /var/lib/skiff for root and ~/.skiff for anyone else;
// "" when a non-root user has no home directory.
func DefaultDataDir() string {
	home, _ := os.UserHomeDir()
	return defaultDataDir(os.Geteuid(), home)
}

func defaultDataDir(uid int, home string) string {
	if uid == 0 {
		return "/var/lib/skiff"
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".skiff")
}

// AddServerFlags declares every setting of `skiff server` on fs.
func AddServerFlags(fs *pflag.FlagSet) {
	for _, st := range serverSettings(DefaultDataDir()) {
		if st.kind == kindBool {
			// A real bool flag, so that plain --disable-agent means true.
			fs.Bool(st.name, st.def == "true", st.usage+" (env "+EnvVar(st.name)+")")
			continue
		}
		val := &rawValue{kind: st.kind, text: st.def}
		if st.kind == kindList {
			val.text = ""
		}
		fs.Var(val, st.name, st.usage+" (env "+EnvVar(st.name)+")")
	}
}

// rawValue is a flag that keeps the text as given. Conversion and checks
// happen in the loader, so a bad flag and a bad environment variable get the
// same message. Its Type is never one viper converts on its own ("int" would
// silently turn "abc" into 0).
type rawValue struct {
	kind  kind
	text  string
	items []string // kindList: one entry per occurrence or comma-separated item
}

func (r *rawValue) String() string {
	if r.kind == kindList {
		return strings.Join(r.items, ",")
	}
	return r.text
}

func (r *rawValue) Set(s string) error {
	if r.kind == kindList {
		r.items = append(r.items, splitList(s)...)
		return nil
	}
	r.text = s
	return nil
}

func (r *rawValue) Type() string {
	switch r.kind {
	case kindInt:
		return "number"
	case kindList:
		return "names"
	}
	return r.kind.flagType()
}

func isSpaceOrControl(r rune) bool {
	return r <= ' ' || r == 0x7f
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// absPath makes a required path absolute, expanding a leading "~/" (a YAML
// file or an environment variable gets no shell expansion).
func absPath(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("must not be empty")
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot expand ~: %w", err)
		}
		p = filepath.Join(home, strings.TrimPrefix(p, "~"))
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("cannot make the path absolute: %w", err)
	}
	return abs, nil
}

// optionalPath is absPath for settings whose "" means "derive from the data
// directory".
func optionalPath(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	return absPath(p)
}
