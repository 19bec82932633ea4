package bootstrap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/auth/rbac/reconciliation"

	"github.com/skiffkube/skiff/storage"
)

// Store is the part of the store reconciliation reads and writes.
type Store interface {
	Get(ctx context.Context, key string, revision int64) (*storage.KeyValue, error)
	Create(ctx context.Context, key string, value []byte, ttl time.Duration, opts ...storage.WriteOption) (*storage.KeyValue, error)
	Update(ctx context.Context, key string, value []byte, expectedRevision int64, ttl time.Duration, opts ...storage.WriteOption) (*storage.KeyValue, error)
	Delete(ctx context.Context, key string, expectedRevision int64) (*storage.KeyValue, int64, error)
}

// Actor is recorded in history for the policy's writes.
const Actor = "system:apiserver"

const (
	clusterRolePrefix        = "/registry/rbac.authorization.k8s.io/clusterroles/"
	clusterRoleBindingPrefix = "/registry/rbac.authorization.k8s.io/clusterrolebindings/"
)

// Reconcile creates the default roles and bindings that are missing and
// adds missing rules, aggregation selectors and subjects to existing ones
// annotated autoupdate "true". It never removes what an operator added.
// It uses the reconciliation logic of k8s.io/component-helpers over the
// store, so it runs before the API server serves.
func Reconcile(ctx context.Context, store Store) error {
	ctx = storage.WithActor(ctx, Actor)
	var errs []error
	for _, r := range ClusterRoles() {
		r := r
		if skip, err := protected(ctx, store, clusterRolePrefix+r.Name); err != nil || skip {
			errs = append(errs, err)
			continue
		}
		_, err := (&reconciliation.ReconcileRoleOptions{
			Role:    reconciliation.ClusterRoleRuleOwner{ClusterRole: &r},
			Confirm: true,
			Client:  clusterRoles{ctx: ctx, store: store},
		}).Run()
		if err != nil {
			errs = append(errs, fmt.Errorf("clusterrole %s: %w", r.Name, err))
		}
	}
	for _, b := range ClusterRoleBindings() {
		b := b
		if skip, err := protected(ctx, store, clusterRoleBindingPrefix+b.Name); err != nil || skip {
			errs = append(errs, err)
			continue
		}
		_, err := (&reconciliation.ReconcileRoleBindingOptions{
			RoleBinding: reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: &b},
			Confirm:     true,
			Client:      clusterRoleBindings{ctx: ctx, store: store},
		}).Run()
		if err != nil {
			errs = append(errs, fmt.Errorf("clusterrolebinding %s: %w", b.Name, err))
		}
	}
	return errors.Join(errs...)
}

// protected tells whether an existing object opted out of reconciliation:
// only objects that still say autoupdate "true" are touched.
func protected(ctx context.Context, store Store, key string) (bool, error) {
	kv, err := store.Get(ctx, key, 0)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var m struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(kv.Value, &m); err != nil {
		return false, fmt.Errorf("%s: %w", key, err)
	}
	return m.Metadata.Annotations[rbacv1.AutoUpdateAnnotationKey] != "true", nil
}

// storeError turns store errors into the API errors reconciliation checks
// for (IsNotFound, IsConflict, IsAlreadyExists).
func storeError(err error, gr schema.GroupResource, name string) error {
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, storage.ErrConflict):
		return apierrors.NewConflict(gr, name, err)
	case errors.Is(err, storage.ErrKeyExists):
		return apierrors.NewAlreadyExists(gr, name)
	}
	return err
}

// object is the metadata handling shared by both kinds.
type object interface {
	GetName() string
	GetResourceVersion() string
	SetResourceVersion(string)
	GetUID() types.UID
	SetUID(types.UID)
	SetCreationTimestamp(metav1.Time)
}

func get(ctx context.Context, store Store, key string, gr schema.GroupResource, name string, into object) error {
	kv, err := store.Get(ctx, key, 0)
	if err != nil {
		return storeError(err, gr, name)
	}
	if err := json.Unmarshal(kv.Value, into); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	into.SetResourceVersion(strconv.FormatInt(kv.ModRevision, 10))
	return nil
}

