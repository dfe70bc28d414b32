package records

import "github.com/toolgate/toolgate/internal/argdigest"

// ArgumentsDigest returns the digest a [Grant] limited to identical
// arguments holds: "sha256:" and the lower-case hex SHA-256 of the
// arguments' RFC 8785 (JSON Canonicalization Scheme) form, so that two
// calls whose arguments differ only in layout, key order or the spelling
// of a number ({"n":1.0} and {"n":1}) have the same digest. Arguments that
// are not valid JSON (or repeat a member name) are digested as they are;
// they never match valid JSON. It is the digest of the audit log's
// records (audit.Digest), so a grant names its calls as the log does.
//
// Grants stored before this form (64 hex digits without the prefix, over
// another canonical form) were ended by the stores' schema migration, and
// never cover a call.
func ArgumentsDigest(arguments string) string {
	return argdigest.Digest([]byte(arguments))
}
