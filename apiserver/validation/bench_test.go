package validation

import (
	"testing"

	"github.com/skiffkube/skiff/apiserver/defaulting"
)

// The API server defaults and validates every write, so these run on the
// request path; the benchmarks print their cost per object.

func BenchmarkDefaultAndValidatePod(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		p := validPod()
		defaulting.Default(p)
		if errs := Validate(p); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
}

func BenchmarkValidatePodUpdate(b *testing.B) {
	old := storedPod()
	n := old.DeepCopy()
	n.Labels["tier"] = "front"
	b.ReportAllocs()
	for b.Loop() {
		if errs := ValidateUpdate(n, old); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
}

func BenchmarkDefaultAndValidateDeployment(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		d := validDeployment()
		defaulting.Default(d)
		if errs := Validate(d); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
}
