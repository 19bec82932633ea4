package validation

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/skiffkube/skiff/apiserver/defaulting"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// want is one expected error: its field path and type.
type want struct {
	field string
	typ   field.ErrorType
}

func (w want) String() string { return fmt.Sprintf("%s: %s", w.field, w.typ) }

type testCase struct {
	name string
	obj  runtime.Object
	want []want // nil means the object must be valid
}

// defaulted applies defaulting, as the API server does before validating.
func defaulted[T runtime.Object](obj T) T {
	defaulting.Default(obj)
	return obj
}

func summarize(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, want{e.Field, e.Type}.String())
	}
	sort.Strings(out)
	return out
}

func expectErrors(t *testing.T, errs field.ErrorList, wants []want) {
	t.Helper()
	exp := make([]string, 0, len(wants))
	for _, w := range wants {
		exp = append(exp, w.String())
	}
	sort.Strings(exp)
	got := summarize(errs)
	if strings.Join(got, "\n") != strings.Join(exp, "\n") {
		t.Errorf("errors:\n  got  %q\n  want %q\n  full: %v", got, exp, errs.ToAggregate())
	}
}

func runCreate(t *testing.T, cases []testCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, Validate(tc.obj), tc.want)
		})
	}
}

type updateCase struct {
	name     string
	old, new runtime.Object
	want     []want
}

func runUpdate(t *testing.T, cases []updateCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateUpdate(tc.new, tc.old), tc.want)
		})
	}
}

const (
	required     = field.ErrorTypeRequired
	invalid      = field.ErrorTypeInvalid
	notSupported = field.ErrorTypeNotSupported
	duplicate    = field.ErrorTypeDuplicate
	forbidden    = field.ErrorTypeForbidden
	notFound     = field.ErrorTypeNotFound
	tooLong      = field.ErrorTypeTooLong
	tooMany      = field.ErrorTypeTooMany
)