func create(ctx context.Context, store Store, key string, gr schema.GroupResource, obj object) error {
	obj.SetUID(types.UID(uuid.NewString()))
	obj.SetCreationTimestamp(metav1.NewTime(time.Now().UTC().Truncate(time.Second)))
	obj.SetResourceVersion("")
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	kv, err := store.Create(ctx, key, data, 0)
	if err != nil {
		return storeError(err, gr, obj.GetName())
	}
	obj.SetResourceVersion(strconv.FormatInt(kv.ModRevision, 10))
	return nil
}

func update(ctx context.Context, store Store, key string, gr schema.GroupResource, obj object) error {
	rev, err := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
	if err != nil {
		return fmt.Errorf("%s: no revision to update from", key)
	}
	obj.SetResourceVersion("")
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	kv, err := store.Update(ctx, key, data, rev, 0)
	if err != nil {
		return storeError(err, gr, obj.GetName())
	}
	obj.SetResourceVersion(strconv.FormatInt(kv.ModRevision, 10))
	return nil
}

var (
	clusterRolesGR        = schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterroles"}
	clusterRoleBindingsGR = schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterrolebindings"}
)

// clusterRoles is reconciliation's RuleOwnerModifier over the store.
type clusterRoles struct {
	ctx   context.Context
	store Store
}

func (c clusterRoles) Get(_, name string) (reconciliation.RuleOwner, error) {
	r := &rbacv1.ClusterRole{}
	if err := get(c.ctx, c.store, clusterRolePrefix+name, clusterRolesGR, name, r); err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleRuleOwner{ClusterRole: r}, nil
}

func (c clusterRoles) Create(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	r := in.(reconciliation.ClusterRoleRuleOwner).ClusterRole.DeepCopy()
	withTypeMeta(&r.TypeMeta, "ClusterRole")
	if err := create(c.ctx, c.store, clusterRolePrefix+r.Name, clusterRolesGR, r); err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleRuleOwner{ClusterRole: r}, nil
}

func (c clusterRoles) Update(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	r := in.(reconciliation.ClusterRoleRuleOwner).ClusterRole.DeepCopy()
	withTypeMeta(&r.TypeMeta, "ClusterRole")
	if err := update(c.ctx, c.store, clusterRolePrefix+r.Name, clusterRolesGR, r); err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleRuleOwner{ClusterRole: r}, nil
}

// clusterRoleBindings is reconciliation's RoleBindingModifier over the store.
type clusterRoleBindings struct {
	ctx   context.Context
	store Store
}

func (c clusterRoleBindings) Get(_, name string) (reconciliation.RoleBinding, error) {
	b := &rbacv1.ClusterRoleBinding{}
	if err := get(c.ctx, c.store, clusterRoleBindingPrefix+name, clusterRoleBindingsGR, name, b); err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: b}, nil
}

func (c clusterRoleBindings) Create(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	b := in.(reconciliation.ClusterRoleBindingAdapter).ClusterRoleBinding.DeepCopy()
	withTypeMeta(&b.TypeMeta, "ClusterRoleBinding")
	if err := create(c.ctx, c.store, clusterRoleBindingPrefix+b.Name, clusterRoleBindingsGR, b); err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: b}, nil
}

func (c clusterRoleBindings) Update(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	b := in.(reconciliation.ClusterRoleBindingAdapter).ClusterRoleBinding.DeepCopy()
	withTypeMeta(&b.TypeMeta, "ClusterRoleBinding")
	if err := update(c.ctx, c.store, clusterRoleBindingPrefix+b.Name, clusterRoleBindingsGR, b); err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: b}, nil
}

// Delete is used by reconciliation only when a binding's roleRef changed
// (roleRef is immutable, so the binding is recreated).
func (c clusterRoleBindings) Delete(_, name string, uid types.UID) error {
	key := clusterRoleBindingPrefix + name
	b := &rbacv1.ClusterRoleBinding{}
	if err := get(c.ctx, c.store, key, clusterRoleBindingsGR, name, b); err != nil {
		return err
	}
	if b.UID != uid {
		return apierrors.NewConflict(clusterRoleBindingsGR, name, fmt.Errorf("uid changed"))
	}
	rev, _ := strconv.ParseInt(b.ResourceVersion, 10, 64)
	_, _, err := c.store.Delete(c.ctx, key, rev)
	return storeError(err, clusterRoleBindingsGR, name)
}

func withTypeMeta(tm *metav1.TypeMeta, kind string) {
	tm.APIVersion, tm.Kind = rbacv1.SchemeGroupVersion.String(), kind
}
