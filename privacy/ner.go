package privacy

import (
	"context"
	"encoding/binary"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// EmbeddedTypes returns the types that the embedded recognizer
// ([Embedded]) finds, in a new slice.
func EmbeddedTypes() []EntityType { return slices.Clone(embeddedTypes) }

var embeddedTypes = []EntityType{Person, Location, Organization, Address, DateTime, Age, Title}

// Types found by the embedded recognizer only.
const (
	// Age is a person's age ("a 50 year old", "aged 42").
	Age EntityType = "AGE"
	// Title is a job title or an honorific ("Benefits manager", "Mrs.").
	Title EntityType = "TITLE"
)

// entities is the embedded recognizer of names, places, organisations,
// street addresses, dates, ages and titles.
type entities struct {
	want [8]bool // by index in embeddedTypes
}

// Embedded returns the embedded recognizer of personal names, places
// (cities, countries, regions), organisations, street addresses (street
// lines, unit numbers, postal codes), dates, ages and job titles, limited
// to the given types (all of [EmbeddedTypes] when none is given).
//
// It reads the text as a sequence of words and numbers and decides with
// word lists that ship inside the module (given names and family names of
// the US census, the GeoNames places of 500 inhabitants or more,
// country and state names, common English words), the shape of the words
// (capitalisation, numbers, abbreviations), closed classes of words
// written in the package (street types, unit words, company suffixes,
// honorifics, month and day names, job nouns) and the words around them.
// Text without any upper-case letter is matched against the lists case
// by case. It needs no network and no service; the lists load once, on
// first use, into about 11 MB of memory shared by all scanners.
//
// [Builtins] includes it; it is safe for concurrent use.
func Embedded(types ...EntityType) Recognizer {
	theLexicon() // load the lists now rather than in the first scan
	e := &entities{}
	for k, t := range embeddedTypes {
		e.want[k] = len(types) == 0 || slices.Contains(types, t)
	}
	return e
}

func (e *entities) wants(t EntityType) bool {
	k := slices.Index(embeddedTypes, t)
	return k >= 0 && e.want[k]
}

// skipNever are the word classes that make a capitalised word worth a
// closer look even before a lower-case word.
const skipNever = wFirst | wLast | wCity | wCountry | wRegion | wPlaceStart | wWeekday | wMonth | wHonorific |
	wOrgSuffix | wOrgWord | wStreetPre | wStreetType | wSecondary | wJob

// anchorIn8 reports whether one of the eight bytes of x may be an anchor:
// a byte of 0x80 or more, or one from '0' to 'Z' (digits, upper-case
// ASCII letters and the few signs between them), by a SWAR test of a byte
// range after Hacker's Delight's "has between". The byte loop decides.
func anchorIn8(x uint64) bool {
	const ones = 0x0101010101010101
	const high = 0x8080808080808080
	// For bytes below 0x80: b in (m, n) when bit 7 of both (127+n-b) and
	// (b+127-m) is set.
	const m, n = '0' - 1, 'Z' + 1
	return ((ones*(127+n)-x)&(x+ones*(127-m))|x)&high != 0
}

// Token kinds.
const (
	tWord = iota
	tNum
	tPunct
)

type tok struct {
	s, e  int
	kind  uint8
	c     byte // the byte of a punctuation token
	nl    uint8
	sp    bool // white space before
	cap   bool // starts with an upper-case letter
	upper bool // all letters upper case (two or more)
	dot   bool // followed directly by '.'
	code  bool // joined to '_' or '[' (an identifier or a token)
	ord   bool // a number with a letter suffix (40th, 3a)
	hl    bool // the suffix is one letter: a house number (221B, 4c)
	nc    bool // a word of a script without letter case (Hebrew, Arabic, Hangul, Georgian, CJK)
	f     uint32
	used  bool

	// kind, plus kcCode when code (set last by tokenize): tWord for a
	// word outside code, as the tagger tests it.
	kc uint8
}

type nerState struct {
	toks []tok
}

var nerPool = sync.Pool{New: func() any { return &nerState{toks: make([]tok, 0, 256)} }}

// anchorTable marks the bytes at which the recognizer looks closer: upper
// case letters, digits and the first byte of a non-ASCII letter.
var anchorTable = func() (t [256]bool) {
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 0xC0; c < 0x100; c++ {
		t[c] = true
	}
	return t
}()

// Recognize implements [Recognizer].
func (e *entities) Recognize(ctx context.Context, text string, dst []Finding) ([]Finding, error) {
	l := theLexicon()
	st := nerPool.Get().(*nerState)
	defer nerPool.Put(st)
	cased := false
	base := len(dst)
	for i := 0; i < len(text); {
		sg := nextSegment(l, text, i)
		cased = cased || sg.upper
		switch sg.kind {
		case segNone:
			i = len(text)
			continue
		case segDate:
			if e.wants(DateTime) {
				dst = append(dst, Finding{Start: sg.s, End: sg.e, Type: DateTime, Score: 0.7})
			}
		case segWords:
			st.toks = tokenize(l, text, sg.s, sg.e, st.toks[:0])
			for k := 0; k < len(st.toks) && !cased; k++ {
				cased = st.toks[k].cap
			}
			dst = e.tag(l, text, st.toks, true, dst)
		}
		i = sg.e
	}
	if !cased && hasUpper(text) {
		cased = true // a capital inside a word ("aA")
	}
	if !cased && ctx.Value(casedText{}) == nil && hasLetter(text) {
		dst = dst[:base]
		st.toks = tokenize(l, text, 0, len(text), st.toks[:0])
		dst = e.tag(l, text, st.toks, false, dst)
	}
	return dst, nil
}

// Kinds of [segment].
const (
	segNone  = iota // no anchor up to the end of the text
	segSkip         // a capitalised common word that starts nothing
	segDate         // a day of the week alone, a date by itself
	segWords        // words to tag
)

// A segment is a step of the scan of a text: the part [s, e) that the
// rules read as a whole, and where the scan goes on (at e). No rule of the
// embedded recognizer looks outside the segment it tags, so what it finds
// in a segment depends on the segment's text only.
type segment struct {
	kind  uint8
	upper bool // an upper-case letter was passed on the way
	s, e  int
}

// nextSegment scans text from i to the next anchor and returns the
// segment that it starts. Recognize and a stream's hold-back both scan
// with it, so that a stream cuts only where the one-shot scan of the whole
// text has no segment open.
func nextSegment(l *lexicon, text string, i int) segment {
	upper := false
	for i < len(text) {
		// Skip to the next anchor at a word start, eight bytes at a time.
		for {
			for i+8 <= len(text) && !anchorIn8(binary.LittleEndian.Uint64([]byte(text[i:i+8]))) {
				i += 8
			}
			end := min(i+8, len(text))
			for i < end && !anchorTable[text[i]] {
				i++
			}
			if i < end || i >= len(text) {
				break
			}
		}
		if i >= len(text) {
			break
		}
		c := text[i]
		if c >= 0xC0 {
			r, _ := utf8.DecodeRuneInString(text[i:])
			if !unicode.IsLetter(r) {
				i++
				continue
			}
			if unicode.IsUpper(r) {
				upper = true
			} else if !caseless(r) {
				// A lower-case letter outside ASCII: not an anchor.
				i += utf8.RuneLen(r)
				continue
			}
		} else if c >= 'A' && c <= 'Z' {
			upper = true
		}
		if i > 0 && (isAlnum(text[i-1]) || text[i-1] >= 0x80) {
			i++
			continue
		}
		// A capitalised common word before a lower-case word ("The
		// committee", "Members agreed") starts nothing: skip it without
		// looking closer.
		if c >= 'A' && c <= 'Z' {
			w := i + 1
			for w < len(text) && isAlpha(text[w]) {
				w++
			}
			if w+1 < len(text) && text[w] == ' ' && text[w+1] >= 'a' && text[w+1] <= 'z' && w-i <= 16 {
				// A common word that is also a family name ("Members",
				// "Will" is a given name) is no name on its own either.
				f := l.lookup(text[i:w])
				if f&(wCommon|wNotName) != 0 && f&(skipNever&^(wLast|wPlaceStart)) == 0 {
					return segment{kind: segSkip, upper: upper, s: i, e: w}
				}
				// A day of the week before a lower-case word: a date by itself.
				if f&wWeekday != 0 && w-i >= 6 && f&(skipNever&^(wWeekday|wLast|wPlaceStart|wCity)) == 0 {
					return segment{kind: segDate, upper: upper, s: i, e: w}
				}
			}
		}
		// A segment: from a little before the anchor to where the text has
		// been quiet (lower-case words only) for a while.
		return segment{kind: segWords, upper: upper, s: segmentStart(text, i), e: segmentEnd(text, i)}
	}
	return segment{kind: segNone, upper: upper, s: len(text), e: len(text)}
}

func hasLetter(text string) bool {
	for i := 0; i < len(text); i++ {
		if c := text[i]; isAlpha(c) || c >= 0xC0 {
			return true
		}
	}
	return false
}

// segmentStart backs up from an anchor to the start of its line or at most
// about 32 bytes (to a word start), to see the words before it.
func segmentStart(text string, i int) int {
	s := i
	for s > 0 && i-s < 32 && text[s-1] != '\n' {
		s--
	}
	if s > 0 && text[s-1] != '\n' {
		for s < i && text[s] != ' ' {
			s++
		}
	}
	// Include the line before, which can say what a line holds (a name
	// above an address).
	return s
}

// segmentEnd returns where a segment that holds an anchor at i ends: after
// four words in a row without an anchor (the fourth included, so that "X
// is a small town" is seen whole), at a blank line, or 4 KB on.
func segmentEnd(text string, i int) int {
	quiet := 0
	p := i
	for p < len(text) && p-i < 4096 {
		c := text[p]
		if c == ' ' || c == '\t' || c == '\r' {
			p++
			continue
		}
		if c == '\n' {
			p++
			continue
		}
		// A word or punctuation.
		w := p
		anchor := false
		for p < len(text) {
			b := byteClass[text[p]]
			if b&bSpace != 0 {
				break
			}
			if b&bAnchor != 0 && (p == w || byteClass[text[p-1]]&bAlpha == 0) {
				anchor = true
			}
			p++
		}
		if anchor {
			quiet = 0
		} else if quiet++; quiet >= 4 {
			return p
		}
	}
	return p
}

// caseless reports whether r is a letter of a script without letter case:
// Hebrew, Arabic, Hangul, Han, kana, the Indic scripts and the like
// (category Lo), and Georgian, whose Mkhedruli letters are lower case in
// Unicode but are written without capitals.
func caseless(r rune) bool {
	return r >= 0x10D0 && r <= 0x10FF && r != 0x10FB && r != 0x10FC || unicode.Is(unicode.Lo, r)
}

func isUpperRune(r rune) bool {
	return r < utf8.RuneSelf && r >= 'A' && r <= 'Z' || r >= utf8.RuneSelf && unicode.IsUpper(r)
}

func letterAt(text string, p int) (rune, int, bool) {
	if p >= len(text) {
		return 0, 0, false
	}
	c := text[p]
	if c < utf8.RuneSelf {
		return rune(c), 1, isAlpha(c)
	}
	r, n := utf8.DecodeRuneInString(text[p:])
	if r == '\u2206' {
		// The increment sign, typed for a Greek capital delta ("ΕΛ∆ΥΚ").
		return 'Δ', n, true
	}
	// Marks, spacing ones too (the vowel signs of Devanagari, Bengali,
	// Thai), and the zero-width joiners that Persian and the Indic scripts
	// write inside words belong to the word.
	return r, n, unicode.IsLetter(r) || unicode.In(r, unicode.Mn, unicode.Mc) || r == '\u200c' || r == '\u200d'
}

// byteClass holds the classes of the bytes that segmentEnd tests.
var byteClass = func() (t [256]uint8) {
	for c := range t {
		if isSpace(byte(c)) {
			t[c] |= bSpace
		}
		if anchorTable[c] {
			t[c] |= bAnchor
		}
		if isAlpha(byte(c)) {
			t[c] |= bAlpha
		}
	}
	return t
}()

// Byte classes of byteClass.
const (
	bSpace  = 1 << iota // isSpace
	bAnchor             // anchorTable
	bAlpha              // isAlpha
)

// codeAfter and codeBefore are the bytes that join a word after or
// before it to an identifier, a token or a password.
var codeAfter, codeBefore = byteSet("_@$%+*#" + digitBytes), byteSet("_[!$%+*" + digitBytes)

func byteSet(s string) (t [256]bool) {
	for i := 0; i < len(s); i++ {
		t[s[i]] = true
	}
	return t
}

// tokenize splits text[s:e] into words, numbers and punctuation.
func tokenize(l *lexicon, text string, s, e int, out []tok) []tok {
	p := s
	var nl uint8
	sp := false
	for p < e {
		c := text[p]
		if isSpace(c) {
			if c == '\n' && nl < 255 {
				nl++
			}
			sp = true
			p++
			continue
		}
		t := tok{s: p, nl: nl, sp: sp || p == s}
		nl, sp = 0, false
		r, n, ok := rune(c), 1, isAlpha(c) // ASCII, without a call
		if c >= utf8.RuneSelf {
			r, n, ok = letterAt(text, p)
		}
		switch {
		case ok:
			t.kind = tWord
			t.cap = c >= 'A' && c <= 'Z' || c >= utf8.RuneSelf && isUpperRune(r)
			t.nc = c >= utf8.RuneSelf && !t.cap && caseless(r)
			upper := t.cap
			letters := 0
			q := p
			// The word's hash for the lexicon, taken on the way while it is
			// ASCII (as lexicon.lookup takes it).
			h, ascii := uint64(fnvOffset), true
			odd := false // an apostrophe other than '
			for q < e {
				// A run of ASCII letters; upper case below 'a' (bit 0x20
				// clear).
				run := q
				var bits byte
				q, h, bits = asciiLetters(text, q, e, h)
				upper = upper && bits&0x20 == 0
				letters += q - run
				if q == e {
					break
				}
				if text[q] >= utf8.RuneSelf {
					if r, n, ok := letterAt(text, q); ok {
						if !isUpperRune(r) && unicode.IsLetter(r) {
							upper = false
						}
						letters++
						ascii = false
						q += n
						continue
					}
				}
				// Inner hyphen or apostrophe followed by a letter ("Mayer-Watkins",
				// "O'Brien", "O’Brien", Uzbek "G`azalkent"), but not a
				// possessive "'s". Every apostrophe is looked up as '.
				if a := apostropheAt(text, q); q+1 < e && (text[q] == '-' || a > 0) {
					n := max(a, 1)
					if _, _, ok := letterAt(text, q+n); ok {
						if a > 0 && contraction(text, q+n, e) {
							break
						}
						// "Florence-based": the place stands alone.
						if text[q] == '-' && basedAt(text, q+1, e) {
							break
						}
						c := text[q]
						if a > 0 {
							odd = odd || c != '\''
							c = '\''
						}
						h = (h ^ uint64(c)) * fnvPrime
						q += n
						continue
					}
				}
				break
			}
			t.e = q
			t.upper = upper && letters > 1
			// A word inside an identifier, a token or a password
			// ("user_name", "[PERSON_1]", "SecureP@ss", "!Open4Dayz").
			if q < len(text) && codeAfter[text[q]] || p > 0 && codeBefore[text[p-1]] {
				// Chinese and Japanese are written without spaces: their
				// words touch the digits of a number ("人民路16号"), as
				// Korean road names do ("세종대로23길").
				t.code = !(t.nc && unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) &&
					(q == len(text) || !codeAfter[text[q]] || isDigit(text[q])) && (p == 0 || !codeBefore[text[p-1]] || isDigit(text[p-1])))
			}
			t.dot = q < len(text) && text[q] == '.'
			if odd {
				t.f = l.lookupRunes(text[p:q]) // (which folds the apostrophes)
			} else if ascii && q-p <= 64 {
				t.f = l.table.getLower(text[p:q], h^h>>29)
			} else {
				t.f = l.lookup(text[p:q])
			}
			if t.f == 0 && strings.IndexByte(text[p:q], '-') > 0 {
				t.f = hyphenCommon(l, text[p:q])
			}
			p = q
		case isDigit(c):
			t.kind = tNum
			q := digitRun(text, p)
			if q < e && isAlpha(text[q]) {
				r := q
				for r < e && isAlpha(text[r]) && r-q < 3 {
					r++
				}
				if r == e || !isAlnum(text[r]) {
					t.ord = true
					t.hl = r == q+1
					q = r
				}
			}
			t.e = q
			if q < len(text) && (text[q] == '_' || isAlpha(text[q])) || p > 0 && (text[p-1] == '_' || text[p-1] == '[') {
				t.code = true
			}
			t.dot = q < len(text) && text[q] == '.'
			p = q
		default:
			t.kind = tPunct
			t.c = c
			if c >= utf8.RuneSelf {
				p += max(n, 1)
			} else {
				p++
			}
			t.e = p
		}
		t.kc = t.kind
		if t.code {
			t.kc |= kcCode
		}
		out = append(out, t)
	}
	return out
}

