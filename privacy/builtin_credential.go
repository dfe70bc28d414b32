package privacy

import (
	"math"
	"strings"
)

// Credentials found by where they stand (an HTTP header, a cookie, a query
// parameter, a key=value pair) or by a provider's key format.

// credentialHeaders are header names whose value is a credential (lower
// case).
var credentialHeaders = []string{
	"authorization", "proxy-authorization", "x-api-key", "api-key", "apikey", "x-auth-token", "x-access-token",
	"x-goog-api-key", "ocp-apim-subscription-key", "private-token", "x-csrf-token", "x-xsrf-token",
	"cookie", "set-cookie", "x-amz-security-token", "x-session-token", "x-session-id",
}

// credentialNames are parts of parameter and field names whose value is a
// credential (lower case): a name holding one of them is a credential
// name ("client_secret", "githubToken", "db_password").
var credentialNames = []string{
	"password", "passwd", "pwd", "secret", "token", "apikey", "api_key", "api-key", "accesskey", "access_key",
	"privatekey", "private_key", "credential", "auth", "session", "sessid", "sid", "signature", "sig", "key",
}

// passwordNames take any value of six bytes or more: a password is short
// and often of low entropy.
var passwordNames = []string{"password", "passwd", "pwd", "pass"}

// findCredential is called at ':' and '=' (a header or a key=value pair)
// and at '-', '.', '_' (provider key prefixes).
func findCredential(text string, i int, dst []Finding) ([]Finding, int) {
	if text[i] == ':' {
		return findAssigned(text, i, dst)
	}
	n := len(dst)
	dst, next := findProviderKey(text, i, dst)
	if len(dst) > n || text[i] != '=' {
		return dst, next
	}
	return findAssigned(text, i, dst)
}

// nameBefore returns the name that ends right before i (skipping a closing
// quote and spaces): letters, digits, '_', '-' and '.'.
func nameBefore(text string, i int) (start, end int) {
	e := i
	for e > 0 && text[e-1] == ' ' && i-e < 2 {
		e--
	}
	if e > 0 && (text[e-1] == '"' || text[e-1] == '\'') {
		e--
	}
	s := e
	for s > 0 && e-s < 64 && (isAlnum(text[s-1]) || text[s-1] == '_' || text[s-1] == '-' || text[s-1] == '.') {
		s--
	}
	return s, e
}

func lowerASCII(s string, buf []byte) string {
	n := copy(buf, s)
	for k := range n {
		buf[k] = lower(buf[k])
	}
	return string(buf[:n])
}

// findAssigned finds the value of a credential header ("Authorization:
// Bearer ...", "Cookie: ..."), of a credential query parameter or
// key=value field ("access_token=...", "client_secret: ..."), with
// length and entropy checks for the generic names.
func findAssigned(text string, i int, dst []Finding) ([]Finding, int) {
	s, e := nameBefore(text, i)
	if e-s < 2 || e-s > 64 {
		return dst, i + 1
	}
	var buf [64]byte
	name := lowerASCII(text[s:e], buf[:])
	// The value: after the separator, spaces and an opening quote.
	v := i + 1
	if text[i] == ':' && v < len(text) && text[v] == '=' {
		return dst, i + 1
	}
	for v < len(text) && (text[v] == ' ' || text[v] == '\t') && v-i < 4 {
		v++
	}
	quote := byte(0)
	if v < len(text) && (text[v] == '"' || text[v] == '\'') {
		quote = text[v]
		v++
	}
	header := text[i] == ':'
	if header && isHeaderName(name) {
		switch name {
		case "cookie", "set-cookie":
			end := v
			for end < len(text) && text[end] != '\n' && text[end] != '\r' && text[end] != quote && !(name == "set-cookie" && text[end] == ';') {
				end++
			}
			end = trimValue(text, v, end)
			if end-v >= 8 {
				return append(dst, Finding{Start: v, End: end, Type: Secret, Score: 0.9}), end
			}
			return dst, max(end, i+1)
		}
		// "Bearer <token>", "Basic <base64>", or the key itself.
		w := v
		for w < len(text) && isAlpha(text[w]) && w-v < 16 {
			w++
		}
		if w > v && w < len(text) && text[w] == ' ' && schemeWord(text[v:w]) {
			v = w + 1
		}
		end := tokenEnd(text, v, quote)
		if end-v >= 8 {
			return append(dst, Finding{Start: v, End: end, Type: Secret, Score: 0.95}), end
		}
		return dst, max(end, i+1)
	}
	// A parameter or field: a credential name, at a name boundary (start,
	// space, '?', '&', ';', ',', '{', a quote).
	if s > 0 && !strings.ContainsRune(" \t\n?&;,{(\"'[", rune(text[s-1])) {
		return dst, i + 1
	}
	if !credentialName(name) {
		return dst, i + 1
	}
	end := tokenEnd(text, v, quote)
	val := text[v:end]
	switch {
	case anyPart(name, passwordNames):
		if len(val) < 6 || placeholder(val) {
			return dst, max(end, i+1)
		}
	case len(val) < 16 || entropy(val) < 3.0 || placeholder(val):
		return dst, max(end, i+1)
	}
	return append(dst, Finding{Start: v, End: end, Type: Secret, Score: 0.85}), end
}

