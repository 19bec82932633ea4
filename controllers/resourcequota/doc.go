// Package resourcequota keeps ResourceQuota status: status.hard mirrors spec.hard and status.used
// counts, for every resource named in spec.hard, what the namespace uses — compute requests and
// limits and the count of non-terminal pods (within the quota's scopes: Terminating,
// NotTerminating, BestEffort, NotBestEffort), services by type, and object counts (configmaps,
// secrets, count/<resource>.<group>) through the metadata client. It recomputes on pod and service
// events and periodically. (Rejecting requests over quota is the API server's admission, not this.)
package resourcequota
