package endpoints

import (
	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateListOptions refuses the combinations of resourceVersion,
// resourceVersionMatch, continue, sendInitialEvents and allowWatchBookmarks
// that Kubernetes' ValidateListOptions refuses, with one field error each
// in a 422 Invalid on ListOptions (the errors a client sees before the
// store is asked anything).
func validateListOptions(req *request, watch bool) error {
	match := req.query("resourceVersionMatch")
	sendInitial := req.query("sendInitialEvents") != ""
	matchPath := field.NewPath("resourceVersionMatch")
	var errs field.ErrorList
	if watch {
		if sendInitial && match != "NotOlderThan" {
			errs = append(errs, field.Forbidden(matchPath, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
		}
		if match != "" {
			if !sendInitial {
				errs = append(errs, field.Forbidden(matchPath, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
			}
			if match != "NotOlderThan" {
				errs = append(errs, field.NotSupported(matchPath, match, []string{"NotOlderThan"}))
			}
			if req.query("allowWatchBookmarks") != "true" {
				errs = append(errs, field.Forbidden(field.NewPath("allowWatchBookmarks"), "allowWatchBookmarks must be set to true when resourceVersionMatch is set"))
			}
		}
	} else {
		if match != "" {
			if req.query("resourceVersion") == "" {
				errs = append(errs, field.Forbidden(matchPath, "resourceVersionMatch is forbidden unless resourceVersion is provided"))
			}
			if req.query("continue") != "" {
				errs = append(errs, field.Forbidden(matchPath, "resourceVersionMatch is forbidden when continue is provided"))
			}
			if match != "Exact" && match != "NotOlderThan" {
				errs = append(errs, field.NotSupported(matchPath, match, []string{"Exact", "NotOlderThan", ""}))
			}
			if match == "Exact" && req.query("resourceVersion") == "0" {
				errs = append(errs, field.Forbidden(matchPath, `resourceVersionMatch "exact" is forbidden for resourceVersion "0"`))
			}
		}
		if sendInitial {
			errs = append(errs, field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for list"))
		}
	}
	if len(errs) > 0 {
		return errors.NewInvalid(metaListOptionsKind, "", errs)
	}
	return nil
}
