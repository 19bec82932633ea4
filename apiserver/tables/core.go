package tables

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Node role labels: node-role.kubernetes.io/<role> (any value) and the older
// kubernetes.io/role=<role>.
const (
	nodeRolePrefix = "node-role.kubernetes.io/"
	nodeRoleLabel  = "kubernetes.io/role"
)

var nodeColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	column("Status", "string", "The status of the node"),
	column("Roles", "string", "The roles of the node"),
	ageColumn(),
	column("Version", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["kubeletVersion"]),
	wideColumn("Internal-IP", "string", corev1.NodeStatus{}.SwaggerDoc()["addresses"]),
	wideColumn("External-IP", "string", corev1.NodeStatus{}.SwaggerDoc()["addresses"]),
	wideColumn("OS-Image", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["osImage"]),
	wideColumn("Kernel-Version", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["kernelVersion"]),
	wideColumn("Container-Runtime", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["containerRuntimeVersion"]),
}

func nodeRow(n *corev1.Node, now time.Time) metav1.TableRow {
	status := []string{"Unknown"}
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			status = []string{"Ready"}
		} else {
			status = []string{"NotReady"}
		}
		break
	}
	if n.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}
	roles := nodeRoles(n)
	rolesCell := none
	if len(roles) > 0 {
		rolesCell = strings.Join(roles, ",")
	}
	info := n.Status.NodeInfo
	return metav1.TableRow{Cells: []any{
		n.Name,
		strings.Join(status, ","),
		rolesCell,
		age(n.CreationTimestamp, now),
		info.KubeletVersion,
		nodeAddress(n, corev1.NodeInternalIP),
		nodeAddress(n, corev1.NodeExternalIP),
		orDefault(info.OSImage, unknown),
		orDefault(info.KernelVersion, unknown),
		orDefault(info.ContainerRuntimeVersion, unknown),
	}}
}

// nodeRoles lists the node's roles sorted, so the cell is stable.
func nodeRoles(n *corev1.Node) []string {
	var roles []string
	for k, v := range n.Labels {
		var role string
		switch {
		case strings.HasPrefix(k, nodeRolePrefix):
			role = strings.TrimPrefix(k, nodeRolePrefix)
		case k == nodeRoleLabel:
			role = v
		}
		if role != "" && !slices.Contains(roles, role) {
			roles = append(roles, role)
		}
	}
	sort.Strings(roles)
	return roles
}

func nodeAddress(n *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range n.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return none
}

var namespaceColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	column("Status", "string", "The status of the namespace"),
	ageColumn(),
}

func namespaceRow(ns *corev1.Namespace, now time.Time) metav1.TableRow {
	return metav1.TableRow{Cells: []any{ns.Name, string(ns.Status.Phase), age(ns.CreationTimestamp, now)}}
}

var serviceColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	column("Type", "string", corev1.ServiceSpec{}.SwaggerDoc()["type"]),
	column("Cluster-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["clusterIP"]),
	column("External-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["externalIPs"]),
	column("Port(s)", "string", corev1.ServiceSpec{}.SwaggerDoc()["ports"]),
	ageColumn(),
	wideColumn("Selector", "string", corev1.ServiceSpec{}.SwaggerDoc()["selector"]),
}

func serviceRow(svc *corev1.Service, now time.Time) metav1.TableRow {
	clusterIP := none
	if len(svc.Spec.ClusterIPs) > 0 {
		clusterIP = svc.Spec.ClusterIPs[0]
	} else if svc.Spec.ClusterIP != "" {
		clusterIP = svc.Spec.ClusterIP
	}
	ports := make([]string, len(svc.Spec.Ports))
	for i, p := range svc.Spec.Ports {
		if p.NodePort > 0 {
			ports[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		} else {
			ports[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		}
	}
	portsCell := strings.Join(ports, ",")
	if portsCell == "" {
		portsCell = none
	}
	return metav1.TableRow{Cells: []any{
		svc.Name,
		string(svc.Spec.Type),
		clusterIP,
		serviceExternalIP(svc),
		portsCell,
		age(svc.CreationTimestamp, now),
		labels.FormatLabels(svc.Spec.Selector),
	}}
}

// serviceExternalIP follows Kubernetes: external IPs for ClusterIP and
// NodePort services, load-balancer ingress (then external IPs) or
// "<pending>" for LoadBalancer, the external name for ExternalName.
func serviceExternalIP(svc *corev1.Service) string {
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		if len(svc.Spec.ExternalIPs) > 0 {
			return strings.Join(svc.Spec.ExternalIPs, ",")
		}
		return none
	case corev1.ServiceTypeLoadBalancer:
		var addrs []string
		for _, in := range svc.Status.LoadBalancer.Ingress {
			a := in.IP
			if a == "" {
				a = in.Hostname
			}
			if a != "" && !slices.Contains(addrs, a) {
				addrs = append(addrs, a)
			}
		}
		addrs = append(addrs, svc.Spec.ExternalIPs...)
		if len(addrs) == 0 {
			return pending
		}
		return strings.Join(addrs, ",")
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	}
	return unknown
}

var endpointsColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	column("Endpoints", "string", corev1.Endpoints{}.SwaggerDoc()["subsets"]),
	ageColumn(),
}

// endpointsRow lists up to three address:port pairs (addresses alone for
// port-less headless subsets) and counts the rest.
func endpointsRow(ep *corev1.Endpoints, now time.Time) metav1.TableRow {
	const limit = 3
	var list []string
	total := 0
	addItem := func(s string) {
		total++
		if len(list) < limit {
			list = append(list, s)
		}
	}
	for _, ss := range ep.Subsets {
		if len(ss.Ports) == 0 {
			for _, a := range ss.Addresses {
				addItem(a.IP)
			}
			continue
		}
		for _, p := range ss.Ports {
			for _, a := range ss.Addresses {
				addItem(net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
		}
	}
	cell := none
	if len(ep.Subsets) > 0 {
		cell = firstFew(list, total, limit)
	}
	return metav1.TableRow{Cells: []any{ep.Name, cell, age(ep.CreationTimestamp, now)}}
}

var configMapColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	column("Data", "string", corev1.ConfigMap{}.SwaggerDoc()["data"]),
	ageColumn(),
}

func configMapRow(cm *corev1.ConfigMap, now time.Time) metav1.TableRow {
	return metav1.TableRow{Cells: []any{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), age(cm.CreationTimestamp, now)}}
}

var secretColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	column("Type", "string", corev1.Secret{}.SwaggerDoc()["type"]),
	column("Data", "string", corev1.Secret{}.SwaggerDoc()["data"]),
	ageColumn(),
}

