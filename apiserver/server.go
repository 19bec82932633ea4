package apiserver

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/test/bufconn"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/version"

	"github.com/skiffkube/skiff/apiserver/admission"
	"github.com/skiffkube/skiff/apiserver/authn"
	"github.com/skiffkube/skiff/apiserver/authz"
	"github.com/skiffkube/skiff/apiserver/authz/bootstrap"
	"github.com/skiffkube/skiff/apiserver/authz/node"
	"github.com/skiffkube/skiff/apiserver/authz/rbac"
	"github.com/skiffkube/skiff/apiserver/crd"
	"github.com/skiffkube/skiff/apiserver/discovery"
	"github.com/skiffkube/skiff/apiserver/endpoints"
	"github.com/skiffkube/skiff/apiserver/healthz"
	"github.com/skiffkube/skiff/apiserver/impersonate"
	"github.com/skiffkube/skiff/apiserver/metrics"
	"github.com/skiffkube/skiff/apiserver/nodejoin"
	"github.com/skiffkube/skiff/apiserver/nodeproxy"
	"github.com/skiffkube/skiff/apiserver/registry"
	"github.com/skiffkube/skiff/apiserver/reviews"
	"github.com/skiffkube/skiff/apiserver/serviceaccount"
	"github.com/skiffkube/skiff/apiserver/services"
	"github.com/skiffkube/skiff/apiserver/warmstack"
)

// KubernetesVersion is the Kubernetes release whose API this server speaks.
// /usr/bin/kubectl picks its kubectl.1.<minor> from /version's minor.
const (
	KubernetesMajor   = "1"
	KubernetesMinor   = "33"
	KubernetesVersion = "v1.33.0"
)

// Config is everything New needs. Store and TLS are required.
type Config struct {
	// Store is the revisioned store (*storage.Store).
	Store endpoints.Store
	// TLS is the serving configuration (pki.Bundle.ServerTLSConfig()).
	TLS *tls.Config
	// ClientCA verifies client certificates; nil takes TLS.ClientCAs.
	ClientCA *x509.CertPool
	// Tokens maps static bearer tokens to users (the admin token, the
	// agent join token, --token-auth-file).
	Tokens map[string]authn.User
	// Authorizer decides each request; nil takes the default chain:
	// system:masters, the node authorizer, then RBAC over the stored roles
	// and bindings (kept current by watches started in Run).
	Authorizer authz.Authorizer
	// ServiceAccountKey, when set, signs and verifies service account
	// tokens and enables serviceaccounts/token. ServiceAccountIssuer is
	// their iss claim and the API's audience; "" takes Kubernetes' default.
	ServiceAccountKey    *ecdsa.PrivateKey
	ServiceAccountIssuer string
	// NodeSigner, when set, serves nodejoin.Path: node agents get their
	// client certificates signed by it (pki.Bundle), valid NodeCertTTL
	// (0 takes nodejoin.DefaultTTL). CAPEM is handed out with them.
	// NodeCAPEM is the node CA that signs node APIs' serving certificates,
	// handed out with those; without it they are not issued.
	NodeSigner  nodejoin.Signer
	CAPEM       []byte
	NodeCAPEM   []byte
	NodeCertTTL time.Duration
	// BindAddress is host:port to listen on ("0.0.0.0:6443"); port 0 picks one.
	BindAddress string
	// Listener, when set, is used instead of listening on BindAddress.
	Listener net.Listener
	// Hooks are per-kind defaulting and validation; nil fields take
	// KindHooks(). Table converts objects to kubectl's tables; nil takes
	// KindTables. CustomTable builds a custom resource version's converter;
	// nil takes CustomTables.
	Hooks       registry.Hooks
	Table       registry.TableConvertor
	CustomTable crd.TableFactory
	// ServiceCIDR and NodePortRange are the ranges Services get their
	// cluster IPs and node ports from; empty takes allocator's defaults.
	ServiceCIDR, NodePortRange string
	// NodeClientTLS is how the API server reaches node APIs for pods/log,
	// exec, attach and portforward: its client certificate (the one nodes
	// admit) and the CA that signed the nodes' serving certificates. nil
	// answers those subresources with 503.
	NodeClientTLS *tls.Config
	// EndpointReconcileInterval is how often the server renews its entry
	// in the kubernetes Service's endpoints (the entry expires after 1.5
	// intervals); 0 means 10s.
	EndpointReconcileInterval time.Duration
	// Collectors are more Prometheus collectors served on /metrics beside
	// the server's own: the store's (a *storage.Store is one).
	Collectors []prometheus.Collector
	// GitCommit and BuildDate fill /version.
	GitCommit, BuildDate string
	Logger               *slog.Logger
	// StartupDone, when set, runs once start-up (default objects, RBAC
	// policy, custom resources) is done, just before requests are served
	// and Ready is closed; the server command returns start-up memory
	// there (see cmd/skiff/startupmem.go).
	StartupDone func()
	// CheckSeeds is endpoints.Config.CheckSeeds: tests set it to have every
	// write's object handed to watchers checked against what was stored.
	CheckSeeds func(error)
	// LivenessChecks are checked by /livez and /healthz beside ping: the
	// watchdogs of the leader-elected loops running in this process, so a
	// liveness probe restarts a process whose leader stopped renewing.
	// /readyz leaves them out: the API is served all the same.
	LivenessChecks []healthz.Check
	// DisableProfiling leaves /debug/pprof/ unserved (--profiling=false,
	// which hardening guides such as the CIS benchmark ask for).
	DisableProfiling bool
}

