package framework

import (
	"strings"
	"testing"
)

type testArgs struct{ Weight int }

func TestPluginArgs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   any
		want   testArgs
		set    bool
		errSub string
	}{
		{name: "none", args: nil},
		{name: "nil pointer", args: (*testArgs)(nil)},
		{name: "value", args: testArgs{Weight: 3}, want: testArgs{Weight: 3}, set: true},
		{name: "pointer", args: &testArgs{Weight: 4}, want: testArgs{Weight: 4}, set: true},
		{name: "wrong type", args: "weight=5", errSub: "Example: args must be framework.testArgs, got string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, set, err := PluginArgs[testArgs]("Example", tc.args)
			if tc.errSub != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSub) {
					t.Fatalf("error %v, want one containing %q", err, tc.errSub)
				}
				return
			}
			if err != nil || got != tc.want || set != tc.set {
				t.Fatalf("PluginArgs = %+v, %v, %v; want %+v, %v", got, set, err, tc.want, tc.set)
			}
		})
	}
}
