package records

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ArgumentsDigest returns the digest a [Grant] limited to identical
// arguments holds: the hex SHA-256 of the arguments' canonical JSON (no
// insignificant space, object keys sorted, numbers as written), so that
// two calls whose arguments differ only in layout or key order have the
// same digest. Arguments that are not one JSON value are digested as they
// are, under another prefix, so that they never match valid JSON.
func ArgumentsDigest(arguments string) string {
	h := sha256.New()
	if canon, ok := canonicalJSON(arguments); ok {
		h.Write([]byte("json\x00"))
		h.Write(canon)
	} else {
		h.Write([]byte("raw\x00"))
		io.WriteString(h, arguments)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// canonicalJSON re-encodes one JSON value with sorted keys and compact
// layout; false when s is not exactly one JSON value in valid UTF-8, or
// when an object repeats a key (parsers disagree on which one counts, so
// such arguments match only byte for byte).
func canonicalJSON(s string) ([]byte, bool) {
	if !utf8.ValidString(s) {
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var buf bytes.Buffer
	if !canonicalValue(dec, &buf, 0) {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return buf.Bytes(), true
}

// maxDepth bounds the nesting canonicalValue follows.
const maxDepth = 1000

// canonicalValue writes the next value of dec to buf canonically.
func canonicalValue(dec *json.Decoder, buf *bytes.Buffer, depth int) bool {
	if depth > maxDepth {
		return false
	}
	tok, err := dec.Token()
	if err != nil {
		return false
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '[':
			buf.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					buf.WriteByte(',')
				}
				if !canonicalValue(dec, buf, depth+1) {
					return false
				}
			}
			buf.WriteByte(']')
		case '{':
			members := map[string][]byte{}
			for dec.More() {
				k, err := dec.Token()
				key, ok := k.(string)
				if err != nil || !ok {
					return false
				}
				if _, dup := members[key]; dup {
					return false
				}
				var v bytes.Buffer
				if !canonicalValue(dec, &v, depth+1) {
					return false
				}
				members[key] = v.Bytes()
			}
			buf.WriteByte('{')
			for i, k := range slices.Sorted(maps.Keys(members)) {
				if i > 0 {
					buf.WriteByte(',')
				}
				writeString(buf, k)
				buf.WriteByte(':')
				buf.Write(members[k])
			}
			buf.WriteByte('}')
		default:
			return false
		}
		// The closing delimiter.
		if _, err := dec.Token(); err != nil {
			return false
		}
	case string:
		writeString(buf, tok)
	case json.Number:
		buf.WriteString(tok.String())
	case bool:
		buf.WriteString(strconv.FormatBool(tok))
	case nil:
		buf.WriteString("null")
	default:
		return false
	}
	return true
}

// writeString writes s as a JSON string, escaping as encoding/json does
// without HTML escaping.
func writeString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	buf.Truncate(buf.Len() - 1)
}