// Server is a configured API server.
type Server struct {
	cfg      Config
	log      *slog.Logger
	listener net.Listener
	// local is the in-memory listener of this process's own clients (see
	// DialLocal).
	local    *bufconn.Listener
	engine   *gin.Engine
	reg      *registry.Registry
	handler  *endpoints.Handler
	disc     *discovery.Server
	metrics  *metrics.Metrics
	authn    authn.Authenticator
	crds     *crd.Controller
	services *services.Lifecycle // nil without allocation
	// legacyTokens: service account tokens are served, and with them
	// the tracking of legacy token use (legacytokens.go).
	legacyTokens bool
	// saTokens issues service account tokens (nil when none are served);
	// its issuer's discovery documents are served with it.
	saTokens *serviceaccount.Tokens
	ready    chan struct{}

	rbac       *rbac.Cache
	aggregator *rbac.Aggregator
	nodeGraph  *node.Graph
}

// New builds the server and opens its listener, so Addr is known at once.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("apiserver: Config.Store is required")
	}
	if cfg.TLS == nil {
		return nil, errors.New("apiserver: Config.TLS is required (credentials are only sent over HTTPS)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ClientCA == nil {
		cfg.ClientCA = cfg.TLS.ClientCAs
	}
	kh := KindHooks()
	if cfg.Hooks.Default == nil {
		cfg.Hooks.Default = kh.Default
	}
	if cfg.Hooks.Validate == nil {
		cfg.Hooks.Validate = kh.Validate
	}
	if cfg.Hooks.ValidateUpdate == nil {
		cfg.Hooks.ValidateUpdate = kh.ValidateUpdate
		// The kinds' status rules go with their update rules: a caller's
		// own ValidateUpdate also judges status updates unless it brings
		// a ValidateStatusUpdate too.
		if cfg.Hooks.ValidateStatusUpdate == nil {
			cfg.Hooks.ValidateStatusUpdate = kh.ValidateStatusUpdate
		}
	}
	if cfg.Table == nil {
		cfg.Table = KindTables
	}
	if cfg.CustomTable == nil {
		cfg.CustomTable = CustomTables
	}
	lifecycle, err := serviceLifecycle(cfg)
	if err != nil {
		return nil, err
	}
	rbacCache := rbac.NewCache(cfg.Store, cfg.Logger)
	aggregator := rbac.NewAggregator(rbacCache, cfg.Store)
	rbacAuthorizer := rbac.NewAuthorizer(rbacCache)
	nodeGraph := node.NewGraph(cfg.Logger)
	if cfg.Authorizer == nil {
		// Kubernetes' order: superusers, then the node authorizer (which
		// decides only node agents' requests), then RBAC.
		cfg.Authorizer = authz.Union{authz.Masters, node.NewAuthorizer(nodeGraph, node.StorePods{Store: cfg.Store}), rbacAuthorizer}
	}
	// The API server's audience is the service account issuer, as
	// Kubernetes' default --api-audiences.
	apiAudiences := []string{cmp.Or(cfg.ServiceAccountIssuer, serviceaccount.DefaultIssuer)}
	tokens := authn.BearerTokens{authn.AudienceAgnostic{Audiences: apiAudiences, Tokens: authn.NewTokens(cfg.Tokens)}}
	var saTokens *serviceaccount.Tokens
	if cfg.ServiceAccountKey != nil {
		// The authorizer may grant nodes more token audiences than their
		// pods use.
		if saTokens, err = serviceaccount.New(cfg.ServiceAccountKey, cfg.ServiceAccountIssuer, cfg.Store, cfg.Authorizer, cfg.Logger); err != nil {
			return nil, err
		}
		tokens = append(tokens, saTokens)
	}
	escalation := &rbac.Escalation{Decide: cfg.Authorizer, Rules: rbacAuthorizer, Superusers: authz.Masters}
	reg := registry.New()
	for _, r := range registry.Builtins(cfg.Hooks, cfg.Table) {
		if r.Group == "" && r.Name == "services" && lifecycle != nil {
			r.Lifecycle = lifecycle
		}
		if r.Group == "" && r.Name == "nodes" {
			r.WriteGuard = node.GuardNode // a node registers only itself, and cannot steer workloads to itself
		}
		if r.Group == "coordination.k8s.io" && r.Name == "leases" {
			r.WriteGuard = node.GuardLease // a node creates only its own heartbeat
		}
		if r.Group == rbacv1.GroupName {
			r.WriteGuard = escalation.Guard // no privilege escalation through roles and bindings
		}
		if r.Group == "" && r.Name == "serviceaccounts" && saTokens != nil {
			r.Subresources.Actions = map[string]*registry.Action{"token": saTokens.TokenRequestAction()}
		}
		reg.Add(r)
	}
	reg.Add(crd.Resource(cfg.Table))
	for _, r := range reviews.Resources(reviews.Config{Authorizer: cfg.Authorizer, Rules: rbacAuthorizer, Tokens: tokens, APIAudiences: apiAudiences}) {
		reg.Add(r)
	}
	var nodes endpoints.NodeProxy
	if cfg.NodeClientTLS != nil {
		p, err := nodeproxy.New(cfg.NodeClientTLS, endpoints.WriteError)
		if err != nil {
			return nil, err
		}
		nodes = p
	}
	h, err := endpoints.New(endpoints.Config{Store: cfg.Store, Registry: reg, Authorizer: cfg.Authorizer,
		Admission: admission.New(cfg.Store, cfg.Logger), Logger: cfg.Logger, NodeProxy: nodes,
		CheckSeeds: cfg.CheckSeeds})
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, log: cfg.Logger, reg: reg, handler: h,
		disc:     discovery.New(reg),
		metrics:  metrics.New(slices.Concat(cfg.Collectors, tokenCollectors(saTokens))...),
		authn:    authn.Union{authn.NewClientCert(cfg.ClientCA), tokens},
		crds:     crd.NewController(cfg.Store, reg, cfg.CustomTable, cfg.Logger),
		services: lifecycle,
		ready:    make(chan struct{}),
		rbac:     rbacCache, aggregator: aggregator, nodeGraph: nodeGraph,

		legacyTokens: saTokens != nil,
		saTokens:     saTokens,
	}
	s.engine = s.routes()
	s.listener = cfg.Listener
	if s.listener == nil {
		addr := cfg.BindAddress
		if addr == "" {
			addr = "127.0.0.1:6443"
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("apiserver: listen on %s: %w", addr, err)
		}
		s.listener = l
	}
	s.local = bufconn.Listen(localConnBuffer)
	return s, nil
}

