// Package argdigest is the one digest of a tool call's arguments that
// toolgate stores: in audit records (package audit) and in sticky grants
// limited to the same arguments (package records). Two forms of "the same
// arguments" would let a grant and its audit trail disagree, so there is
// one.
//
// The digest is SHA-256 over the arguments' RFC 8785 (JSON
// Canonicalization Scheme) form when they are valid JSON (RFC 8259, valid
// UTF-8, no repeated member names), and over the arguments as they are
// otherwise. A canonical form is always valid JSON without repeated names,
// so arguments that are not such JSON never share a digest with arguments
// that are.
package argdigest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Prefix begins every [Digest].
const Prefix = "sha256:"

// Canonical returns the RFC 8785 form of args, or args when they are not
// valid JSON. args is not changed.
func Canonical(args []byte) []byte {
	v := jsontext.Value(append([]byte(nil), args...))
	if err := v.Canonicalize(); err != nil {
		return args
	}
	return v
}

// Digest returns "sha256:" followed by the lower-case hex SHA-256 of the
// canonical form of args.
func Digest(args []byte) string {
	sum := sha256.Sum256(Canonical(args))
	return Prefix + hex.EncodeToString(sum[:])
}

// Keyed returns "hmac-sha256:" followed by the lower-case hex
// HMAC-SHA-256 under key of the canonical form of args.
func Keyed(key, args []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(Canonical(args))
	return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil))
}

// Current reports whether d has the form of a [Digest].
func Current(d string) bool {
	hexPart, ok := strings.CutPrefix(d, Prefix)
	if !ok || len(hexPart) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(hexPart)
	return err == nil && strings.ToLower(hexPart) == hexPart
}
