// Package endpoints maintains the core/v1 Endpoints object of every Service with a selector (except
// type ExternalName, which has no endpoints): one object named after the Service, listing ready pod
// addresses in addresses and the others in notReadyAddresses, grouped into subsets of pods that resolve
// the Service's ports to the same numbers. Newer clients read EndpointSlices (package endpointslice);
// Endpoints stays for older tools and for kubectl describe service. As in Kubernetes, an object holds at
// most MaxAddresses (1000) addresses: beyond that ready addresses are kept before not-ready ones, shared
// out among the subsets, and the object is annotated endpoints.kubernetes.io/over-capacity: truncated
// until it fits again. An object created or updated carries endpoints.kubernetes.io/last-change-trigger-time,
// computed as Kubernetes' TriggerTimeTracker does (package triggertime); a write without one removes
// it. As Kubernetes' staleEndpointsTracker, the controller remembers the version of
// each Endpoints object it replaced, and a sync that still finds that version in its cache fails and is
// retried with backoff rather than writing from it.
//
// A Service's Endpoints object is deleted with the Service. Those left by Services deleted while the
// controller was not running are found once, when it starts (after its caches sync): every Endpoints
// object without a Service is then deleted, except leader-election records (the
// control-plane.alpha.kubernetes.io/leader annotation). Edits of Endpoints objects are not watched, so
// one that a user writes for a selector-less Service, or without any Service, is left alone meanwhile.
package endpoints