// localConnBuffer is the bytes each direction of an in-memory connection
// holds: four of HTTP/2's default 16 KiB frames.
const localConnBuffer = 64 << 10

// DialLocal connects to the server in memory, as a rest.Config's Dial for
// the control-plane loops running in this process: the same TLS, HTTP/2,
// authentication and authorization as over TCP, without a system call per
// write and read on each side of the loopback. The address is ignored.
func (s *Server) DialLocal(ctx context.Context, _, _ string) (net.Conn, error) {
	return s.local.DialContext(ctx)
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.listener.Addr() }

// URL is the https URL of the server, with 127.0.0.1 for wildcard binds.
func (s *Server) URL() string {
	addr := s.listener.Addr().(*net.TCPAddr)
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "https://" + net.JoinHostPort(host, fmt.Sprint(addr.Port))
}

// closeListeners closes the listeners of a server that will not serve.
func (s *Server) closeListeners() {
	_ = s.listener.Close()
	_ = s.local.Close()
}

// Registry exposes the resource registry (read-only use).
func (s *Server) Registry() *registry.Registry { return s.reg }

// Ready is closed once custom resources are loaded and requests are served.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Run serves until ctx ends, then shuts down gracefully.
func (s *Server) Run(ctx context.Context) error {
	if err := s.ensureSystemNamespaces(ctx); err != nil {
		s.closeListeners()
		return fmt.Errorf("apiserver: %w", err)
	}
	if err := s.ensureSystemPriorityClasses(ctx); err != nil {
		s.closeListeners()
		return fmt.Errorf("apiserver: %w", err)
	}
	if err := s.ensureDefaultStorageClass(ctx); err != nil {
		s.closeListeners()
		return fmt.Errorf("apiserver: %w", err)
	}
	if err := bootstrap.Reconcile(ctx, s.cfg.Store); err != nil {
		s.closeListeners()
		return fmt.Errorf("apiserver: reconciling the default RBAC policy: %w", err)
	}
	if err := s.rbac.Start(ctx); err != nil {
		s.closeListeners()
		return fmt.Errorf("apiserver: %w", err)
	}
	if err := s.nodeGraph.Start(ctx, s.cfg.Store); err != nil {
		s.closeListeners()
		return fmt.Errorf("apiserver: node authorizer: %w", err)
	}
	go s.aggregator.Run(ctx)
	s.aggregator.Kick()
	go s.keepKubernetesService(ctx)
	if s.legacyTokens {
		// Published before serving, so a cleaner sees it as soon as
		// tokens can be used; a failure here is retried by the loop.
		if err := s.ensureLegacyTokenTracking(ctx); err != nil {
			s.log.Warn("publishing the legacy service account token tracking ConfigMap", "err", err)
		}
		go s.keepLegacyTokenTracking(ctx)
	}
	if err := s.crds.Start(ctx); err != nil {
		s.closeListeners()
		return fmt.Errorf("apiserver: loading custom resource definitions: %w", err)
	}
	tlsCfg := s.cfg.TLS.Clone()
	if tlsCfg.ClientAuth == tls.VerifyClientCertIfGiven {
		// Take any offered certificate at the handshake and let the
		// authenticator verify it against ClientCA, as Kubernetes does: a
		// certificate from another CA, or expired, then gets a 401 saying
		// so instead of a bare TLS alert.
		tlsCfg.ClientAuth = tls.RequestClientCert
	}
	if len(tlsCfg.NextProtos) == 0 {
		tlsCfg.NextProtos = []string{"h2", "http/1.1"}
	}
	workers := warmstack.New(warmWorkers)
	defer workers.Close()
	srv := &http.Server{
		Handler:           workers.Handler(s.engine, shortRequest),
		TLSConfig:         tlsCfg,
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	if s.cfg.StartupDone != nil {
		s.cfg.StartupDone()
	}
	errc := make(chan error, 2)
	go func() { errc <- srv.ServeTLS(s.listener, "", "") }()
	go func() { errc <- srv.ServeTLS(s.local, "", "") }()
	close(s.ready)
	s.log.Info("apiserver serving", "url", s.URL())
	select {
	case err := <-errc:
		_ = srv.Close() // the other listener stops too
		return fmt.Errorf("apiserver: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		_ = srv.Close()
	}
	return nil
}

// warmWorkers is how many goroutines may serve short requests (see package
// warmstack). Requests waiting on a storage commit hold theirs, so it is
// sized for the requests in flight under load, not for the cores: up to
// ~800 at 1,000 hollow nodes, most of the time far fewer. With 256, stack
// growth took 1.9% of the server's CPU there, against 3.2% with the old
// fixed pool of 64 workers. With 1,024, one run at 5,000 nodes registered them in 464 s
// instead of 71–97 s (GC-bound; the cause was not established), so the
// limit stays where runs at both sizes were measured.
const warmWorkers = 256

// longSubresources are streams that can last as long as the client wants,
// as Kubernetes' long-running request check lists them.
var longSubresources = map[string]bool{"log": true, "exec": true, "attach": true, "portforward": true, "proxy": true}

// shortRequest reports whether r is a resource request that ends on its
// own: not a watch, a stream, a proxied request or a protocol upgrade.
// Anything it does not recognise counts as long and keeps its goroutine.
func shortRequest(r *http.Request) bool {
	if r.Header.Get("Upgrade") != "" {
		return false
	}
	// Parsing the whole query for one parameter is ~1% of the server's CPU
	// under load (a map per request); most queries cannot hold it. A
	// percent-escaped one might ("w%61tch"), so those are parsed.
	watch := ""
	if q := r.URL.RawQuery; strings.Contains(q, "watch") || strings.Contains(q, "%") {
		watch = r.URL.Query().Get("watch")
	}
	info, ok := endpoints.ParseRequestInfo(r.Method, r.URL.Path, watch == "true" || watch == "1")
	return ok && info.IsResourceRequest && info.Verb != "watch" && !longSubresources[info.Subresource]
}

// routes wires the gin engine: fixed paths for health, version, metrics,
// discovery and OpenAPI; everything else under /api and /apis goes to the
// generic resource handler.
func (s *Server) routes() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	e.HandleMethodNotAllowed = false
	e.Use(s.recovery, s.observe, s.authenticate, s.authorizePath)

	// Ready (and, as Kubernetes, healthy) only while the database answers,
	// so a load balancer in front of several servers on one database stops
	// sending requests to one that lost it. Liveness doesn't depend on the
	// database: restarting the process would not bring it back; it
	// depends on the in-process leaders' watchdogs, which a restart mends.
	storage := storageCheck{s.cfg.Store}
	live := s.cfg.LivenessChecks
	for path, checks := range map[string][]healthz.Check{
		"/livez":   live,
		"/readyz":  {storage},
		"/healthz": append([]healthz.Check{storage}, live...),
	} {
		h := gin.WrapH(healthz.Handler(s.log, checks...))
		// HEAD too, which load balancers' probes send: kube-apiserver's
		// health handlers answer every method.
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			e.Handle(method, path, h)
			e.Handle(method, path+"/:check", h) // authorized, unlike path itself
		}
	}
	// Both, as Kubernetes' go-restful route serves them.
	e.GET("/version", s.version)
	e.GET("/version/", s.version)
	e.GET("/metrics", gin.WrapH(s.metrics.Handler()))
	if s.saTokens != nil {
		// Service account issuer discovery, as Kubernetes: readable by
		// service accounts (system:service-account-issuer-discovery).
		e.GET(serviceaccount.OpenIDConfigPath, s.openIDConfiguration)
		e.GET(serviceaccount.JWKSPath, s.jwks)
	}
	if s.cfg.NodeSigner != nil {
		e.POST(nodejoin.Path, gin.WrapH(&nodejoin.Handler{Signer: s.cfg.NodeSigner, CA: s.cfg.CAPEM, NodeCA: s.cfg.NodeCAPEM, TTL: s.cfg.NodeCertTTL, Nodes: s.getNode, Log: s.log}))
	}
	e.GET("/openapi/v2", gin.WrapF(s.disc.ServeOpenAPIV2))
	e.GET("/openapi/v3", gin.WrapF(s.disc.ServeOpenAPIV3))
	e.GET("/openapi/v3/*path", gin.WrapF(s.disc.ServeOpenAPIV3))
	if !s.cfg.DisableProfiling {
		e.GET("/debug/pprof/*name", s.profiling)
		e.POST("/debug/pprof/*name", s.profiling) // symbol lookups
	}
	e.NoRoute(s.api)
	return e
}