// kcCode marks code in tok.kc.
const kcCode = 4

// asciiLetters returns the end of the run of ASCII letters in text[q:e],
// the FNV-1a hash h continued over them lowered, and their bits or-ed
// together. It is a function of its own so that its loop keeps its
// variables in registers.
//
//go:noinline
func asciiLetters(text string, q, e int, h uint64) (int, uint64, byte) {
	var bits byte
	for q < e && isAlpha(text[q]) {
		c := text[q]
		bits |= c
		h = (h ^ uint64(c|0x20)) * fnvPrime
		q++
	}
	return q, h, bits
}

// hyphenCommon returns wCommon for a hyphenated word whose parts are all
// common words and none a name or a place ("Cross-referencing",
// "Well-known"), and 0 otherwise ("Mayer-Watkins").
func hyphenCommon(l *lexicon, w string) uint32 {
	for part := range strings.SplitSeq(w, "-") {
		f := l.lookup(part)
		if f&wCommon == 0 || f&(wFirst|wLast|wCity|wCountry|wRegion) != 0 {
			return 0
		}
	}
	return wCommon
}

// basedAt reports whether the word at p is "based" (any case), as in
// "Lisbon-based".
func basedAt(text string, p, e int) bool {
	if p+5 > e || !strings.EqualFold(text[p:p+5], "based") {
		return false
	}
	return p+5 == e || !isAlpha(text[p+5])
}

