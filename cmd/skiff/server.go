package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/klog/v2"

	"github.com/skiffkube/skiff/apiserver"
	"github.com/skiffkube/skiff/apiserver/authn"
	"github.com/skiffkube/skiff/apiserver/authz/bootstrap"
	"github.com/skiffkube/skiff/apiserver/healthz"
	"github.com/skiffkube/skiff/apiserver/pki"
	"github.com/skiffkube/skiff/config"
	"github.com/skiffkube/skiff/controllers/clientmetrics"
	"github.com/skiffkube/skiff/controllers/cronjob"
	"github.com/skiffkube/skiff/controllers/job"
	"github.com/skiffkube/skiff/controllers/manager"
	"github.com/skiffkube/skiff/controllers/nodeipam"
	"github.com/skiffkube/skiff/controllers/podgc"
	"github.com/skiffkube/skiff/controllers/runner"
	"github.com/skiffkube/skiff/controllers/sharedinformers"
	schedmetrics "github.com/skiffkube/skiff/scheduler/metrics"
	"github.com/skiffkube/skiff/storage"
)

func newServerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a skiff server: the datastore and, as they arrive, the API server and controllers",
		Long: `Run a skiff server. State is kept in an embedded SQLite file in the data
directory, or in PostgreSQL when --datastore-endpoint is a postgres:// URL
(several servers may share one database). Every flag can also be set with
its SKIFF_* environment variable or as a key of the --config YAML file;
a flag beats the environment, which beats the file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.LoadServer(cmd.Flags())
			if err != nil {
				return err
			}
			log := cfg.NewLogger(cmd.ErrOrStderr())
			slog.SetDefault(log)
			klog.SetSlogLogger(log) // client-go's logs go to the same place, in the same format
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			go func() {
				// After the first signal a second one kills the process at
				// once, in case shutdown hangs.
				<-ctx.Done()
				stop()
			}()
			return runServer(ctx, cfg, log)
		},
	}
	config.AddServerFlags(cmd.Flags())
	return cmd
}

// runServer builds every component of a server from cfg, runs them until ctx
// ends, and then stops them in the reverse order of their start. New
// components (API server, controllers, node agent) are started here, after
// the store they depend on.
func runServer(ctx context.Context, cfg *config.Server, log *slog.Logger) (err error) {
	if err := cfg.Prepare(log); err != nil {
		return err
	}
	if cfg.GCMemoryLimit > 0 && os.Getenv("GOMEMLIMIT") == "" {
		go keepGCMemoryLimit(ctx, cfg.GCMemoryLimit, float64(cfg.GCCPUBudget)/100, log)
	}

	store, err := storage.New(ctx, cfg.StorageConfig(log))
	if err != nil {
		return fmt.Errorf("opening the datastore %s: %w", cfg.RedactedEndpoint(), err)
	}
	defer func() {
		if cerr := store.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("closing the datastore: %w", cerr))
			return
		}
		log.Info("datastore closed")
	}()

	rev, err := store.Revision(ctx)
	if err != nil {
		return fmt.Errorf("reading the datastore's revision: %w", err)
	}
	// The API server outlives the loops at shutdown: they stop first (the
	// agent cordons its node on the way out), then the API server does.
	apiCtx, stopAPI := context.WithCancel(context.WithoutCancel(ctx))
	defer stopAPI()
	api, err := startAPIServer(apiCtx, cfg, store, log)
	if err != nil {
		return err
	}
	// The control plane talks to the API server like any client (over TLS,
	// in memory: see componentConfig), each loop with its own
	// least-privilege identity.
	var loops sync.WaitGroup
	defer loops.Wait()
	ctx, stopLoops := context.WithCancel(ctx)
	defer stopLoops() // before loops.Wait: also when the API server fails
	var pool *sharedinformers.Pool
	if !cfg.DisableControllerManager && !cfg.DisableScheduler {
		if pool, err = newInformerPool(ctx, api.controllerManager); err != nil {
			return err
		}
		loops.Add(1)
		go func() {
			defer loops.Done()
			<-ctx.Done()
			pool.Shutdown() // before the API server stops
		}()
	}
	if !cfg.DisableControllerManager {
		loops.Add(1)
		go func() {
			defer loops.Done()
			supervise(ctx, "controller-manager", log, func(ctx context.Context) error {
				return runControllerManager(ctx, api.controllerManager, controllerManagerConfig(cfg), api.controllerManager.CAData, log, pool, serverLeaderElection(cfg, api.controllerManagerWatchDog))
			})
		}()
	}
	if !cfg.DisableAgent {
		loops.Add(1)
		go func() {
			defer loops.Done()
			supervise(ctx, "agent", log, func(ctx context.Context) error {
				return runEmbeddedAgent(ctx, cfg, api.url, api.bundle, log)
			})
		}()
	}
	if !cfg.DisableScheduler {
		loops.Add(1)
		go func() {
			defer loops.Done()
			supervise(ctx, "scheduler", log, func(ctx context.Context) error {
				return runScheduler(ctx, api.scheduler, cfg.Scheduler, log, pool, api.schedulerMetrics, serverLeaderElection(cfg, api.schedulerWatchDog))
			})
		}()
	}
	log.Info("skiff is ready", "endpoint", cfg.RedactedEndpoint(), "revision", rev, "dataDir", cfg.DataDir, "api", api.url)

	select {
	case <-ctx.Done():
		log.Info("shutting down", "reason", context.Cause(ctx))
		waitLoops(&loops, shutdownLoopsTimeout, log)
		stopAPI()
		if err := <-api.done; err != nil {
			return err
		}
	case err := <-api.done:
		if err != nil {
			return err
		}
	}
	return nil
}

// controllerManagerConfig is the in-process controller manager's share of
// the server's settings.
func controllerManagerConfig(cfg *config.Server) manager.Config {
	return manager.Config{
		Controllers:                            cfg.Controllers,
		ClusterCIDR:                            cfg.ClusterCIDR,
		NodeCIDRMaskSize:                       cfg.NodeCIDRMaskSize,
		ServiceCIDR:                            cfg.ServiceCIDR,
		NodeMonitorGracePeriod:                 cfg.NodeMonitorGracePeriod,
		NodeStartupGracePeriod:                 cfg.NodeStartupGracePeriod,
		NodeEviction:                           &cfg.NodeEviction,
		TerminatedPodGCThreshold:               manager.TerminatedPodGCThresholdFromFlag(cfg.TerminatedPodGCThreshold),
		LegacyServiceAccountTokenCleanUpPeriod: cfg.LegacyServiceAccountTokenCleanUpPeriod,
		ConcurrentSyncs:                        cfg.ConcurrentSyncs,
		MaxEndpointsPerSlice:                   cfg.MaxEndpointsPerSlice,
		MirroringMaxEndpointsPerSubset:         cfg.MirroringMaxEndpointsPerSubset,
	}
}

// serverLeaderElection is how an in-process loop campaigns: with the
// server's --leader-elect-* timing, watched by its liveness check.
func serverLeaderElection(cfg *config.Server, watchDog *leaderelection.HealthzAdaptor) leaderElection {
	return leaderElection{leaseDuration: cfg.LeaderElectLeaseDuration, renewDeadline: cfg.LeaderElectRenewDeadline,
		retryPeriod: cfg.LeaderElectRetryPeriod, watchDog: watchDog}
}

// shutdownLoopsTimeout bounds how long the API server waits at shutdown for
// the loops that use it (the agent's cordon takes at most 10 s).
const shutdownLoopsTimeout = 20 * time.Second

// waitLoops waits for the loops to stop, at most d.
func waitLoops(loops *sync.WaitGroup, d time.Duration, log *slog.Logger) {
	done := make(chan struct{})
	go func() { loops.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		log.Warn("control-plane loops still running at shutdown; stopping the API server anyway", "waited", d)
	}
}

// runningAPI is the API server started by startAPIServer.
type runningAPI struct {
	url string
	// controllerManager and scheduler are the in-process loops' client
	// configurations, each with a client certificate of its own identity
	// (bound to its system:* role by the default RBAC policy).
	controllerManager, scheduler *rest.Config
	bundle                       *pki.Bundle // the cluster PKI (the embedded agent's certificates)
	done                         chan error  // receives Run's result once it returns
	// schedulerMetrics is served on /metrics and shared by every scheduler
	// this process builds (one per leadership term).
	schedulerMetrics *schedmetrics.Metrics
	// controllerManagerWatchDog and schedulerWatchDog watch the in-process
	// loops' leader election (one elector per term sets itself in); the
	// server's /livez and /healthz check them.
	controllerManagerWatchDog, schedulerWatchDog *leaderelection.HealthzAdaptor
}

// startAPIServer creates the cluster PKI under <data-dir>/tls, starts the
// HTTPS API server on the configured address and writes the admin
// kubeconfig once it is serving.
func startAPIServer(ctx context.Context, cfg *config.Server, store *storage.Store, log *slog.Logger) (*runningAPI, error) {
	bundle, err := pki.Ensure(filepath.Join(cfg.DataDir, "tls"), cfg.TLSSANs)
	if err != nil {
		return nil, fmt.Errorf("preparing the cluster certificates: %w", err)
	}
	nodeTLS, err := nodeAPIClientTLS(bundle)
	if err != nil {
		return nil, fmt.Errorf("preparing the node API client certificate: %w", err)
	}
	tokens, err := staticTokens(cfg)
	if err != nil {
		return nil, err
	}
	// The in-process scheduler's and controllers' metrics, and their API
	// clients', are served on the API server's /metrics, as one process
	// exports them all.
	schedulerMetrics, queueMetrics := schedmetrics.New(), runner.NewQueueMetrics()
	runner.UseQueueMetrics(queueMetrics)
	collectors := append([]prometheus.Collector{store}, schedulerMetrics.Collectors()...)
	collectors = append(collectors, queueMetrics.Collectors()...)
	collectors = append(collectors, podgc.Collectors()...)
	collectors = append(collectors, cronjob.Collectors()...)
	collectors = append(collectors, job.Collectors()...)
	collectors = append(collectors, nodeipam.Collectors()...)
	api := &runningAPI{bundle: bundle, done: make(chan error, 1), schedulerMetrics: schedulerMetrics}
	var live []healthz.Check
	if !cfg.DisableControllerManager {
		api.controllerManagerWatchDog = leaderelection.NewLeaderHealthzAdaptor(leaderWatchDogTimeout)
		live = append(live, healthz.Named("controller-manager-leader-election", api.controllerManagerWatchDog))
	}
	if !cfg.DisableScheduler {
		api.schedulerWatchDog = leaderelection.NewLeaderHealthzAdaptor(leaderWatchDogTimeout)
		live = append(live, healthz.Named("scheduler-leader-election", api.schedulerWatchDog))
	}
	srv, err := apiserver.New(apiserver.Config{
		NodeClientTLS:     nodeTLS,
		Store:             store,
		Collectors:        append(collectors, clientmetrics.Register().Collectors()...),
		TLS:               bundle.ServerTLSConfig(),
		ClientCA:          bundle.CAPool(),
		Tokens:            tokens,
		ServiceAccountKey: bundle.ServiceAccountKey,
		NodeSigner:        bundle,
		CAPEM:             bundle.CAPEM,
		NodeCAPEM:         bundle.NodeCAPEM,
		BindAddress:       cfg.ListenAddress(),
		ServiceCIDR:       cfg.ServiceCIDR,
		GitCommit:         commit(),
		Logger:            log,
		StartupDone:       func() { releaseStartupMemory(log) },
		LivenessChecks:    live,
		DisableProfiling:  !cfg.Profiling,
	})
	if err != nil {
		return nil, err
	}
	api.url = srv.URL()
	if api.controllerManager, err = componentConfig(bundle, srv, bootstrap.ControllerManagerUser); err != nil {
		return nil, err
	}
	if api.scheduler, err = componentConfig(bundle, srv, bootstrap.SchedulerUser); err != nil {
		return nil, err
	}
	go func() { api.done <- srv.Run(ctx) }()
	select {
	case <-srv.Ready():
	case err := <-api.done:
		return nil, err
	}
	if err := pki.WriteKubeconfig(cfg.WriteKubeconfig, api.url, bundle); err != nil {
		return nil, fmt.Errorf("writing the admin kubeconfig: %w", err)
	}
	log.Info("admin kubeconfig written", "path", cfg.WriteKubeconfig)
	return api, nil
}

// staticTokens are the API server's static bearer tokens: --token-auth-file's,
// the cluster token (the admin, system:masters) and the agent join token
// (system:bootstrap:skiff-agent in system:bootstrappers, which the default
// RBAC policy lets obtain node client certificates and nothing else). A
// token file that lists either of the server's own tokens is refused: it
// would give them a second, conflicting identity.
func staticTokens(cfg *config.Server) (map[string]authn.User, error) {
	tokens := map[string]authn.User{}
	if cfg.TokenAuthFile != "" {
		var err error
		if tokens, err = authn.ReadTokenFile(cfg.TokenAuthFile); err != nil {
			return nil, fmt.Errorf("invalid --token-auth-file: %w", err)
		}
	}
	if _, clash := tokens[cfg.Token]; clash {
		return nil, fmt.Errorf("invalid --token-auth-file: it lists the cluster token (--token), which is the admin's")
	}
	if _, clash := tokens[cfg.AgentToken]; clash {
		return nil, fmt.Errorf("invalid --token-auth-file: it lists the agent join token (--agent-token), which is the joining agents'")
	}
	tokens[cfg.Token] = authn.User{Name: "admin", Groups: []string{authn.GroupMasters}}
	tokens[cfg.AgentToken] = authn.User{Name: bootstrap.AgentJoinUser, Groups: []string{bootstrap.BootstrappersGroup}}
	return tokens, nil
}

// componentConfig is a client configuration for one of the server's own
// loops: a client certificate for user, minted from the cluster CA at every
// start (it is never written to disk, so nothing needs rotating on disk),
// over srv's in-memory connections (apiserver.Server.DialLocal).
func componentConfig(bundle *pki.Bundle, srv *apiserver.Server, user string) (*rest.Config, error) {
	certPEM, keyPEM, err := bundle.IssueClientCert(user, nil, pki.LeafValidity)
	if err != nil {
		return nil, fmt.Errorf("issuing the %s certificate: %w", user, err)
	}
	rc := bundle.AdminRESTConfig(srv.URL())
	rc.TLSClientConfig.CertData, rc.TLSClientConfig.KeyData = certPEM, keyPEM
	rc.Dial = srv.DialLocal
	return rc, nil
}