// api serves discovery documents and resource requests below /api and /apis.
func (s *Server) api(c *gin.Context) {
	w, r := c.Writer, c.Request
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	switch {
	case get && len(parts) == 1 && parts[0] == "api":
		s.disc.ServeAPIVersions(w, r)
		return
	case get && len(parts) == 1 && parts[0] == "apis":
		s.disc.ServeAPIGroupList(w, r)
		return
	case get && len(parts) == 2 && parts[0] == "api":
		if s.disc.ServeResourceList(w, r, "", parts[1]) {
			return
		}
	case get && len(parts) == 2 && parts[0] == "apis":
		if s.disc.ServeAPIGroup(w, r, parts[1]) {
			return
		}
	case get && len(parts) == 3 && parts[0] == "apis":
		if s.disc.ServeResourceList(w, r, parts[1], parts[2]) {
			return
		}
	case len(parts) > 2 && (parts[0] == "api" || parts[0] == "apis"):
		s.handler.ServeHTTP(w, r)
		return
	}
	endpoints.WriteError(w, endpoints.NotServed(r.Method, schema.GroupResource{}, ""))
}

// openIDConfiguration serves the issuer's OpenID Connect discovery
// document. Its jwks_uri is the key set on the address the request came
// to (Kubernetes names its external address, or --service-account-jwks-uri).
func (s *Server) openIDConfiguration(c *gin.Context) {
	body, err := s.saTokens.OpenIDConfiguration((&url.URL{Scheme: "https", Host: c.Request.Host, Path: serviceaccount.JWKSPath}).String())
	s.writeDiscovery(c, "application/json", body, err)
}

