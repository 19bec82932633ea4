package rbac

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/skiffkube/skiff/storage"
)

// Writer is the part of the store the aggregator writes through.
type Writer interface {
	Get(ctx context.Context, key string, revision int64) (*storage.KeyValue, error)
	Update(ctx context.Context, key string, value []byte, expectedRevision int64, ttl time.Duration, opts ...storage.WriteOption) (*storage.KeyValue, error)
}

// AggregatorActor is recorded in history for the aggregator's writes.
const AggregatorActor = "system:controller:clusterrole-aggregation-controller"

// Aggregator keeps the rules of every ClusterRole that has an
// aggregationRule equal to the union of the rules of the ClusterRoles its
// selectors pick (in name order, duplicates dropped), as Kubernetes'
// clusterrole-aggregation controller does. It runs after every ClusterRole
// change the cache sees.
type Aggregator struct {
	cache *Cache
	store Writer
	kick  chan struct{}
}

// NewAggregator hooks an aggregator to cache; Run does the work.
func NewAggregator(cache *Cache, store Writer) *Aggregator {
	a := &Aggregator{cache: cache, store: store, kick: make(chan struct{}, 1)}
	cache.onClusterRoles = a.Kick
	return a
}

// Kick asks for a pass; kicks during a pass coalesce into one more.
func (a *Aggregator) Kick() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// Run aggregates on every kick until ctx ends. A failed pass (a write
// conflict with a concurrent update) is retried after a short pause.
func (a *Aggregator) Run(ctx context.Context) {
	ctx = storage.WithActor(ctx, AggregatorActor)
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.kick:
		}
		if err := a.Pass(ctx); err != nil && ctx.Err() == nil {
			a.cache.log.Warn("rbac: aggregating cluster roles; retrying", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
			a.Kick()
		}
	}
}

// pending is one aggregated role whose stored rules differ from the union.
type pending struct {
	name  string
	rev   int64
	rules []rbacv1.PolicyRule
}

// Pass brings every aggregated ClusterRole up to date once.
func (a *Aggregator) Pass(ctx context.Context) error {
	var errs []error
	for _, p := range a.diff() {
		if err := a.write(ctx, p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// diff computes, under the cache's read lock, the roles to rewrite.
func (a *Aggregator) diff() []pending {
	c := a.cache
	c.mu.RLock()
	defer c.mu.RUnlock()
	names := make([]string, 0, len(c.clusterRoles))
	for n := range c.clusterRoles {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []pending
	for _, n := range names {
		role := c.clusterRoles[n]
		if role.AggregationRule == nil {
			continue
		}
		var selectors []labels.Selector
		for i := range role.AggregationRule.ClusterRoleSelectors {
			s, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
			if err != nil {
				c.log.Warn("rbac: bad aggregation selector", "clusterrole", n, "err", err)
				continue
			}
			selectors = append(selectors, s)
		}
		var rules []rbacv1.PolicyRule
		for _, other := range names {
			if other == n {
				continue
			}
			src := c.clusterRoles[other]
			set := labels.Set(src.Labels)
			for _, s := range selectors {
				if s.Empty() || !s.Matches(set) {
					continue
				}
				for _, r := range src.Rules {
					if !containsRule(rules, r) {
						rules = append(rules, r)
					}
				}
				break
			}
		}
		if !equality.Semantic.DeepEqual(rules, role.Rules) && !(len(rules) == 0 && len(role.Rules) == 0) {
			out = append(out, pending{name: n, rev: c.revisions[n], rules: rules})
		}
	}
	return out
}

func containsRule(rules []rbacv1.PolicyRule, r rbacv1.PolicyRule) bool {
	for i := range rules {
		if equality.Semantic.DeepEqual(rules[i], r) {
			return true
		}
	}
	return false
}

// write stores the new rules with compare-and-swap on the revision the
// cache saw.
func (a *Aggregator) write(ctx context.Context, p pending) error {
	key := Prefix + clusterRoleKind + "/" + p.name
	kv, err := a.store.Get(ctx, key, 0)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		return err
	}
	if kv.ModRevision != p.rev {
		return nil // a newer version is on its way to the cache, which kicks again
	}
	var raw map[string]any
	if err := json.Unmarshal(kv.Value, &raw); err != nil {
		return fmt.Errorf("clusterrole %s: %w", p.name, err)
	}
	rules, err := toJSONValue(p.rules)
	if err != nil {
		return err
	}
	if rules == nil {
		delete(raw, "rules")
	} else {
		raw["rules"] = rules
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	if _, err := a.store.Update(ctx, key, data, kv.ModRevision, 0); err != nil {
		if errors.Is(err, storage.ErrConflict) {
			return nil // as above: the cache will see the newer version and kick
		}
		return fmt.Errorf("clusterrole %s: %w", p.name, err)
	}
	return nil
}

// toJSONValue turns rules into their generic JSON form, so the rest of
// the stored object (managedFields included) is written back untouched.
func toJSONValue(rules []rbacv1.PolicyRule) (any, error) {
	if len(rules) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(rules)
	if err != nil {
		return nil, err
	}
	var v any
	err = json.Unmarshal(b, &v)
	return v, err
}
