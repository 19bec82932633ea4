package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// LoadServer reads the settings declared by AddServerFlags from flags (already
// parsed), SKIFF_* environment variables and the YAML file named by --config,
// in that order of precedence, and validates them. The error lists every bad
// value, one per line, each naming its setting.
func LoadServer(flags *pflag.FlagSet) (*Server, error) {
	v := viper.New()
	v.SetEnvPrefix(EnvPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	if err := v.BindPFlags(flags); err != nil {
		return nil, fmt.Errorf("binding flags: %w", err)
	}

	settings := serverSettings(DefaultDataDir())
	l := &loader{v: v, flags: flags}
	s := &Server{}
	// The file's name can come from the flag or the environment only.
	if path := v.GetString(keyConfig); path != "" {
		abs, err := absPath(path)
		if err == nil {
			err = l.readFile(abs, settings)
		}
		if err != nil {
			return nil, l.invalid(keyConfig, path, false, err)
		}
		s.ConfigFile = abs
	}

	var errs []error
	for _, st := range settings {
		if st.name == keyConfig {
			continue
		}
		raw := v.Get(st.name)
		val, err := convert(st.kind, raw)
		if err == nil {
			err = st.apply(s, val)
		}
		if err != nil {
			errs = append(errs, l.invalid(st.name, raw, st.secret, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// Settings checked together, once each is valid on its own.
	if err := CheckLeaderElection(s.LeaderElectLeaseDuration, s.LeaderElectRenewDeadline, s.LeaderElectRetryPeriod); err != nil {
		return nil, err
	}
	if err := CheckNodeSettings(s.ClusterCIDR, s.NodeCIDRMaskSize, s.ServiceCIDR, keyServiceCIDR, s.NodeEviction); err != nil {
		return nil, err
	}
	// A setting for a loop the server does not run would be silently
	// without effect.
	if s.DisableScheduler && s.SchedulerConfig != "" {
		return nil, fmt.Errorf("--%s has no effect with --%s: give the file to skiff scheduler --config", keySchedulerConfig, keyDisableScheduler)
	}
	if s.DisableControllerManager && len(s.Controllers) > 0 && !slices.Equal(s.Controllers, []string{"*"}) {
		return nil, fmt.Errorf("--%s has no effect with --%s: give the list to skiff controller-manager --controllers", keyControllers, keyDisableCM)
	}

	// Paths that default to a place inside the data directory.
	if s.WriteKubeconfig == "" {
		s.WriteKubeconfig = filepath.Join(s.DataDir, kubeconfigFile)
	}
	if s.EncryptionKeyFile == "" {
		s.EncryptionKeyFile = filepath.Join(s.DataDir, encryptionKeyFile)
	}
	return s, nil
}

type loader struct {
	v      *viper.Viper
	flags  *pflag.FlagSet
	file   string
	inFile map[string]bool
}

// readFile merges the YAML file into the loader's viper, refusing keys that
// are not settings: a typo in a file should not be silently ignored.
func (l *loader) readFile(path string, settings []setting) error {
	f := viper.New()
	f.SetConfigFile(path)
	f.SetConfigType("yaml") // whatever the extension: the format is YAML
	if err := f.ReadInConfig(); err != nil {
		return fmt.Errorf("cannot read it: %w", err)
	}
	known := map[string]bool{}
	for _, st := range settings {
		known[st.name] = true
	}
	all := f.AllSettings()
	var unknown []string
	for k := range all {
		if !known[k] || k == keyConfig {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		var names []string
		for _, st := range settings {
			if st.name != keyConfig {
				names = append(names, st.name)
			}
		}
		return fmt.Errorf("unknown setting(s) %s; the file may set: %s", strings.Join(unknown, ", "), strings.Join(names, ", "))
	}
	if err := l.v.MergeConfigMap(all); err != nil {
		return fmt.Errorf("cannot merge it: %w", err)
	}
	l.file = path
	l.inFile = map[string]bool{}
	for k := range all {
		l.inFile[k] = true
	}
	return nil
}

// invalid builds the message for a rejected value: the setting, the value
// (unless secret), where it came from, and what would be valid.
func (l *loader) invalid(name string, raw any, secret bool, why error) error {
	shown := " " + strconv.Quote(display(raw))
	if secret {
		shown = ""
	}
	return fmt.Errorf("invalid --%s%s%s: %w", name, shown, l.origin(name), why)
}

// origin tells where the winning value of a setting came from; a flag needs
// no note because the message already names it as --name.
func (l *loader) origin(name string) string {
	if f := l.flags.Lookup(name); f != nil && f.Changed {
		return ""
	}
	if val, ok := os.LookupEnv(EnvVar(name)); ok && val != "" {
		return " (from " + EnvVar(name) + ")"
	}
	if l.inFile[name] {
		return " (from " + l.file + ")"
	}
	return " (default)"
}

func display(raw any) string {
	switch r := raw.(type) {
	case nil:
		return ""
	case []string:
		return strings.Join(r, ",")
	case []any:
		parts := make([]string, len(r))
		for i, p := range r {
			parts[i] = fmt.Sprint(p)
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(raw)
}

// convert turns a raw value — flag text, an environment string or a YAML
// scalar or list — into the setting's Go type, strictly: "abc" is not 0 and
// 1.5 is not 1.
func convert(k kind, raw any) (any, error) {
	switch k {
	case kindString:
		switch r := raw.(type) {
		case nil:
			return "", nil
		case string:
			return r, nil
		case int, int64, float64, bool:
			// YAML turns `token: 12345` into a number; the text is meant.
			return fmt.Sprint(r), nil
		}
		return nil, fmt.Errorf("must be a single value, not %T", raw)
	case kindInt:
		switch r := raw.(type) {
		case int:
			return int64(r), nil
		case int64:
			return r, nil
		case float64:
			if r == math.Trunc(r) && math.Abs(r) < 1<<53 {
				return int64(r), nil
			}
		case string:
			if n, err := strconv.ParseInt(strings.TrimSpace(r), 10, 64); err == nil {
				return n, nil
			}
		}
		return nil, fmt.Errorf("must be a whole number")
	case kindFloat:
		var f float64
		switch r := raw.(type) {
		case int:
			return float64(r), nil
		case int64:
			return float64(r), nil
		case float64:
			f = r
		case string:
			var err error
			if f, err = strconv.ParseFloat(strings.TrimSpace(r), 64); err != nil {
				return nil, fmt.Errorf("must be a number such as 0.1")
			}
		default:
			return nil, fmt.Errorf("must be a number such as 0.1")
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("must be a finite number such as 0.1")
		}
		return f, nil
	case kindDuration:
		if r, ok := raw.(string); ok {
			if d, err := time.ParseDuration(strings.TrimSpace(r)); err == nil {
				return d, nil
			}
			if r == "0" {
				return time.Duration(0), nil
			}
		}
		if r, ok := raw.(int); ok && r == 0 {
			return time.Duration(0), nil
		}
		return nil, fmt.Errorf("must be a duration with a unit, such as 500ms, 30s, 5m or 24h")
	case kindBool:
		switch r := raw.(type) {
		case bool:
			return r, nil
		case string:
			if b, err := strconv.ParseBool(strings.TrimSpace(r)); err == nil {
				return b, nil
			}
		}
		return nil, fmt.Errorf("must be true or false")
	case kindList:
		switch r := raw.(type) {
		case nil:
			return []string(nil), nil
		case string:
			return splitList(r), nil
		case []string:
			var out []string
			for _, item := range r {
				out = append(out, splitList(item)...)
			}
			return out, nil
		case []any:
			var out []string
			for _, item := range r {
				s, ok := item.(string)
				if !ok {
					return nil, fmt.Errorf("list items must be text, got %v", item)
				}
				out = append(out, splitList(s)...)
			}
			return out, nil
		}
		return nil, fmt.Errorf("must be a list of names or a comma-separated string")
	}
	return nil, fmt.Errorf("unknown kind %d", k)
}
