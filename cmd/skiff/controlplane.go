package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	certutil "k8s.io/client-go/util/cert"

	"github.com/skiffkube/skiff/apiserver/delegated"
	"github.com/skiffkube/skiff/apiserver/healthz"
	"github.com/skiffkube/skiff/config"
	"github.com/skiffkube/skiff/controllers/clientmetrics"
	"github.com/skiffkube/skiff/controllers/cronjob"
	"github.com/skiffkube/skiff/controllers/endpointslice"
	"github.com/skiffkube/skiff/controllers/endpointslicemirroring"
	"github.com/skiffkube/skiff/controllers/job"
	"github.com/skiffkube/skiff/controllers/legacytokencleaner"
	"github.com/skiffkube/skiff/controllers/manager"
	"github.com/skiffkube/skiff/controllers/nodeipam"
	"github.com/skiffkube/skiff/controllers/nodelifecycle"
	"github.com/skiffkube/skiff/controllers/podgc"
	"github.com/skiffkube/skiff/controllers/runner"
	"github.com/skiffkube/skiff/controllers/sharedinformers"
	"github.com/skiffkube/skiff/scheduler"
	"github.com/skiffkube/skiff/scheduler/configfile"
	schedmetrics "github.com/skiffkube/skiff/scheduler/metrics"
)

// identity names this process in the leader Leases: host plus a random
// suffix, as Kubernetes' components do, so two processes on one host differ.
func identity() string {
	host, _ := os.Hostname()
	return host + "_" + uuid.NewString()
}

// protobufContentType is Kubernetes' protobuf wire format.
const protobufContentType = "application/vnd.kubernetes.protobuf"

// preferProtobuf has typed clients send and read protobuf, as Kubernetes'
// kubelet, controller manager and scheduler do (--kube-api-content-type):
// client-go's typed clients otherwise read JSON replies and watch events,
// several times the CPU on both ends. Dynamic and metadata clients made
// from rc set their own content types.
func preferProtobuf(rc *rest.Config) {
	rc.ContentType = protobufContentType
	rc.AcceptContentTypes = protobufContentType + ",application/json"
}

// Client rate limits of the control-plane loops, unless --kube-api-qps and
// --kube-api-burst set them: the controller manager's, and the scheduler's
// (see schedulerClientConfig).
const (
	controlPlaneQPS, controlPlaneBurst = 500, 1000
	schedulerQPS, schedulerBurst       = 3000, 3000
)

// controlPlaneClient raises client-go's default 5 QPS, unless rc sets its
// own: the loops in one process share it, and a scale test must not
// throttle them.
func controlPlaneClient(rc *rest.Config) (*kubernetes.Clientset, *rest.Config, error) {
	rc = rest.CopyConfig(rc)
	if rc.QPS == 0 {
		rc.QPS, rc.Burst = controlPlaneQPS, controlPlaneBurst
	}
	preferProtobuf(rc)
	c, err := kubernetes.NewForConfig(rc)
	return c, rc, err
}