// jwks serves the key set that verifies service account tokens.
func (s *Server) jwks(c *gin.Context) {
	body, err := s.saTokens.JWKS()
	s.writeDiscovery(c, "application/jwk-set+json", body, err)
}

func (s *Server) writeDiscovery(c *gin.Context, contentType string, body []byte, err error) {
	if err != nil {
		endpoints.WriteError(c.Writer, apierrors.NewInternalError(err))
		return
	}
	// Cacheable for an hour, as Kubernetes answers.
	c.Header("Cache-Control", "public, max-age=3600")
	c.Data(http.StatusOK, contentType, body)
}

func (s *Server) version(c *gin.Context) {
	c.JSON(http.StatusOK, version.Info{
		Major: KubernetesMajor, Minor: KubernetesMinor, GitVersion: KubernetesVersion,
		GitCommit: s.cfg.GitCommit, GitTreeState: "clean", BuildDate: s.cfg.BuildDate,
		GoVersion: runtime.Version(), Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH,
	})
}

// recovery turns a panic into a 500 Status instead of a dropped connection.
func (s *Server) recovery(c *gin.Context) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("apiserver: panic serving request", "method", c.Request.Method, "path", c.Request.URL.Path, "panic", v)
			if !c.Writer.Written() {
				endpoints.WriteError(c.Writer, apierrors.NewInternalError(fmt.Errorf("internal error")))
			}
			c.Abort()
		}
	}()
	c.Next()
}

