// Package endpoints maintains the core/v1 Endpoints object of every Service with a selector (except
// type ExternalName, which has no endpoints): one object named after the Service, listing ready pod
// addresses in addresses and the others in notReadyAddresses, grouped into subsets of pods that resolve
// the Service's ports to the same numbers. Newer clients read EndpointSlices (package endpointslice);
// Endpoints stays for older tools and for kubectl describe service.
package endpoints
