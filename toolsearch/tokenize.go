package toolsearch

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxTermLen caps a term; longer runs of letters are cut.
const maxTermLen = 40

// tokenize calls emit with the search terms of s: words split at spaces,
// punctuation, camelCase and snake_case boundaries and between letters and
// digits, lower-cased, reduced to a rough stem, stop words left out. Two
// words joined by a hyphen also give their concatenation ("e-mail" gives
// "e", "mail" and "email"). It never fails; invalid UTF-8 counts as
// punctuation.
func tokenize(s string, emit func(string)) {
	var buf [maxTermLen * 2]byte
	var prev [maxTermLen]byte // the last word, for hyphen joins
	prevLen := 0
	hyphen := false
	for i := 0; i < len(s); {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		if !isWordRune(r) {
			hyphen = r == '-' && prevLen > 0
			if !hyphen {
				prevLen = 0
			}
			i += size
			continue
		}
		// A word: a run of letters or digits up to a case or class change.
		n := 0
		start := i
		for i < len(s) {
			r, size := rune(s[i]), 1
			if r >= utf8.RuneSelf {
				r, size = utf8.DecodeRuneInString(s[i:])
			}
			if !isWordRune(r) || (i > start && boundary(s, start, i, r)) {
				break
			}
			if n+utf8.RuneLen(unicode.ToLower(r)) <= maxTermLen {
				n += utf8.EncodeRune(buf[n:], unicode.ToLower(r))
			}
			i += size
		}
		word := buf[:n]
		if hyphen && prevLen+n <= maxTermLen {
			joined := append(buf[n:n:len(buf)], prev[:prevLen]...)
			joined = append(joined, word...)
			emitTerm(joined, emit)
		}
		hyphen = false
		prevLen = copy(prev[:], word)
		emitTerm(word, emit)
	}
}

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// boundary reports whether a new word starts at s[i] (rune r), inside a run
// of word runes that started at start: lower to upper ("sendEmail"), the
// last capital of an acronym before lower case ("HTTPServer"), and letters
// against digits ("ipv4", "v2").
func boundary(s string, start, i int, r rune) bool {
	p, _ := utf8.DecodeLastRuneInString(s[start:i])
	switch {
	case unicode.IsDigit(p) != unicode.IsDigit(r):
		return true
	case unicode.IsUpper(r) && unicode.IsLower(p):
		return true
	case unicode.IsUpper(r) && unicode.IsUpper(p):
		next, _ := utf8.DecodeRuneInString(s[i+utf8.RuneLen(r):])
		return i+utf8.RuneLen(r) < len(s) && unicode.IsLower(next)
	}
	return false
}

// emitTerm stems word and emits it unless it is a stop word. word is
// reused by the caller: the emitted string is a copy.
func emitTerm(word []byte, emit func(string)) {
	w := stem(word)
	if len(w) == 0 || stopWords[string(w)] {
		return
	}
	emit(string(w))
}

// stem strips common English suffixes so that "sends" and "sending" meet
// "send", and "scheduled" meets "schedule": a plural s or ies, then ing or
// ed (and a doubled consonant before it), then a final e. It is
// deliberately rough: the same rough stem on both sides is what matters.
func stem(w []byte) []byte {
	if len(w) <= 3 || !isASCII(w) {
		return w
	}
	s := string(w)
	switch {
	case strings.HasSuffix(s, "ies") && len(s) > 4:
		w = append(w[:len(w)-3], 'y')
	case strings.HasSuffix(s, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(s, "ss"), strings.HasSuffix(s, "us"), strings.HasSuffix(s, "is"):
	case strings.HasSuffix(s, "s"):
		w = w[:len(w)-1]
	}
	s = string(w)
	stripped := false
	switch {
	case strings.HasSuffix(s, "ing") && len(s) >= 7:
		w, stripped = w[:len(w)-3], true
	case strings.HasSuffix(s, "ed") && len(s) >= 5:
		w, stripped = w[:len(w)-2], true
	}
	n := len(w)
	if stripped && n >= 2 && w[n-1] == w[n-2] && !isVowel(w[n-1]) && w[n-1] != 's' && (n > 5 || w[n-1] != 'l') {
		w = w[:n-1]
	}
	if n := len(w); n > 4 && w[n-1] == 'e' {
		w = w[:n-1]
	}
	return w
}

func isVowel(c byte) bool { return strings.IndexByte("aeiouy", c) >= 0 }

func isASCII(w []byte) bool {
	for _, c := range w {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// stopWords are left out of queries and documents (after stemming).
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the to of for and or in on at by with from into onto
		my me i we our us you your it its is are was be been this that these those there their them
		please can could would should will shall may might must want need let some any as about so do does
		what which who whom how when where why if then than also just via per using use get tool`) {
		stopWords[string(stem([]byte(w)))] = true
	}
}
