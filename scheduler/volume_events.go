package scheduler

import (
	"k8s.io/client-go/tools/cache"

	"github.com/skiffkube/skiff/scheduler/plugins/volumebinding"
)

// addVolumeEventHandlers wakes pods VolumeBinding rejected when a claim, a
// volume or a storage class appears or changes (the claim they lacked was
// created, a volume became available or bound).
func (s *Scheduler) addVolumeEventHandlers() error {
	wake := func(any) { s.queue.MoveAllToActiveOrBackoffQueue(rejectedBy(volumebinding.Name)) }
	handler := cache.ResourceEventHandlerFuncs{AddFunc: wake, UpdateFunc: func(_, cur any) { wake(cur) }}
	for _, inf := range []cache.SharedIndexInformer{
		s.factory.Core().V1().PersistentVolumeClaims().Informer(),
		s.factory.Core().V1().PersistentVolumes().Informer(),
		s.factory.Storage().V1().StorageClasses().Informer(),
	} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return err
		}
	}
	return nil
}
