// Package defaultbinder is the DefaultBinder plugin: it records the decision
// through the pods/binding subresource, as kube-scheduler does, so the API
// server sets spec.nodeName and the PodScheduled condition atomically.
package defaultbinder