func secretRow(s *corev1.Secret, now time.Time) metav1.TableRow {
	return metav1.TableRow{Cells: []any{s.Name, string(s.Type), int64(len(s.Data)), age(s.CreationTimestamp, now)}}
}

var serviceAccountColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	column("Secrets", "string", corev1.ServiceAccount{}.SwaggerDoc()["secrets"]),
	ageColumn(),
}

func serviceAccountRow(sa *corev1.ServiceAccount, now time.Time) metav1.TableRow {
	return metav1.TableRow{Cells: []any{sa.Name, int64(len(sa.Secrets)), age(sa.CreationTimestamp, now)}}
}

var eventColumns = []metav1.TableColumnDefinition{
	column("Last Seen", "string", corev1.Event{}.SwaggerDoc()["lastTimestamp"]),
	column("Type", "string", corev1.Event{}.SwaggerDoc()["type"]),
	column("Reason", "string", corev1.Event{}.SwaggerDoc()["reason"]),
	column("Object", "string", corev1.Event{}.SwaggerDoc()["involvedObject"]),
	wideColumn("Subobject", "string", corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]),
	wideColumn("Source", "string", corev1.Event{}.SwaggerDoc()["source"]),
	column("Message", "string", corev1.Event{}.SwaggerDoc()["message"]),
	wideColumn("First Seen", "string", corev1.Event{}.SwaggerDoc()["firstTimestamp"]),
	wideColumn("Count", "string", corev1.Event{}.SwaggerDoc()["count"]),
	{Name: "Name", Type: "string", Format: "name", Priority: 1, Description: objectMetaDoc["name"]},
}

func eventRow(e *corev1.Event, now time.Time) metav1.TableRow {
	first := age(e.FirstTimestamp, now)
	if e.FirstTimestamp.IsZero() {
		first = microAge(e.EventTime, now)
	}
	last := age(e.LastTimestamp, now)
	if e.LastTimestamp.IsZero() {
		last = first
	}
	count := e.Count
	if e.Series != nil {
		last = microAge(e.Series.LastObservedTime, now)
		count = e.Series.Count
	} else if count == 0 {
		count = 1 // events.k8s.io singletons carry no count
	}
	object := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		object += "/" + e.InvolvedObject.Name
	}
	component := orDefault(e.Source.Component, e.ReportingController)
	source := component
	if host := orDefault(e.Source.Host, e.ReportingInstance); host != "" {
		source = component + ", " + host
	}
	return metav1.TableRow{Cells: []any{
		last,
		e.Type,
		e.Reason,
		object,
		e.InvolvedObject.FieldPath,
		source,
		strings.TrimSpace(e.Message),
		first,
		int64(count),
		e.Name,
	}}
}

