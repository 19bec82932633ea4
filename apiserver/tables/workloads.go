package tables

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
)

func templateColumns(selectorDoc string) []metav1.TableColumnDefinition {
	cols := []metav1.TableColumnDefinition{
		wideColumn("Containers", "string", containerDoc),
		wideColumn("Images", "string", imagesDoc),
	}
	if selectorDoc != "" {
		cols = append(cols, wideColumn("Selector", "string", selectorDoc))
	}
	return cols
}

func int32Or(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

var deploymentColumns = append([]metav1.TableColumnDefinition{
	nameColumn(),
	column("Ready", "string", "Number of the pod with ready state"),
	column("Up-to-date", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]),
	column("Available", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]),
	ageColumn(),
}, templateColumns(appsv1.DeploymentSpec{}.SwaggerDoc()["selector"])...)

func deploymentRow(d *appsv1.Deployment, now time.Time) metav1.TableRow {
	names, images := containerCells(d.Spec.Template.Spec.Containers)
	return metav1.TableRow{Cells: []any{
		d.Name,
		fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, int32Or(d.Spec.Replicas, 0)),
		int64(d.Status.UpdatedReplicas),
		int64(d.Status.AvailableReplicas),
		age(d.CreationTimestamp, now),
		names, images, selectorString(d.Spec.Selector),
	}}
}

