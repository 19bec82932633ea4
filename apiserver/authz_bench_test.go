package apiserver_test

import (
	"context"
	"fmt"
	"k8s.io/client-go/rest"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// BenchmarkRBACOverhead measures GET latency over HTTPS for the admin
// (system:masters, decided before RBAC) and for a non-admin user with 50
// groups and 50 RoleBindings in effect (the granting one last), with
// requests interleaved so both see the same machine. It reports each p99
// and their ratio; the bar is user p99 within 20% of admin's.
//
//	go test -run XXX -bench RBACOverhead -benchtime 4000x ./apiserver/
func BenchmarkRBACOverhead(b *testing.B) {
	srv := apiservertest.Start(b)
	// No client-side rate limit: at 1000 QPS the limiter, not the server,
	// set both clients' latencies.
	unlimited := func(cfg *rest.Config) *rest.Config {
		cfg = rest.CopyConfig(cfg)
		cfg.QPS, cfg.Burst = -1, 0
		return cfg
	}
	admin := clientsetFor(b, unlimited(srv.Config))
	ctx := context.Background()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := admin.CoreV1().ConfigMaps("bench").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	var groups []string
	for i := 0; i < 50; i++ {
		groups = append(groups, fmt.Sprintf("team-%d", i))
		role := fmt.Sprintf("r%d", i)
		if _, err := admin.RbacV1().Roles("bench").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: role},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{"apps"}, Resources: []string{fmt.Sprintf("things%d", i)}}}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role}
		if i == 49 {
			ref = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}
		}
		if _, err := admin.RbacV1().RoleBindings("bench").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("b%d", i)}, RoleRef: ref,
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "worker"}, {Kind: "Group", APIGroup: rbacv1.GroupName, Name: groups[i]}}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	worker := clientsetFor(b, unlimited(srv.UserConfig(b, "worker", groups...)))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := worker.CoreV1().ConfigMaps("bench").Get(ctx, "cm", metav1.GetOptions{}); err == nil {
			break
		} else if time.Now().After(deadline) {
			b.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	const workers = 8
	var mu sync.Mutex
	var adminLat, userLat []time.Duration
	b.ResetTimer()
	var wg sync.WaitGroup
	per := (b.N + workers - 1) / workers
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var a, u []time.Duration
			get := func(c *kubernetes.Clientset, into *[]time.Duration) bool {
				start := time.Now()
				if _, err := c.CoreV1().ConfigMaps("bench").Get(ctx, "cm", metav1.GetOptions{}); err != nil {
					b.Error(err)
					return false
				}
				*into = append(*into, time.Since(start))
				return true
			}
			for i := 0; i < per; i++ {
				// Alternate who goes first, so neither always follows the other.
				first, second := get, get
				if i%2 == 0 {
					if !first(admin, &a) || !second(worker, &u) {
						return
					}
				} else if !first(worker, &u) || !second(admin, &a) {
					return
				}
			}
			mu.Lock()
			adminLat, userLat = append(adminLat, a...), append(userLat, u...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	b.StopTimer()
	if len(adminLat) == 0 {
		return
	}
	ap, up := percentile(adminLat, 0.99), percentile(userLat, 0.99)
	b.ReportMetric(float64(percentile(adminLat, 0.5).Microseconds()), "admin-p50-µs")
	b.ReportMetric(float64(ap.Microseconds()), "admin-p99-µs")
	b.ReportMetric(float64(percentile(userLat, 0.5).Microseconds()), "user50-p50-µs")
	b.ReportMetric(float64(up.Microseconds()), "user50-p99-µs")
	b.ReportMetric(float64(up)/float64(ap), "p99-ratio")
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p)]
}
