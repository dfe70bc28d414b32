// Package logcap cuts the strings a log line quotes from a model or a
// request — tool names, call ids and keys, principal ids, paths, and the
// errors that quote them — to a bounded length, so that a hostile value
// cannot make one log line arbitrarily long.
package logcap

import "unicode/utf8"

// MaxString bounds a quoted value (a tool name, a key, an id).
const MaxString = 128

// MaxError bounds an error's text, which may quote several values.
const MaxError = 1024

// String returns s cut to MaxString bytes at a character boundary, marked
// with "…" when cut.
func String(s string) string { return cut(s, MaxString) }

// Strings returns ss with each element cut as String does, and at most
// MaxString/8 of them (the rest dropped, marked by a last "…").
func Strings(ss []string) []string {
	n := min(len(ss), MaxString/8)
	out := make([]string, 0, n+1)
	for _, s := range ss[:n] {
		out = append(out, String(s))
	}
	if n < len(ss) {
		out = append(out, "…")
	}
	return out
}

// Error returns the text of err cut to MaxError bytes, as String does;
// "" for nil.
func Error(err error) string {
	if err == nil {
		return ""
	}
	return cut(err.Error(), MaxError)
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