// observe counts and times every request.
func (s *Server) observe(c *gin.Context) {
	start := time.Now()
	o := &endpoints.Observed{}
	c.Request = c.Request.WithContext(endpoints.WithObserved(c.Request.Context(), o))
	kind := "readOnly"
	switch c.Request.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		kind = "mutating"
	}
	if c.Query("watch") == "true" || c.Query("watch") == "1" {
		kind = "watch"
	}
	done := s.metrics.Inflight(kind)
	c.Next()
	done()
	s.metrics.Observe(requestMetric(c.Request, o.Info, c.Writer.Status()), time.Since(start))
}

// requestMetric labels a finished request as kube-apiserver's request
// metrics do: its installer's verbs (POST for a create, PUT for an update,
// LIST, DELETECOLLECTION), WATCH for a watch, APPLY for a server-side apply,
// CONNECT for the streaming subresources, and the scope a create or a
// request naming an object counts in ("resource"), else its namespace's or
// the cluster's. A path that names no resource (discovery, /metrics, /healthz)
// is counted by its HTTP method alone.
func requestMetric(r *http.Request, info endpoints.RequestInfo, code int) metrics.Request {
	m := metrics.Request{Verb: r.Method, Code: code}
	if r.Method == http.MethodHead {
		m.Verb = http.MethodGet
	}
	if !info.IsResourceRequest {
		return m
	}
	m.Group, m.Version, m.Resource, m.Subresource = info.Group, info.Version, info.Resource, info.Subresource
	switch {
	case info.Name != "" || info.Verb == "create":
		m.Scope = "resource"
	case info.Namespace != "":
		m.Scope = "namespace"
	default:
		m.Scope = "cluster"
	}
	switch info.Verb {
	case "get":
		m.Verb = "GET"
	case "list":
		m.Verb = "LIST"
	case "watch":
		m.Verb = "WATCH"
	case "create":
		m.Verb = "POST"
	case "update":
		m.Verb = "PUT"
	case "patch":
		m.Verb = "PATCH"
		if ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";"); strings.TrimSpace(ct) == string(types.ApplyPatchType) {
			m.Verb = "APPLY"
		}
	case "delete":
		m.Verb = "DELETE"
	case "deletecollection":
		m.Verb = "DELETECOLLECTION"
	}
	if connectSubresources[info.Subresource] {
		m.Verb = "CONNECT"
	}
	m.DryRun = dryRunLabel(r.URL)
	return m
}

