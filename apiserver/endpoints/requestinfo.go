package endpoints

import (
	"net/http"
	"strings"
)

// RequestInfo is what a resource URL names.
type RequestInfo struct {
	Group, Version         string
	Resource, Subresource  string
	Namespace, Name        string
	Verb                   string // get list watch create update patch delete deletecollection
	IsResourceRequest      bool   // false for discovery (/api/v1, /apis/g/v)
	IsGroupVersionDocument bool
}

// namespaceSubresources are the subresources of a namespace object itself
// (namespaces/<name>/status), as opposed to resources inside it.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// ParseRequestInfo splits /api/v1/... or /apis/<group>/<version>/... into its
// parts and maps the HTTP method to a verb. ok is false for paths that are
// not API paths at all.
func ParseRequestInfo(method, urlPath string, watchParam bool) (info RequestInfo, ok bool) {
	parts := splitPath(urlPath)
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		info.Version = parts[1]
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		info.Group, info.Version = parts[1], parts[2]
		parts = parts[3:]
	default:
		return info, false
	}
	if len(parts) == 0 {
		info.IsGroupVersionDocument = true
		return info, true
	}
	watchPath := false
	if parts[0] == "watch" {
		watchPath = true
		parts = parts[1:]
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		info.Namespace = parts[1]
		if len(parts) > 2 && !namespaceSubresources[parts[2]] {
			parts = parts[2:]
		} else {
			// The namespace object itself: /namespaces/<name>[/status].
			info.Namespace = ""
		}
	}
	info.IsResourceRequest = true
	info.Resource = parts[0]
	if len(parts) > 1 {
		info.Name = parts[1]
	}
	if len(parts) > 2 {
		info.Subresource = parts[2]
	}
	if len(parts) > 3 {
		return info, false
	}
	if watchPath {
		// As Kubernetes' special verbs: /watch/... is a watch whatever
		// the method, authorized as one; only GET is served (405).
		info.Verb = "watch"
		return info, true
	}
	switch method {
	case http.MethodGet, http.MethodHead:
		switch {
		case watchPath || watchParam:
			info.Verb = "watch"
		case info.Name == "":
			info.Verb = "list"
		default:
			info.Verb = "get"
		}
	case http.MethodPost:
		info.Verb = "create"
	case http.MethodPut:
		info.Verb = "update"
	case http.MethodPatch:
		info.Verb = "patch"
	case http.MethodDelete:
		if info.Name == "" {
			info.Verb = "deletecollection"
		} else {
			info.Verb = "delete"
		}
	default:
		info.Verb = strings.ToLower(method)
	}
	return info, true
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}
