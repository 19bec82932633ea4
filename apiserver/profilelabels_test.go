package apiserver_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCPUProfileLabelsRequests checks that a CPU profile of the server
// splits the time spent serving requests by their resource and verb (that
// a goroutine gives the labels back after a request is
// endpoints.TestServeHTTPLabelsItsGoroutine).
func TestCPUProfileLabelsRequests(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	// The only requests during the profile must be the test's: wait for
	// the test server's service account controller to have made each
	// namespace's "default" account (its writes at start-up).
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss.Items {
		for deadline := time.Now().Add(30 * time.Second); ; {
			if _, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{}); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no default service account in %s after 30s", ns.Name)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Fatalf("starting a CPU profile (is one already running, go test -cpuprofile?): %v", err)
	}
	var wg sync.WaitGroup
	until := time.Now().Add(2 * time.Second)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; time.Now().Before(until); i++ {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d-%d", w, i)}, Data: map[string]string{"k": "v"}}
				if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	pprof.StopCPUProfile()
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	labelled := 0
	for _, s := range p.Sample {
		if s.Label["resource"] == nil {
			continue
		}
		labelled++
		if got := fmt.Sprint(s.Label["group"], s.Label["resource"], s.Label["verb"]); got != "[] [configmaps] [create]" {
			t.Errorf("sample labelled %s, want group \"\", resource configmaps, verb create:\n%s", got, sampleStack(s))
		}
	}
	// ~20 of ~120 samples here: none would mean the labels never reach a
	// profile.
	if labelled == 0 {
		t.Fatalf("none of %d samples is labelled with a request's resource", len(p.Sample))
	}
	t.Logf("%d of %d samples labelled", labelled, len(p.Sample))
}

// sampleStack renders a sample's functions, innermost first.
func sampleStack(s *profile.Sample) string {
	var b strings.Builder
	for _, loc := range s.Location {
		for _, l := range loc.Line {
			if l.Function != nil {
				b.WriteString(l.Function.Name)
				b.WriteByte('\n')
			}
		}
	}
	return b.String()
}
