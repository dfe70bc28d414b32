package serve

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/privacy"
)

// DetectionSpec configures what an agent's privacy guard detects: the
// built-in recognizers (always on), the embedded recognizer of names,
// places, organisations, addresses, dates, ages and titles, external
// analyzers and the minimum score. The zero value means every built-in
// and embedded type, no analyzer and a minimum score of 0.5.
type DetectionSpec struct {
	// Embedded lists the types the embedded recognizer finds (PERSON,
	// LOCATION, ORGANIZATION, ADDRESS, DATE_TIME, AGE, TITLE). nil or
	// empty: all of them; [none]: the embedded recognizer is off.
	Embedded []string `yaml:"embedded"`
	// MinScore drops findings with a lower score, in (0, 1]. 0: 0.5.
	MinScore float64 `yaml:"min_score"`
	// Analyzers are external analyzers speaking Presidio's /analyze
	// protocol; their findings add to the built-in ones. nil: none.
	Analyzers []AnalyzerSpec `yaml:"analyzers"`
}

// AnalyzerSpec is one external analyzer ([privacy.NewAnalyzer]).
type AnalyzerSpec struct {
	// URL is the analyzer's /analyze endpoint (http or https). Required.
	URL string `yaml:"url"`
	// Entities restricts the labels asked for. nil: all.
	Entities []string `yaml:"entities"`
	// Timeout bounds each attempt. 0: 5s.
	Timeout time.Duration `yaml:"timeout"`
	// Retries after a failed attempt. 0: 2; negative: none.
	Retries int `yaml:"retries"`
	// BestEffort makes a failing analyzer add no findings instead of
	// failing the request. false: fail closed.
	BestEffort bool `yaml:"best_effort"`
	// Labels maps the analyzer's labels to entity types (label aliases,
	// such as GPE: LOCATION). nil: labels that name a type map to it,
	// others to GENERIC.
	Labels map[string]string `yaml:"labels"`
}

func (d *DetectionSpec) zero() bool {
	return d.Embedded == nil && d.MinScore == 0 && d.Analyzers == nil
}

// check reports the problems of d under path p.
func (d *DetectionSpec) check(p string, bad func(path, format string, args ...any)) {
	for i, t := range d.Embedded {
		switch {
		case t == "none":
			if len(d.Embedded) > 1 {
				bad(fmt.Sprintf("%s.embedded[%d]", p, i), "none turns the embedded recognizer off and cannot be listed with types")
			}
		case !slices.Contains(privacy.EmbeddedTypes(), privacy.EntityType(t)):
			bad(fmt.Sprintf("%s.embedded[%d]", p, i), "%q is not a type of the embedded recognizer (want one of %s, or none)", t, typeList(privacy.EmbeddedTypes()))
		}
	}
	if s := d.MinScore; math.IsNaN(s) || s < 0 || s > 1 {
		bad(p+".min_score", "%v is not a score in (0, 1]", s)
	}
	for i, a := range d.Analyzers {
		ap := fmt.Sprintf("%s.analyzers[%d]", p, i)
		u, err := url.Parse(a.URL)
		if a.URL == "" || err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			bad(ap+".url", "want an http or https URL of the analyzer's /analyze endpoint")
		}
		if a.Timeout < 0 {
			bad(ap+".timeout", "must not be negative")
		}
		for label, t := range a.Labels {
			if label == "" || t == "" {
				bad(ap+".labels", "label %q maps to %q: both must be given", label, t)
			}
		}
	}
}

func typeList(ts []privacy.EntityType) string {
	ss := make([]string, len(ts))
	for i, t := range ts {
		ss[i] = string(t)
	}
	return strings.Join(ss, ", ")
}

// scanner returns the scanner d describes, or nil for the default one.
func (d *DetectionSpec) scanner() *privacy.Scanner {
	if d.zero() {
		return nil
	}
	rs := privacy.Builtins(privacy.EmailAddress, privacy.PhoneNumber, privacy.CreditCard, privacy.IBANCode, privacy.IPAddress,
		privacy.MACAddress, privacy.USSSN, privacy.URL, privacy.DomainName, privacy.Crypto, privacy.Secret)
	switch {
	case slices.Contains(d.Embedded, "none"):
	case len(d.Embedded) == 0:
		rs = append(rs, privacy.Embedded())
	default:
		ts := make([]privacy.EntityType, len(d.Embedded))
		for i, t := range d.Embedded {
			ts[i] = privacy.EntityType(t)
		}
		rs = append(rs, privacy.Embedded(ts...))
	}
	for _, a := range d.Analyzers {
		var labels map[string]privacy.EntityType
		if a.Labels != nil {
			labels = map[string]privacy.EntityType{}
			for k, v := range a.Labels {
				labels[k] = privacy.EntityType(v)
			}
		}
		rs = append(rs, privacy.NewAnalyzer(a.URL, &privacy.AnalyzerOptions{
			Timeout: a.Timeout, Retries: a.Retries, Entities: slices.Clone(a.Entities), BestEffort: a.BestEffort, Labels: labels,
		}))
	}
	return privacy.NewScanner(&privacy.ScannerOptions{Recognizers: rs, MinScore: d.MinScore})
}
