package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/legacytokencleaner"
	"github.com/skiffkube/skiff/controllers/nodelifecycle"
)

// Lease defaults, as kube-controller-manager's.
const (
	DefaultLeaseNamespace = "kube-system"
	DefaultLeaseName      = "skiff-controller-manager"
	DefaultLeaseDuration  = 15 * time.Second
	DefaultRenewDeadline  = 10 * time.Second
	DefaultRetryPeriod    = 2 * time.Second
	DefaultWorkers        = 5
	DefaultResync         = 12 * time.Hour
)

// TerminatedPodGCThresholdFromFlag is Config.TerminatedPodGCThreshold for
// the value of kube-controller-manager's --terminated-pod-gc-threshold,
// where 0 or less disables the deletion of terminated pods.
func TerminatedPodGCThresholdFromFlag(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// Config is what an operator sets. Zero values mean the defaults.
type Config struct {
	// Controllers to run, as kube-controller-manager's --controllers: "*"
	// is every controller in Registry, "name" adds one, "-name" leaves one
	// out; empty means "*". A name is skiff's (a key of Registry) or
	// kube-controller-manager's for the same controller (node-ipam-controller
	// or nodeipam for nodeipam-controller). A controller that cannot run for
	// want of an option (ErrUnavailable) is skipped when "*" brought it in,
	// and an error when it was named.
	Controllers []string
	// Workers per controller.
	Workers int
	// ConcurrentSyncs overrides Workers for the controllers it names
	// (skiff's names): kube-controller-manager's --concurrent-*-syncs,
	// ConcurrentSyncsFlags.
	ConcurrentSyncs map[string]int
	// MaxEndpointsPerSlice is kube-controller-manager's
	// --max-endpoints-per-slice: the most endpoints the EndpointSlice
	// controller puts in one slice (default 100, at most 1000).
	MaxEndpointsPerSlice int
	// MirroringMaxEndpointsPerSubset is kube-controller-manager's
	// --mirroring-max-endpoints-per-subset: the most addresses of one
	// Endpoints subset mirrored to EndpointSlices (default 1000, at most 1000).
	MirroringMaxEndpointsPerSubset int
	// Resync is the informers' periodic full resync; level-based controllers use it as a safety net.
	Resync time.Duration

	// ClusterCIDR is split into per-node pod CIDRs of NodeCIDRMaskSize bits (default 10.42.0.0/16, /24).
	ClusterCIDR      string
	NodeCIDRMaskSize int
	// ServiceCIDR is the Service IP range, carved out of ClusterCIDR where they overlap
	// (kube-controller-manager's --service-cluster-ip-range); "" means none.
	ServiceCIDR string

	// NodeMonitorGracePeriod without a node heartbeat before the node is marked Unknown (default 50s).
	NodeMonitorGracePeriod time.Duration
	// NodeStartupGracePeriod replaces it for a node that has never posted a
	// Ready condition (default 60s).
	NodeStartupGracePeriod time.Duration
	// NodeEviction paces NoExecute taints of unreachable nodes by zone
	// (kube-controller-manager's --node-eviction-rate and the like); nil is
	// nodelifecycle.DefaultEviction.
	NodeEviction *nodelifecycle.Eviction

	// TerminatedPodGCThreshold is how many terminated pods the pod garbage collector keeps before
	// it deletes the oldest (default 12500); negative keeps them all. kube-controller-manager's
	// --terminated-pod-gc-threshold disables with 0 too: TerminatedPodGCThresholdFromFlag converts.
	TerminatedPodGCThreshold int
	// LegacyServiceAccountTokenCleanUpPeriod is kube-controller-manager's
	// --legacy-service-account-token-clean-up-period: how long a legacy
	// token goes unused before the legacy token cleaner marks it invalid,
	// and stays invalid before it deletes it (default a year; it must be
	// positive).
	LegacyServiceAccountTokenCleanUpPeriod time.Duration

	LeaseNamespace string
	LeaseName      string
	// Identity of this instance in the Lease; default hostname + "_" + a random uuid.
	Identity      string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// Options are injected dependencies.
type Options struct {
	Logger *slog.Logger
	// LeaderWatchDog, if set, watches this instance's leadership for a
	// health check: it fails once the instance leads but stopped renewing.
	LeaderWatchDog *leaderelection.HealthzAdaptor
	// EventSink receives recorded events; nil means the clientset's core/v1 Events.
	EventSink record.EventSink
	// Metadata lists and deletes objects of any resource (namespace deletion). Build it from the same
	// rest.Config as the clientset with metadata.NewForConfig. Without it the namespace controller is
	// not run.
	Metadata metadata.Interface
	// RootCA is the cluster CA (PEM) that service account token Secrets carry as ca.crt and the
	// root CA publisher puts in every namespace's kube-root-ca.crt. Without it that publisher is
	// not run.
	RootCA []byte
	// ControllerCredentials, when set, gives each controller listed in ServiceAccounts its own
	// client: the rest.Config acting as that kube-system ServiceAccount (ServiceAccountCredentials).
	// The shared informers, leader election and Events keep the manager's client. Nil: every
	// controller uses the manager's client.
	ControllerCredentials func(account string) (*rest.Config, error)
	// Informers, when set, is the factory the controllers take their
	// informers from instead of one of the manager's own: a
	// sharedinformers.View, so that the controllers share one cache with
	// the scheduler in the same process. Run starts it and shuts it down.
	Informers informers.SharedInformerFactory
}

// Manager owns the informers and controllers of one controller-manager instance.
type Manager struct {
	client      kubernetes.Interface
	cfg         Config
	opts        Options
	factory     informers.SharedInformerFactory
	broadcaster record.EventBroadcaster
	controllers map[string]Runnable
	names       []string
	started     sync.Once
}

// New validates cfg, fills defaults and builds every selected controller (which registers its informers).
func New(client kubernetes.Interface, cfg Config, opts Options) (*Manager, error) {
	if client == nil {
		return nil, errors.New("manager: a clientset is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	named, err := cfg.defaults()
	if err != nil {
		return nil, err
	}
	factory := opts.Informers
	if factory == nil {
		factory = informers.NewSharedInformerFactoryWithOptions(client, cfg.Resync, informers.WithTransform(TrimManagedFields))
	}
	m := &Manager{
		client:      client,
		cfg:         cfg,
		opts:        opts,
		factory:     factory,
		broadcaster: record.NewBroadcaster(),
		controllers: map[string]Runnable{},
	}
	b := BuildContext{
		Client: client, Informers: m.factory, Options: opts, Config: cfg,
		Recorder: func(component string) record.EventRecorder {
			return m.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
		},
	}
	for _, name := range cfg.Controllers {
		b, err := m.asController(b, name)
		if err != nil {
			return nil, err
		}
		c, err := Registry[name](b)
		if errors.Is(err, ErrUnavailable) && !named[name] {
			opts.Logger.Info("controller not started", "controller", name, "reason", err)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("manager: build %s: %w", name, err)
		}
		m.controllers[name] = c
		m.names = append(m.names, name)
	}
	return m, nil
}

// asController returns b with the clients of the controller's own service
// account, when Options.ControllerCredentials gives one.
func (m *Manager) asController(b BuildContext, name string) (BuildContext, error) {
	account, ok := ServiceAccounts[name]
	if m.opts.ControllerCredentials == nil || !ok {
		return b, nil
	}
	rc, err := m.opts.ControllerCredentials(account)
	if err != nil {
		return b, fmt.Errorf("manager: credentials of %s (%s/%s): %w", name, ControllerNamespace, account, err)
	}
	if b.Client, err = kubernetes.NewForConfig(rc); err != nil {
		return b, fmt.Errorf("manager: client of %s: %w", name, err)
	}
	if b.Options.Metadata != nil {
		if b.Options.Metadata, err = metadata.NewForConfig(rc); err != nil {
			return b, fmt.Errorf("manager: metadata client of %s: %w", name, err)
		}
	}
	return b, nil
}

// defaults fills in c and resolves Controllers into the sorted names to
// run; named says which of them were asked for by name.
func (c *Config) defaults() (named map[string]bool, err error) {
	if c.Controllers, named, err = SelectControllers(c.Controllers); err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	if c.NodeMonitorGracePeriod != 0 {
		if err := nodelifecycle.CheckGracePeriod(c.NodeMonitorGracePeriod); err != nil {
			return nil, fmt.Errorf("manager: node monitor grace period %s: %w", c.NodeMonitorGracePeriod, err)
		}
	}
	if c.NodeStartupGracePeriod != 0 {
		if err := nodelifecycle.CheckGracePeriod(c.NodeStartupGracePeriod); err != nil {
			return nil, fmt.Errorf("manager: node startup grace period %s: %w", c.NodeStartupGracePeriod, err)
		}
	}
	if c.Workers < 0 {
		return nil, fmt.Errorf("manager: workers must be at least 1, got %d", c.Workers)
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	for name, n := range c.ConcurrentSyncs {
		if _, ok := Registry[name]; !ok {
			return nil, fmt.Errorf("manager: workers of unknown controller %q", name)
		}
		if err := CheckConcurrentSyncs(n); err != nil {
			return nil, fmt.Errorf("manager: workers of %s: %w", name, err)
		}
	}
	if err := c.endpointLimits(); err != nil {
		return nil, err
	}
	if c.LegacyServiceAccountTokenCleanUpPeriod < 0 {
		return nil, fmt.Errorf("manager: --legacy-service-account-token-clean-up-period %s: must be positive", c.LegacyServiceAccountTokenCleanUpPeriod)
	}
	if c.LegacyServiceAccountTokenCleanUpPeriod == 0 {
		c.LegacyServiceAccountTokenCleanUpPeriod = legacytokencleaner.DefaultCleanUpPeriod
	}
	if c.Resync == 0 {
		c.Resync = DefaultResync
	}
	if c.LeaseNamespace == "" {
		c.LeaseNamespace = DefaultLeaseNamespace
	}
	if c.LeaseName == "" {
		c.LeaseName = DefaultLeaseName
	}
	if c.Identity == "" {
		host, _ := os.Hostname()
		c.Identity = host + "_" + string(uuid.NewUUID())
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = DefaultRenewDeadline
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = DefaultRetryPeriod
	}
	if c.LeaseDuration <= c.RenewDeadline || c.RenewDeadline <= c.RetryPeriod {
		return nil, fmt.Errorf("manager: need leaseDuration (%s) > renewDeadline (%s) > retryPeriod (%s)", c.LeaseDuration, c.RenewDeadline, c.RetryPeriod)
	}
	return named, nil
}

// SelectControllers resolves a --controllers list (see Config.Controllers)
// into the sorted names to run, and which of them were named. The result
// is a new slice: spec is left as it was.
func SelectControllers(spec []string) (run []string, named map[string]bool, err error) {
	if len(spec) == 0 {
		spec = []string{"*"}
	}
	all, named, left := false, map[string]bool{}, map[string]bool{}
	for _, item := range spec {
		name, off := strings.CutPrefix(item, "-")
		if name == "*" && !off {
			all = true
			continue
		}
		resolved, ok, err := resolveName(name)
		if err != nil {
			return nil, nil, fmt.Errorf("%w (in %q)", err, strings.Join(spec, ","))
		}
		if !ok {
			return nil, nil, fmt.Errorf("unknown controller %q in %q (known: \"*\", or a name or -name of %s; kube-controller-manager's names for these are accepted too)",
				name, strings.Join(spec, ","), strings.Join(slices.Sorted(maps.Keys(Registry)), ", "))
		}
		name = resolved
		if off {
			left[name] = true
		} else {
			named[name] = true
		}
	}
	for n := range Registry {
		if (all || named[n]) && !left[n] {
			run = append(run, n)
		}
	}
	if len(run) == 0 {
		return nil, nil, fmt.Errorf("%q leaves no controller to run", strings.Join(spec, ","))
	}
	sort.Strings(run)
	return run, named, nil
}

// Controllers returns the names of the controllers this manager runs.
func (m *Manager) Controllers() []string { return slices.Clone(m.names) }

// Run starts events, informers and every controller, and blocks until ctx ends. A Manager runs once:
// informers cannot be restarted, so a second call returns an error.
func (m *Manager) Run(ctx context.Context) error {
	first := false
	m.started.Do(func() { first = true })
	if !first {
		return errors.New("manager: already run; build a new Manager")
	}
	sink := m.opts.EventSink
	if sink == nil {
		sink = &typedcorev1.EventSinkImpl{Interface: m.client.CoreV1().Events("")}
	}
	stopEvents := m.broadcaster.StartRecordingToSink(sink)
	defer func() {
		stopEvents.Stop()
		m.broadcaster.Shutdown()
	}()

	m.factory.Start(ctx.Done())
	var wg sync.WaitGroup
	for _, name := range m.names {
		c := m.controllers[name]
		wg.Go(func() { c.Run(ctx, m.cfg.workers(name)) })
	}
	m.opts.Logger.Info("controller manager running", "controllers", m.names)
	<-ctx.Done()
	wg.Wait()
	m.factory.Shutdown()
	return nil
}

// ErrLostLeadership is returned by RunWithLeaderElection when another instance took the Lease; the
// caller should exit (as kube-controller-manager does) so a fresh process can campaign again.
var ErrLostLeadership = errors.New("manager: lost leadership")

// RunWithLeaderElection campaigns for the Lease and runs the controllers while leading. It returns nil
// when ctx ends (releasing the Lease), or ErrLostLeadership if leadership was lost while ctx was alive.
func (m *Manager) RunWithLeaderElection(ctx context.Context) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metaFor(m.cfg.LeaseNamespace, m.cfg.LeaseName),
		Client:     m.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: m.cfg.Identity},
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		led      bool
		runErr   error
		runDone  = make(chan struct{})
		runStart sync.Once
	)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   m.cfg.LeaseDuration,
		RenewDeadline:   m.cfg.RenewDeadline,
		RetryPeriod:     m.cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            m.cfg.LeaseName,
		WatchDog:        m.opts.LeaderWatchDog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) {
				runStart.Do(func() {
					mu.Lock()
					led = true
					mu.Unlock()
					m.opts.Logger.Info("became leader", "lease", m.cfg.LeaseNamespace+"/"+m.cfg.LeaseName, "identity", m.cfg.Identity)
					err := m.Run(leadCtx)
					mu.Lock()
					runErr = err
					mu.Unlock()
					close(runDone)
				})
			},
			OnStoppedLeading: func() {
				m.opts.Logger.Info("stopped leading", "identity", m.cfg.Identity)
				cancel()
			},
			OnNewLeader: func(id string) {
				if id != m.cfg.Identity {
					m.opts.Logger.Info("another instance leads", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("manager: leader election: %w", err)
	}
	le.Run(runCtx)
	mu.Lock()
	wasLeader := led
	mu.Unlock()
	if wasLeader {
		<-runDone
	}
	mu.Lock()
	defer mu.Unlock()
	if runErr != nil {
		return runErr
	}
	if ctx.Err() == nil && wasLeader {
		return ErrLostLeadership
	}
	return nil
}

// TrimManagedFields is an informer transform that drops metadata.managedFields
// from cached objects, as kube-controller-manager and kube-scheduler do: no
// controller reads them, and they are often a third of a cached pod. An
// update sent from a trimmed copy keeps the stored managedFields, because
// the API server takes them from the live object when a request has none.
func TrimManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