// apostropheAt returns the length of an apostrophe at p: ', the right
// single quotation mark that word processors write for it, or a backtick
// (as Uzbek written without its own letters uses it); 0 for none.
func apostropheAt(text string, p int) int {
	switch {
	case p >= len(text):
		return 0
	case text[p] == '\'' || text[p] == '`':
		return 1
	case strings.HasPrefix(text[p:], "\u2019"):
		return len("\u2019")
	}
	return 0
}

// contraction reports whether the letters at p (after an apostrophe) are
// the end of a contraction or a possessive: 's, 're, 'd, 'll, 've, 'm, 't.
func contraction(text string, p, e int) bool {
	q := p
	for q < e && isAlpha(text[q]) && q-p < 3 {
		q++
	}
	if q < e && isAlpha(text[q]) {
		return false
	}
	switch w := text[p:q]; w {
	case "s", "re", "d", "ll", "ve", "m", "t", "S", "RE", "D", "LL", "VE", "M", "T":
		return true
	}
	return false
}

// holdback implements the stream's hold-back. The recognizer reads a text
// a segment at a time ([nextSegment]), and no rule looks outside the
// segment it tags: a segment runs from up to 32 bytes before an anchor (a
// capital or a digit at a word start, never across a line break) to the
// fourth word without an anchor after the last anchor of a run, or 4 KB
// on. So the text is final up to a cut that no segment of the whole text
// can span, whatever follows; the hold-back is the rest:
//   - from the start of a segment that is still open at the end of text
//     (it has not seen its four quiet words yet; the words that follow
//     may extend any finding of it, backwards too, as a postal code
//     makes the words before it a street);
//   - from the earliest start that the segment of an anchor still to come
//     can have (as far back as [segmentStart] goes from the end, or from
//     the start of the last word, which may go on);
//   - and never from inside a closed segment that one of these cuts
//     would split: it is held whole, since its last words decide on the
//     words before them ("X is a small town").
//
// How far a finding reaches back is thus bounded by the segments, not by
// the words of a rule, and the bound holds for any rule added. (The lines
// above a segment, which the rules of address blocks read, are in the
// text the stream keeps as history.)
func (e *entities) holdback(text string) int {
	l := theLexicon()
	p := len(text)
	for p > 0 && !isSpace(text[p-1]) {
		p--
	}
	cut := segmentStart(text, p)
	var buf [16][2]int
	closed := buf[:0]
	for i := 0; i < len(text); {
		sg := nextSegment(l, text, i)
		if sg.kind == segNone {
			break
		}
		end := sg.e
		if sg.kind == segWords {
			if sg.e >= len(text) {
				cut = min(cut, sg.s)
				break
			}
		} else {
			end += 2 // a lone word is decided by the letter after its space
		}
		if sg.s < cut {
			closed = append(closed, [2]int{sg.s, end})
		}
		i = sg.e
	}
	for k := len(closed) - 1; k >= 0; k-- {
		if closed[k][0] < cut && cut < closed[k][1] {
			cut = closed[k][0]
		}
	}
	// The white space at the cut is final.
	for cut < len(text) && isSpace(text[cut]) {
		cut++
	}
	return min(len(text)-cut, maxEntityHold)
}

// maxEntityHold bounds the hold-back of the embedded recognizer: the
// longest segment (4 KB), the reach back of the next one and the last
// word, twice. Segments follow each other without a gap where every word
// is an anchor (a list of names and numbers), each reaching back into the
// one before, so keeping every closed segment whole would hold such a
// text to the stream's limit and scan all of it again on every write.
// Past the bound the stream cuts inside a closed segment: a value split
// there is rewritten on both sides of the cut (the stream fails closed),
// and what the rest of the segment reads is decided with the history the
// stream keeps.
const maxEntityHold = 2 * (4096 + 64)

// casedText is a context key: the text scanned continues a text that holds
// capital letters (a stream's later segment), so it is not read case by
// case even where this part has none.
type casedText struct{}

// hasUpper reports whether text holds an upper-case letter.
func hasUpper(text string) bool {
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c >= 'A' && c <= 'Z' {
			return true
		}
		if c >= 0xC0 {
			r, _ := utf8.DecodeRuneInString(text[i:])
			if unicode.IsUpper(r) {
				return true
			}
		}
	}
	return false
}