func isHeaderName(name string) bool {
	for _, h := range credentialHeaders {
		if name == h {
			return true
		}
	}
	return false
}

func schemeWord(w string) bool {
	switch strings.ToLower(w) {
	case "bearer", "basic", "token", "digest", "negotiate", "apikey", "key", "sharedkey", "hmac":
		return true
	}
	return false
}

// credentialName reports whether a parameter name names a credential: it
// holds one of credentialNames as a part (between '_', '-', '.', or a
// change to upper case was lost by lowering, so a suffix or prefix also
// counts).
func credentialName(name string) bool {
	if !credentialStart.in(name) {
		return false // no part of credentialNames in it
	}
	for _, w := range credentialNames {
		k := strings.Index(name, w)
		if k < 0 {
			continue
		}
		// "key" and "sid" only as the whole name or its last part
		// ("api_key", "x-key"), not inside words ("monkey", "inside").
		if (w == "key" || w == "sid" || w == "sig" || w == "auth") && !(k+len(w) == len(name) && (k == 0 || !isAlpha(name[k-1]) || w == "key")) {
			continue
		}
		if w == "key" && k > 0 && isAlpha(name[k-1]) && !strings.HasSuffix(name, "apikey") && !strings.HasSuffix(name, "secretkey") && !strings.HasSuffix(name, "accesskey") && !strings.HasSuffix(name, "privatekey") {
			continue
		}
		return true
	}
	return false
}

// credentialStart holds the first two bytes of each of credentialNames: a
// name without any of them holds none of the words.
var credentialStart = bigramsOf(credentialNames)

// bigrams is a set of two-byte strings: the first two bytes of words, so
// that a string without any of them holds none of the words.
type bigrams struct {
	set [1 << 16 / 64]uint64
	all bool // a word is shorter than two bytes: any string may hold it
}

func bigramsOf(words []string) *bigrams {
	t := &bigrams{}
	for _, w := range words {
		if len(w) < 2 {
			t.all = true
			continue
		}
		k := uint16(w[0])<<8 | uint16(w[1])
		t.set[k/64] |= 1 << (k % 64)
	}
	return t
}

// has reports whether the two bytes a, b may be one of the words of t.
func (t *bigrams) has(a, b byte) bool {
	k := uint16(a)<<8 | uint16(b)
	return t.all || t.set[k/64]&(1<<(k%64)) != 0
}

// in reports whether s may hold one of the words of t.
func (t *bigrams) in(s string) bool {
	if t.all {
		return true
	}
	for j := 0; j+1 < len(s); j++ {
		k := uint16(s[j])<<8 | uint16(s[j+1])
		if t.set[k/64]&(1<<(k%64)) != 0 {
			return true
		}
	}
	return false
}

func anyPart(name string, parts []string) bool {
	for _, p := range parts {
		if strings.Contains(name, p) {
			return true
		}
	}
	return false
}

// placeholder reports values that stand for no secret: "***", "<token>",
// "${TOKEN}", "xxxx", "null", "changeme".
func placeholder(v string) bool {
	if v == "" {
		return true
	}
	switch strings.ToLower(v) {
	case "null", "none", "true", "false", "undefined", "redacted", "changeme", "password", "secret", "token":
		return true
	}
	if v[0] == '<' || v[0] == '$' || v[0] == '{' || v[0] == '%' || v[0] == '[' {
		return true
	}
	same := true
	for k := 1; k < len(v); k++ {
		if v[k] != v[0] {
			same = false
			break
		}
	}
	return same
}

// tokenEnd returns the end of a credential value from v: up to the closing
// quote, or to white space, '&', ';', ',' and closing brackets.
func tokenEnd(text string, v int, quote byte) int {
	e := v
	for e < len(text) && e-v < 4096 {
		c := text[e]
		if quote != 0 {
			if c == quote || c == '\n' {
				break
			}
		} else if c <= ' ' || strings.IndexByte("&;,\"'<>)]}", c) >= 0 {
			break
		}
		e++
	}
	return trimValue(text, v, e)
}

