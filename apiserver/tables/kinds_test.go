package tables

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func om(name string, age time.Duration) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: ago(age)}
}

func podTemplate(containers ...string) corev1.PodTemplateSpec {
	var t corev1.PodTemplateSpec
	for _, c := range containers {
		t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: c, Image: "registry.test/" + c + ":1"})
	}
	return t
}

var appSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}

func TestKinds(t *testing.T) {
	cases := []struct {
		name    string
		obj     runtime.Object
		columns []string
		cells   []any
	}{
		{
			name: "node ready with roles and addresses",
			obj: &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: ago(49 * time.Hour), Labels: map[string]string{
					"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/etcd": "true", "kubernetes.io/role": "worker",
				}},
				Spec: corev1.NodeSpec{Unschedulable: true},
				Status: corev1.NodeStatus{
					Conditions: []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, {Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
					Addresses:  []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "n1"}, {Type: corev1.NodeInternalIP, Address: "192.168.1.10"}},
					NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.37.2-skiff", OSImage: "Debian GNU/Linux 13", KernelVersion: "6.12.0", ContainerRuntimeVersion: "containerd://2.1.0"},
				},
			},
			columns: []string{"Name", "Status", "Roles", "Age", "Version", "Internal-IP*", "External-IP*", "OS-Image*", "Kernel-Version*", "Container-Runtime*"},
			cells:   []any{"n1", "Ready,SchedulingDisabled", "control-plane,etcd,worker", "2d1h", "v1.37.2-skiff", "192.168.1.10", "<none>", "Debian GNU/Linux 13", "6.12.0", "containerd://2.1.0"},
		},
		{
			name:    "node without conditions or info",
			obj:     &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2", CreationTimestamp: ago(time.Minute)}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{}}},
			columns: []string{"Name", "Status", "Roles", "Age", "Version", "Internal-IP*", "External-IP*", "OS-Image*", "Kernel-Version*", "Container-Runtime*"},
			cells:   []any{"n2", "Unknown", "<none>", "60s", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"},
		},
		{
			name:    "not ready node",
			obj:     &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3", CreationTimestamp: ago(time.Minute)}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}}},
			columns: []string{"Name", "Status", "Roles", "Age", "Version", "Internal-IP*", "External-IP*", "OS-Image*", "Kernel-Version*", "Container-Runtime*"},
			cells:   []any{"n3", "NotReady", "<none>", "60s", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"},
		},
		{
			name:    "namespace",
			obj:     &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", CreationTimestamp: ago(3 * time.Hour)}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
			columns: []string{"Name", "Status", "Age"},
			cells:   []any{"kube-system", "Active", "3h"},
		},
		{
			name: "cluster IP service",
			obj: &corev1.Service{ObjectMeta: om("web", 5*time.Minute), Spec: corev1.ServiceSpec{
				Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.43.0.10", ClusterIPs: []string{"10.43.0.10"},
				Ports:    []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}, {Port: 53, Protocol: corev1.ProtocolUDP}},
				Selector: map[string]string{"app": "web", "tier": "fe"},
			}},
			columns: []string{"Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector*"},
			cells:   []any{"web", "ClusterIP", "10.43.0.10", "<none>", "80/TCP,53/UDP", "5m", "app=web,tier=fe"},
		},
		{
			name: "node port service with external IPs",
			obj: &corev1.Service{ObjectMeta: om("np", 5*time.Minute), Spec: corev1.ServiceSpec{
				Type: corev1.ServiceTypeNodePort, ClusterIPs: []string{"10.43.0.11"}, ExternalIPs: []string{"1.2.3.4", "5.6.7.8"},
				Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}},
			}},
			columns: []string{"Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector*"},
			cells:   []any{"np", "NodePort", "10.43.0.11", "1.2.3.4,5.6.7.8", "80:30080/TCP", "5m", "<none>"},
		},
		{
			name:    "pending load balancer",
			obj:     &corev1.Service{ObjectMeta: om("lb", time.Minute), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.43.0.12"}, Ports: []corev1.ServicePort{{Port: 443, NodePort: 31443, Protocol: corev1.ProtocolTCP}}}},
			columns: []string{"Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector*"},
			cells:   []any{"lb", "LoadBalancer", "10.43.0.12", "<pending>", "443:31443/TCP", "60s", "<none>"},
		},
		{
			name: "load balancer with ingress",
			obj: &corev1.Service{ObjectMeta: om("lb", time.Minute),
				Spec:   corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.43.0.12"}},
				Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "203.0.113.5"}, {Hostname: "lb.example.test"}}}}},
			columns: []string{"Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector*"},
			cells:   []any{"lb", "LoadBalancer", "10.43.0.12", "203.0.113.5,lb.example.test", "<none>", "60s", "<none>"},
		},
		{
			name:    "headless external name service",
			obj:     &corev1.Service{ObjectMeta: om("ext", time.Minute), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.test"}},
			columns: []string{"Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector*"},
			cells:   []any{"ext", "ExternalName", "<none>", "db.example.test", "<none>", "60s", "<none>"},
		},
		{
			name: "endpoints with more than three addresses",
			obj: &corev1.Endpoints{ObjectMeta: om("web", time.Minute), Subsets: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{{IP: "10.42.0.1"}, {IP: "10.42.0.2"}},
				Ports:     []corev1.EndpointPort{{Name: "http", Port: 80}, {Name: "https", Port: 443}},
			}}},
			columns: []string{"Name", "Endpoints", "Age"},
			cells:   []any{"web", "10.42.0.1:80,10.42.0.2:80,10.42.0.1:443 + 1 more...", "60s"},
		},
		{
			name:    "endpoints without subsets",
			obj:     &corev1.Endpoints{ObjectMeta: om("none", time.Minute)},
			columns: []string{"Name", "Endpoints", "Age"},
			cells:   []any{"none", "<none>", "60s"},
		},
		{
			name: "endpoint slice",
			obj: &discoveryv1.EndpointSlice{ObjectMeta: om("web-abc", time.Minute), AddressType: discoveryv1.AddressTypeIPv4,
				Ports:     []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}, {Name: ptr.To("metrics")}},
				Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.42.0.1"}}, {Addresses: []string{"10.42.0.2"}}}},
			columns: []string{"Name", "AddressType", "Ports", "Endpoints", "Age"},
			cells:   []any{"web-abc", "IPv4", "80,metrics", "10.42.0.1,10.42.0.2", "60s"},
		},
		{
			name:    "empty endpoint slice",
			obj:     &discoveryv1.EndpointSlice{ObjectMeta: om("empty", time.Minute), AddressType: discoveryv1.AddressTypeIPv6},
			columns: []string{"Name", "AddressType", "Ports", "Endpoints", "Age"},
			cells:   []any{"empty", "IPv6", "<unset>", "<unset>", "60s"},
		},
		{
			name:    "config map counts data and binary data",
			obj:     &corev1.ConfigMap{ObjectMeta: om("cfg", 2*time.Hour), Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"c": {1}}},
			columns: []string{"Name", "Data", "Age"},
			cells:   []any{"cfg", int64(3), "120m"},
		},
		{
			name:    "secret",
			obj:     &corev1.Secret{ObjectMeta: om("tls", 2*time.Hour), Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil, "tls.key": nil}},
			columns: []string{"Name", "Type", "Data", "Age"},
			cells:   []any{"tls", "kubernetes.io/tls", int64(2), "120m"},
		},
		{
			name:    "service account",
			obj:     &corev1.ServiceAccount{ObjectMeta: om("default", 26*time.Hour), Secrets: []corev1.ObjectReference{{Name: "tok"}}},
			columns: []string{"Name", "Secrets", "Age"},
			cells:   []any{"default", int64(1), "26h"},
		},
		{
			name: "core event",
			obj: &corev1.Event{ObjectMeta: om("web.1", time.Hour),
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web-1", FieldPath: "spec.containers{a}"},
				Reason:         "BackOff", Message: " Back-off restarting failed container \n", Type: corev1.EventTypeWarning,
				Source:         corev1.EventSource{Component: "kubelet", Host: "n1"},
				FirstTimestamp: ago(time.Hour), LastTimestamp: ago(30 * time.Second), Count: 7},
			columns: []string{"Last Seen", "Type", "Reason", "Object", "Subobject*", "Source*", "Message", "First Seen*", "Count*", "Name*"},
			cells:   []any{"30s", "Warning", "BackOff", "pod/web-1", "spec.containers{a}", "kubelet, n1", "Back-off restarting failed container", "60m", int64(7), "web.1"},
		},
		{
			name: "core event in the new style uses eventTime, series and reporting controller",
			obj: &corev1.Event{ObjectMeta: om("n.2", time.Hour),
				InvolvedObject: corev1.ObjectReference{Kind: "Node"},
				Reason:         "Starting", Type: corev1.EventTypeNormal, ReportingController: "skiff-agent",
				EventTime: metav1.NewMicroTime(now.Add(-10 * time.Minute)),
				Series:    &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(now.Add(-2 * time.Minute))}},
			columns: []string{"Last Seen", "Type", "Reason", "Object", "Subobject*", "Source*", "Message", "First Seen*", "Count*", "Name*"},
			cells:   []any{"2m", "Normal", "Starting", "node", "", "skiff-agent", "", "10m", int64(3), "n.2"},
		},
		{
			name: "events.k8s.io event prints like a core event",
			obj: &eventsv1.Event{ObjectMeta: om("web.3", time.Hour),
				Regarding: corev1.ObjectReference{Kind: "Deployment", Name: "web"},
				Reason:    "ScalingReplicaSet", Note: "Scaled up replica set web-abc to 3", Type: corev1.EventTypeNormal,
				ReportingController: "deployment-controller", ReportingInstance: "skiff-1",
				EventTime: metav1.NewMicroTime(now.Add(-5 * time.Minute))},
			columns: []string{"Last Seen", "Type", "Reason", "Object", "Subobject*", "Source*", "Message", "First Seen*", "Count*", "Name*"},
			cells:   []any{"5m", "Normal", "ScalingReplicaSet", "deployment/web", "", "deployment-controller, skiff-1", "Scaled up replica set web-abc to 3", "5m", int64(1), "web.3"},
		},
		{
			name: "resource quota splits requests and limits",
			obj: &corev1.ResourceQuota{ObjectMeta: om("q", time.Minute), Status: corev1.ResourceQuotaStatus{
				Hard: corev1.ResourceList{"pods": resource.MustParse("10"), "requests.cpu": resource.MustParse("2"), "limits.memory": resource.MustParse("1Gi")},
				Used: corev1.ResourceList{"pods": resource.MustParse("3"), "requests.cpu": resource.MustParse("500m")},
			}},
			columns: []string{"Name", "Age", "Request", "Limit"},
			cells:   []any{"q", "60s", "pods: 3/10, requests.cpu: 500m/2", "limits.memory: 0/1Gi"},
		},
		{
			name:    "limit range uses the generic columns",
			obj:     &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "lr", CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}},
			columns: []string{"Name", "Created At"},
			cells:   []any{"lr", "2026-01-02T03:04:05Z"},
		},
		{
			name: "deployment",
			obj: &appsv1.Deployment{ObjectMeta: om("web", 10*time.Minute),
				Spec:   appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: appSelector, Template: podTemplate("nginx", "sidecar")},
				Status: appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2}},
			columns: []string{"Name", "Ready", "Up-to-date", "Available", "Age", "Containers*", "Images*", "Selector*"},
			cells:   []any{"web", "2/3", int64(3), int64(2), "10m", "nginx,sidecar", "registry.test/nginx:1,registry.test/sidecar:1", "app=web"},
		},
		{
			name: "replica set",
			obj: &appsv1.ReplicaSet{ObjectMeta: om("web-abc", 10*time.Minute),
				Spec:   appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3), Selector: appSelector, Template: podTemplate("nginx")},
				Status: appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 1}},
			columns: []string{"Name", "Desired", "Current", "Ready", "Age", "Containers*", "Images*", "Selector*"},
			cells:   []any{"web-abc", int64(3), int64(3), int64(1), "10m", "nginx", "registry.test/nginx:1", "app=web"},
		},
		{
			name: "replication controller",
			obj: &corev1.ReplicationController{ObjectMeta: om("web", 10*time.Minute),
				Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](3), Selector: map[string]string{"app": "web"},
					Template: func() *corev1.PodTemplateSpec { t := podTemplate("nginx", "sidecar"); return &t }()},
				Status: corev1.ReplicationControllerStatus{Replicas: 2, ReadyReplicas: 1}},
			columns: []string{"Name", "Desired", "Current", "Ready", "Age", "Containers*", "Images*", "Selector*"},
			cells:   []any{"web", int64(3), int64(2), int64(1), "10m", "nginx,sidecar", "registry.test/nginx:1,registry.test/sidecar:1", "app=web"},
		},
		{
			name: "daemon set",
			obj: &appsv1.DaemonSet{ObjectMeta: om("agent", 10*time.Minute),
				Spec: appsv1.DaemonSetSpec{Selector: appSelector, Template: func() corev1.PodTemplateSpec {
					t := podTemplate("agent")
					t.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
					return t
				}()},
				Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 4, CurrentNumberScheduled: 4, NumberReady: 3, UpdatedNumberScheduled: 2, NumberAvailable: 3}},
			columns: []string{"Name", "Desired", "Current", "Ready", "Up-to-date", "Available", "Node Selector", "Age", "Containers*", "Images*", "Selector*"},
			cells:   []any{"agent", int64(4), int64(4), int64(3), int64(2), int64(3), "kubernetes.io/os=linux", "10m", "agent", "registry.test/agent:1", "app=web"},
		},
		{
			name: "stateful set",
			obj: &appsv1.StatefulSet{ObjectMeta: om("db", 10*time.Minute),
				Spec:   appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), Template: podTemplate("pg")},
				Status: appsv1.StatefulSetStatus{ReadyReplicas: 3}},
			columns: []string{"Name", "Ready", "Age", "Containers*", "Images*"},
			cells:   []any{"db", "3/3", "10m", "pg", "registry.test/pg:1"},
		},
		{
			name: "running job with completions",
			obj: &batchv1.Job{ObjectMeta: om("pi", 10*time.Minute),
				Spec:   batchv1.JobSpec{Completions: ptr.To[int32](5), Selector: appSelector, Template: podTemplate("pi")},
				Status: batchv1.JobStatus{Succeeded: 2, StartTime: ptr.To(ago(8 * time.Minute))}},
			columns: []string{"Name", "Status", "Completions", "Duration", "Age", "Containers*", "Images*", "Selector*"},
			cells:   []any{"pi", "Running", "2/5", "8m", "10m", "pi", "registry.test/pi:1", "app=web"},
		},
		{
			name: "complete job",
			obj: &batchv1.Job{ObjectMeta: om("pi", 10*time.Minute),
				Spec: batchv1.JobSpec{Template: podTemplate("pi")},
				Status: batchv1.JobStatus{Succeeded: 1, StartTime: ptr.To(ago(8 * time.Minute)), CompletionTime: ptr.To(ago(8*time.Minute - 42*time.Second)),
					Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}},
			columns: []string{"Name", "Status", "Completions", "Duration", "Age", "Containers*", "Images*", "Selector*"},
			cells:   []any{"pi", "Complete", "1/1", "42s", "10m", "pi", "registry.test/pi:1", "<none>"},
		},
		{
			name: "suspended work-queue job",
			obj: &batchv1.Job{ObjectMeta: om("q", 10*time.Minute),
				Spec:   batchv1.JobSpec{Parallelism: ptr.To[int32](4), Template: podTemplate("w")},
				Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobSuspended, Status: corev1.ConditionTrue}}}},
			columns: []string{"Name", "Status", "Completions", "Duration", "Age", "Containers*", "Images*", "Selector*"},
			cells:   []any{"q", "Suspended", "0/1 of 4", "", "10m", "w", "registry.test/w:1", "<none>"},
		},
		{
			name: "failed job",
			obj: &batchv1.Job{ObjectMeta: om("f", 10*time.Minute),
				Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}}},
			columns: []string{"Name", "Status", "Completions", "Duration", "Age", "Containers*", "Images*", "Selector*"},
			cells:   []any{"f", "Failed", "0/1", "", "10m", "", "", "<none>"},
		},
		{
			name: "cron job",
			obj: &batchv1.CronJob{ObjectMeta: om("nightly", 48*time.Hour),
				Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", TimeZone: ptr.To("Europe/Paris"), Suspend: ptr.To(false),
					JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: podTemplate("backup")}}},
				Status: batchv1.CronJobStatus{Active: []corev1.ObjectReference{{Name: "nightly-1"}}, LastScheduleTime: ptr.To(ago(9 * time.Hour))}},
			columns: []string{"Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age", "Containers*", "Images*", "Selector*"},
			cells:   []any{"nightly", "0 3 * * *", "Europe/Paris", "False", int64(1), "9h", "2d", "backup", "registry.test/backup:1", "<none>"},
		},
		{
			name:    "cron job never scheduled",
			obj:     &batchv1.CronJob{ObjectMeta: om("new", time.Minute), Spec: batchv1.CronJobSpec{Schedule: "@hourly"}},
			columns: []string{"Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age", "Containers*", "Images*", "Selector*"},
			cells:   []any{"new", "@hourly", "<none>", "<unset>", int64(0), "<none>", "60s", "", "", "<none>"},
		},
		{
			name:    "lease",
			obj:     &coordinationv1.Lease{ObjectMeta: om("kube-scheduler", time.Hour), Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("skiff-1_abc")}},
			columns: []string{"Name", "Holder", "Age"},
			cells:   []any{"kube-scheduler", "skiff-1_abc", "60m"},
		},
		{
			name: "pod disruption budget",
			obj: &policyv1.PodDisruptionBudget{ObjectMeta: om("web", time.Hour),
				Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromString("50%"))},
				Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}},
			columns: []string{"Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"},
			cells:   []any{"web", "50%", "N/A", int64(1), "60m"},
		},
		{
			name:    "role uses the generic columns",
			obj:     &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader", CreationTimestamp: metav1.NewTime(time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC))}},
			columns: []string{"Name", "Created At"},
			cells:   []any{"reader", "2026-05-06T07:08:09Z"},
		},
		{
			name:    "cluster role uses the generic columns",
			obj:     &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "admin", CreationTimestamp: metav1.NewTime(time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC))}},
			columns: []string{"Name", "Created At"},
			cells:   []any{"admin", "2026-05-06T07:08:09Z"},
		},
		{
			name: "role binding",
			obj: &rbacv1.RoleBinding{ObjectMeta: om("read", time.Hour), RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "reader"},
				Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}, {Kind: "User", Name: "bob"}, {Kind: "Group", Name: "devs"}, {Kind: "ServiceAccount", Namespace: "ci", Name: "runner"}}},
			columns: []string{"Name", "Role", "Age", "Users*", "Groups*", "ServiceAccounts*"},
			cells:   []any{"read", "Role/reader", "60m", "alice, bob", "devs", "ci:runner"},
		},
		{
			name:    "cluster role binding",
			obj:     &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "admins", CreationTimestamp: ago(time.Hour)}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "cluster-admin"}, Subjects: []rbacv1.Subject{{Kind: "Group", Name: "system:masters"}}},
			columns: []string{"Name", "Role", "Age", "Users*", "Groups*", "ServiceAccounts*"},
			cells:   []any{"admins", "ClusterRole/cluster-admin", "60m", "", "system:masters", ""},
		},
		{
			name:    "priority class",
			obj:     &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-node-critical", CreationTimestamp: ago(time.Hour)}, Value: 2000001000, PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority)},
			columns: []string{"Name", "Value", "Global-Default", "Age", "PreemptionPolicy"},
			cells:   []any{"system-node-critical", int64(2000001000), false, "60m", "PreemptLowerPriority"},
		},
		{
			name: "ingress with four hosts, TLS and load balancer addresses",
			obj: &networkingv1.Ingress{ObjectMeta: om("web", time.Hour), Spec: networkingv1.IngressSpec{
				IngressClassName: ptr.To("nginx"), TLS: []networkingv1.IngressTLS{{SecretName: "tls"}},
				Rules: []networkingv1.IngressRule{{Host: "a.test"}, {}, {Host: "b.test"}, {Host: "c.test"}, {Host: "d.test"}},
			}, Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{
				{Hostname: "lb.test"}, {IP: "192.0.2.20"}, {IP: "192.0.2.3"}, {IP: "192.0.2.20"},
			}}}},
			columns: []string{"Name", "Class", "Hosts", "Address", "Ports", "Age"},
			cells:   []any{"web", "nginx", "a.test,b.test,c.test + 2 more...", "192.0.2.20,192.0.2.3,lb.test", "80, 443", "60m"},
		},
		{
			name:    "ingress with a default backend only",
			obj:     &networkingv1.Ingress{ObjectMeta: om("default", time.Hour), Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{}}},
			columns: []string{"Name", "Class", "Hosts", "Address", "Ports", "Age"},
			cells:   []any{"default", "<none>", "*", "", "80", "60m"},
		},
		{
			name: "ingress class",
			obj: &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx", CreationTimestamp: ago(time.Hour)}, Spec: networkingv1.IngressClassSpec{
				Controller: "k8s.io/ingress-nginx", Parameters: &networkingv1.IngressClassParametersReference{APIGroup: ptr.To("k8s.example.com"), Kind: "Params", Name: "lb"},
			}},
			columns: []string{"Name", "Controller", "Parameters", "Age"},
			cells:   []any{"nginx", "k8s.io/ingress-nginx", "Params.k8s.example.com/lb", "60m"},
		},
		{
			name:    "network policy",
			obj:     &networkingv1.NetworkPolicy{ObjectMeta: om("deny", time.Hour)},
			columns: []string{"Name", "Pod-Selector", "Age"},
			cells:   []any{"deny", "<none>", "60m"},
		},
		{
			name:    "custom resource definition uses the generic columns",
			obj:     &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com", CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))}},
			columns: []string{"Name", "Created At"},
			cells:   []any{"widgets.example.com", "2026-11-29T00:00:00Z"},
		},
		{
			name: "persistent volume",
			obj: &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1", CreationTimestamp: ago(time.Hour)}, Spec: corev1.PersistentVolumeSpec{
				Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")},
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany, corev1.ReadWriteOnce}, PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: "data"}, StorageClassName: "local",
			}, Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}},
			columns: []string{"Name", "Capacity", "Access Modes", "Reclaim Policy", "Status", "Claim", "StorageClass", "VolumeAttributesClass", "Reason", "Age", "VolumeMode*"},
			cells:   []any{"pv1", "5Gi", "RWO,RWX", "Retain", "Bound", "default/data", "local", "<unset>", "", "60m", "<unset>"},
		},
		{
			name: "bound persistent volume claim",
			obj: &corev1.PersistentVolumeClaim{ObjectMeta: om("data", time.Hour),
				Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv1", StorageClassName: ptr.To("local"), VolumeMode: ptr.To(corev1.PersistentVolumeFilesystem)},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}}},
			columns: []string{"Name", "Status", "Volume", "Capacity", "Access Modes", "StorageClass", "VolumeAttributesClass", "Age", "VolumeMode*"},
			cells:   []any{"data", "Bound", "pv1", "5Gi", "RWO", "local", "<unset>", "60m", "Filesystem"},
		},
		{
			name: "default storage class",
			obj: &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local", CreationTimestamp: ago(time.Hour), Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
				Provisioner: "skiff.io/local-path", VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)},
			columns: []string{"Name", "Provisioner", "ReclaimPolicy", "VolumeBindingMode", "AllowVolumeExpansion", "Age"},
			cells:   []any{"local (default)", "skiff.io/local-path", "Delete", "WaitForFirstConsumer", false, "60m"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			table, err := ConvertToTable(tc.obj, Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			assertColumns(t, table, tc.columns...)
			if len(table.Rows) != 1 {
				t.Fatalf("%d rows, want 1", len(table.Rows))
			}
			assertCells(t, table.Rows[0].Cells, tc.cells...)
		})
	}
}
