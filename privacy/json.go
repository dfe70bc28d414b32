package privacy

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"
)

// TokenizeJSON tokenizes the values of a JSON payload: every string and
// every number is scanned and the values found are replaced by tokens;
// object keys and the layout stay as they are. The strings and numbers of
// one payload are scanned together, in one analysis (one call of each
// recognizer, one request to an external analyzer). A number in which a
// value is found is replaced as a whole by a JSON string holding a token
// that remembers it was a number, so that [Rewriter.RestoreJSON] gives the
// number back; when values of several types are found in one number, the
// token has the most sensitive of them (see [Rewriter.Arguments]). The
// output is valid JSON.
//
// It fails with an error wrapping [ErrInvalidJSON] when data is not valid
// JSON, and with a [*LimitError] when data is too large, too deep, has too
// many values or findings.
func (r *Rewriter) TokenizeJSON(ctx context.Context, data []byte) ([]byte, error) {
	vals, found, err := r.analyzeJSON(ctx, data)
	if err != nil {
		return nil, err
	}
	return r.rebuildJSON(data, vals, func(out []byte, i int) ([]byte, error) {
		v, fs := &vals[i], found[i]
		if len(fs) == 0 {
			return append(out, data[v.start:v.end]...), nil
		}
		if !v.str {
			return appendQuoted(out, r.numberToken(v.text, fs)), nil
		}
		return r.appendTokenized(out, v, fs), nil
	})
}

// numberToken returns the token of the number text, in which fs were
// found: of the most sensitive type found, remembering the others.
func (r *Rewriter) numberToken(text string, fs []Finding) string {
	best := fs[0].Type
	var also []EntityType
	for _, f := range fs[1:] {
		if specificity(f.Type) > specificity(best) {
			best = f.Type
		}
	}
	for _, f := range fs {
		if f.Type != best && !slices.Contains(also, f.Type) {
			also = append(also, f.Type)
		}
	}
	slices.Sort(also)
	return r.vault.token(best, text, true, also)
}

// appendTokenized appends the string value v with its findings replaced
// by tokens.
func (r *Rewriter) appendTokenized(out []byte, v *jsonValue, fs []Finding) []byte {
	out = append(out, '"')
	last := 0
	for _, f := range fs {
		out = appendStringBody(out, v.text[last:f.Start], v.plain)
		out = append(out, r.vault.token(f.Type, v.text[f.Start:f.End], false, nil)...)
		last = f.End
	}
	out = appendStringBody(out, v.text[last:], v.plain)
	return append(out, '"')
}

// RestoreJSON restores, in the string values of a JSON payload, the tokens
// of this vault whose type g allows. A string that is exactly the token of
// a number becomes that number again. Keys and layout stay as they are; the
// output is valid JSON. Errors as for [Rewriter.TokenizeJSON], and a
// [*LimitError] when the restored payload would be larger than the byte
// limit.
func (r *Rewriter) RestoreJSON(data []byte, g Grant) ([]byte, error) {
	vals, err := r.jsonValues(data, true)
	if err != nil {
		return nil, err
	}
	return r.restoreJSON(data, vals, nil, g, -1)
}