// runControllerManager runs the controllers cfg selects while this process holds the
// controller-manager Lease. rc is the manager's own identity (shared
// informers, the Lease, Events, minting tokens); each controller acts as
// its own kube-system service account with tokens from the TokenRequest
// API, as kube-controller-manager --use-service-account-credentials. With a
// pool the controllers take their informers from it (shared with the
// scheduler of the same process), else from a pool of their own. cfg says
// which controllers and the cluster CIDR; identity and Lease timing are
// filled in here.
func runControllerManager(ctx context.Context, rc *rest.Config, cfg manager.Config, rootCA []byte, log *slog.Logger, pool *sharedinformers.Pool, le leaderElection) error {
	client, rc, err := controlPlaneClient(rc)
	if err != nil {
		return err
	}
	meta, err := metadata.NewForConfig(rc)
	if err != nil {
		return err
	}
	// Each controller's own client (its service account's token) goes over
	// TCP: client-go shares one transport between configurations that
	// differ only in credentials, but never one with a custom dialer, so
	// in memory (rc.Dial, see componentConfig) every controller would open
	// a connection of its own. The heavy traffic, the shared informers'
	// watches and the scheduler's writes, stays in memory.
	tcp := rest.CopyConfig(rc)
	tcp.Dial = nil
	opts := manager.Options{Logger: log.With("component", "controller-manager"), Metadata: meta, RootCA: rootCA,
		ControllerCredentials: manager.ServiceAccountCredentials(client, tcp), LeaderWatchDog: le.watchDog}
	if pool == nil {
		// Alone (skiff controller-manager) the controllers still take their informers from a pool,
		// for this term only: through it the garbage collector shares their watches of pods and
		// the like instead of opening its own.
		poolCtx, cancel := context.WithCancel(ctx)
		if pool, err = newInformerPool(poolCtx, rc); err != nil {
			cancel()
			return err
		}
		defer func() { cancel(); pool.Shutdown() }()
	}
	view := pool.View(manager.DefaultResync)
	defer view.Shutdown()
	opts.Informers = view
	cfg.Identity, cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod = identity(), le.leaseDuration, le.renewDeadline, le.retryPeriod
	m, err := manager.New(client, cfg, opts)
	if err != nil {
		return err
	}
	log.Info("controller manager starting", "controllers", m.Controllers())
	return m.RunWithLeaderElection(ctx)
}

// schedulerClientConfig is rc for the scheduler's client. It sends two
// writes per pod (its binding and a Scheduled event): at the 1,000 pods/s
// it aims for, the control-plane client's 500 QPS would be the bottleneck,
// not the server. And it sends them in protobuf, as kube-scheduler does: in
// JSON the binding alone cost the server 1.1% of its CPU at 1,000 hollow
// nodes, and this process encoded both besides.
func schedulerClientConfig(rc *rest.Config) *rest.Config {
	rc = rest.CopyConfig(rc)
	if rc.QPS == 0 {
		rc.QPS, rc.Burst = schedulerQPS, schedulerBurst
	}
	preferProtobuf(rc)
	return rc
}

// runScheduler runs the scheduler while this process holds its Lease, with
// its informers from pool if there is one, else from a factory of its own,
// its metrics in m (nil: kept private), and its leader election as le says.
func runScheduler(ctx context.Context, rc *rest.Config, cfg scheduler.Config, log *slog.Logger, pool *sharedinformers.Pool, m *schedmetrics.Metrics, le leaderElection) error {
	client, err := kubernetes.NewForConfig(schedulerClientConfig(rc))
	if err != nil {
		return err
	}
	var factory informers.SharedInformerFactory
	if pool != nil {
		view := pool.View(0)
		defer view.Shutdown()
		factory = view
	} else {
		factory = informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(manager.TrimManagedFields))
	}
	cfg.Logger, cfg.Metrics = log.With("component", "scheduler"), m
	sched, err := scheduler.New(client, factory, cfg)
	if err != nil {
		return err
	}
	return scheduler.RunWithLeaderElection(ctx, client, sched, scheduler.LeaderElection{Identity: identity(), WatchDog: le.watchDog,
		LeaseDuration: le.leaseDuration, RenewDeadline: le.renewDeadline, RetryPeriod: le.retryPeriod})
}

// newInformerPool is the informer factory that the controller manager and
// the scheduler of one server share: each pod and node is cached once in
// the process, not once per loop. It lists and watches as the controller
// manager (rc), whose role reads everything, and runs until ctx ends.
func newInformerPool(ctx context.Context, rc *rest.Config) (*sharedinformers.Pool, error) {
	client, _, err := controlPlaneClient(rc)
	if err != nil {
		return nil, err
	}
	return sharedinformers.New(ctx, informers.NewSharedInformerFactoryWithOptions(client, manager.DefaultResync,
		informers.WithTransform(manager.TrimManagedFields))), nil
}

// leaderElection is how a control-plane loop campaigns for its Lease: the
// timing (zero: Kubernetes' 15 s, 10 s and 2 s) and the watchdog that fails
// liveness for a leader that stopped renewing (nil: none).
type leaderElection struct {
	leaseDuration, renewDeadline, retryPeriod time.Duration
	watchDog                                  *leaderelection.HealthzAdaptor
}

