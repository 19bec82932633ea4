package warnings

import (
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The checks below give v1.33's reasons. The apimachinery skiff builds
// with words some of them differently since ("must not contain dots", a
// label value's length in "bytes"); warnings quote them, so they keep
// v1.33's words here. (skiff's validation errors use the library's.)

const (
	dnsLabelFmt    = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
	dnsLabelErrMsg = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"

	labelValueFmt    = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
	labelValueErrMsg = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
	labelValueMaxLen = 63
)

var (
	dnsLabelRegexp   = regexp.MustCompile("^" + dnsLabelFmt + "$")
	labelValueRegexp = regexp.MustCompile("^" + labelValueFmt + "$")
)

// dnsLabelProblems says why value is not a DNS (RFC 1123) label.
func dnsLabelProblems(value string) []string {
	var msgs []string
	if len(value) > validation.DNS1123LabelMaxLength {
		msgs = append(msgs, validation.MaxLenError(validation.DNS1123LabelMaxLength))
	}
	if !dnsLabelRegexp.MatchString(value) {
		msgs = append(msgs, validation.RegexError(dnsLabelErrMsg, dnsLabelFmt, "my-name", "123-abc"))
	}
	return msgs
}

// labelValueProblems says why value cannot be a label's value.
func labelValueProblems(value string) []string {
	var msgs []string
	if len(value) > labelValueMaxLen {
		msgs = append(msgs, validation.MaxLenError(labelValueMaxLen))
	}
	if !labelValueRegexp.MatchString(value) {
		msgs = append(msgs, validation.RegexError(labelValueErrMsg, labelValueFmt, "MyValue", "my_value", "12345"))
	}
	return msgs
}
