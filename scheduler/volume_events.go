package scheduler

import (
	"k8s.io/client-go/tools/cache"

	"github.com/skiffkube/skiff/scheduler/framework"
)

// addVolumeEventHandlers tells the queue when a claim, a volume or a storage
// class appears or changes (the claim a pod lacked was created, a volume
// became available or bound); the volume plugins' hints judge which pods it
// may help.
func (s *Scheduler) addVolumeEventHandlers() error {
	for _, v := range []struct {
		resource framework.EventResource
		informer cache.SharedIndexInformer
	}{
		{framework.PersistentVolumeClaim, s.factory.Core().V1().PersistentVolumeClaims().Informer()},
		{framework.PersistentVolume, s.factory.Core().V1().PersistentVolumes().Informer()},
		{framework.StorageClass, s.factory.Storage().V1().StorageClasses().Informer()},
	} {
		resource := v.resource
		handler := cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				s.event(framework.ClusterEvent{Resource: resource, ActionType: framework.Add}, nil, obj)
			},
			UpdateFunc: func(oldObj, obj any) {
				s.event(framework.ClusterEvent{Resource: resource, ActionType: framework.Update}, oldObj, obj)
			},
		}
		if _, err := v.informer.AddEventHandler(handler); err != nil {
			return err
		}
	}
	return nil
}
