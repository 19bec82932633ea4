package admission

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	resourcehelper "k8s.io/component-helpers/resource"
)

// limitRanges returns the namespace's LimitRange items, with Kubernetes'
// item defaults applied (default limit from max, default request from
// default limit or min).
func (c *Chain) limitRanges(ctx context.Context, namespace string) ([]corev1.LimitRangeItem, error) {
	ranges, _, err := listInto[corev1.LimitRange](ctx, c.store, "/registry/limitranges/"+namespace+"/", false)
	if err != nil {
		return nil, err
	}
	var items []corev1.LimitRangeItem
	for _, lr := range ranges {
		for _, item := range lr.Spec.Limits {
			if item.Type == corev1.LimitTypeContainer {
				item.Default = withMissing(item.Default, item.Max)
				item.DefaultRequest = withMissing(item.DefaultRequest, item.Default)
				item.DefaultRequest = withMissing(item.DefaultRequest, item.Min)
			}
			items = append(items, item)
		}
	}
	return items, nil
}

// withMissing returns into plus the keys of from it lacks.
func withMissing(into, from corev1.ResourceList) corev1.ResourceList {
	for name, q := range from {
		if _, ok := into[name]; !ok {
			if into == nil {
				into = corev1.ResourceList{}
			}
			into[name] = q.DeepCopy()
		}
	}
	return into
}

// limitRangeDefaults fills the requests and limits a pod's containers leave
// out from the namespace's Container LimitRanges.
func (c *Chain) limitRangeDefaults(ctx context.Context, a *Attributes) error {
	items, err := c.limitRanges(ctx, a.Namespace)
	if err != nil || len(items) == 0 {
		return err
	}
	pod := a.Object.(*corev1.Pod)
	for _, item := range items {
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range list {
				r := &list[i].Resources
				r.Limits = withMissing(r.Limits, item.Default)
				r.Requests = withMissing(r.Requests, item.DefaultRequest)
			}
		}
	}
	return nil
}

// limitRangeBounds refuses a pod whose containers (or whole pod) fall
// outside the namespace's LimitRange min, max or limit/request ratio, with
// Kubernetes' LimitRanger messages.
func (c *Chain) limitRangeBounds(ctx context.Context, a *Attributes) error {
	items, err := c.limitRanges(ctx, a.Namespace)
	if err != nil || len(items) == 0 {
		return err
	}
	pod := a.Object.(*corev1.Pod)
	var errs []error
	for _, item := range items {
		switch item.Type {
		case corev1.LimitTypeContainer:
			for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
				for _, ctr := range list {
					errs = append(errs, checkBounds(item, "Container", ctr.Resources.Requests, ctr.Resources.Limits)...)
				}
			}
		case corev1.LimitTypePod:
			requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
			limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
			errs = append(errs, checkBounds(item, "Pod", requests, limits)...)
		}
	}
	if len(errs) > 0 {
		return forbidden(a, "%s", utilerrors.NewAggregate(errs).Error())
	}
	return nil
}

func checkBounds(item corev1.LimitRangeItem, kind string, requests, limits corev1.ResourceList) []error {
	var errs []error
	for _, name := range sortedNames(item.Min) {
		min, req := item.Min[name], requests[name]
		_, ok := requests[name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, kind, min.String()))
		case req.Cmp(min) < 0:
			errs = append(errs, fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, kind, min.String(), req.String()))
		}
	}
	for _, name := range sortedNames(item.Max) {
		max, lim := item.Max[name], limits[name]
		_, ok := limits[name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, kind, max.String()))
		case lim.Cmp(max) > 0:
			errs = append(errs, fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, kind, max.String(), lim.String()))
		}
	}
	for _, name := range sortedNames(item.MaxLimitRequestRatio) {
		ratio := item.MaxLimitRequestRatio[name]
		req, rok := requests[name]
		lim, lok := limits[name]
		if !rok || !lok || req.IsZero() {
			if lok && !rok {
				errs = append(errs, fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, kind, ratio.String()))
			}
			continue
		}
		got := float64(lim.MilliValue()) / float64(req.MilliValue())
		if got > ratio.AsApproximateFloat64() {
			errs = append(errs, fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, kind, ratio.String(), got))
		}
	}
	return errs
}

func sortedNames(list corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(list))
	for name := range list {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}
