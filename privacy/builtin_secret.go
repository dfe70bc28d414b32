package privacy

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
)

const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

var base58Index = func() (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	for i := 0; i < len(base58Alphabet); i++ {
		t[base58Alphabet[i]] = int8(i)
	}
	return t
}()

// findCrypto finds Bitcoin addresses (base58check with a double SHA-256
// checksum, bech32 and bech32m with their checksums) and Ethereum addresses
// (0x and 40 hex digits).
func findCrypto(text string, i int, dst []Finding) ([]Finding, int) {
	c := text[i]
	switch {
	case c == '0' && i+42 <= len(text) && text[i+1]|0x20 == 'x' && boundaryBefore(text, i):
		e := i + 2
		for e < len(text) && isHex(text[e]) && e-i <= 42 {
			e++
		}
		if e-i == 42 && (e == len(text) || !wordChar(text[e])) {
			return append(dst, Finding{Start: i, End: e, Type: Crypto, Score: 0.8}), e
		}
		return dst, e
	case c == '1' && i >= 2 && (strings.EqualFold(text[i-2:i], "bc") || strings.EqualFold(text[i-2:i], "tb")) &&
		(i == 2 || !wordChar(text[i-3])):
		s := i - 2
		e := i + 1
		for e < len(text) && isAlnum(text[e]) && e-s <= 90 {
			e++
		}
		if e-s <= 90 && (e == len(text) || !wordChar(text[e])) && bech32Valid(text[s:e]) {
			return append(dst, Finding{Start: s, End: e, Type: Crypto, Score: 1}), e
		}
		return dst, e
	case (c == '1' || c == '3') && boundaryBefore(text, i):
		e := i
		for e < len(text) && base58Index[text[e]] >= 0 && e-i <= 35 {
			e++
		}
		if e-i >= 25 && e-i <= 35 && (e == len(text) || !wordChar(text[e])) && base58CheckValid(text[i:e]) {
			return append(dst, Finding{Start: i, End: e, Type: Crypto, Score: 1}), e
		}
		return dst, e
	}
	return dst, i + 1
}

// base58CheckValid decodes a Bitcoin address: 25 bytes, version 0 or 5, and
// the last four bytes equal to the first four of SHA-256(SHA-256(rest)).
func base58CheckValid(s string) bool {
	var out [25]byte
	for k := 0; k < len(s); k++ {
		carry := int(base58Index[s[k]])
		for j := len(out) - 1; j >= 0; j-- {
			carry += 58 * int(out[j])
			out[j] = byte(carry)
			carry >>= 8
		}
		if carry != 0 {
			return false
		}
	}
	// Leading '1's encode leading zero bytes.
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	lead := 0
	for lead < len(out) && out[lead] == 0 {
		lead++
	}
	if lead != zeros || out[0] != 0 && out[0] != 5 {
		return false
	}
	h := sha256.Sum256(out[:21])
	h = sha256.Sum256(h[:])
	return string(h[:4]) == string(out[21:])
}

const bech32Charset = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"

func bech32Polymod(values []byte) uint32 {
	gen := [5]uint32{0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3}
	chk := uint32(1)
	for _, v := range values {
		b := chk >> 25
		chk = (chk&0x1ffffff)<<5 ^ uint32(v)
		for k := range 5 {
			if (b>>k)&1 == 1 {
				chk ^= gen[k]
			}
		}
	}
	return chk
}

// bech32Valid checks a segwit address (BIP 173 and BIP 350): one case, a
// human-readable part, '1', at least six data characters, and a checksum
// that is valid for bech32 or bech32m.
func bech32Valid(s string) bool {
	if len(s) < 14 || len(s) > 90 {
		return false
	}
	lo, up := strings.ToLower(s), strings.ToUpper(s)
	if s != lo && s != up {
		return false
	}
	s = lo
	sep := strings.LastIndexByte(s, '1')
	if sep < 1 || len(s)-sep-1 < 6 {
		return false
	}
	var vals [100]byte
	n := 0
	for k := 0; k < sep; k++ {
		vals[n] = s[k] >> 5
		n++
	}
	vals[n] = 0
	n++
	for k := 0; k < sep; k++ {
		vals[n] = s[k] & 31
		n++
	}
	for k := sep + 1; k < len(s); k++ {
		d := strings.IndexByte(bech32Charset, s[k])
		if d < 0 {
			return false
		}
		vals[n] = byte(d)
		n++
	}
	pm := bech32Polymod(vals[:n])
	return pm == 1 || pm == 0x2bc830a3
}

func isTokenChar(c byte) bool { return isAlnum(c) || c == '_' || c == '-' }

// runOf returns the end of the run of bytes from i for which ok holds,
// reading at most limit bytes.
func runOf(text string, i, limit int, ok func(byte) bool) int {
	e := i
	for e < len(text) && e-i < limit && ok(text[e]) {
		e++
	}
	return e
}

func isAlnumUnderscore(c byte) bool { return isAlnum(c) || c == '_' }
func isUpperDigit(c byte) bool      { return c >= 'A' && c <= 'Z' || isDigit(c) }

const maxPEM = 16 << 10

