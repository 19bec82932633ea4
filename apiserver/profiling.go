package apiserver

import (
	"fmt"
	"net/http/pprof"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiffkube/skiff/apiserver/authn"
	"github.com/skiffkube/skiff/apiserver/endpoints"
)

// profiling serves Go's pprof profiles under /debug/pprof/, as
// kube-apiserver does with --profiling, to cluster admins only (group
// system:masters): profiles show what the server holds in memory.
func (s *Server) profiling(c *gin.Context) {
	u, ok := authn.UserFrom(c.Request.Context())
	if !ok || u == nil || !slices.Contains(u.Groups, authn.GroupMasters) {
		endpoints.WriteError(c.Writer, apierrors.NewForbidden(schema.GroupResource{}, "", fmt.Errorf("profiles are served to %s only", authn.GroupMasters)))
		return
	}
	switch name := strings.TrimPrefix(c.Param("name"), "/"); name {
	case "cmdline":
		pprof.Cmdline(c.Writer, c.Request)
	case "profile":
		pprof.Profile(c.Writer, c.Request)
	case "symbol":
		pprof.Symbol(c.Writer, c.Request)
	case "trace":
		pprof.Trace(c.Writer, c.Request)
	default:
		pprof.Index(c.Writer, c.Request)
	}
}