// addFlags declares kube-scheduler's and kube-controller-manager's
// --leader-elect-* timing flags: a cluster whose database answers slowly at
// times (PostgreSQL failing over) can give its leaders longer.
func (le *leaderElection) addFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&le.leaseDuration, "leader-elect-lease-duration", manager.DefaultLeaseDuration, "how long standby instances wait after the leader's last renewal before taking its Lease")
	fs.DurationVar(&le.renewDeadline, "leader-elect-renew-deadline", manager.DefaultRenewDeadline, "how long the leader keeps retrying to renew before it stops leading; less than the lease duration")
	fs.DurationVar(&le.retryPeriod, "leader-elect-retry-period", manager.DefaultRetryPeriod, "how often instances try to take or renew the Lease")
}

// validate refuses timing client-go's leader election would refuse, or that
// would let two leaders overlap, naming the flags.
func (le leaderElection) validate() error {
	return config.CheckLeaderElection(le.leaseDuration, le.renewDeadline, le.retryPeriod)
}

// leaderWatchDogTimeout is how long past its Lease's duration a leader may
// go without renewing before it fails the liveness checks, as Kubernetes'
// components (a wedged leader, restarted by the liveness probe).
const leaderWatchDogTimeout = 20 * time.Second

// supervise runs a control-plane loop for the life of ctx. A loop that lost
// its Lease, or failed, is started again (a fresh instance campaigns anew),
// as a restarted kube-controller-manager would be.
func supervise(ctx context.Context, name string, log *slog.Logger, run func(context.Context) error) {
	for ctx.Err() == nil {
		err := run(ctx)
		if ctx.Err() != nil {
			return
		}
		log.Warn("control-plane loop stopped; starting it again", "loop", name, "err", err)
		select {
		case <-ctx.Done():
		case <-timeAfter(2):
		}
	}
}

// standalone is what standaloneCommand's own flags set, for the
// component's configuration.
type standalone struct {
	kubeconfig, bindAddress string
	securePort              int
	profiling               bool
	qps                     float32
	burst                   int
	le                      leaderElection
}

// loop runs a standalone component's control-plane loop: its metrics
// registered in reg, its leader election run as le says.
type loop func(ctx context.Context, rc *rest.Config, log *slog.Logger, reg prometheus.Registerer, le leaderElection) error

