package framework

import "fmt"

// PluginArgs reads the arguments a plugin was configured with, given as T or
// *T (configfile hands out values; tests and callers may pass pointers).
// Without arguments (nil, or a nil *T) it returns the zero T and set false,
// so the plugin applies its defaults and the config encoder can tell
// "configured" from "left out". Any other type is an error naming the plugin.
func PluginArgs[T any](plugin string, args any) (a T, set bool, err error) {
	switch v := args.(type) {
	case nil:
	case T:
		return v, true, nil
	case *T:
		if v != nil {
			return *v, true, nil
		}
	default:
		return a, false, fmt.Errorf("%s: args must be %T, got %T", plugin, a, args)
	}
	return a, false, nil
}
