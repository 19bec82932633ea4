package tables

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func newBuiltinRegistry() *registry {
	r := &registry{byType: map[reflect.Type]*printer{}}
	// core/v1
	add(r, podColumns, podRow)
	add(r, nodeColumns, nodeRow)
	add(r, namespaceColumns, namespaceRow)
	add(r, serviceColumns, serviceRow)
	add(r, endpointsColumns, endpointsRow)
	add(r, configMapColumns, configMapRow)
	add(r, secretColumns, secretRow)
	add(r, serviceAccountColumns, serviceAccountRow)
	add(r, eventColumns, eventRow)
	add(r, resourceQuotaColumns, resourceQuotaRow)
	add(r, persistentVolumeColumns, persistentVolumeRow)
	add(r, persistentVolumeClaimColumns, persistentVolumeClaimRow)
	add(r, replicationControllerColumns, replicationControllerRow)
	r.byType[reflect.TypeOf(&corev1.LimitRange{})] = createdAtPrinter
	// apps/v1, batch/v1
	add(r, deploymentColumns, deploymentRow)
	add(r, replicaSetColumns, replicaSetRow)
	add(r, daemonSetColumns, daemonSetRow)
	add(r, statefulSetColumns, statefulSetRow)
	add(r, jobColumns, jobRow)
	add(r, cronJobColumns, cronJobRow)
	// other groups
	add(r, eventColumns, eventsV1Row)
	add(r, endpointSliceColumns, endpointSliceRow)
	add(r, leaseColumns, leaseRow)
	add(r, podDisruptionBudgetColumns, podDisruptionBudgetRow)
	add(r, ingressColumns, ingressRow)
	add(r, ingressClassColumns, ingressClassRow)
	add(r, networkPolicyColumns, networkPolicyRow)
	add(r, roleBindingColumns("roleBinding"), roleBindingRow)
	add(r, roleBindingColumns("clusterRoleBinding"), clusterRoleBindingRow)
	add(r, priorityClassColumns, priorityClassRow)
	add(r, storageClassColumns, storageClassRow)
	for _, obj := range []runtime.Object{&rbacv1.Role{}, &rbacv1.ClusterRole{}, &apiextensionsv1.CustomResourceDefinition{}} {
		r.byType[reflect.TypeOf(obj)] = createdAtPrinter
	}
	return r
}

// createdAtPrinter is Kubernetes' generic table: NAME and CREATED AT (an
// RFC 3339 timestamp). Kubernetes prints Role, ClusterRole, LimitRange and
// CustomResourceDefinition this way, and any kind without its own printer.
var createdAtPrinter = &printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Created At", Type: "date", Description: objectMetaDoc["creationTimestamp"]},
	},
	row: func(obj runtime.Object, _ time.Time) (metav1.TableRow, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return metav1.TableRow{}, fmt.Errorf("%T has no object metadata: %w", obj, err)
		}
		return metav1.TableRow{Cells: []any{m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339)}}, nil
	},
}

var endpointSliceColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	column("AddressType", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["addressType"]),
	column("Ports", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["ports"]),
	column("Endpoints", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["endpoints"]),
	ageColumn(),
}

func endpointSliceRow(es *discoveryv1.EndpointSlice, now time.Time) metav1.TableRow {
	const limit = 3
	var ports []string
	for _, p := range es.Ports {
		if len(ports) == limit {
			break
		}
		switch {
		case p.Port != nil:
			ports = append(ports, strconv.Itoa(int(*p.Port)))
		case p.Name != nil:
			ports = append(ports, *p.Name)
		default:
			ports = append(ports, "*")
		}
	}
	var addrs []string
	total := 0
	for _, e := range es.Endpoints {
		for _, a := range e.Addresses {
			total++
			if len(addrs) < limit {
				addrs = append(addrs, a)
			}
		}
	}
	return metav1.TableRow{Cells: []any{
		es.Name,
		string(es.AddressType),
		orDefault(firstFew(ports, len(es.Ports), limit), unset),
		orDefault(firstFew(addrs, total, limit), unset),
		age(es.CreationTimestamp, now),
	}}
}

var leaseColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	column("Holder", "string", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]),
	ageColumn(),
}

func leaseRow(l *coordinationv1.Lease, now time.Time) metav1.TableRow {
	return metav1.TableRow{Cells: []any{l.Name, derefOr(l.Spec.HolderIdentity, ""), age(l.CreationTimestamp, now)}}
}

var podDisruptionBudgetColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	column("Min Available", "string", "The minimum number of pods that must be available."),
	column("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
	column("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
	ageColumn(),
}

func podDisruptionBudgetRow(pdb *policyv1.PodDisruptionBudget, now time.Time) metav1.TableRow {
	minAvailable, maxUnavailable := "N/A", "N/A"
	if pdb.Spec.MinAvailable != nil {
		minAvailable = pdb.Spec.MinAvailable.String()
	}
	if pdb.Spec.MaxUnavailable != nil {
		maxUnavailable = pdb.Spec.MaxUnavailable.String()
	}
	return metav1.TableRow{Cells: []any{
		pdb.Name, minAvailable, maxUnavailable, int64(pdb.Status.DisruptionsAllowed), age(pdb.CreationTimestamp, now),
	}}
}

func roleBindingColumns(what string) []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("Role", "string", rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]),
		ageColumn(),
		wideColumn("Users", "string", "Users in the "+what),
		wideColumn("Groups", "string", "Groups in the "+what),
		wideColumn("ServiceAccounts", "string", "ServiceAccounts in the "+what),
	}
}

func bindingRow(name string, ref rbacv1.RoleRef, subjects []rbacv1.Subject, created metav1.Time, now time.Time) metav1.TableRow {
	var users, groups, sas []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		case rbacv1.ServiceAccountKind:
			sas = append(sas, s.Namespace+":"+s.Name)
		}
	}
	return metav1.TableRow{Cells: []any{
		name,
		ref.Kind + "/" + ref.Name,
		age(created, now),
		strings.Join(users, ", "),
		strings.Join(groups, ", "),
		strings.Join(sas, ", "),
	}}
}

func roleBindingRow(b *rbacv1.RoleBinding, now time.Time) metav1.TableRow {
	return bindingRow(b.Name, b.RoleRef, b.Subjects, b.CreationTimestamp, now)
}

func clusterRoleBindingRow(b *rbacv1.ClusterRoleBinding, now time.Time) metav1.TableRow {
	return bindingRow(b.Name, b.RoleRef, b.Subjects, b.CreationTimestamp, now)
}

var priorityClassColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	column("Value", "integer", schedulingv1.PriorityClass{}.SwaggerDoc()["value"]),
	column("Global-Default", "boolean", schedulingv1.PriorityClass{}.SwaggerDoc()["globalDefault"]),
	ageColumn(),
	column("PreemptionPolicy", "string", schedulingv1.PriorityClass{}.SwaggerDoc()["preemptionPolicy"]),
}

func priorityClassRow(pc *schedulingv1.PriorityClass, now time.Time) metav1.TableRow {
	policy := ""
	if pc.PreemptionPolicy != nil {
		policy = string(*pc.PreemptionPolicy)
	}
	return metav1.TableRow{Cells: []any{pc.Name, int64(pc.Value), pc.GlobalDefault, age(pc.CreationTimestamp, now), policy}}
}

// Annotations that mark the default StorageClass.
const (
	defaultStorageClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	betaDefaultStorageClassAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

var storageClassColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	column("Provisioner", "string", storagev1.StorageClass{}.SwaggerDoc()["provisioner"]),
	column("ReclaimPolicy", "string", storagev1.StorageClass{}.SwaggerDoc()["reclaimPolicy"]),
	column("VolumeBindingMode", "string", storagev1.StorageClass{}.SwaggerDoc()["volumeBindingMode"]),
	column("AllowVolumeExpansion", "string", storagev1.StorageClass{}.SwaggerDoc()["allowVolumeExpansion"]),
	ageColumn(),
}

func storageClassRow(sc *storagev1.StorageClass, now time.Time) metav1.TableRow {
	name := sc.Name
	if sc.Annotations[defaultStorageClassAnnotation] == "true" || sc.Annotations[betaDefaultStorageClassAnnotation] == "true" {
		name += " (default)"
	}
	reclaim := string(corev1.PersistentVolumeReclaimDelete)
	if sc.ReclaimPolicy != nil {
		reclaim = string(*sc.ReclaimPolicy)
	}
	binding := string(storagev1.VolumeBindingImmediate)
	if sc.VolumeBindingMode != nil {
		binding = string(*sc.VolumeBindingMode)
	}
	expand := sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
	return metav1.TableRow{Cells: []any{name, sc.Provisioner, reclaim, binding, expand, age(sc.CreationTimestamp, now)}}
}
