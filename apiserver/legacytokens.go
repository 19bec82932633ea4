package apiserver

import (
	"context"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffkube/skiff/apiserver/serviceaccount"
	"github.com/skiffkube/skiff/storage"
)

// legacyTrackingKey is the ConfigMap kube-system/<serviceaccount.TrackingConfigMap>.
const legacyTrackingKey = "/registry/configmaps/" + metav1.NamespaceSystem + "/" + serviceaccount.TrackingConfigMap

// legacyTrackingInterval is how often the ConfigMap is checked: one that
// was deleted comes back (with a new date) within it, as Kubernetes'
// tracking controller recreates it at most every 30 minutes.
const legacyTrackingInterval = 30 * time.Minute

// keepLegacyTokenTracking keeps the tracking ConfigMap in place until ctx
// ends (see ensureLegacyTokenTracking).
func (s *Server) keepLegacyTokenTracking(ctx context.Context) {
	t := time.NewTicker(legacyTrackingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.ensureLegacyTokenTracking(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("keeping the legacy service account token tracking ConfigMap", "err", err)
		}
	}
}

// ensureLegacyTokenTracking publishes the ConfigMap that says since when
// the API servers date the use of legacy service account tokens (the
// kubernetes.io/legacy-token-last-used label), as Kubernetes' API server
// does (LegacyServiceAccountTokenTracking): created with today's UTC date,
// never moved; only a date that does not parse is replaced by today's. The
// legacy token cleaner counts a token Secret without the label as unused
// since that day.
func (s *Server) ensureLegacyTokenTracking(ctx context.Context) error {
	ctx = storage.WithActor(ctx, bootstrapActor)
	today := time.Now().UTC().Format(serviceaccount.DateFormat)
	fresh := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{
			TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{
				Name: serviceaccount.TrackingConfigMap, Namespace: metav1.NamespaceSystem, UID: types.UID(uuid.NewString()),
				CreationTimestamp: metav1.NewTime(time.Now().UTC().Truncate(time.Second)),
			},
		}
	}
	return casUpdate(ctx, s.cfg.Store, legacyTrackingKey, fresh, func(cm *corev1.ConfigMap) bool {
		if _, err := time.Parse(serviceaccount.DateFormat, cm.Data[serviceaccount.TrackingSinceKey]); err == nil {
			return false
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[serviceaccount.TrackingSinceKey] = today
		return true
	})
}
