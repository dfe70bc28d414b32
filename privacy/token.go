package privacy

import (
	"strconv"
	"strings"
)

// Tokens.
//
// A token is "[" LABEL "_" N "]": LABEL is the entity type in upper case
// (letters, digits and '_', starting with a letter, at most 32 bytes) and N
// is a decimal counter from 1 without leading zeros (at most 9 digits), for
// example [EMAIL_ADDRESS_1] or [CREDIT_CARD_12]. N counts per label within
// a vault. Tokens are pure ASCII and contain no byte that JSON escapes.

const (
	maxLabelLen  = 32
	maxCountLen  = 9
	maxTokenLen  = 1 + maxLabelLen + 1 + maxCountLen + 1
	tokenOpen    = '['
	tokenClose   = ']'
	tokenCounter = '_'
)

func formatToken(label string, n int) string {
	return "[" + label + "_" + strconv.Itoa(n) + "]"
}

// ParseToken reports whether s is exactly one token and returns its type
// label and counter. It says nothing about whether any vault issued the
// token.
func ParseToken(s string) (t EntityType, n int, ok bool) {
	if len(s) == 0 || tokenAt(s, 0) != len(s) {
		return "", 0, false
	}
	u := len(s) - 2
	for s[u] != tokenCounter {
		u--
	}
	n, _ = strconv.Atoi(s[u+1 : len(s)-1])
	return EntityType(s[1:u]), n, true
}

// tokenAt returns the length of the token that starts at text[i], or 0.
func tokenAt(text string, i int) int {
	if i >= len(text) || text[i] != tokenOpen {
		return 0
	}
	j := i + 1
	if j >= len(text) || text[j] < 'A' || text[j] > 'Z' {
		return 0
	}
	// Read LABEL_N as a run of [A-Z0-9_]; the counter is what follows the
	// last '_'.
	lastU := -1
	for j < len(text) && j-i <= maxTokenLen {
		c := text[j]
		if c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			j++
			continue
		}
		if c == '_' {
			lastU = j
			j++
			continue
		}
		break
	}
	if j >= len(text) || text[j] != tokenClose || lastU < 0 {
		return 0
	}
	label, count := text[i+1:lastU], text[lastU+1:j]
	if len(label) > maxLabelLen || len(count) == 0 || len(count) > maxCountLen || count[0] == '0' {
		return 0
	}
	for k := 0; k < len(count); k++ {
		if !isDigit(count[k]) {
			return 0
		}
	}
	return j + 1 - i
}

// tokenSpans returns the byte spans of the token-shaped pieces of text, in
// order. Pieces do not overlap: a span starts at a '[' after the previous
// span.
func tokenSpans(text string) [][2]int {
	var out [][2]int
	for i := 0; i < len(text); {
		k := strings.IndexByte(text[i:], tokenOpen)
		if k < 0 {
			break
		}
		i += k
		if n := tokenAt(text, i); n > 0 {
			out = append(out, [2]int{i, i + n})
			i += n
			continue
		}
		i++
	}
	return out
}