// restoreJSON rebuilds data with the tokens of its string values restored
// (those bound at or before horizon, -1: any). found, when not nil, holds
// the findings of each value in a payload not tokenized yet: a finding of
// a granted type is kept as it is, any other is tokenized.
func (r *Rewriter) restoreJSON(data []byte, vals []jsonValue, found [][]Finding, g Grant, horizon int) ([]byte, error) {
	max := r.scanner.limits.MaxBytes
	limit := &LimitError{Limit: "bytes", Max: max}
	out, err := r.rebuildJSON(data, vals, func(out []byte, i int) ([]byte, error) {
		v := &vals[i]
		var fs []Finding
		if found != nil {
			fs = found[i]
		}
		raw := data[v.start:v.end]
		if !v.str {
			if len(fs) == 0 {
				return append(out, raw...), nil
			}
			tok := r.numberToken(v.text, fs)
			if e, _ := r.vault.lookup(tok); e.allowedBy(g) {
				return append(out, raw...), nil
			}
			return appendQuoted(out, tok), nil
		}
		if len(fs) == 0 {
			if bytes.IndexByte(raw, tokenOpen) < 0 {
				return append(out, raw...), nil
			}
			if tokenAt(v.text, 0) == len(v.text) {
				if e, ok := r.vault.lookup(v.text); ok && (horizon < 0 || e.Seq <= horizon) && e.allowedBy(g) {
					if e.Number {
						return append(out, e.Value...), nil
					}
					out = append(out, '"')
					out = appendStringBody(out, e.Value, false)
					return append(out, '"'), nil
				}
			}
		}
		// Pieces between findings: tokens restored; findings: kept when
		// granted, else tokenized.
		out = append(out, '"')
		last := 0
		piece := func(s string) bool {
			t, full := r.restore(s, g, horizon, max-len(out))
			out = appendStringBody(out, t, v.plain && t == s)
			return full
		}
		for _, f := range fs {
			if !piece(v.text[last:f.Start]) {
				return nil, limit
			}
			val := v.text[f.Start:f.End]
			tok := r.vault.token(f.Type, val, false, nil)
			if g.Allows(f.Type) {
				out = appendStringBody(out, val, v.plain)
			} else {
				out = append(out, tok...)
			}
			last = f.End
		}
		if !piece(v.text[last:]) {
			return nil, limit
		}
		if len(out) > max {
			return nil, limit
		}
		return append(out, '"'), nil
	})
	if err == nil && len(out) > max {
		return nil, limit
	}
	return out, err
}

// Arguments prepares the arguments of a tool call for the tool: every
// value found in the payload is tokenized (so a value the model typed
// itself is caught as well) unless g allows its type, and only the tokens
// whose type g allows are restored. A token is restored only if the vault
// bound it before this call: a token that the vault did not issue, or
// issued later, stays text. A number that holds values of several types is
// restored only when g allows all of them. A payload that is not valid
// JSON is handled as text. It fails with a [*LimitError] when the restored
// payload would be larger than the byte limit.
func (r *Rewriter) Arguments(ctx context.Context, args []byte, g Grant) ([]byte, error) {
	return r.arguments(ctx, args, g, r.vault.lastSeq())
}

// arguments is [Rewriter.Arguments] restoring only tokens bound at or
// before horizon.
func (r *Rewriter) arguments(ctx context.Context, args []byte, g Grant, horizon int) ([]byte, error) {
	if !json.Valid(args) {
		text := string(args)
		r.vault.reserve(text)
		fs, err := r.find(ctx, text)
		if err != nil {
			return nil, err
		}
		max := r.scanner.limits.MaxBytes
		var b strings.Builder
		last := 0
		piece := func(s string) bool {
			t, full := r.restore(s, g, horizon, max-b.Len())
			b.WriteString(t)
			return full
		}
		for _, f := range fs {
			if !piece(text[last:f.Start]) {
				return nil, &LimitError{Limit: "bytes", Max: max}
			}
			val := text[f.Start:f.End]
			tok := r.vault.token(f.Type, val, false, nil)
			if g.Allows(f.Type) {
				b.WriteString(val)
			} else {
				b.WriteString(tok)
			}
			last = f.End
		}
		if !piece(text[last:]) || b.Len() > max {
			return nil, &LimitError{Limit: "bytes", Max: max}
		}
		return []byte(b.String()), nil
	}
	vals, found, err := r.analyzeJSON(ctx, args)
	if err != nil {
		return nil, err
	}
	return r.restoreJSON(args, vals, found, g, horizon)
}

// TokenizeContent tokenizes a tool result or any content that may be JSON:
// JSON-aware when content is valid JSON, as text otherwise.
func (r *Rewriter) TokenizeContent(ctx context.Context, content string) (string, error) {
	if json.Valid([]byte(content)) {
		out, err := r.TokenizeJSON(ctx, []byte(content))
		return string(out), err
	}
	return r.Tokenize(ctx, content)
}

// isJSONDocument reports whether text is a JSON object or array.
func isJSONDocument(text string) bool {
	t := strings.TrimLeft(text, " \t\r\n")
	return t != "" && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(text))
}