// standaloneCommand builds `skiff controller-manager` or `skiff scheduler`:
// the same loop as in the server, against any API server's kubeconfig. Its
// health, metrics and configuration are served over HTTPS on --secure-port
// (kube-scheduler's 10259, kube-controller-manager's 10257), callers vetted
// by the API server. prepare checks the component's own flags and returns
// its effective configuration (served on /configz, as Kubernetes'
// component config) and its loop, whose leader election watchdog is
// checked by /healthz and /livez.
func standaloneCommand(use, short string, defaultPort int, defaultQPS float32, defaultBurst int, prepare func(s standalone, rc *rest.Config) (any, loop, error)) *cobra.Command {
	var s standalone
	var certFile, keyFile string
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if s.kubeconfig == "" {
				return fmt.Errorf("invalid --kubeconfig: required (the API server to work against)")
			}
			if s.securePort < 0 || s.securePort > 65535 {
				return fmt.Errorf("invalid --secure-port %d: must be 1-65535, or 0 to serve no health and metrics endpoint", s.securePort)
			}
			if net.ParseIP(s.bindAddress) == nil {
				return fmt.Errorf("invalid --bind-address %q: must be an IP address", s.bindAddress)
			}
			if (certFile == "") != (keyFile == "") {
				return fmt.Errorf("invalid --tls-cert-file %q and --tls-private-key-file %q: give both or neither", certFile, keyFile)
			}
			if err := s.le.validate(); err != nil {
				return err
			}
			if s.qps <= 0 || s.burst < 1 {
				return fmt.Errorf("invalid --kube-api-qps %g, --kube-api-burst %d: the rate must be positive and the burst at least 1", s.qps, s.burst)
			}
			rc, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
			if err != nil {
				return fmt.Errorf("invalid --kubeconfig %q: %w", s.kubeconfig, err)
			}
			rc.QPS, rc.Burst = s.qps, s.burst
			componentConfig, run, err := prepare(s, rc)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			reg.MustRegister(clientmetrics.Register().Collectors()...)
			s.le.watchDog = leaderelection.NewLeaderHealthzAdaptor(leaderWatchDogTimeout)
			if s.securePort != 0 {
				client, err := kubernetes.NewForConfig(rc)
				if err != nil {
					return err
				}
				if _, err := delegated.Start(ctx, delegated.Endpoint{
					Address:  net.JoinHostPort(s.bindAddress, strconv.Itoa(s.securePort)),
					CertFile: certFile, KeyFile: keyFile, Client: client, Metrics: reg, Checks: []healthz.Check{s.le.watchDog},
					Profiling: s.profiling, ComponentConfig: componentConfig,
				}); err != nil {
					return fmt.Errorf("health and metrics endpoint (--bind-address %s, --secure-port %d, --tls-cert-file %q): %w", s.bindAddress, s.securePort, certFile, err)
				}
			}
			err = run(ctx, rc, slog.Default(), reg, s.le)
			if errors.Is(err, manager.ErrLostLeadership) || errors.Is(err, scheduler.ErrLostLeadership) {
				return fmt.Errorf("%w; exiting so that a fresh process can campaign again", err)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&s.kubeconfig, "kubeconfig", "", "kubeconfig of the API server")
	cmd.Flags().IntVar(&s.securePort, "secure-port", defaultPort, "HTTPS port for /healthz, /livez, /readyz (open), /metrics (RBAC: get on the path, as system:monitoring grants) and /configz, the effective configuration (RBAC: get on the path, as cluster-admin may); 0: none")
	cmd.Flags().StringVar(&s.bindAddress, "bind-address", "127.0.0.1", "IP address --secure-port listens on (0.0.0.0: every interface)")
	cmd.Flags().StringVar(&certFile, "tls-cert-file", "", "serving certificate (PEM) for --secure-port; empty: a self-signed one made at start")
	cmd.Flags().StringVar(&keyFile, "tls-private-key-file", "", "private key (PEM) of --tls-cert-file")
	s.le.addFlags(cmd.Flags())
	cmd.Flags().Float32Var(&s.qps, "kube-api-qps", defaultQPS, "requests per second the loop's API client may send on average (its controllers' own clients each as many)")
	cmd.Flags().IntVar(&s.burst, "kube-api-burst", defaultBurst, "requests the loop's API client may send at once above --kube-api-qps")
	cmd.Flags().BoolVar(&s.profiling, "profiling", true, "serve Go's pprof profiles on --secure-port's /debug/pprof/ (RBAC: get on the path, as cluster-admin may)")
	return cmd
}

