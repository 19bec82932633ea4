package endpoints

import (
	"net/http"
	"unicode/utf8"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// A response's warnings are capped as kube-apiserver caps them (its
// warning recorder in k8s.io/apiserver): while they fit in
// warningTotalRunes they go whole; once one would not, every warning is
// cut to warningItemRunes and those added after the total is reached
// are dropped. A pod template can raise dozens of warnings, and clients
// and proxies limit header sizes.
var (
	warningTotalRunes = 4 * 1024
	warningItemRunes  = 256
)

// setWarnings sends each warning once (an update retried after a conflict
// computes the kind's warnings again), as Kubernetes' Warning headers:
// code 299, agent "-", the text quoted as k8s.io/apimachinery's
// NewWarningHeader quotes it (kubectl unquotes it so). A text that cannot
// be sent (a control character, invalid UTF-8) is dropped, as upstream
// drops it.
func setWarnings(w http.ResponseWriter, warnings []string) {
	if len(warnings) == 0 {
		return
	}
	var (
		seen       = make(map[string]bool, len(warnings))
		kept       []string // the warnings taken, whole, for a replay
		runes      int      // runes of text sent so far
		truncating bool
	)
	send := func(text string) {
		if truncating && utf8.RuneCountInString(text) > warningItemRunes {
			text = string([]rune(text)[:warningItemRunes])
		}
		if h, err := utilnet.NewWarningHeader(299, "-", text); err == nil {
			runes += utf8.RuneCountInString(text)
			w.Header().Add("Warning", h)
		}
	}
	for _, text := range warnings {
		if text == "" || seen[text] || truncating && runes >= warningTotalRunes {
			continue
		}
		seen[text] = true
		kept = append(kept, text)
		if truncating || runes+utf8.RuneCountInString(text) <= warningTotalRunes {
			send(text)
			continue
		}
		// This one does not fit: start again with every warning cut.
		truncating, runes = true, 0
		w.Header().Del("Warning")
		for _, k := range kept {
			send(k)
		}
	}
}
