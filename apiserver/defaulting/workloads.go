package defaulting

import (
	"math"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Workload defaults, as Kubernetes' apps/v1 and batch/v1 defaults.go set them.
const (
	DefaultRevisionHistoryLimit       int32 = 10
	DefaultProgressDeadlineSeconds    int32 = 600
	DefaultJobBackoffLimit            int32 = 6
	DefaultSuccessfulJobsHistoryLimit int32 = 3
	DefaultFailedJobsHistoryLimit     int32 = 1
)

var defaultRollingPercent = intstr.FromString("25%")

func defaultDeployment(d *appsv1.Deployment) {
	s := &d.Spec
	if s.Replicas == nil {
		s.Replicas = ptrTo(int32(1))
	}
	if s.Strategy.Type == "" {
		s.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if s.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if s.Strategy.RollingUpdate == nil {
			s.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if s.Strategy.RollingUpdate.MaxUnavailable == nil {
			s.Strategy.RollingUpdate.MaxUnavailable = ptrTo(defaultRollingPercent)
		}
		if s.Strategy.RollingUpdate.MaxSurge == nil {
			s.Strategy.RollingUpdate.MaxSurge = ptrTo(defaultRollingPercent)
		}
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = ptrTo(DefaultRevisionHistoryLimit)
	}
	if s.ProgressDeadlineSeconds == nil {
		s.ProgressDeadlineSeconds = ptrTo(DefaultProgressDeadlineSeconds)
	}
	defaultPodTemplateSpec(&s.Template)
}

func defaultReplicaSet(rs *appsv1.ReplicaSet) {
	if rs.Spec.Replicas == nil {
		rs.Spec.Replicas = ptrTo(int32(1))
	}
	defaultPodTemplateSpec(&rs.Spec.Template)
}

func defaultStatefulSet(ss *appsv1.StatefulSet) {
	s := &ss.Spec
	if s.PodManagementPolicy == "" {
		s.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if s.UpdateStrategy.Type == "" {
		s.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
	}
	if s.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType {
		if s.UpdateStrategy.RollingUpdate == nil {
			s.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
		if s.UpdateStrategy.RollingUpdate.Partition == nil {
			s.UpdateStrategy.RollingUpdate.Partition = ptrTo(int32(0))
		}
	}
	if s.PersistentVolumeClaimRetentionPolicy == nil {
		s.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	if s.PersistentVolumeClaimRetentionPolicy.WhenDeleted == "" {
		s.PersistentVolumeClaimRetentionPolicy.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if s.PersistentVolumeClaimRetentionPolicy.WhenScaled == "" {
		s.PersistentVolumeClaimRetentionPolicy.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if s.Replicas == nil {
		s.Replicas = ptrTo(int32(1))
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = ptrTo(DefaultRevisionHistoryLimit)
	}
	for i := range s.VolumeClaimTemplates {
		defaultPersistentVolumeClaim(&s.VolumeClaimTemplates[i])
	}
	defaultPodTemplateSpec(&s.Template)
}

func defaultDaemonSet(ds *appsv1.DaemonSet) {
	s := &ds.Spec
	if s.UpdateStrategy.Type == "" {
		s.UpdateStrategy.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if s.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if s.UpdateStrategy.RollingUpdate == nil {
			s.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		if s.UpdateStrategy.RollingUpdate.MaxUnavailable == nil {
			s.UpdateStrategy.RollingUpdate.MaxUnavailable = ptrTo(intstr.FromInt32(1))
		}
		if s.UpdateStrategy.RollingUpdate.MaxSurge == nil {
			s.UpdateStrategy.RollingUpdate.MaxSurge = ptrTo(intstr.FromInt32(0))
		}
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = ptrTo(DefaultRevisionHistoryLimit)
	}
	defaultPodTemplateSpec(&s.Template)
}

// Labels Kubernetes' job strategy puts on a Job's pods and selects them by.
const (
	JobControllerUIDLabel       = batchv1.ControllerUidLabel // batch.kubernetes.io/controller-uid
	JobNameLabel                = batchv1.JobNameLabel       // batch.kubernetes.io/job-name
	legacyJobControllerUIDLabel = "controller-uid"
	legacyJobNameLabel          = "job-name"
)

func defaultJob(j *batchv1.Job) {
	s := &j.Spec
	// Neither set: a single pod run once. Only completions set: parallelism 1.
	// Only parallelism set: a work queue, completions stay unset.
	if s.Completions == nil && s.Parallelism == nil {
		s.Completions = ptrTo(int32(1))
		s.Parallelism = ptrTo(int32(1))
	}
	if s.Parallelism == nil {
		s.Parallelism = ptrTo(int32(1))
	}
	if s.BackoffLimit == nil {
		if s.BackoffLimitPerIndex != nil {
			// With a per-index limit the global limit must not cut in first.
			s.BackoffLimit = ptrTo(int32(math.MaxInt32))
		} else {
			s.BackoffLimit = ptrTo(DefaultJobBackoffLimit)
		}
	}
	if s.CompletionMode == nil {
		s.CompletionMode = ptrTo(batchv1.NonIndexedCompletion)
	}
	if s.Suspend == nil {
		s.Suspend = ptrTo(false)
	}
	if s.PodFailurePolicy != nil {
		for i := range s.PodFailurePolicy.Rules {
			for k := range s.PodFailurePolicy.Rules[i].OnPodConditions {
				if s.PodFailurePolicy.Rules[i].OnPodConditions[k].Status == "" {
					s.PodFailurePolicy.Rules[i].OnPodConditions[k].Status = corev1.ConditionTrue
				}
			}
		}
	}
	if s.PodReplacementPolicy == nil {
		// A pod failure policy needs pods fully terminated before judging them.
		if s.PodFailurePolicy != nil {
			s.PodReplacementPolicy = ptrTo(batchv1.Failed)
		} else {
			s.PodReplacementPolicy = ptrTo(batchv1.TerminatingOrFailed)
		}
	}
	// A Job without labels takes its pods' labels. Kubernetes does this when
	// decoding the request (before the selector is generated) and again when
	// reading the stored Job, so an unlabelled Job ends up with the generated
	// labels while a labelled one keeps its own; both steps happen here.
	copyTemplateLabels(j)
	if s.ManualSelector == nil || !*s.ManualSelector {
		generateJobSelector(j)
	}
	copyTemplateLabels(j)
	defaultPodTemplateSpec(&s.Template)
}

func copyTemplateLabels(j *batchv1.Job) {
	if len(j.Labels) > 0 || len(j.Spec.Template.Labels) == 0 {
		return
	}
	j.Labels = make(map[string]string, len(j.Spec.Template.Labels))
	for k, v := range j.Spec.Template.Labels {
		j.Labels[k] = v
	}
}

// generateJobSelector gives a Job the selector and pod labels Kubernetes'
// job strategy generates from its uid, so that two Jobs never select each
// other's pods. It needs the uid, so it does nothing before one is assigned.
func generateJobSelector(j *batchv1.Job) {
	uid := string(j.UID)
	if uid == "" {
		return
	}
	if j.Spec.Template.Labels == nil {
		j.Spec.Template.Labels = map[string]string{}
	}
	labels := j.Spec.Template.Labels
	setIfAbsent(labels, JobControllerUIDLabel, uid)
	setIfAbsent(labels, legacyJobControllerUIDLabel, uid)
	if j.Name != "" {
		setIfAbsent(labels, JobNameLabel, j.Name)
		setIfAbsent(labels, legacyJobNameLabel, j.Name)
	}
	if j.Spec.Selector == nil {
		j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{JobControllerUIDLabel: uid}}
	}
}

func setIfAbsent(m map[string]string, k, v string) {
	if _, ok := m[k]; !ok {
		m[k] = v
	}
}

func defaultCronJob(cj *batchv1.CronJob) {
	s := &cj.Spec
	if s.ConcurrencyPolicy == "" {
		s.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if s.Suspend == nil {
		s.Suspend = ptrTo(false)
	}
	if s.SuccessfulJobsHistoryLimit == nil {
		s.SuccessfulJobsHistoryLimit = ptrTo(DefaultSuccessfulJobsHistoryLimit)
	}
	if s.FailedJobsHistoryLimit == nil {
		s.FailedJobsHistoryLimit = ptrTo(DefaultFailedJobsHistoryLimit)
	}
	defaultPodTemplateSpec(&s.JobTemplate.Spec.Template)
}