func newControllerManagerCommand() *cobra.Command {
	var clusterCIDR, serviceCIDR, rootCAFile string
	var nodeCIDRMaskSize, terminatedPodGC, maxEndpointsPerSlice, mirroringMaxEndpointsPerSubset int
	var controllers []string
	var nodeMonitorGrace, nodeStartupGrace, legacyTokenCleanUp time.Duration
	allocateNodeCIDRs := true
	concurrentSyncs := map[string]*int{}
	eviction := nodelifecycle.DefaultEviction()
	cmd := standaloneCommand("controller-manager", "Run the controllers (one active instance per cluster, elected with a Lease)", 10257, controlPlaneQPS, controlPlaneBurst,
		func(s standalone, rc *rest.Config) (any, loop, error) {
			run := controllersToRun(controllers, allocateNodeCIDRs)
			if _, _, err := manager.SelectControllers(run); err != nil {
				if !allocateNodeCIDRs {
					return nil, nil, fmt.Errorf("invalid --controllers with --allocate-node-cidrs=false (which leaves node IPAM out): %w", err)
				}
				return nil, nil, fmt.Errorf("invalid --controllers: %w", err)
			}
			if err := nodelifecycle.CheckGracePeriod(nodeMonitorGrace); err != nil {
				return nil, nil, fmt.Errorf("invalid --node-monitor-grace-period %s: %w", nodeMonitorGrace, err)
			}
			if err := nodelifecycle.CheckGracePeriod(nodeStartupGrace); err != nil {
				return nil, nil, fmt.Errorf("invalid --node-startup-grace-period %s: %w", nodeStartupGrace, err)
			}
			if allocateNodeCIDRs {
				// The same checks as the server's --cluster-cidr: IPv4 only.
				cidr, err := config.ParseClusterCIDR(clusterCIDR)
				if err != nil {
					return nil, nil, fmt.Errorf("invalid --cluster-cidr %q: %w", clusterCIDR, err)
				}
				clusterCIDR = cidr
				if serviceCIDR != "" {
					cidr, err := config.ParseServiceCIDR(serviceCIDR)
					if err != nil {
						return nil, nil, fmt.Errorf("invalid --service-cluster-ip-range %q: %w", serviceCIDR, err)
					}
					serviceCIDR = cidr
				}
				if err := config.CheckNodeSettings(clusterCIDR, nodeCIDRMaskSize, serviceCIDR, "service-cluster-ip-range", eviction); err != nil {
					return nil, nil, err
				}
			} else if err := eviction.Check(); err != nil {
				// Only node IPAM reads the CIDR flags, so without it they are not
				// judged, as kube-controller-manager judges them when it starts it.
				return nil, nil, fmt.Errorf("invalid %w", err)
			}
			workers := map[string]int{}
			for _, f := range manager.ConcurrentSyncsFlags {
				n := *concurrentSyncs[f.Controller]
				if err := manager.CheckConcurrentSyncs(n); err != nil {
					return nil, nil, fmt.Errorf("invalid --%s %d: %w", f.Flag, n, err)
				}
				workers[f.Controller] = n
			}
			if err := manager.CheckEndpointsPerSlice(maxEndpointsPerSlice); err != nil {
				return nil, nil, fmt.Errorf("invalid --max-endpoints-per-slice %d: %w", maxEndpointsPerSlice, err)
			}
			if err := manager.CheckEndpointsPerSlice(mirroringMaxEndpointsPerSubset); err != nil {
				return nil, nil, fmt.Errorf("invalid --mirroring-max-endpoints-per-subset %d: %w", mirroringMaxEndpointsPerSubset, err)
			}
			if legacyTokenCleanUp <= 0 {
				return nil, nil, fmt.Errorf("invalid --legacy-service-account-token-clean-up-period %s: must be a positive duration such as 8760h", legacyTokenCleanUp)
			}
			rootCA, err := clusterRootCA(rc, rootCAFile)
			if err != nil {
				return nil, nil, err
			}
			cfg := manager.Config{
				Controllers:                            run,
				ClusterCIDR:                            clusterCIDR,
				NodeCIDRMaskSize:                       nodeCIDRMaskSize,
				ServiceCIDR:                            serviceCIDR,
				NodeMonitorGracePeriod:                 nodeMonitorGrace,
				NodeStartupGracePeriod:                 nodeStartupGrace,
				NodeEviction:                           &eviction,
				TerminatedPodGCThreshold:               manager.TerminatedPodGCThresholdFromFlag(terminatedPodGC),
				LegacyServiceAccountTokenCleanUpPeriod: legacyTokenCleanUp,
				ConcurrentSyncs:                        workers,
				MaxEndpointsPerSlice:                   maxEndpointsPerSlice,
				MirroringMaxEndpointsPerSubset:         mirroringMaxEndpointsPerSubset,
			}
			z := controllerManagerConfigz(s, cfg, terminatedPodGC, rootCAFile)
			z.Generic.Controllers, z.KubeCloudShared.AllocateNodeCIDRs = controllers, allocateNodeCIDRs
			return z, func(ctx context.Context, rc *rest.Config, log *slog.Logger, reg prometheus.Registerer, le leaderElection) error {
				q := runner.NewQueueMetrics()
				runner.UseQueueMetrics(q)
				reg.MustRegister(q.Collectors()...)
				reg.MustRegister(podgc.Collectors()...)
				reg.MustRegister(cronjob.Collectors()...)
				reg.MustRegister(job.Collectors()...)
				reg.MustRegister(nodeipam.Collectors()...)
				return runControllerManager(ctx, rc, cfg, rootCA, log, nil, le)
			}, nil
		})
	cmd.Flags().StringVar(&clusterCIDR, "cluster-cidr", nodeipam.DefaultClusterCIDR, "IPv4 range split into one pod CIDR per node, of --node-cidr-mask-size bits each")
	cmd.Flags().StringVar(&serviceCIDR, "service-cluster-ip-range", config.DefaultServiceCIDR, "the Service IP range (the server's --service-cidr): no node gets a pod CIDR inside it where --cluster-cidr overlaps it; empty: none")
	cmd.Flags().BoolVar(&allocateNodeCIDRs, "allocate-node-cidrs", allocateNodeCIDRs, "give each node a spec.podCIDR from --cluster-cidr (the node IPAM controller); false leaves that controller out, as kube-controller-manager's flag does (its default is false; skiff's node agents build their pod network from the CIDR)")
	cmd.Flags().IntVar(&nodeCIDRMaskSize, "node-cidr-mask-size", nodeipam.DefaultNodeMaskSize, "prefix length of each node's pod CIDR: /24 gives a node 253 pod addresses and a /16 cluster CIDR 256 nodes")
	cmd.Flags().StringSliceVar(&controllers, "controllers", []string{"*"}, `controllers to run, as kube-controller-manager's: "*" is all, "name" adds one, "-name" leaves one out (names as in the workqueue metrics, e.g. nodeipam-controller, or kube-controller-manager's: node-ipam-controller, nodeipam)`)
	cmd.Flags().DurationVar(&nodeMonitorGrace, "node-monitor-grace-period", nodelifecycle.DefaultGracePeriod, "how long a node may go without renewing its Lease before it is marked Ready=Unknown and tainted unreachable")
	cmd.Flags().DurationVar(&nodeStartupGrace, "node-startup-grace-period", nodelifecycle.DefaultStartupGracePeriod, "how long a node that has never posted a Ready condition may stay silent after registering before it is marked Ready=Unknown")
	cmd.Flags().Float32Var(&eviction.Rate, "node-eviction-rate", eviction.Rate, "nodes a second tainted NoExecute (so their pods are evicted) in a healthy zone")
	cmd.Flags().Float32Var(&eviction.SecondaryRate, "secondary-node-eviction-rate", eviction.SecondaryRate, "nodes a second tainted NoExecute in a partly disrupted zone larger than --large-cluster-size-threshold; 0 none")
	cmd.Flags().Float64Var(&eviction.UnhealthyZoneThreshold, "unhealthy-zone-threshold", eviction.UnhealthyZoneThreshold, "share of a zone's nodes (more than two) not Ready that makes it partly disrupted")
	cmd.Flags().IntVar(&eviction.LargeClusterSizeThreshold, "large-cluster-size-threshold", eviction.LargeClusterSizeThreshold, "nodes a zone needs to be large: in a partly disrupted zone of at most this many no node is tainted NoExecute")
	cmd.Flags().IntVar(&terminatedPodGC, "terminated-pod-gc-threshold", podgc.DefaultThreshold, "terminated pods (Succeeded or Failed) kept before the pod garbage collector deletes the oldest; 0 or less keeps them all")
	cmd.Flags().DurationVar(&legacyTokenCleanUp, "legacy-service-account-token-clean-up-period", legacytokencleaner.DefaultCleanUpPeriod, "how long an auto-generated legacy service account token Secret goes unused before it is labelled invalid, and stays invalid before it is deleted")
	for _, f := range manager.ConcurrentSyncsFlags {
		concurrentSyncs[f.Controller] = cmd.Flags().Int(f.Flag, manager.DefaultWorkers, "workers of the "+f.Controller+": objects it reconciles at once")
	}
	cmd.Flags().IntVar(&maxEndpointsPerSlice, "max-endpoints-per-slice", endpointslice.MaxEndpointsPerSlice, "most endpoints the EndpointSlice controller puts in one slice (1-1000)")
	cmd.Flags().IntVar(&mirroringMaxEndpointsPerSubset, "mirroring-max-endpoints-per-subset", endpointslicemirroring.MaxEndpointsPerSubset, "most addresses of one Endpoints subset mirrored to EndpointSlices (1-1000)")
	cmd.Flags().StringVar(&rootCAFile, "root-ca-file", "", "cluster CA bundle (PEM) published to pods as kube-root-ca.crt and in token Secrets as ca.crt; empty: the kubeconfig's CA")
	return cmd
}

