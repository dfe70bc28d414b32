// Package retryafter reads the wait a provider asks for before a request
// is tried again: the Retry-After and retry-after-ms headers, and the
// retryDelay of a google.rpc.RetryInfo error detail.
package retryafter

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Max bounds every wait this package returns: a longer one is cut to it.
const Max = 24 * time.Hour

// Header returns the wait asked for by h: retry-after-ms (milliseconds),
// else Retry-After (seconds, or an HTTP date, measured from now). It returns
// 0 when h asks for none or for a wait that cannot be read.
func Header(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && !math.IsInf(ms, 0) {
			return clamp(ms / 1000)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && !math.IsInf(s, 0) {
			return clamp(s)
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return min(d, Max)
		}
	}
	return 0
}

// retryInfoType is the @type of a RetryInfo error detail.
const retryInfoType = "type.googleapis.com/google.rpc.RetryInfo"

// RetryInfo returns the retryDelay of the first google.rpc.RetryInfo among
// the details of a Google API error ({"@type": ..., "retryDelay": "37s"}),
// or 0 when there is none or it cannot be read.
func RetryInfo(details []map[string]any) time.Duration {
	for _, d := range details {
		if t, _ := d["@type"].(string); t != retryInfoType {
			continue
		}
		s, _ := d["retryDelay"].(string)
		return Duration(s)
	}
	return 0
}

// Duration parses a protobuf Duration in its JSON form: decimal seconds
// followed by "s", such as "37s" or "0.5s". It returns 0 for anything
// else, and for negative durations.
func Duration(s string) time.Duration {
	num, ok := strings.CutSuffix(strings.TrimSpace(s), "s")
	if !ok || num == "" || strings.ContainsAny(num, "eE+_") {
		return 0
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return 0
	}
	return clamp(v)
}

func clamp(seconds float64) time.Duration {
	if seconds >= Max.Seconds() {
		return Max
	}
	return time.Duration(seconds * float64(time.Second))
}
