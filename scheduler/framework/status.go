package framework

import (
	"errors"
	"strings"
)

// Code is the outcome class of a plugin call.
type Code int

const (
	// Success means the plugin is satisfied. A nil *Status also means Success.
	Success Code = iota
	// Error is an internal failure, not a property of the node: the attempt is aborted.
	Error
	// Unschedulable means the pod does not fit now but might after preemption.
	Unschedulable
	// UnschedulableAndUnresolvable means removing pods from the node will not help,
	// so preemption skips the node.
	UnschedulableAndUnresolvable
	// Skip tells the runtime that the plugin has nothing to do for this pod;
	// the matching Filter/Score calls are then not made.
	Skip
)

var codeNames = [...]string{"Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Skip"}

func (c Code) String() string {
	if c >= 0 && int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "Unknown"
}

// Status is a plugin's answer: a code, the human reasons that end up in the
// pod's PodScheduled condition, and the plugin that said it.
type Status struct {
	code    Code
	reasons []string
	err     error
	plugin  string
}

// NewStatus makes a status with the given code and reasons.
func NewStatus(code Code, reasons ...string) *Status {
	s := &Status{code: code, reasons: reasons}
	if code == Error && len(reasons) > 0 {
		s.err = errors.New(strings.Join(reasons, ", "))
	}
	return s
}

// AsStatus wraps an internal error; nil stays nil (success).
func AsStatus(err error) *Status {
	if err == nil {
		return nil
	}
	return &Status{code: Error, reasons: []string{err.Error()}, err: err}
}

// Code returns the code; a nil status is Success.
func (s *Status) Code() Code {
	if s == nil {
		return Success
	}
	return s.code
}

// Reasons returns the human-readable reasons.
func (s *Status) Reasons() []string {
	if s == nil {
		return nil
	}
	return s.reasons
}

// Message joins the reasons.
func (s *Status) Message() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.reasons, ", ")
}

// Plugin names the plugin that produced the status, once the runtime set it.
func (s *Status) Plugin() string {
	if s == nil {
		return ""
	}
	return s.plugin
}

// WithPlugin records the producing plugin and returns s.
func (s *Status) WithPlugin(name string) *Status {
	if s != nil {
		s.plugin = name
	}
	return s
}

// AsError returns the error for Error statuses and a plain error for other
// non-success codes, nil for success.
func (s *Status) AsError() error {
	if s.IsSuccess() {
		return nil
	}
	if s.err != nil {
		return s.err
	}
	return errors.New(s.Message())
}

// IsSuccess reports whether the status is nil or Success.
func (s *Status) IsSuccess() bool { return s.Code() == Success }

// IsSkip reports whether the plugin asked to be skipped.
func (s *Status) IsSkip() bool { return s.Code() == Skip }

// IsRejected reports whether the pod was found not to fit (as opposed to an error).
func (s *Status) IsRejected() bool {
	c := s.Code()
	return c == Unschedulable || c == UnschedulableAndUnresolvable
}

// String is for logs.
func (s *Status) String() string {
	if s == nil {
		return "Success"
	}
	msg := s.Code().String()
	if m := s.Message(); m != "" {
		msg += ": " + m
	}
	if s.plugin != "" {
		msg = s.plugin + ": " + msg
	}
	return msg
}