// clusterRootCA is the CA bundle pods are told to trust: --root-ca-file if
// given (a cluster whose API server certificate chains to another CA than
// the one the kubeconfig names), else the kubeconfig's CA, inline or as a
// file. It must hold at least one certificate.
func clusterRootCA(rc *rest.Config, file string) ([]byte, error) {
	var setting string
	var data []byte
	switch {
	case file != "":
		setting = fmt.Sprintf("--root-ca-file %q", file)
		var err error
		if data, err = os.ReadFile(file); err != nil {
			return nil, fmt.Errorf("invalid %s: %w", setting, err)
		}
	case len(rc.CAData) > 0:
		setting, data = "the kubeconfig's certificate-authority-data", rc.CAData
	case rc.CAFile != "":
		setting = fmt.Sprintf("the kubeconfig's certificate-authority %q", rc.CAFile)
		var err error
		if data, err = os.ReadFile(rc.CAFile); err != nil {
			return nil, fmt.Errorf("invalid %s: %w", setting, err)
		}
	default:
		// No CA: the root CA publisher is skipped (it says so in the log)
		// and token Secrets carry no ca.crt.
		return nil, nil
	}
	if _, err := certutil.ParseCertsPEM(data); err != nil {
		return nil, fmt.Errorf("invalid %s: %w", setting, err)
	}
	return data, nil
}