// findSecret finds credentials by their fixed prefixes: AWS access key ids
// (AKIA, ASIA), Google API keys (AIza), JSON web tokens (eyJ... with a JSON
// header), GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_), Stripe
// secret keys (sk_live_, rk_live_, sk_test_), Slack tokens (xoxb- and
// friends) and PEM private-key blocks.
func findSecret(text string, i int, dst []Finding) ([]Finding, int) {
	found := func(s, e int) ([]Finding, int) {
		return append(dst, Finding{Start: s, End: e, Type: Secret, Score: 0.95}), e
	}
	rest := text[i:]
	switch text[i] {
	case 'A':
		if !boundaryBefore(text, i) || len(rest) < 20 {
			break
		}
		if p := rest[:4]; p == "AKIA" || p == "ASIA" {
			e := runOf(text, i, 21, isUpperDigit)
			if e-i == 20 && (e == len(text) || !wordChar(text[e])) {
				return found(i, e)
			}
		}
		if rest[:4] == "AIza" {
			e := runOf(text, i, 40, isTokenChar)
			if e-i == 39 && (e == len(text) || !wordChar(text[e])) {
				return found(i, e)
			}
		}
	case 'J':
		if i >= 2 && text[i-2:i] == "ey" && boundaryBefore(text, i-2) {
			if e := jwtEnd(text, i-2); e > 0 {
				return found(i-2, e)
			}
		}
	case '_':
		for _, p := range [...]string{"ghp", "gho", "ghu", "ghs", "ghr", "github", "sk", "rk"} {
			s := i - len(p)
			if s < 0 || text[s:i] != p || !boundaryBefore(text, s) {
				continue
			}
			switch {
			case p == "github":
				if strings.HasPrefix(rest, "_pat_") {
					e := runOf(text, i+5, 255, isAlnumUnderscore)
					if e-i-5 >= 50 {
						return found(s, e)
					}
				}
			case p == "sk" || p == "rk":
				if strings.HasPrefix(rest, "_live_") || strings.HasPrefix(rest, "_test_") {
					e := runOf(text, i+6, 255, isAlnum)
					if e-i-6 >= 16 && !(e < len(text) && wordChar(text[e])) {
						return found(s, e)
					}
				}
			default:
				e := runOf(text, i+1, 255, isAlnum)
				if e-i-1 >= 36 && !(e < len(text) && wordChar(text[e])) {
					return found(s, e)
				}
			}
		}
	case '-':
		if i >= 4 && text[i-4:i-1] == "xox" && strings.IndexByte("abposr", text[i-1]) >= 0 && boundaryBefore(text, i-4) {
			e := runOf(text, i+1, 255, isTokenChar)
			if e-i-1 >= 10 {
				return found(i-4, e)
			}
		}
		if strings.HasPrefix(rest, "-----BEGIN ") && (i == 0 || text[i-1] != '-') {
			if e, _ := pemEnd(text, i); e > 0 {
				return append(dst, Finding{Start: i, End: e, Type: Secret, Score: 1}), e
			}
		}
	}
	return dst, i + 1
}

// jwtEnd returns the end of a JSON web token starting at s, or 0: three
// base64url parts separated by dots, the first of which decodes to a JSON
// object.
func jwtEnd(text string, s int) int {
	isB64 := func(c byte) bool { return isAlnum(c) || c == '_' || c == '-' }
	h := runOf(text, s, 4096, isB64)
	if h-s < 10 || h >= len(text) || text[h] != '.' {
		return 0
	}
	p := runOf(text, h+1, 8192, isB64)
	if p == h+1 || p >= len(text) || text[p] != '.' {
		return 0
	}
	e := runOf(text, p+1, 4096, isB64)
	if e < len(text) && (wordChar(text[e]) || text[e] == '.') {
		return 0
	}
	var buf [3072]byte
	n, err := base64.RawURLEncoding.Decode(buf[:], []byte(text[s:h]))
	if err != nil {
		return 0
	}
	var hdr map[string]json.RawMessage
	if json.Unmarshal(buf[:n], &hdr) != nil {
		return 0
	}
	if _, ok := hdr["alg"]; !ok {
		if _, ok := hdr["typ"]; !ok {
			return 0
		}
	}
	return e
}

// pemEnd returns the end of a private-key block starting at s, or 0 when
// the header is not one of a private key. A block without its END line
// ends after its base64 body.
// closed reports that the block ends with its END line.
func pemEnd(text string, s int) (end int, closed bool) {
	lim := text[s:min(len(text), s+maxPEM)]
	hdrEnd := strings.Index(lim[11:], "-----")
	if hdrEnd < 0 || hdrEnd > 40 {
		return 0, false
	}
	label := lim[11 : 11+hdrEnd]
	if !strings.HasSuffix(label, "PRIVATE KEY") {
		return 0, false
	}
	body := 11 + hdrEnd + 5
	if k := strings.Index(lim[body:], "-----END "+label+"-----"); k >= 0 {
		return s + body + k + len("-----END "+label+"-----"), true
	}
	e := body
	for e < len(lim) && (isAlnum(lim[e]) || strings.IndexByte("+/=\r\n \t:,-", lim[e]) >= 0) {
		e++
	}
	return s + e, false
}
