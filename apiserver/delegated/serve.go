package delegated

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"

	"github.com/skiffkube/skiff/apiserver/healthz"
)

// HealthPaths are open to anyone, so a liveness probe needs no token.
var HealthPaths = []string{"/healthz", "/livez", "/readyz"}

// Endpoint is a component's secure endpoint.
type Endpoint struct {
	// Address is host:port to listen on.
	Address string
	// CertFile and KeyFile are the serving certificate; both empty means a
	// self-signed one made at start for the listening address, localhost
	// and 127.0.0.1, as Kubernetes' components make without --tls-cert-file.
	CertFile, KeyFile string
	// Client vets callers (see Guard).
	Client kubernetes.Interface
	// Metrics is served on /metrics.
	Metrics prometheus.Gatherer
	// Checks fail /healthz and /livez when any of them fails, so a liveness
	// probe restarts the process (client-go's leader election HealthzAdaptor:
	// a leader that stopped renewing its Lease but still runs).
	Checks []healthz.Check
	// Profiling serves Go's pprof profiles on /debug/pprof/ to callers
	// allowed to get those paths (cluster-admin), as --profiling does for
	// Kubernetes' components.
	Profiling bool
	// ComponentConfig, if set, is the component's effective configuration,
	// served on /configz as {"componentconfig": ...} to callers allowed to
	// get that path, as Kubernetes' components serve theirs.
	ComponentConfig any
	Logger          *slog.Logger
}

// Start listens on e.Address (so a busy port fails the command at once) and
// serves until ctx ends. It returns the address it listens on.
func Start(ctx context.Context, e Endpoint) (string, error) {
	cert, err := servingCert(e)
	if err != nil {
		return "", err
	}
	var configz []byte
	if e.ComponentConfig != nil {
		if configz, err = json.MarshalIndent(map[string]any{"componentconfig": e.ComponentConfig}, "", "  "); err != nil {
			return "", fmt.Errorf("component configuration for /configz: %w", err)
		}
	}
	l, err := net.Listen("tcp", e.Address)
	if err != nil {
		return "", err
	}
	log := e.Logger
	if log == nil {
		log = slog.Default()
	}
	mux := http.NewServeMux()
	live, ready := healthz.Handler(log, e.Checks...), healthz.Handler(log)
	for path, h := range map[string]http.Handler{"/healthz": live, "/livez": live, "/readyz": ready} {
		mux.Handle(path, h)
		mux.Handle(path+"/", h) // each check's own path, vetted as /metrics is
	}
	mux.Handle("/metrics", promhttp.HandlerFor(e.Metrics, promhttp.HandlerOpts{}))
	if configz != nil {
		mux.HandleFunc("GET /configz", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			_, _ = w.Write(configz)
		})
	}
	if e.Profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index) // and the runtime's profiles by name
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	srv := &http.Server{
		Handler:           NewGuard(e.Client, mux, HealthPaths...),
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}},
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	go func() {
		if err := srv.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("secure endpoint stopped", "address", l.Addr().String(), "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(shutdown); err != nil {
			_ = srv.Close()
		}
	}()
	log.Info("serving health and metrics", "address", "https://"+l.Addr().String(), "profiling", e.Profiling)
	return l.Addr().String(), nil
}

func servingCert(e Endpoint) (tls.Certificate, error) {
	switch {
	case e.CertFile != "" && e.KeyFile != "":
		cert, err := tls.LoadX509KeyPair(e.CertFile, e.KeyFile)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("serving certificate %s, key %s: %w", e.CertFile, e.KeyFile, err)
		}
		return cert, nil
	case e.CertFile != "" || e.KeyFile != "":
		return tls.Certificate{}, errors.New("serving certificate: give both the certificate and its key, or neither")
	}
	host, _, err := net.SplitHostPort(e.Address)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("secure endpoint address %q: %w", e.Address, err)
	}
	ips := []net.IP{net.ParseIP("127.0.0.1")}
	if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
		ips = append(ips, ip)
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", ips, nil)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signed serving certificate: %w", err)
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}