func newSchedulerCommand() *cobra.Command {
	var configFile string
	cmd := standaloneCommand("scheduler", "Run the scheduler (one active instance per cluster, elected with a Lease)", 10259, schedulerQPS, schedulerBurst,
		func(s standalone, _ *rest.Config) (any, loop, error) {
			var cfg scheduler.Config
			if configFile != "" {
				var err error
				if cfg, err = configfile.Load(configFile); err != nil {
					return nil, nil, fmt.Errorf("invalid --config %s: %w", configFile, err)
				}
			}
			componentConfig, err := configfile.Encode(cfg, configfile.Process{Kubeconfig: s.kubeconfig, QPS: s.qps, Burst: s.burst,
				LeaseDuration: s.le.leaseDuration, RenewDeadline: s.le.renewDeadline, RetryPeriod: s.le.retryPeriod, Profiling: s.profiling})
			if err != nil {
				return nil, nil, err
			}
			return componentConfig, func(ctx context.Context, rc *rest.Config, log *slog.Logger, reg prometheus.Registerer, le leaderElection) error {
				m := schedmetrics.New()
				reg.MustRegister(m.Collectors()...)
				return runScheduler(ctx, rc, cfg, log, nil, m, le)
			}, nil
		})
	cmd.Flags().StringVar(&configFile, "config", "", "kube-scheduler's configuration file (a KubeSchedulerConfiguration of kubescheduler.config.k8s.io/v1): scoring strategy, plugins, backoff; empty: Kubernetes' defaults")
	return cmd
}

func timeAfter(seconds int) <-chan time.Time { return time.After(time.Duration(seconds) * time.Second) }

// controllersToRun is the --controllers list the manager gets: as
// kube-controller-manager, without --allocate-node-cidrs the node IPAM
// controller does not run, whatever --controllers says. An empty list is
// every controller to the manager, so it is spelt "*" before the exclusion
// (which alone would select none).
func controllersToRun(controllers []string, allocateNodeCIDRs bool) []string {
	if allocateNodeCIDRs {
		return controllers
	}
	if len(controllers) == 0 {
		controllers = []string{"*"}
	}
	return append(slices.Clone(controllers), "-"+nodeipam.Name)
}