var replicaSetColumns = append([]metav1.TableColumnDefinition{
	nameColumn(),
	column("Desired", "integer", appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]),
	column("Current", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]),
	column("Ready", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]),
	ageColumn(),
}, templateColumns(appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"])...)

func replicaSetRow(rs *appsv1.ReplicaSet, now time.Time) metav1.TableRow {
	names, images := containerCells(rs.Spec.Template.Spec.Containers)
	return metav1.TableRow{Cells: []any{
		rs.Name,
		int64(int32Or(rs.Spec.Replicas, 0)),
		int64(rs.Status.Replicas),
		int64(rs.Status.ReadyReplicas),
		age(rs.CreationTimestamp, now),
		names, images, selectorString(rs.Spec.Selector),
	}}
}

var replicationControllerColumns = append([]metav1.TableColumnDefinition{
	nameColumn(),
	column("Desired", "integer", corev1.ReplicationControllerSpec{}.SwaggerDoc()["replicas"]),
	column("Current", "integer", corev1.ReplicationControllerStatus{}.SwaggerDoc()["replicas"]),
	column("Ready", "integer", corev1.ReplicationControllerStatus{}.SwaggerDoc()["readyReplicas"]),
	ageColumn(),
}, templateColumns(corev1.ReplicationControllerSpec{}.SwaggerDoc()["selector"])...)

// replicationControllerRow prints a ReplicationController as a ReplicaSet
// is printed; its selector is a map of labels. A template the API requires
// but a stored object may lack gives empty container cells.
func replicationControllerRow(rc *corev1.ReplicationController, now time.Time) metav1.TableRow {
	var names, images string
	if rc.Spec.Template != nil {
		names, images = containerCells(rc.Spec.Template.Spec.Containers)
	}
	return metav1.TableRow{Cells: []any{
		rc.Name,
		int64(int32Or(rc.Spec.Replicas, 0)),
		int64(rc.Status.Replicas),
		int64(rc.Status.ReadyReplicas),
		age(rc.CreationTimestamp, now),
		names, images, labels.FormatLabels(rc.Spec.Selector),
	}}
}

var daemonSetColumns = append([]metav1.TableColumnDefinition{
	nameColumn(),
	column("Desired", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["desiredNumberScheduled"]),
	column("Current", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["currentNumberScheduled"]),
	column("Ready", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["numberReady"]),
	column("Up-to-date", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["updatedNumberScheduled"]),
	column("Available", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["numberAvailable"]),
	column("Node Selector", "string", corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]),
	ageColumn(),
}, templateColumns(appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"])...)

func daemonSetRow(ds *appsv1.DaemonSet, now time.Time) metav1.TableRow {
	names, images := containerCells(ds.Spec.Template.Spec.Containers)
	st := ds.Status
	return metav1.TableRow{Cells: []any{
		ds.Name,
		int64(st.DesiredNumberScheduled),
		int64(st.CurrentNumberScheduled),
		int64(st.NumberReady),
		int64(st.UpdatedNumberScheduled),
		int64(st.NumberAvailable),
		labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector),
		age(ds.CreationTimestamp, now),
		names, images, selectorString(ds.Spec.Selector),
	}}
}

var statefulSetColumns = append([]metav1.TableColumnDefinition{
	nameColumn(),
	column("Ready", "string", "Number of the pod with ready state"),
	ageColumn(),
}, templateColumns("")...)

func statefulSetRow(ss *appsv1.StatefulSet, now time.Time) metav1.TableRow {
	names, images := containerCells(ss.Spec.Template.Spec.Containers)
	return metav1.TableRow{Cells: []any{
		ss.Name,
		fmt.Sprintf("%d/%d", ss.Status.ReadyReplicas, int32Or(ss.Spec.Replicas, 0)),
		age(ss.CreationTimestamp, now),
		names, images,
	}}
}

var jobColumns = append([]metav1.TableColumnDefinition{
	nameColumn(),
	column("Status", "string", "Status of the job."),
	column("Completions", "string", batchv1.JobStatus{}.SwaggerDoc()["succeeded"]),
	column("Duration", "string", "Time required to complete the job."),
	ageColumn(),
}, templateColumns(batchv1.JobSpec{}.SwaggerDoc()["selector"])...)

func jobCondition(j *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// jobStatus: finished states first, then deletion, then states of a job
// still running.
func jobStatus(j *batchv1.Job) string {
	switch {
	case jobCondition(j, batchv1.JobComplete):
		return "Complete"
	case jobCondition(j, batchv1.JobFailed):
		return "Failed"
	case j.DeletionTimestamp != nil:
		return "Terminating"
	case jobCondition(j, batchv1.JobSuspended):
		return "Suspended"
	case jobCondition(j, batchv1.JobFailureTarget):
		return "FailureTarget"
	default:
		return "Running"
	}
}

func jobRow(j *batchv1.Job, now time.Time) metav1.TableRow {
	var completions string
	switch parallelism := int32Or(j.Spec.Parallelism, 0); {
	case j.Spec.Completions != nil:
		completions = fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	case parallelism > 1: // a work-queue job: any one success completes it
		completions = fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, parallelism)
	default:
		completions = fmt.Sprintf("%d/1", j.Status.Succeeded)
	}
	var took string
	if start := j.Status.StartTime; start != nil {
		end := now
		if j.Status.CompletionTime != nil {
			end = j.Status.CompletionTime.Time
		}
		took = duration.HumanDuration(end.Sub(start.Time))
	}
	names, images := containerCells(j.Spec.Template.Spec.Containers)
	return metav1.TableRow{Cells: []any{
		j.Name,
		jobStatus(j),
		completions,
		took,
		age(j.CreationTimestamp, now),
		names, images, selectorString(j.Spec.Selector),
	}}
}

var cronJobColumns = append([]metav1.TableColumnDefinition{
	nameColumn(),
	column("Schedule", "string", batchv1.CronJobSpec{}.SwaggerDoc()["schedule"]),
	column("Timezone", "string", batchv1.CronJobSpec{}.SwaggerDoc()["timeZone"]),
	column("Suspend", "boolean", batchv1.CronJobSpec{}.SwaggerDoc()["suspend"]),
	column("Active", "integer", batchv1.CronJobStatus{}.SwaggerDoc()["active"]),
	column("Last Schedule", "string", batchv1.CronJobStatus{}.SwaggerDoc()["lastScheduleTime"]),
	ageColumn(),
}, templateColumns(batchv1.JobSpec{}.SwaggerDoc()["selector"])...)

func cronJobRow(cj *batchv1.CronJob, now time.Time) metav1.TableRow {
	last := none
	if cj.Status.LastScheduleTime != nil {
		last = age(*cj.Status.LastScheduleTime, now)
	}
	tmpl := cj.Spec.JobTemplate.Spec
	names, images := containerCells(tmpl.Template.Spec.Containers)
	return metav1.TableRow{Cells: []any{
		cj.Name,
		cj.Spec.Schedule,
		derefOr(cj.Spec.TimeZone, none),
		boolPtrString(cj.Spec.Suspend),
		int64(len(cj.Status.Active)),
		last,
		age(cj.CreationTimestamp, now),
		names, images, selectorString(tmpl.Selector),
	}}
}
