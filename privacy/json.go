package privacy

import (
	"bytes"
	"context"
	"encoding/json"
	"unicode/utf8"
)

// TokenizeJSON tokenizes the values of a JSON payload: every string and
// every number is scanned and the values found are replaced by tokens;
// object keys and the layout stay as they are. A number in which a value
// is found is replaced as a whole by a JSON string holding a token that
// remembers it was a number, so that [Rewriter.RestoreJSON] gives the number
// back. The output is valid JSON.
//
// It fails with an error wrapping [ErrInvalidJSON] when data is not valid
// JSON, and with a [*LimitError] when data is too large, too deep, has too
// many values or findings.
func (r *Rewriter) TokenizeJSON(ctx context.Context, data []byte) ([]byte, error) {
	found := 0
	return r.walkJSON(data, func(out, raw []byte, str bool) ([]byte, error) {
		if !str {
			fs, err := r.scanner.Scan(ctx, string(raw))
			if err != nil || len(fs) == 0 {
				return append(out, raw...), err
			}
			if found += len(fs); found > r.scanner.limits.MaxFindings {
				return out, &LimitError{Limit: "findings", Max: r.scanner.limits.MaxFindings}
			}
			best := fs[0]
			for _, f := range fs[1:] {
				if better(f, best) {
					best = f
				}
			}
			out = append(out, '"')
			out = append(out, r.vault.token(best.Type, string(raw), true)...)
			return append(out, '"'), nil
		}
		s, plain := decodeString(raw)
		fs, err := r.scanner.Scan(ctx, s)
		if err != nil || len(fs) == 0 {
			return append(out, raw...), err
		}
		if found += len(fs); found > r.scanner.limits.MaxFindings {
			return out, &LimitError{Limit: "findings", Max: r.scanner.limits.MaxFindings}
		}
		out = append(out, '"')
		last := 0
		for _, f := range fs {
			out = appendStringBody(out, s[last:f.Start], plain)
			out = append(out, r.vault.token(f.Type, s[f.Start:f.End], false)...)
			last = f.End
		}
		out = appendStringBody(out, s[last:], plain)
		return append(out, '"'), nil
	})
}

// RestoreJSON restores, in the string values of a JSON payload, the tokens
// of this vault whose type g allows. A string that is exactly the token of
// a number becomes that number again. Keys and layout stay as they are; the
// output is valid JSON. Errors as for [Rewriter.TokenizeJSON].
func (r *Rewriter) RestoreJSON(data []byte, g Grant) ([]byte, error) {
	return r.walkJSON(data, func(out, raw []byte, str bool) ([]byte, error) {
		if !str || bytes.IndexByte(raw, tokenOpen) < 0 {
			return append(out, raw...), nil
		}
		s, _ := decodeString(raw)
		if tokenAt(s, 0) == len(s) {
			if e, ok := r.vault.lookup(s); ok && g.Allows(e.Type) {
				if e.Number {
					return append(out, e.Value...), nil
				}
				out = append(out, '"')
				out = appendStringBody(out, e.Value, false)
				return append(out, '"'), nil
			}
		}
		t := r.Restore(s, g)
		if t == s {
			return append(out, raw...), nil
		}
		out = append(out, '"')
		out = appendStringBody(out, t, false)
		return append(out, '"'), nil
	})
}

// Arguments prepares the arguments of a tool call for the tool: the whole
// payload is tokenized first (so a value the model typed itself is caught
// as well), then only the tokens whose type g allows are restored. A
// payload that is not valid JSON is handled as text.
func (r *Rewriter) Arguments(ctx context.Context, args []byte, g Grant) ([]byte, error) {
	if !json.Valid(args) {
		t, err := r.Tokenize(ctx, string(args))
		if err != nil {
			return nil, err
		}
		return []byte(r.Restore(t, g)), nil
	}
	t, err := r.TokenizeJSON(ctx, args)
	if err != nil {
		return nil, err
	}
	return r.RestoreJSON(t, g)
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

// walkJSON copies a valid JSON payload, passing every string value (not
// keys) and every number to value, which appends its replacement.
func (r *Rewriter) walkJSON(data []byte, value func(out, raw []byte, str bool) ([]byte, error)) ([]byte, error) {
	lim := r.scanner.limits
	if len(data) > lim.MaxBytes {
		return nil, &LimitError{Limit: "bytes", Max: lim.MaxBytes}
	}
	if !json.Valid(data) {
		return nil, ErrInvalidJSON
	}
	out := make([]byte, 0, len(data)+len(data)/4)
	var stack []byte
	expectKey := false
	nodes := 0
	var err error
	for i := 0; i < len(data); {
		c := data[i]
		switch c {
		case ' ', '\t', '\n', '\r', ':':
			out = append(out, c)
			i++
		case ',':
			expectKey = stack[len(stack)-1] == '{'
			out = append(out, c)
			i++
		case '{', '[':
			nodes++
			stack = append(stack, c)
			if len(stack) > lim.MaxDepth {
				return nil, &LimitError{Limit: "depth", Max: lim.MaxDepth}
			}
			expectKey = c == '{'
			out = append(out, c)
			i++
		case '}', ']':
			stack = stack[:len(stack)-1]
			expectKey = false
			out = append(out, c)
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
				out = append(out, data[i:j]...)
				expectKey = false
			} else {
				nodes++
				if out, err = value(out, data[i:j], true); err != nil {
					return nil, err
				}
			}
			i = j
		default:
			j := i
			for j < len(data) && bytes.IndexByte([]byte(" \t\n\r,]}:"), data[j]) < 0 {
				j++
			}
			nodes++
			if c == '-' || isDigit(c) {
				if out, err = value(out, data[i:j], false); err != nil {
					return nil, err
				}
			} else {
				out = append(out, data[i:j]...)
			}
			i = j
		}
		if nodes > lim.MaxNodes {
			return nil, &LimitError{Limit: "nodes", Max: lim.MaxNodes}
		}
	}
	return out, nil
}