// outputJSON is [Rewriter.Output] for a JSON object or array.
func (r *Rewriter) outputJSON(ctx context.Context, text string, m OutputMode, g Grant) (string, error) {
	data := []byte(text)
	vals, found, err := r.analyzeJSON(ctx, data)
	if err != nil {
		return "", err
	}
	texts := make([]string, len(vals))
	for i := range vals {
		texts[i] = vals[i].text
	}
	if err := r.blocked(m, texts, found); err != nil {
		return "", err
	}
	max := r.scanner.limits.MaxBytes
	out, err := r.rebuildJSON(data, vals, func(out []byte, i int) ([]byte, error) {
		v, fs := &vals[i], found[i]
		raw := data[v.start:v.end]
		if !v.str {
			if len(fs) == 0 {
				return append(out, raw...), nil
			}
			tok := r.numberToken(v.text, fs)
			e, _ := r.vault.lookup(tok)
			switch {
			case m == ModeRedact:
				return appendQuoted(out, redacted(e.Type)), nil
			case m == ModeRestore && e.allowedBy(g):
				return append(out, raw...), nil
			}
			return appendQuoted(out, tok), nil
		}
		if len(fs) == 0 && bytes.IndexByte(raw, tokenOpen) < 0 {
			return append(out, raw...), nil
		}
		if m == ModeRestore && len(fs) == 0 && tokenAt(v.text, 0) == len(v.text) {
			if e, ok := r.vault.lookup(v.text); ok && e.Number && e.allowedBy(g) {
				return append(out, e.Value...), nil
			}
		}
		s, err := r.output(v.text, fs, m, g)
		if err != nil {
			return nil, err
		}
		if s == v.text {
			return append(out, raw...), nil
		}
		out = append(out, '"')
		out = appendStringBody(out, s, false)
		if len(out) > max && m == ModeRestore {
			return nil, &LimitError{Limit: "bytes", Max: max}
		}
		return append(out, '"'), nil
	})
	if err != nil {
		return "", err
	}
	if m == ModeRestore && len(out) > max {
		return "", &LimitError{Limit: "bytes", Max: max}
	}
	return string(out), nil
}

func appendQuoted(out []byte, token string) []byte {
	out = append(out, '"')
	out = append(out, token...)
	return append(out, '"')
}

// jsonValue is a value of a JSON payload that is scanned: a string that is
// not an object key, or a number.
type jsonValue struct {
	start, end int    // the literal in the payload
	str        bool   // a string, else a number
	text       string // the string's value, or the number's literal
	plain      bool   // a string literal without escapes
}

// batchSeparator joins the values of a payload into one text to analyze.
// It is longer than the window in which context words count, and no
// recognizer reads a value across it (a finding that would is cut at it).
var batchSeparator = strings.Repeat("\n", contextWindow+8)

// analyzeJSON parses data, reserves the token-shaped text of its values
// and scans all of them in one analysis. It returns the values and the
// findings of each, offsets relative to the value's text.
func (r *Rewriter) analyzeJSON(ctx context.Context, data []byte) ([]jsonValue, [][]Finding, error) {
	vals, err := r.jsonValues(data)
	if err != nil {
		return nil, nil, err
	}
	texts := make([]string, len(vals))
	for i := range vals {
		texts[i] = vals[i].text
		if vals[i].str {
			r.vault.reserve(vals[i].text)
		}
	}
	found, err := r.scanBatch(ctx, texts)
	if err != nil {
		return nil, nil, err
	}
	return vals, found, nil
}

// scanBatch scans texts together: joined by batchSeparator into one text
// for one scan, the findings mapped back to each text and cut at its ends.
// Token-shaped pieces are left out of the findings.
func (r *Rewriter) scanBatch(ctx context.Context, texts []string) ([][]Finding, error) {
	found := make([][]Finding, len(texts))
	var b strings.Builder
	size := 0
	for _, t := range texts {
		size += len(t) + len(batchSeparator)
	}
	b.Grow(size)
	starts := make([]int, 0, len(texts))
	which := make([]int, 0, len(texts))
	for i, t := range texts {
		if t == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(batchSeparator)
		}
		starts = append(starts, b.Len())
		which = append(which, i)
		b.WriteString(t)
	}
	if len(which) == 0 {
		return found, nil
	}
	joined := b.String()
	fs, err := r.scanner.scanAny(ctx, joined, nil)
	if err != nil {
		return nil, err
	}
	fs = exceptTokens(joined, fs)
	for _, f := range fs {
		// The texts the finding touches, each getting its part.
		k, _ := slices.BinarySearch(starts, f.Start+1)
		for k--; k < len(starts) && starts[k] < f.End; k++ {
			lo, hi := starts[k], starts[k]+len(texts[which[k]])
			s, e := max(f.Start, lo), min(f.End, hi)
			if s < e {
				i := which[k]
				found[i] = append(found[i], Finding{Start: s - lo, End: e - lo, Type: f.Type, Score: f.Score})
			}
		}
	}
	return found, nil
}