// dryRunLabel is the dry_run label of a request, as kube-apiserver's
// cleanDryRun: the distinct dryRun values, sorted, when they are valid
// (only "All" is), else "invalid", so that made-up values cannot grow the
// metrics without bound.
func dryRunLabel(u *url.URL) string {
	if !strings.Contains(u.RawQuery, "dryRun") {
		return ""
	}
	dry := u.Query()["dryRun"]
	for _, v := range dry {
		if v != metav1.DryRunAll {
			return "invalid"
		}
	}
	return strings.Join(sets.List(sets.New(dry...)), ",")
}

// connectSubresources are the subresources kube-apiserver's request metrics
// count as CONNECT, whatever the method.
var connectSubresources = map[string]bool{"log": true, "exec": true, "portforward": true, "attach": true, "proxy": true}

// anonymousPaths may be read (get) without credentials: exactly the
// nonResourceURLs of Kubernetes' system:public-info-viewer ClusterRole,
// which is bound to system:unauthenticated (/healthz, /livez, /readyz,
// /version, /version/). Unauthenticated requests for anything else are a
// 401 in skiff, where Kubernetes would authorize system:anonymous.
var anonymousPaths = publicInfoPaths()

func publicInfoPaths() map[string]bool {
	paths := map[string]bool{}
	for _, role := range bootstrap.ClusterRoles() {
		if role.Name != "system:public-info-viewer" {
			continue
		}
		for _, r := range role.Rules {
			if slices.Contains(r.Verbs, "get") {
				for _, u := range r.NonResourceURLs {
					paths[u] = true
				}
			}
		}
	}
	return paths
}