// eventsV1Row prints an events.k8s.io/v1 Event like its core/v1 twin, as
// Kubernetes does (both are one stored kind).
func eventsV1Row(e *eventsv1.Event, now time.Time) metav1.TableRow {
	core := &corev1.Event{
		ObjectMeta:          e.ObjectMeta,
		InvolvedObject:      e.Regarding,
		Reason:              e.Reason,
		Message:             e.Note,
		Source:              corev1.EventSource{Component: e.DeprecatedSource.Component, Host: e.DeprecatedSource.Host},
		FirstTimestamp:      e.DeprecatedFirstTimestamp,
		LastTimestamp:       e.DeprecatedLastTimestamp,
		Count:               e.DeprecatedCount,
		Type:                e.Type,
		EventTime:           e.EventTime,
		Action:              e.Action,
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
	}
	if e.Series != nil {
		core.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return eventRow(core, now)
}

var resourceQuotaColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	ageColumn(),
	column("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume."),
	column("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
}

// resourceQuotaRow shows "resource: used/hard" pairs sorted by resource,
// limits.* in LIMIT and everything else in REQUEST.
func resourceQuotaRow(q *corev1.ResourceQuota, now time.Time) metav1.TableRow {
	names := make([]string, 0, len(q.Status.Hard))
	for name := range q.Status.Hard {
		names = append(names, string(name))
	}
	sort.Strings(names)
	var requests, limits []string
	for _, name := range names {
		used := q.Status.Used[corev1.ResourceName(name)]
		hard := q.Status.Hard[corev1.ResourceName(name)]
		entry := fmt.Sprintf("%s: %s/%s", name, used.String(), hard.String())
		if strings.HasPrefix(name, "limits.") {
			limits = append(limits, entry)
		} else {
			requests = append(requests, entry)
		}
	}
	return metav1.TableRow{Cells: []any{q.Name, age(q.CreationTimestamp, now), strings.Join(requests, ", "), strings.Join(limits, ", ")}}
}

var persistentVolumeColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	column("Capacity", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["capacity"]),
	column("Access Modes", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["accessModes"]),
	column("Reclaim Policy", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["persistentVolumeReclaimPolicy"]),
	column("Status", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["phase"]),
	column("Claim", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["claimRef"]),
	column("StorageClass", "string", "StorageClass of the pv"),
	column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
	column("Reason", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["reason"]),
	ageColumn(),
	wideColumn("VolumeMode", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["volumeMode"]),
}

func persistentVolumeRow(pv *corev1.PersistentVolume, now time.Time) metav1.TableRow {
	claim := ""
	if ref := pv.Spec.ClaimRef; ref != nil {
		claim = ref.Namespace + "/" + ref.Name
	}
	phase := string(pv.Status.Phase)
	if pv.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	capacity := pv.Spec.Capacity[corev1.ResourceStorage]
	class := pv.Spec.StorageClassName
	if class == "" {
		class = pv.Annotations[corev1.BetaStorageClassAnnotation]
	}
	return metav1.TableRow{Cells: []any{
		pv.Name,
		capacity.String(),
		accessModes(pv.Spec.AccessModes),
		string(pv.Spec.PersistentVolumeReclaimPolicy),
		phase,
		claim,
		class,
		derefOr(pv.Spec.VolumeAttributesClassName, unset),
		pv.Status.Reason,
		age(pv.CreationTimestamp, now),
		volumeMode(pv.Spec.VolumeMode),
	}}
}

var persistentVolumeClaimColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	column("Status", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["phase"]),
	column("Volume", "string", corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeName"]),
	column("Capacity", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["capacity"]),
	column("Access Modes", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["accessModes"]),
	column("StorageClass", "string", "StorageClass of the pvc"),
	column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
	ageColumn(),
	wideColumn("VolumeMode", "string", corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeMode"]),
}

func persistentVolumeClaimRow(pvc *corev1.PersistentVolumeClaim, now time.Time) metav1.TableRow {
	phase := string(pvc.Status.Phase)
	if pvc.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	capacity, modes := "", ""
	if pvc.Spec.VolumeName != "" { // capacity and modes are the bound volume's
		q := pvc.Status.Capacity[corev1.ResourceStorage]
		capacity, modes = q.String(), accessModes(pvc.Status.AccessModes)
	}
	class := derefOr(pvc.Spec.StorageClassName, "")
	if class == "" {
		class = pvc.Annotations[corev1.BetaStorageClassAnnotation]
	}
	return metav1.TableRow{Cells: []any{
		pvc.Name,
		phase,
		pvc.Spec.VolumeName,
		capacity,
		modes,
		class,
		derefOr(pvc.Spec.VolumeAttributesClassName, unset),
		age(pvc.CreationTimestamp, now),
		volumeMode(pvc.Spec.VolumeMode),
	}}
}

// accessModes abbreviates access modes as kubectl does: RWO,ROX,RWX,RWOP.
func accessModes(modes []corev1.PersistentVolumeAccessMode) string {
	var out []string
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{
		{corev1.ReadWriteOnce, "RWO"},
		{corev1.ReadOnlyMany, "ROX"},
		{corev1.ReadWriteMany, "RWX"},
		{corev1.ReadWriteOncePod, "RWOP"},
	} {
		if slices.Contains(modes, m.mode) {
			out = append(out, m.short)
		}
	}
	return strings.Join(out, ",")
}

func volumeMode(m *corev1.PersistentVolumeMode) string {
	if m == nil {
		return unset
	}
	return string(*m)
}

func derefOr(s *string, def string) string {
	if s == nil {
		return def
	}
	return *s
}
