package runtime

import (
	"fmt"

	"github.com/skiffkube/skiff/scheduler/framework"
)

// PluginFactory builds a plugin. args is the plugin's own typed argument
// struct from the profile, or nil for its defaults.
type PluginFactory func(args any, h framework.Handle) (framework.Plugin, error)

// Registry maps plugin names to constructors.
type Registry map[string]PluginFactory

// PluginConfig enables one plugin in a profile.
type PluginConfig struct {
	Name string
	// Weight multiplies the plugin's normalized score; 0 means 1.
	Weight int64
	// NoScore runs the plugin at its other extension points but not at
	// PreScore and Score (kube-scheduler's plugins.score.disabled): a
	// filter whose preference should not count.
	NoScore bool
	// Args is passed to the plugin's factory.
	Args any
}

// Merge adds other's entries; a name present in both is an error.
func (r Registry) Merge(other Registry) error {
	for name, f := range other {
		if _, ok := r[name]; ok {
			return fmt.Errorf("plugin %q registered twice", name)
		}
		r[name] = f
	}
	return nil
}