// rebuildJSON copies data, replacing each value vals[i] by what value
// appends for it.
func (r *Rewriter) rebuildJSON(data []byte, vals []jsonValue, value func(out []byte, i int) ([]byte, error)) ([]byte, error) {
	out := make([]byte, 0, len(data)+len(data)/4)
	last := 0
	var err error
	for i := range vals {
		out = append(out, data[last:vals[i].start]...)
		if out, err = value(out, i); err != nil {
			return nil, err
		}
		last = vals[i].end
	}
	return append(out, data[last:]...), nil
}

// decodeString returns the value of a JSON string literal. plain reports
// that the literal had no escapes, so its body is the value byte for byte.
func decodeString(raw []byte) (s string, plain bool) {
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		return string(body), true
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return string(body), true // not reached for valid JSON
	}
	return s, false
}

const hexDigits = "0123456789abcdef"

// appendStringBody appends s escaped as the body of a JSON string. When raw
// is set, s is a piece of a literal without escapes and is copied as is.
func appendStringBody(out []byte, s string, raw bool) []byte {
	if raw {
		return append(out, s...)
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c == '\n':
			out = append(out, '\\', 'n')
		case c == '\r':
			out = append(out, '\\', 'r')
		case c == '\t':
			out = append(out, '\\', 't')
		case c < 0x20:
			out = append(out, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
		case c < utf8.RuneSelf:
			out = append(out, c)
		default:
			rn, size := utf8.DecodeRuneInString(s[i:])
			if rn == utf8.RuneError && size == 1 {
				out = append(out, `\ufffd`...)
			} else {
				out = append(out, s[i:i+size]...)
			}
			i += size
			continue
		}
		i++
	}
	return out
}

// jsonValues parses a valid JSON payload and returns its values that are
// scanned: every string that is not an object key, and every number. It
// checks the limits. With lazy set, only the strings that hold a '[' are
// decoded (the others keep an empty text): what restoring needs.
func (r *Rewriter) jsonValues(data []byte, lazy ...bool) ([]jsonValue, error) {
	lim := r.scanner.limits
	if len(data) > lim.MaxBytes {
		return nil, &LimitError{Limit: "bytes", Max: lim.MaxBytes}
	}
	if !json.Valid(data) {
		return nil, ErrInvalidJSON
	}
	vals := make([]jsonValue, 0, bytes.Count(data, []byte{'"'})/2+1)
	var stack []byte
	expectKey := false
	nodes := 0
	for i := 0; i < len(data); {
		c := data[i]
		switch c {
		case ' ', '\t', '\n', '\r', ':':
			i++
		case ',':
			expectKey = stack[len(stack)-1] == '{'
			i++
		case '{', '[':
			nodes++
			stack = append(stack, c)
			if len(stack) > lim.MaxDepth {
				return nil, &LimitError{Limit: "depth", Max: lim.MaxDepth}
			}
			expectKey = c == '{'
			i++
		case '}', ']':
			stack = stack[:len(stack)-1]
			expectKey = false
			i++
		case '"':
			j := i + 1
			for {
				k := bytes.IndexAny(data[j:], "\"\\")
				j += k
				if data[j] == '\\' {
					j += 2
					continue
				}
				j++
				break
			}
			if expectKey {
				expectKey = false
			} else {
				nodes++
				v := jsonValue{start: i, end: j, str: true}
				if len(lazy) == 0 || bytes.IndexByte(data[i:j], tokenOpen) >= 0 {
					v.text, v.plain = decodeString(data[i:j])
				}
				vals = append(vals, v)
			}
			i = j
		default:
			j := i
			for j < len(data) && bytes.IndexByte([]byte(" \t\n\r,]}:"), data[j]) < 0 {
				j++
			}
			nodes++
			if c == '-' || isDigit(c) {
				vals = append(vals, jsonValue{start: i, end: j, text: string(data[i:j])})
			}
			i = j
		}
		if nodes > lim.MaxNodes {
			return nil, &LimitError{Limit: "nodes", Max: lim.MaxNodes}
		}
	}
	return vals, nil
}