// anonymousAllowed reports whether an unauthenticated request is served.
func anonymousAllowed(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && anonymousPaths[r.URL.Path]
}

// authenticate puts the request's user into its context, or answers 401.
func (s *Server) authenticate(c *gin.Context) {
	ctx, warnings := authn.WithWarnings(c.Request.Context())
	u, ok, err := s.authn.Authenticate(c.Request.WithContext(ctx))
	// Warnings about the credentials go with whatever the answer is, as
	// Kubernetes' recorder sends them.
	for _, text := range *warnings {
		if h, err := utilnet.NewWarningHeader(299, "-", text); err == nil {
			c.Writer.Header().Add("Warning", h)
		}
	}
	if err != nil || !ok {
		if err == nil && anonymousAllowed(c.Request) {
			c.Next()
			return
		}
		msg := "Unauthorized"
		if err != nil {
			// Say which credential failed and why (expired, wrong CA,
			// unknown token); it names nothing secret.
			msg = "Unauthorized: " + strings.TrimPrefix(err.Error(), authn.ErrInvalidCredential.Error()+": ")
		}
		endpoints.WriteError(c.Writer, apierrors.NewUnauthorized(msg))
		c.Abort()
		return
	}
	if impersonate.Requested(c.Request.Header) {
		as, err := impersonate.Resolve(c.Request.Context(), c.Request.Header, u, s.cfg.Authorizer)
		if err != nil {
			endpoints.WriteError(c.Writer, err)
			c.Abort()
			return
		}
		impersonate.Strip(c.Request.Header)
		u = as
	}
	c.Request = c.Request.WithContext(authn.WithUser(c.Request.Context(), u))
	c.Next()
}

// authorizePath asks the authorizer about requests for paths that name no
// resource (discovery, OpenAPI, /metrics, health), as Kubernetes does with
// nonResourceURLs rules. Resource requests are authorized by the resource
// handler, which knows their attributes. Unauthenticated requests reach
// this point only for the anonymous paths.
func (s *Server) authorizePath(c *gin.Context) {
	u, ok := authn.UserFrom(c.Request.Context())
	if !ok {
		c.Next()
		return
	}
	r := c.Request
	if info, ok := endpoints.ParseRequestInfo(r.Method, r.URL.Path, false); ok && info.IsResourceRequest {
		c.Next()
		return
	}
	verb := strings.ToLower(r.Method)
	if r.Method == http.MethodHead {
		verb = "get"
	}
	allowed, reason, err := s.cfg.Authorizer.Authorize(r.Context(), authz.Attributes{User: u, Verb: verb, Path: r.URL.Path})
	if err != nil {
		endpoints.WriteError(c.Writer, apierrors.NewInternalError(err))
		c.Abort()
		return
	}
	if !allowed {
		msg := fmt.Sprintf("User %q cannot %s path %q", u.Name, verb, r.URL.Path)
		if reason != "" {
			msg += ": " + reason
		}
		endpoints.WriteError(c.Writer, apierrors.NewForbidden(schema.GroupResource{}, "", errors.New(msg)))
		c.Abort()
		return
	}
	c.Next()
}

// tokenCollectors are the service account token counters, if tokens are served.
func tokenCollectors(t *serviceaccount.Tokens) []prometheus.Collector {
	if t == nil {
		return nil
	}
	return t.Collectors()
}

// storageCheck is the health check kube-apiserver calls "etcd": the
// database answers a read of the current revision within storageCheckTimeout.
type storageCheck struct{ store endpoints.Store }

const storageCheckTimeout = 2 * time.Second

func (storageCheck) Name() string { return "storage" }

func (c storageCheck) Check(r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), storageCheckTimeout)
	defer cancel()
	_, err := c.store.Revision(ctx)
	return err
}