func trimValue(text string, v, e int) int {
	for e > v && strings.IndexByte(" \t.", text[e-1]) >= 0 {
		e--
	}
	return e
}

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	var n [256]int
	for i := 0; i < len(s); i++ {
		n[s[i]]++
	}
	h := 0.0
	for _, c := range n {
		if c > 0 {
			p := float64(c) / float64(len(s))
			h -= p * math.Log2(p)
		}
	}
	return h
}

// providerKeys are key formats with a fixed prefix: the prefix (the byte at
// which it is recognised is its last one), the bytes allowed after it and
// the shortest length of the rest.
var providerKeys = []struct {
	prefix string
	ok     func(byte) bool
	min    int
}{
	{"sk-proj-", isTokenChar, 20},                  // OpenAI project keys
	{"sk-svcacct-", isTokenChar, 20},               // OpenAI service account keys
	{"sk-ant-", isTokenChar, 20},                   // Anthropic keys
	{"sk-", isAlnum, 32},                           // OpenAI keys
	{"xapp-", isTokenChar, 20},                     // Slack app-level tokens
	{"xoxe.xoxp-", isTokenChar, 20},                // Slack refresh tokens
	{"ya29.", isTokenChar, 20},                     // Google OAuth access tokens
	{"pk_live_", isAlnum, 16},                      // Stripe publishable keys
	{"pk_test_", isAlnum, 16},                      //
	{"whsec_", isAlnum, 24},                        // Stripe webhook secrets
	{"glpat-", isTokenChar, 20},                    // GitLab personal access tokens
	{"npm_", isAlnum, 36},                          // npm tokens
	{"hf_", isAlnum, 30},                           // Hugging Face tokens
	{"AccountKey=", isBase64Char, 80},              // Azure storage connection strings
	{"SharedAccessKey=", isBase64Char, 40},         // Azure Service Bus / Event Hubs
	{"SharedAccessSignature=", isSASChar, 40},      // Azure SAS in a connection string
	{"DefaultEndpointsProtocol=", isConnChar, 100}, // whole Azure connection string
}

// providerByLast indexes providerKeys by the last byte of the prefix, the
// byte at which the finder is called.
var providerByLast = func() (t [256][]int) {
	for k, pk := range providerKeys {
		c := pk.prefix[len(pk.prefix)-1]
		t[c] = append(t[c], k)
	}
	return t
}()

func isBase64Char(c byte) bool { return isAlnum(c) || c == '+' || c == '/' || c == '=' }
func isSASChar(c byte) bool    { return isAlnum(c) || strings.IndexByte("%&=+/-_.:", c) >= 0 }
func isConnChar(c byte) bool   { return c > ' ' && c != '"' && c != '\'' }

// findProviderKey is called at '-', '.', '_' and '=' ends of prefixes.
func findProviderKey(text string, i int, dst []Finding) ([]Finding, int) {
	c := text[i]
	for _, k := range providerByLast[c] {
		pk := &providerKeys[k]
		p := pk.prefix
		s := i + 1 - len(p)
		if s < 0 || text[i-1] != p[len(p)-2] || text[s:i+1] != p || !boundaryBefore(text, s) {
			continue
		}
		e := runOf(text, i+1, 1024, pk.ok)
		if e-i-1 < pk.min || e < len(text) && wordChar(text[e]) {
			continue
		}
		if p == "sk-" && !(hasDigit(text[i+1:e]) && hasUpperOrLower(text[i+1:e])) {
			continue
		}
		start := s
		if strings.HasSuffix(p, "=") && p != "DefaultEndpointsProtocol=" {
			start = i + 1 // the key, not its name
		}
		return append(dst, Finding{Start: start, End: e, Type: Secret, Score: 0.95}), e
	}
	// SendGrid: SG.<22>.<43>, recognised at the first dot.
	if c == '.' && i >= 2 && text[i-2:i] == "SG" && boundaryBefore(text, i-2) {
		a := runOf(text, i+1, 64, isTokenChar)
		if a-i-1 == 22 && a < len(text) && text[a] == '.' {
			b := runOf(text, a+1, 64, isTokenChar)
			if b-a-1 == 43 && !(b < len(text) && wordChar(text[b])) {
				return append(dst, Finding{Start: i - 2, End: b, Type: Secret, Score: 0.95}), b
			}
		}
	}
	return dst, i + 1
}

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if isDigit(s[i]) {
			return true
		}
	}
	return false
}

func hasUpperOrLower(s string) bool {
	for i := 0; i < len(s); i++ {
		if isAlpha(s[i]) {
			return true
		}
	}
	return false
}
