package privacy

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The rules of the embedded recognizer over a segment of tokens.

type tagger struct {
	e     *entities
	l     *lexicon
	text  string
	ts    []tok
	cased bool
	dst   []Finding
}

func (e *entities) tag(l *lexicon, text string, ts []tok, cased bool, dst []Finding) []Finding {
	g := &tagger{e: e, l: l, text: text, ts: ts, cased: cased, dst: dst}
	base := len(dst)
	if cased {
		g.caselessNames()
	}
	g.dates()
	g.ages()
	g.addresses()
	g.titles()
	g.names()
	g.divisions(base)
	return g.dst
}

// caselessNames lets the words of a script without letter case stand for
// capitalised words in a segment of cased text, where a short run of
// them among words of a cased script ("lunch with 준영 in 남구", "the
// clinic in עשרת") is almost always a name that the writer could not
// capitalise. A run of more than maxCaselessRun words is a phrase, and a
// segment whose caseless words outnumber its cased ones by far is text of
// that script with a foreign word in it: neither is a name, unless the
// segment has the shape of an address.
func (g *tagger) caselessNames() {
	nc, other, street, num := 0, 0, false, false
	for k := range g.ts {
		switch t := &g.ts[k]; {
		case t.kind == tNum:
			num = true
		case t.kind != tWord:
		case t.nc:
			nc++
			street = street || t.f&wStreetAny != 0
		default:
			other++
		}
	}
	// A segment of caseless words alone is read as names only where it is
	// an address: a street type and a number (the lines of an address
	// under a heading in another script).
	if nc == 0 || nc > 2*other && !(street && num) {
		return
	}
	for k := 0; k < len(g.ts); {
		if !g.isWord(k) || !g.ts[k].nc {
			k++
			continue
		}
		j := k + 1
		for j < len(g.ts) && g.isWord(j) && g.ts[j].nc && g.sameLine(j) {
			j++
		}
		if j-k <= maxCaselessRun {
			for i := k; i < j; i++ {
				g.ts[i].cap = g.syllables(i)
				// A street type of these scripts is known from libpostal's
				// lists alone, which do not say on which side of the name
				// it stands: it may stand on either, as "Jalan" does.
				if g.ts[i].f&(wStreetAny|wCommon) == wStreetAny {
					g.ts[i].f |= wStreetType | wStreetPre
				}
			}
		}
		k = j
	}
}

// syllables reports whether the caseless word k can be a name by its
// length: two letters or more, or one letter that is a syllable or a
// morpheme (Hangul, Han, kana), as the family name 박 is, unless it is
// joined to a number. One letter of an alphabet is no name (the "ג" of "ג€“", an en dash decoded in the wrong
// code page).
func (g *tagger) syllables(k int) bool {
	w := g.word(k)
	r, n := utf8.DecodeRuneInString(w)
	if n == len(w) && (g.isNum(k+1) && g.glued(k+1) || g.isNum(k-1) && g.glued(k)) {
		return false // a counter or a marker of a number ("第3回", "16号")
	}
	return n < len(w) || unicode.In(r, unicode.Hangul, unicode.Han, unicode.Hiragana, unicode.Katakana)
}

// maxCaselessRun is the most words of a run of caseless words that
// [tagger.caselessNames] takes for a name.
const maxCaselessRun = 4

// divisions extends each place found from base on over the word for an
// administrative division of its country written in lower case after it
// ("Донецька область", "Sirdaryo viloyati", "Moravički okrug"): the
// division's name is the adjective and the noun together.
func (g *tagger) divisions(base int) {
	k := 0
	for i := base; i < len(g.dst); i++ {
		f := &g.dst[i]
		if f.Type != Location {
			continue
		}
		for k < len(g.ts) && g.ts[k].s < f.End {
			k++
		}
		if k < len(g.ts) && g.isWord(k) && !g.ts[k].cap && g.ts[k].sp && g.sameLine(k) && g.ts[k].f&wDivision != 0 && !g.ts[k].used &&
			strings.TrimSpace(g.text[f.End:g.ts[k].s]) == "" && (i+1 == len(g.dst) || g.dst[i+1].Start >= g.ts[k].e) {
			f.End = g.ts[k].e
			g.ts[k].used = true
		}
	}
}

func (g *tagger) emit(t EntityType, a, b int, score float64) {
	if a >= b {
		return
	}
	if !g.e.wants(t) {
		// The words are taken all the same, so that they are not read
		// as something else.
		for k := a; k < b; k++ {
			g.ts[k].used = true
		}
		return
	}
	s, e := g.ts[a].s, g.ts[b-1].e
	// Abbreviations keep their dot: "Ltd.", "Str.", "Apt."
	if g.ts[b-1].kind == tWord && g.ts[b-1].dot && b-1 >= a && (t == Organization || t == Address || t == Title || t == Person) {
		if b < len(g.ts) && g.ts[b].kind == tPunct && g.ts[b].c == '.' && g.ts[b].s == e && abbrevDot(g, b-1) &&
			(t != Person || g.ts[b-1].e-g.ts[b-1].s == 1 || g.ts[b-1].f&wHonorific != 0 || g.oneOf(b-1, nameSuffixes)) {
			e++
		}
	}
	for k := a; k < b; k++ {
		g.ts[k].used = true
	}
	g.dst = append(g.dst, Finding{Start: s, End: e, Type: t, Score: score})
}

// abbrevs are the abbreviations that are also English words.
var abbrevs = map[string]bool{"st": true, "ave": true, "dr": true, "ct": true, "pl": true, "ter": true, "sq": true, "fl": true,
	"rm": true, "co": true, "corp": true, "inc": true, "dept": true, "ste": true, "sat": true, "sun": true, "mon": true,
	"wed": true, "fri": true, "jan": true, "mar": true, "apr": true, "aug": true, "dec": true, "rd": true, "pk": true,
	"hwy": true, "blvd": true, "ln": true, "cir": true, "apt": true, "bldg": true, "rev": true, "fr": true, "sr": true, "jr": true,
	"prof": true, "mr": true, "mrs": true, "ms": true, "ltd": true, "av": true, "ext": true, "pkwy": true}

func isAbbrev(w string) bool {
	if len(w) > 5 {
		return false
	}
	var b [5]byte
	for i := 0; i < len(w); i++ {
		b[i] = lower(w[i])
	}
	return abbrevs[string(b[:len(w)])]
}

// abbrevDot reports whether the dot after word k belongs to it (a short
// abbreviation, not the end of a sentence).
func abbrevDot(g *tagger, k int) bool {
	t := &g.ts[k]
	n := utf8.RuneCountInString(g.text[t.s:t.e])
	if t.f&(wOrgSuffix|wStreetType|wStreetPre|wSecondary|wHonorific) != 0 && n <= 5 {
		// A whole word ("Grove.", "Group.") at the end of a sentence
		// keeps no dot; an abbreviation ("Ave.", "Ltd.") does.
		return t.f&wCommon == 0 || isAbbrev(g.text[t.s:t.e])
	}
	return n <= 2 && t.cap
}

func (g *tagger) word(k int) string { return g.text[g.ts[k].s:g.ts[k].e] }

func (g *tagger) isWord(k int) bool {
	return uint(k) < uint(len(g.ts)) && g.ts[k].kc == tWord
}

func (g *tagger) isNum(k int) bool {
	return uint(k) < uint(len(g.ts)) && g.ts[k].kc == tNum
}

func (g *tagger) isPunct(k int, c byte) bool {
	return uint(k) < uint(len(g.ts)) && g.ts[k].kind == tPunct && g.ts[k].c == c
}

// lowerIs reports whether token k is the word w (w lower case ASCII). It
// is small enough to be inlined at its many call sites: a word token holds
// only letters, hyphens and apostrophes, which c|0x20 lowers exactly (it
// leaves the bytes of other scripts at 0x80 or above, never equal to a
// byte of w).
func (g *tagger) lowerIs(k int, w string) bool {
	if uint(k) >= uint(len(g.ts)) {
		return false
	}
	t := &g.ts[k]
	if t.e-t.s != len(w) || t.kc != tWord {
		return false
	}
	s := g.text[t.s:t.e]
	for i := 0; i < len(s); i++ {
		if s[i]|0x20 != w[i] {
			return false
		}
	}
	return true
}

// glued reports whether token k follows token k-1 without white space.
func (g *tagger) glued(k int) bool { return k > 0 && k < len(g.ts) && !g.ts[k].sp }

// sameLine reports whether token k is on the line of token k-1.
func (g *tagger) sameLine(k int) bool { return k < len(g.ts) && g.ts[k].nl == 0 }

// capWord reports whether token k can be part of a name: a capitalised
// word in cased text, any word that is not a common word in caseless text.
func (g *tagger) capWord(k int) bool {
	if !g.isWord(k) {
		return false
	}
	t := &g.ts[k]
	if g.cased {
		return t.cap
	}
	return t.f&(wFirst|wLast|wCity|wCountry|wRegion|wPlaceStart) != 0 && t.f&wCommon == 0
}

// lineStart reports whether token k begins a line (after an optional
// quoting prefix such as "> " or "??? ").
func (g *tagger) lineStart(k int) bool {
	for j := k; j >= 0; j-- {
		if j == 0 || g.ts[j].nl > 0 {
			return true
		}
		if g.ts[j-1].kind != tPunct || g.ts[j-1].c == ',' || g.ts[j-1].c == '.' {
			return false
		}
	}
	return true
}

// sentenceStart reports whether token k starts a sentence or a line.
func (g *tagger) sentenceStart(k int) bool {
	if k == 0 {
		return g.ts[0].s == 0 || sentenceEndBefore(g.text, g.ts[0].s)
	}
	if g.ts[k].nl > 0 {
		return true
	}
	p := g.ts[k-1]
	if p.kind == tPunct {
		switch p.c {
		case '.', '!', '?', ':', ';', '"', '(', '>', '\'', '*', '-':
			return p.c != '.' || k < 2 || !abbrevDot(g, k-2)
		}
	}
	return false
}

func sentenceEndBefore(text string, p int) bool {
	for p > 0 && isSpace(text[p-1]) {
		if text[p-1] == '\n' {
			return true
		}
		p--
	}
	return p == 0 || text[p-1] == '.' || text[p-1] == '!' || text[p-1] == '?' || text[p-1] == ':'
}

// prevWord returns the index of the word before token k on its line,
// skipping at most one punctuation token, or -1.
func (g *tagger) prevWord(k int) int {
	j := k - 1
	if j >= 0 && g.ts[j].kind == tPunct && g.ts[j].c != '.' && g.ts[k].nl == 0 {
		j--
	}
	if j >= 0 && g.isWord(j) && g.ts[j+1].nl == 0 {
		return j
	}
	return -1
}

// ---------------------------------------------------------------- dates

func (g *tagger) dates() {
	for k := 0; k < len(g.ts); k++ {
		t := &g.ts[k]
		if t.used {
			continue
		}
		switch {
		case g.isNum(k):
			if e := numericDate(g.text, t.s); e > 0 && boundaryBefore(g.text, t.s) {
				j := k
				for j < len(g.ts) && g.ts[j].s < e {
					j++
				}
				if g.ts[j-1].e == e {
					g.emit(DateTime, k, j, 0.85)
					k = j - 1
					continue
				}
			}
			// "5 May 1990", "5th of May"
			j := k + 1
			if g.lowerIs(j, "of") {
				j++
			}
			if g.isWord(j) && g.ts[j].f&wMonth != 0 && g.capWord(j) && n2(g.word(k)) {
				end := j + 1
				if g.isPunct(end, ',') {
					end++
				}
				if g.isNum(end) && len(g.word(end)) == 4 {
					g.emit(DateTime, k, end+1, 0.85)
					k = end
				} else if g.isNum(end-1) || end-1 == j {
					g.emit(DateTime, k, j+1, 0.7)
					k = j
				}
			}
		case g.isWord(k) && t.f&wMonth != 0 && (g.capWord(k) || !g.cased) && len(g.word(k)) >= 3:
			// "May 5, 1990", "January 2020", "Jan. 5"
			j := k + 1
			if t.dot && g.isPunct(j, '.') {
				j++
			}
			if g.isNum(j) && g.sameLine(j) && (n2(g.word(j)) || len(g.word(j)) == 4) {
				end := j + 1
				if len(g.word(j)) <= 2 || g.ts[j].ord {
					if g.isPunct(end, ',') && g.isNum(end+1) && len(g.word(end+1)) == 4 {
						end += 2
					} else if g.isNum(end) && len(g.word(end)) == 4 {
						end++
					}
				}
				if !(g.lowerIs(k, "may") || g.lowerIs(k, "mar")) || end > j+1 || len(g.word(j)) == 4 {
					g.emit(DateTime, k, end, 0.85)
					k = end - 1
				}
			}
		case g.isWord(k) && t.f&wWeekday != 0 && len(g.word(k)) >= 6 && (g.capWord(k) || !g.cased):
			g.emit(DateTime, k, k+1, 0.7)
		}
	}
}

// n2 reports whether s is a day of the month (1-31, "1st", "22nd").
func n2(s string) bool {
	d := 0
	n := 0
	for n < len(s) && isDigit(s[n]) {
		d = d*10 + int(s[n]-'0')
		n++
	}
	return n >= 1 && n <= 2 && d >= 1 && d <= 31
}

// numericDate returns the end of a date (and time) written with digits at
// p: 5/19/1937, 19.05.1937, 1937-05-19, 1997-02-21 14:02:26, or 0.
func numericDate(text string, p int) int {
	var g [3]int
	var gs [3]int
	q := p
	var sep byte
	for k := 0; k < 3; k++ {
		e := digitRun(text, q)
		if e == q || e-q > 4 {
			return 0
		}
		gs[k] = q
		g[k] = e - q
		q = e
		if k < 2 {
			if q+1 >= len(text) || !isDigit(text[q+1]) {
				return 0
			}
			c := text[q]
			if c != '/' && c != '-' && c != '.' || sep != 0 && c != sep {
				return 0
			}
			sep = c
			q++
		}
	}
	a, b, c := num(text[gs[0]:gs[0]+g[0]]), num(text[gs[1]:gs[1]+g[1]]), num(text[gs[2]:gs[2]+g[2]])
	ok := false
	switch {
	case g[0] == 4 && g[1] <= 2 && g[2] <= 2:
		ok = a >= 1900 && a <= 2100 && b >= 1 && b <= 12 && c >= 1 && c <= 31
	case g[0] <= 2 && g[1] <= 2 && (g[2] == 4 || g[2] == 2 && sep == '/'):
		ok = a >= 1 && b >= 1 && (a <= 12 && b <= 31 || a <= 31 && b <= 12) && (g[2] == 2 || c >= 1900 && c <= 2100)
	}
	if !ok || !boundaryAfter(text, q) && !(q < len(text) && (text[q] == ' ' || text[q] == 'T')) {
		return 0
	}
	// A time: " 14:02", " 14:02:26", "T14:02:26Z".
	if q+6 <= len(text) && (text[q] == ' ' || text[q] == 'T') && isDigit(text[q+1]) && isDigit(text[q+2]) && text[q+3] == ':' && isDigit(text[q+4]) && isDigit(text[q+5]) {
		t := q + 6
		if t+3 <= len(text) && text[t] == ':' && isDigit(text[t+1]) && isDigit(text[t+2]) {
			t += 3
		}
		if t < len(text) && text[t] == 'Z' {
			t++
		}
		if boundaryAfter(text, t) {
			return t
		}
	}
	if !boundaryAfter(text, q) {
		return 0
	}
	return q
}

// ----------------------------------------------------------------- ages

func (g *tagger) ages() {
	for k := 0; k < len(g.ts); k++ {
		if g.ts[k].used || !g.isNum(k) || len(g.word(k)) > 3 {
			continue
		}
		// "50 year old", "50 years old", "50-year-old"
		j := k + 1
		if g.isPunct(j, '-') && g.glued(j) {
			j++
		}
		if g.lowerIs(j, "year") || g.lowerIs(j, "years") || g.lowerIs(j, "year-old") || g.lowerIs(j, "years-old") {
			if g.lowerIs(j, "year-old") || g.lowerIs(j, "years-old") || g.lowerIs(j+1, "old") || g.isPunct(j+1, '-') && g.lowerIs(j+2, "old") {
				g.emit(Age, k, k+1, 0.85)
			}
			continue
		}
		if p := g.prevWord(k); p >= 0 && (g.lowerIs(p, "aged") || g.lowerIs(p, "age")) && p == k-1 || p >= 0 && p == k-2 && g.lowerIs(p, "age") && g.isPunct(k-1, ':') {
			g.emit(Age, k, k+1, 0.8)
		}
	}
}

// ------------------------------------------------------------- addresses

// streetSuffixes end words that name streets in European languages.
var streetSuffixes = []string{"strasse", "straße", "stasse", "str", "gasse", "weg", "vej", "vegen", "veien", "gata", "gatan",
	"straat", "laan", "plein", "plaats", "gracht", "dijk", "kade", "tie", "katu", "utca", "ulica", "allee", "platz",
	"stieg", "stigen", "vägen", "väg", "gränd", "torget", "damm", "ring", "hof", "steig", "pfad", "markt", "bruggen",
	"brink", "singel", "hauptstr", "dreef", "steeg", "stræde"}

// streetSuffixEnds holds the last two bytes of each of streetSuffixes.
var streetSuffixEnds = func() *bigrams {
	ends := make([]string, len(streetSuffixes))
	for k, s := range streetSuffixes {
		ends[k] = s[max(len(s)-2, 0):]
	}
	return bigramsOf(ends)
}()

func (g *tagger) streetMarker(k int) bool {
	if !g.isWord(k) {
		return false
	}
	f := g.ts[k].f
	if f&(wStreetType|wStreetPre) != 0 {
		return true
	}
	w := g.word(k)
	var buf [64]byte
	if len(w) > len(buf) || len(w) < 5 || !streetSuffixEnds.has(lower(w[len(w)-2]), lower(w[len(w)-1])) {
		return false
	}
	n := 0
	for i := 0; i < len(w); i++ {
		buf[n] = lower(w[i])
		n++
	}
	lw := string(buf[:n])
	for _, s := range streetSuffixes {
		if len(lw) > len(s)+2 && lw[len(lw)-len(s):] == s {
			return true
		}
	}
	return false
}

// streetWord reports whether token k can be a word of a street name.
func (g *tagger) streetWord(k int) bool {
	return g.sameLine(k) && g.streetWordOnLine(k)
}

// streetWordOnLine is streetWord for a word that may start a line.
func (g *tagger) streetWordOnLine(k int) bool {
	if !g.isWord(k) {
		return false
	}
	t := &g.ts[k]
	if t.f&wSecondary != 0 && g.isNum(k+1+b2i(g.isPunct(k+1, '.'))) {
		return false // "Apt. 12" follows the street
	}
	if t.f&(wStreetType|wStreetPre|wConnector) != 0 {
		return true
	}
	if g.cased {
		// A short lower-case word that is not English between capitalised
		// words ("Via dalla Staziun").
		if !t.cap && t.f&wCommon == 0 && t.e-t.s <= 6 && k > 0 && g.ts[k-1].cap && (g.capWord(k+1) || g.isNum(k+1)) {
			return true
		}
		// So is a preposition of one letter ("Cesta v Gorice", "Ulica
		// k Mostu"), English "a" and "I" aside.
		if !t.cap && t.e-t.s == 1 && !g.lowerIs(k, "a") && !g.lowerIs(k, "i") && k > 0 && g.ts[k-1].cap && g.capWord(k+1) && g.sameLine(k+1) {
			return true
		}
		// A lower-case street type or abbreviation after the name, before
		// the number ("Yesenin pr. 38", "Nizami küçəsi, 12", "Zavod
		// küç., 9").
		// So is any word that is no English word in that place when the
		// rest of a postal address follows the number ("Jasorat
		// ko'chasi, 88, Denov, 016695"): the address shows the word to be
		// a street type that no list holds.
		if !t.cap && (t.f&wCommon == 0 || t.dot && t.f&wStreetAny != 0) && k > 0 && g.ts[k-1].cap &&
			!g.lowerIs(k, "ext") && !g.lowerIs(k, "tel") && !g.lowerIs(k, "fax") { // "Ann Lee ext. 4412" is a phone line
			q := k + 1
			if t.dot && g.isPunct(q, '.') {
				q++
			}
			if g.isPunct(q, ',') {
				q++
			}
			if q > k+1 && g.houseNumber(q) && g.sameLine(q) && (t.f&wStreetAny != 0 || g.postalTail(q+1)) {
				return true
			}
		}
		return t.cap
	}
	return t.f&wCommon == 0 || t.f&(wFirst|wLast|wCity) != 0
}

// secondaryAt matches a unit or box at k ("Apt. 977", "Suite 616",
// "P.O. Box 101", "PSC 7004, Box 8380", "#12") and returns its end, or -1.
func (g *tagger) secondaryAt(k int) int {
	j := k
	switch {
	case g.isWord(k) && (g.lowerIs(k, "p") || g.lowerIs(k, "po")):
		// P.O. Box / PO Box
		j = k + 1
		if g.isPunct(j, '.') {
			j++
		}
		if g.lowerIs(j, "o") {
			j++
			if g.isPunct(j, '.') {
				j++
			}
		}
		if !g.lowerIs(j, "box") {
			return -1
		}
		j++
	case g.isWord(k) && g.ts[k].f&wSecondary != 0 && !g.lowerIs(k, "po"):
		j = k + 1
		if g.isPunct(j, '.') {
			j++
		}
		if g.isPunct(j, '#') {
			j++
		}
	case g.isPunct(k, '#') && g.glued(k+1):
		j = k + 1
	default:
		return -1
	}
	if !g.isNum(j) || !g.sameLine(j) {
		return -1
	}
	j++
	// "Bloc 20/59": a block and its entrance or flat.
	if g.isPunct(j, '/') && g.glued(j) && g.isNum(j+1) && g.glued(j+1) && len(g.word(j+1)) <= 4 {
		j += 2
	}
	// "PSC 7004, Box 8380"
	if g.isPunct(j, ',') && g.lowerIs(j+1, "box") && g.isNum(j+2) {
		j += 3
	}
	return j
}

type addrPart struct {
	typ  EntityType
	a, b int
}

// addresses finds street addresses: a street line (house number, street
// name, street type or a number after the name), then optionally a unit,
// a city, a state, a country and a postal code; "the corner of X and Y";
// units and boxes alone; postal codes after "zip" or "postal".
func (g *tagger) addresses() {
	for k := 0; k < len(g.ts); k++ {
		t := &g.ts[k]
		if t.used || t.kind == tPunct && t.c != '#' {
			continue
		}
		// Most lower-case words start no address.
		// (A street type of another language may start a street line:
		// "вул. Молодіжна, 71".)
		if g.cased && t.kind == tWord && !t.cap && t.f&(wSecondary|wStreetPre) == 0 && t.f&(wStreetAny|wCommon) != wStreetAny && !g.lowerIs(k, "corner") && !g.lowerIs(k, "p") {
			continue
		}
		if g.lowerIs(k, "corner") && k > 0 && g.lowerIs(k-1, "the") && g.lowerIs(k+1, "of") {
			if e := g.corner(k + 2); e > 0 {
				g.emit(Address, k-1, e, 0.85)
				k = e - 1
				continue
			}
		}
		if a, e := g.militaryAt(k); a >= 0 {
			for j := a; j < e; j++ {
				g.ts[j].used = false
			}
			g.dst = dropWithin(g.dst, g.ts[a].s, g.ts[e-1].e)
			g.emit(Address, a, e, 0.85)
			continue
		}
		if e := g.typeFirstStreet(k); e > k {
			k = g.addressRest(k, e) - 1
			continue
		}
		if e := g.eastAsianStreet(k); e > k {
			k = g.addressRest(k, e) - 1
			continue
		}
		if e := g.streetAddress(k); e > k {
			k = e - 1
			continue
		}
		if e := g.secondaryAt(k); e > 0 && !g.isPunct(k, '#') {
			g.emit(Address, k, e, 0.7)
			k = e - 1
			continue
		}
		if g.isNum(k) && (len(g.word(k)) == 5 || len(g.word(k)) == 4) && !g.ts[k].ord {
			if p := g.prevWord(k); p >= 0 && (g.lowerIs(p, "zip") || g.lowerIs(p, "postal") || g.lowerIs(p, "postcode") || g.lowerIs(p, "zipcode") || g.lowerIs(p, "plz") ||
				g.lowerIs(p, "is") && p >= 2 && (g.lowerIs(p-1, "code") && (g.lowerIs(p-2, "zip") || g.lowerIs(p-2, "postal")) || g.lowerIs(p-1, "zipcode"))) {
				e := k + 1
				if g.isPunct(e, '-') && g.glued(e) && g.isNum(e+1) && len(g.word(e+1)) == 4 {
					e += 2
				}
				g.emit(Address, k, e, 0.8)
			}
		}
	}
}

// typeFirstStreet matches a street line that starts with a street type of
// some language written in lower case, whole or abbreviated, before one to
// three capitalised words of the name and, after an optional comma, the
// house number: "вул. Молодіжна, 71", "улица Депутатская, 79", "наб.
// Мирная, 6". It returns the end, or k. (In English text such words are
// English words, which start nothing here.)
func (g *tagger) typeFirstStreet(k int) int {
	t := &g.ts[k]
	if !g.cased || !g.isWord(k) || t.cap || t.f&wStreetAny == 0 || t.f&(wCommon|wSecondary) != 0 || utf8.RuneCountInString(g.word(k)) < 2 {
		return k
	}
	j := k + 1
	if t.dot && g.isPunct(j, '.') {
		j++
	}
	n := j
	for n < len(g.ts) && n-j < 3 && g.isWord(n) && g.ts[n].cap && g.sameLine(n) && g.ts[n].f&wCommon == 0 {
		n++
	}
	if n == j {
		return k
	}
	q := n
	if g.isPunct(q, ',') {
		q++
	}
	if !g.houseNumber(q) || !g.sameLine(q) || len(g.word(q)) > 5 || g.countAfter(q) || g.isPunct(q+1, ':') {
		return k
	}
	return g.slashNumber(q + 1)
}

// eastAsianStreet matches a street line written the Chinese or Japanese
// way, without spaces, its numbers marked by the words that follow them:
// a street's name and a number with 号 ("人民路16号"; 號 in traditional
// characters), or the block of a
// Japanese address, chōme, ban and gō ("7丁目9番2号", "3丁目12番地"). It
// returns the end, or k.
func (g *tagger) eastAsianStreet(k int) int {
	if !g.cased {
		return k
	}
	j := k
	if g.isWord(j) && g.ts[j].nc && g.isNum(j+1) && g.glued(j+1) {
		j++ // the street's name, joined to its number
	}
	if !g.isNum(j) || g.ts[j].ord || !g.sameLine(j) {
		return k
	}
	q := j + 1
	if g.wordIs(q, "丁目") && g.glued(q) && g.isNum(q+1) && g.glued(q+1) {
		q += 2
		if (g.wordIs(q, "番") || g.wordIs(q, "番地")) && g.glued(q) {
			q++
			if g.isNum(q) && g.glued(q) {
				q++
				if (g.wordIs(q, "号") || g.wordIs(q, "號")) && g.glued(q) {
					q++
				}
			}
		}
		return q
	}
	if j > k && (g.wordIs(q, "号") || g.wordIs(q, "號")) && g.glued(q) {
		return q + 1
	}
	// Korean: a house number and a road name, or the road name first
	// ("628 완도8길", "세종대로 110").
	if e := g.koreanRoad(j + 1); j == k && e > j+1 && g.sameLine(j+1) && g.ts[j+1].sp {
		return e
	}
	if e := g.koreanRoad(k); e > k && g.houseNumber(e) && g.sameLine(e) && g.ts[e].sp {
		return e + 1
	}
	return k
}

// koreanRoad returns the end of a Korean road name at k, or k: a word of
// Hangul ending in 로 or 길 (a road, a street) of two syllables or more,
// or a name, a number and 길 or 로 joined ("완도8길", the eighth street
// off the road 완도로).
func (g *tagger) koreanRoad(k int) int {
	if !g.isWord(k) || !g.ts[k].nc || !g.sameLine(k) {
		return k
	}
	w := g.word(k)
	r, _ := utf8.DecodeRuneInString(w)
	if !unicode.Is(unicode.Hangul, r) {
		return k
	}
	if utf8.RuneCountInString(w) >= 2 && (strings.HasSuffix(w, "로") || strings.HasSuffix(w, "길")) {
		return k + 1
	}
	if g.isNum(k+1) && g.glued(k+1) && !g.ts[k+1].ord && (g.wordIs(k+2, "길") || g.wordIs(k+2, "로") || g.wordIs(k+2, "번길")) && g.glued(k+2) {
		return k + 3
	}
	return k
}

// wordIs reports whether token k is the word w, byte for byte.
func (g *tagger) wordIs(k int, w string) bool {
	return g.isWord(k) && g.word(k) == w
}

// addressRest emits the street line [a, e) with what follows it on the
// line or in the block (a town, a postal code, a country) as one address,
// and returns the end. Without a postal code, the places after the street
// line are places of their own, as after other street lines.
func (g *tagger) addressRest(a, e int) int {
	j := e
	var places [4][2]int
	n := 0
	postcode := false
	for step := 0; step < 4; step++ {
		jj, ok := g.sep(j, true)
		if !ok || jj == j && !g.ts[jj].sp {
			break
		}
		if p := g.postcodeAt(jj); p > jj && !postcode {
			j, postcode = p, true
			continue
		}
		c := g.countryAt(jj)
		if c == jj {
			c = g.cityAt(jj)
			if c > jj && (g.onlyStreetWords(jj, c) || g.isPunct(c, ':')) {
				c = jj
			}
			if c > jj {
				c = g.district(c)
			}
		}
		if c == jj {
			break
		}
		places[n] = [2]int{jj, c}
		n++
		j = c
	}
	if postcode {
		g.emit(Address, a, j, 0.85)
		return j
	}
	g.emit(Address, a, e, 0.85)
	for _, p := range places[:n] {
		g.emit(Location, p[0], p[1], 0.8)
	}
	return j
}

// corner matches "X and Y" after "the corner of", each a street name or
// a street line; it returns the end or -1.
func (g *tagger) corner(k int) int {
	j := k
	for j < len(g.ts) && j-k < 12 && !g.lowerIs(j, "and") && g.sameLine(j) {
		j++
	}
	if !g.lowerIs(j, "and") || j == k {
		return -1
	}
	j++
	e := j
	for e < len(g.ts) && e-j < 8 && g.sameLine(e) && (g.streetWord(e) || g.isNum(e) || g.isPunct(e, '.')) {
		if g.streetMarker(e) && g.ts[e].f&wStreetType != 0 {
			return e + 1
		}
		e++
	}
	if e > j && !g.isPunct(e-1, '.') {
		return e
	}
	return -1
}

// streetName matches the words of a street name from k (with an optional
// number after them) and returns its end and whether it holds a marker
// (a street type, a street word in front or a street suffix).
func (g *tagger) streetName(k int) (end int, marker, trailingNum bool) {
	j := k
	words := 0
	for j < len(g.ts) && j-k < 10 {
		if words > 0 && g.numberWord(j) > j {
			break // "Lindenweg Nr. 5"
		}
		switch {
		case (g.streetWord(j) || j == k && g.lineStart(j) && g.capWord(j) && g.streetWordOnLine(j)) && (g.ts[j].f&wConnector == 0 || words > 0 || g.ts[j].f&(wStreetPre|wStreetType) != 0 ||
			// "194 E Center Street": a compass point after the number.
			j > 0 && g.houseNumber(j-1) && g.compassPoint(j) ||
			// "12 van Staden Lane": a connector in lower case between
			// the house number and the name.
			j > 0 && g.houseNumber(j-1) && !g.ts[j].cap && g.isWord(j+1) && g.sameLine(j+1) && g.ts[j+1].cap):
			if g.streetMarker(j) {
				marker = true
			}
			words++
			j++
			// A full street type after the name ends it: "Millicent
			// Drive", "Bezrukov Street" (not "Street street").
			if words > 1 && g.ts[j-1].f&wStreetType != 0 && g.ts[j-1].f&wStreetPre == 0 && g.ts[j-1].e-g.ts[j-1].s > 3 && !g.isNum(j) &&
				!(g.isWord(j) && g.sameLine(j) && g.ts[j].sp && g.ts[j].cap && g.ts[j].f&wStreetType != 0 && (g.ts[j].e-g.ts[j].s > 3 || g.lineEnd(j+1+b2i(g.ts[j].dot && g.isPunct(j+1, '.')))) &&
					!strings.EqualFold(g.word(j), g.word(j-1))) {
				// (unless another street type follows: "Benson Park
				// Drive", "Jessica View Rd,")
				return j, marker, false
			}
			// "Piroska u. 97", "Karpacka ul. 5": a short lower-case
			// abbreviation before the number; after a comma when the
			// rest of a postal address follows ("Yesenin pr., 385,
			// AZ1000 Town").
			if g.ts[j-1].dot && !g.ts[j-1].cap && g.isPunct(j, '.') && (g.ts[j-1].e-g.ts[j-1].s <= 3 || utf8.RuneCountInString(g.word(j-1)) <= 4) {
				if g.isNum(j+1) && g.sameLine(j+1) {
					marker = true
					j++
					continue
				}
			}
			// A lower-case street type after the name, a comma and the
			// number, before the rest of a postal address: "Yesenin pr.,
			// 385, AZ1000 Town", "Nizami küçəsi, 12" and a town line.
			// A known street type needs no more than the number ("Донская
			// площадь, 99", "Киевская ул., 11").
			if q := j + b2i(g.ts[j-1].dot && g.isPunct(j, '.')); !g.ts[j-1].cap && words > 1 && g.isPunct(q, ',') && g.houseNumber(q+1) && g.sameLine(q+1) &&
				len(g.word(q+1)) <= 5 && (g.ts[j-1].f&wStreetAny != 0 && g.ts[j-1].f&wCommon == 0 && !g.countAfter(q+1) && !g.isPunct(q+2, ':') || g.postalTail(q+2)) {
				return q + 2, true, true
			}
			// A capitalised street type of some language, abbreviated:
			// "Jln. Kenari 3".
			// So is a short capitalised abbreviation that is no
			// honorific ("Kp. Melati 4"); the number and the rest of
			// the address decide.
			if g.ts[j-1].dot && g.isPunct(j, '.') && g.ts[j-1].cap && words == 1 && g.streetWord(j+1) && g.ts[j+1].cap &&
				(g.ts[j-1].f&wStreetAny != 0 || utf8.RuneCountInString(g.word(j-1)) <= 3 && g.ts[j-1].f&(wHonorific|wCommon) == 0) {
				j++
				continue
			}
			// "Kocherstr. 33": the abbreviation joined to the name.
			if g.ts[j-1].dot && g.isPunct(j, '.') && g.isNum(j+1) && g.sameLine(j+1) && g.ts[j-1].e-g.ts[j-1].s > 5 && strings.EqualFold(g.text[g.ts[j-1].e-3:g.ts[j-1].e], "str") {
				j++
				continue
			}
			if g.ts[j-1].dot && g.isPunct(j, '.') && abbrevDot(g, j-1) && g.streetWord(j+1) || g.ts[j-1].dot && g.isPunct(j, '.') && g.ts[j-1].f&(wStreetType|wStreetPre) != 0 {
				j++
				if g.ts[j-2].f&wStreetType != 0 && !g.streetWord(j) && !g.isNum(j) {
					return j, marker, false
				}
			}
			continue
		case g.isNum(j) && g.ts[j].ord && g.sameLine(j) && !(words > 0 && g.ts[j].hl && !(g.streetWord(j+1) && g.sameLine(j+1))):
			// "5th" inside a name; a number with one letter that ends
			// the name ("Hauptstraße 5a") is its house number.
			words++
			j++
			continue
		}
		break
	}
	if words == 0 {
		return k, false, false
	}
	// A word for "number" before the house number: "Jalan Kenari no 3",
	// "Lindenweg Nr. 5", also after a comma ("خیابان آزادی, پلاک 12").
	if q := g.numberWord(j); q > j {
		j = q
	} else if g.isPunct(j, ',') && g.sameLine(j) {
		if q := g.numberWord(j + 1); q > j+1 {
			j = q
		} else if g.typeFirst(k) && words >= 2 && g.houseNumber(j+1) && g.sameLine(j+1) && len(g.word(j+1)) <= 5 &&
			!g.countAfter(j+1) && !g.isPunct(j+2, ':') && !(g.isNum(j+2) && g.sameLine(j+2)) &&
			!(len(g.word(j+1)) == 4 && isYear(g.word(j+1), 0) && !g.postalTail(j+2)) {
			// A street type first, the name, a comma and the number, as
			// Spanish, Italian and Portuguese addresses are written:
			// "Calle Laura, 5", "Via Roma, 10".
			j++
		}
	}
	// No number ("sin número"): "Calle Reforma s/n", "Cda. Zapata s/n.",
	// also after a comma.
	if q := j + b2i(g.isPunct(j, ',')); words > 0 && g.sameLine(q) {
		if e := g.noNumber(q); e > q {
			return e, marker, true
		}
	}
	if g.isNum(j) && g.sameLine(j) && len(g.word(j)) <= 5 && (!g.ts[j].ord || g.ts[j].hl) && !(j+1 < len(g.ts) && g.isWord(j+1) && g.sameLine(j+1) && (g.lowerIs(j+1, "year") || g.lowerIs(j+1, "years"))) {
		j++
		trailingNum = true
		// A building and its flat: "Długa 12/4", "Radićeva 12/3a".
		if e := g.slashNumber(j); e > j {
			j = e
		}
		if g.ts[j-1].dot && g.isPunct(j, '.') && !g.sentenceEndAfter(j) {
			j++
		}
	}
	return j, marker, trailingNum
}

// numberWord returns where the house number starts after a word for
// "number" at k ("no 3", "Nr. 5"), or k.
func (g *tagger) numberWord(k int) int {
	if !(g.lowerIs(k, "no") || g.lowerIs(k, "nr") || g.lowerIs(k, "nro") || g.wordIs(k, "پلاک")) || !g.sameLine(k) || !g.ts[k].sp {
		return k
	}
	q := k + 1
	if g.isPunct(q, '.') && g.glued(q) {
		q++
	}
	if g.houseNumber(q) && g.sameLine(q) && g.ts[q].sp {
		return q
	}
	return k
}

func (g *tagger) sentenceEndAfter(k int) bool {
	return k+1 >= len(g.ts) || g.ts[k+1].cap && g.ts[k+1].nl == 0 && g.ts[k+1].f&wCommon != 0
}

// streetAddress matches an address starting at k, emits its parts and
// returns its end, or k.
func (g *tagger) streetAddress(k int) int {
	var parts []addrPart
	j := k
	secondaryFirst := false
	if e := g.secondaryAt(k); e > 0 && g.isNum(e) && g.sameLine(e) {
		parts = append(parts, addrPart{Address, k, e})
		j = e
		secondaryFirst = true
	}
	numStart, numEnd, end := j, j, j
	nums := 0
	ownNumber := false // the street line holds a number after the house number
	switch {
	case g.houseNumber(j) && !g.yearAfterTimeWord(j):
		j++
		// A range of house numbers: "9-11", "12–14"; a unit and its
		// house number, "3/45 Smith Street".
		if g.isPunct(j, '-') && g.glued(j) && g.glued(j+1) && g.isNum(j+1) && (!g.ts[j+1].ord || g.ts[j+1].hl) && len(g.word(j+1)) <= 6 {
			j += 2
		} else if e := g.slashNumber(j); e > j {
			j = e
		}
		numEnd = j
		nums = 1
		if g.isNum(j) && g.sameLine(j) && !g.ts[j].ord && len(g.word(j)) <= 6 && (g.streetWord(j+1) || g.isNum(j+1) && g.ts[j+1].ord) {
			j++
			nums++
		}
		nameStart := j
		var marker, trailing bool
		if box := g.poBoxAt(j); box > j && g.sameLine(j) {
			// "98 P.O. Box 101": a box in the place of the street.
			end, marker, trailing = box, true, true
		} else {
			end, marker, trailing = g.streetName(j)
		}
		if end == nameStart {
			return k
		}
		if !marker && !trailing && g.foreignStreetType(nameStart, end) {
			marker = true
		}
		words := end - nameStart
		// The rest of a postal address after the words shows them to be
		// a street of a type no list knows ("12 Tolland Reaches,
		// Brackwood, NS B3H 4R2").
		tail := words <= 4 && len(g.word(nameStart)) > 1 && g.postalTail(end)
		if !(marker || trailing || nums == 2 || tail) {
			// Capitalised words after a number are a street only where
			// the text says so.
			if !g.addressCue(numStart) || words > 4 {
				return k
			}
		}
		// A year or a count before capitalised words ("in 2001
		// American") is no street.
		if nums == 1 && !marker && !trailing && !tail {
			return k
		}
		ownNumber = nums == 2 || trailing
	case g.streetMarkerStart(j):
		// A street without a number before it: "Musterstraße 12",
		// "Baker Street"; not from the first word of a sentence before
		// a lower-case word ("Bitte an Lindenallee 14").
		// (Unless the number and the rest of a postal address follow the
		// lower-case word: "Jasorat ko'chasi, 88, Denov, 016695".)
		if g.sentenceStart(j) && !g.streetMarker(j) && g.isWord(j+1) && !g.ts[j+1].cap && g.ts[j+1].f&wStreetType == 0 &&
			!(g.ts[j+1].dot || g.ts[j+1].f&wStreetAny != 0) && g.ts[j].f&wStreetAny == 0 &&
			!(g.isPunct(j+2, ',') && g.houseNumber(j+3) && g.sameLine(j+3) && g.postalTail(j+4)) {
			return k
		}
		end = g.streetNoNumber(j)
		if end == j {
			return k
		}
		// A street type that also stands after names ("Cesta",
		// "Square") starts a street only with a name and a number after
		// it ("Cesta v Gorice 12"), not "Drive 5 miles".
		if g.ts[j].f&wStreetType != 0 && g.ts[j].f&wStreetPre == 0 && (end-j < 3 || !g.isNum(end-1) && !g.isNum(end-2)) {
			return k
		}
		// A known town whose name ends like a street ("Sherwood Park",
		// "Mount Pleasant Heights") is no street without a number.
		if end-j >= 2 && g.allWords(j, end) && g.l.lookupPlace(g.text, g.ts[j:end])&wCity != 0 {
			return k
		}
	default:
		return k
	}
	// A second street name right after the first on its line, without a
	// comma ("Wallis Street Cunha Street"): one street line.
	if g.sameLine(end) && end < len(g.ts) && g.ts[end].sp && g.isWord(end) && g.ts[end].cap && g.ts[end].f&wStreetType == 0 {
		if e2, m2, _ := g.streetName(end); e2 > end+1 && m2 && g.ts[e2-1].f&wStreetType != 0 && g.ts[e2-1].e-g.ts[e2-1].s > 3 {
			end = e2
		}
	}
	parts = append(parts, addrPart{Address, numStart, end})
	j = end
	hasMore := false
	// Unit.
	if jj, ok := g.sep(j, false); ok {
		if s := g.secondaryAt(jj); s > 0 {
			parts = append(parts, addrPart{Address, jj, s})
			j = s
			hasMore = true
		}
	}
	// City, state, country, postal code, in the orders of several
	// countries: "Springfield, IL 62704", "10115 Berlin, Germany",
	// "London NW1 6XE", one per line in a block.
	places := 0
	postcode := false
	for step := 0; step < 6; step++ {
		jj, ok := g.sep(j, step > 0 || hasMore)
		if !ok {
			break
		}
		if !postcode {
			e := g.postcodeAt(jj)
			if e == jj && places > 0 && parts[len(parts)-1].typ == Location {
				// After the town, a code of capitals and digits that
				// no form above knows is the postal code of some
				// country ("Bandar Seri Begawan BS8811").
				e = g.codeAfterTown(jj)
			}
			if e > jj && (step > 0 || hasMore || g.isPunct(jj-1, ',') || g.ts[jj].nl > 0 || g.sameLine(jj) && g.capWord(e) && g.sameLine(e)) {
				parts = append(parts, addrPart{Address, jj, e})
				j = e
				hasMore = true
				postcode = true
				// The town after its postal code: "10115 Berlin".
				if places == 0 && e < len(g.ts) && g.sameLine(e) && g.ts[e].sp {
					if c := g.cityAt(e); c > e {
						parts = append(parts, addrPart{Location, e, c})
						j = c
						places++
					}
				}
				continue
			}
		}
		c := g.countryAt(jj)
		if c > jj {
			c = g.bracketName(c)
		}
		city := jj
		if !postcode && (places == 0 || places == 1 && g.ts[jj].nl > 0 && g.lineStart(jj)) {
			city = g.cityAt(jj)
			if city > jj && g.onlyStreetWords(jj, city) {
				city = jj // "Street", "St." after a street is no town
			}
			if places == 1 && city > jj && !g.placeLine(jj, city) {
				city = jj
			}
			if city > jj && g.isPunct(city, ':') {
				city = jj // the label of a form's next field ("Postcode:")
			}
			// In text without capitals, a word that is no English word
			// between commas before a country is the town: "12 mill
			// lane, vrenstad, norway".
			if city == jj && !g.cased && g.isWord(jj) && g.ts[jj].f&wCommon == 0 && g.isPunct(jj+1, ',') && g.countryAt(jj+2) > jj+2 {
				city = jj + 1
			}
		}
		if c > jj && c >= city {
			parts = append(parts, addrPart{Location, jj, c})
			j = c
			hasMore = true
			places++
			continue
		}
		// A state or province code alone between a comma and a line
		// break, a comma or a postal code (", ZH\n", ", tv\n").
		if !postcode && step > 0 && g.isWord(jj) && g.isPunct(jj-1, ',') && len(g.word(jj)) >= 2 && len(g.word(jj)) <= 3 &&
			(jj+1 >= len(g.ts) || g.ts[jj+1].nl > 0 || g.isPunct(jj+1, ',') || g.postcodeAt(jj+1) > jj+1) {
			parts = append(parts, addrPart{Address, jj, jj + 1})
			j = jj + 1
			hasMore = true
			continue
		}
		if !postcode && g.isWord(jj) && (g.ts[jj].upper || g.ts[jj].cap && len(g.word(jj)) == 1 && g.postcodeAt(jj+1) > jj+1 || g.isNum(jj+1) && !g.ts[jj].cap && g.ts[jj].f&wCommon == 0) && len(g.word(jj)) <= 3 && (g.isNum(jj+1) || jj+1 >= len(g.ts) || g.isPunct(jj+1, ',') || g.ts[jj+1].nl > 0 || g.postcodeAt(jj+1) > jj+1) && step > 0 {
			parts = append(parts, addrPart{Address, jj, jj + 1})
			j = jj + 1
			hasMore = true
			continue
		}
		// The country in the language of the address, after its postal
		// code and town: "…, 40121 Sorvico, Itálie." (one word, no given
		// name, ending the sentence or the line).
		// So is a word on a line of its own under the town line of a
		// block, and one before a lower-case word of the sentence
		// ("…, AZ1000 Qusar, Boliviya until further notice").
		if e := g.lastPlace(jj); postcode && places > 0 && e > jj {
			parts = append(parts, addrPart{Location, jj, e})
			j = e
			hasMore = true
			places++
			continue
		}
		if city > jj {
			// A district number after the town ("Karlovy Vary 17,").
			city = g.district(city)
			parts = append(parts, addrPart{Location, jj, city})
			hasMore = hasMore || g.ts[jj].nl > 0 || places > 0
			j = city
			places++
			continue
		}
		break
	}
	// A name joined to the street line by "and" after words that
	// announce an address ("return to Ines and 12 Oak Road") is taken
	// into the address as one span.
	if !secondaryFirst && numStart >= 2 && g.lowerIs(numStart-1, "and") && g.capWord(numStart-2) && !g.ts[numStart-2].used &&
		g.ts[numStart-2].f&wCommon == 0 && g.addressWordBefore(numStart-2) {
		g.emit(Address, numStart-2, parts[len(parts)-1].b, 0.7)
		return parts[len(parts)-1].b
	}
	split := secondaryFirst
	if !split {
		if g.lineStart(numStart) {
			split = g.blockSplit(numStart)
		} else {
			split = !hasMore
		}
	}
	if !split {
		g.emit(Address, parts[0].a, parts[len(parts)-1].b, 0.85)
		return parts[len(parts)-1].b
	}
	for _, p := range parts {
		if p.typ == Address && p.a == numStart && ownNumber {
			// A street line that holds its own number ("55 Halsey Road",
			// "Kromwater 38"): the number before it is a part of its own
			// (a building or unit number).
			g.emit(Address, numStart, numEnd, 0.7)
			g.emit(Address, numEnd, p.b, 0.85)
			continue
		}
		g.emit(p.typ, p.a, p.b, 0.8)
	}
	return parts[len(parts)-1].b
}

// foreignStreetType reports whether the words [a, e) after a house number
// end with a capitalised street type that the closed lists lack but
// libpostal's street types of some language hold ("37953 Tanya Skyway",
// "5 Boame Lk"), after one to three capitalised words of which one is no
// common word: a street of US form.
func (g *tagger) foreignStreetType(a, e int) bool {
	last := e - 1
	if g.isPunct(last, '.') {
		last--
	}
	if !g.cased || last <= a || last-a > 3 || !g.isWord(last) || !g.ts[last].cap || g.ts[last].f&wStreetAny == 0 {
		return false
	}
	// Not the minutes of a time ("at 3:00 PM CST").
	if n := a - 1; n >= 2 && (g.isPunct(n-1, ':') && g.isNum(n-2) || g.glued(n) && g.isPunct(n-1, '.')) {
		return false
	}
	named := false
	for j := a; j < last; j++ {
		if !g.isWord(j) {
			return false
		}
		f := g.ts[j].f
		if g.ts[j].cap && f&wCommon == 0 {
			named = true
		}
	}
	// Common words only ("at 493 Maple Center") after words that announce
	// an address, and a house number that is no hour of the day ("at 5
	// Happy Hour") and no year ("in 2019 Golden State Park"); not a count
	// ("planted 40 Maple Groves").
	if !named && a > 0 && g.isNum(a-1) && g.addressCue(a-1) {
		if w := g.word(a - 1); (len(w) >= 3 || len(w) == 2 && num(w) > 24) && !(len(w) == 4 && isYear(w, 0)) {
			for j := a; j < last; j++ {
				if !g.ts[j].cap {
					return false
				}
			}
			return true
		}
	}
	return named
}

// onlyStreetWords reports whether the words of [a, e) are all street
// types or unit words.
func (g *tagger) onlyStreetWords(a, e int) bool {
	for j := a; j < e; j++ {
		if g.isWord(j) && g.ts[j].f&(wStreetType|wSecondary) == 0 {
			return false
		}
	}
	return true
}

// placeLine reports whether the words [a, e) on a line of their own after
// the town line of an address block name a place: a known one, or words
// that are neither common words nor given names.
func (g *tagger) placeLine(a, e int) bool {
	for j := a; j < e; j++ {
		if !g.isWord(j) {
			continue
		}
		f := g.ts[j].f
		if f&(wCity|wCountry|wRegion|wPlaceStart) == 0 && (f&(wCommon|wFirst) != 0 || g.cased && !g.ts[j].cap && f&wConnector == 0) {
			return false
		}
	}
	return true
}

// poBoxAt matches "P.O. Box 12", "PO Box 12" at k and returns its end, or k.
func (g *tagger) poBoxAt(k int) int {
	if !(g.lowerIs(k, "p") || g.lowerIs(k, "po")) {
		return k
	}
	if e := g.secondaryAt(k); e > 0 {
		return e
	}
	return k
}

// postcodeAt matches a postal code at k and returns its end, or k: four
// to six digits with an optional extension ("62704-1234", "00-950"), and
// the letter-and-digit codes of the United Kingdom ("NW1 6XE", "SW1A
// 1AA"), Canada ("K1A 0B1") and the Netherlands ("1012 AB").
func (g *tagger) postcodeAt(k int) int {
	if k >= len(g.ts) {
		return k
	}
	t := &g.ts[k]
	end := -1
	// Digits in two groups: "602 00" before the town (Czech, Slovak),
	// "560 001" after it (India); not a third group (a phone number).
	if t.kind == tNum && !t.ord && !t.code && len(g.word(k)) == 3 && g.isNum(k+1) && g.sameLine(k+1) && g.ts[k+1].sp && !g.ts[k+1].ord &&
		!(g.isNum(k+2) && g.sameLine(k+2)) {
		switch len(g.word(k + 1)) {
		case 2:
			if g.capWord(k+2) && g.sameLine(k+2) {
				return k + 2
			}
		case 3:
			// After the town, or after the town and a comma ("Pune, 411 001").
			if k > 0 && g.sameLine(k) && (g.capWord(k-1) || k > 2 && g.isPunct(k-1, ',') && g.sameLine(k-1) && (g.capWord(k-2) || g.isPunct(k-2, '.') && g.capWord(k-3))) {
				return k + 2
			}
		}
	}
	// Japan: "083-8161" before the town, written in a caseless script.
	if t.kind == tNum && !t.ord && !t.code && len(g.word(k)) == 3 && g.isPunct(k+1, '-') && g.glued(k+1) && g.isNum(k+2) && g.glued(k+2) &&
		len(g.word(k+2)) == 4 && !g.ts[k+2].ord && g.isWord(k+3) && g.ts[k+3].nc && g.sameLine(k+3) {
		return k + 3
	}
	// A country prefix: "LV-1050", "CH-8001", or joined to the digits,
	// "LV1050", "AZ1000"; two letters and two groups of digits joined by
	// dashes ("AK-039-5028", a Ghanaian digital address).
	if t.kind == tWord && t.upper && len(g.word(k)) == 2 {
		if g.isNum(k+1) && g.glued(k+1) && !g.ts[k+1].ord && len(g.word(k+1)) >= 4 && len(g.word(k+1)) <= 5 && !(g.isPunct(k+2, '-') && g.glued(k+2)) {
			return k + 2
		}
		if g.isPunct(k+1, '-') && g.glued(k+1) && g.isNum(k+2) && g.glued(k+2) && !g.ts[k+2].ord {
			n := len(g.word(k + 2))
			if g.isPunct(k+3, '-') && g.glued(k+3) && g.isNum(k+4) && g.glued(k+4) && !g.ts[k+4].ord && n >= 3 && n <= 4 && len(g.word(k+4)) == 4 &&
				!(g.isPunct(k+5, '-') && g.glued(k+5)) {
				return k + 5
			}
			if n >= 4 && n <= 5 {
				return k + 3
			}
		}
	}
	// Poland: "00-950" before the town.
	if t.kind == tNum && !t.ord && !t.code && len(g.word(k)) == 2 && g.isPunct(k+1, '-') && g.glued(k+1) && g.isNum(k+2) && g.glued(k+2) &&
		len(g.word(k+2)) == 3 && !g.ts[k+2].ord && g.capWord(k+3) && g.sameLine(k+3) && g.ts[k+3].sp {
		return k + 3
	}
	// Israel: seven digits after the town, written in Hebrew letters.
	if t.kind == tNum && !t.ord && !t.code && len(g.word(k)) == 7 && k > 0 && g.ts[k-1].nc && g.sameLine(k) && !(g.isPunct(k+1, '-') && g.glued(k+1)) {
		return k + 1
	}
	if t.kind == tNum && !t.ord && len(g.word(k)) >= 4 && len(g.word(k)) <= 6 && !t.code {
		e := k + 1
		if g.isPunct(e, '-') && g.glued(e) && g.isNum(e+1) && g.glued(e+1) {
			e += 2
		}
		// "1012 AB"
		if len(g.word(k)) == 4 && g.isWord(e) && g.sameLine(e) && g.ts[e].upper && len(g.word(e)) == 2 && g.ts[e].f&(wCountry|wRegion) == 0 && (e+1 >= len(g.ts) || !g.isWord(e+1) || !g.sameLine(e+1)) {
			e++
		}
		return e
	}
	if t.kind != tWord && t.kind != tNum {
		return k
	}
	p := t.s
	if e := alnumPostcode(g.text, p); e > p {
		end = e
	}
	if end < 0 {
		return k
	}
	j := k
	for j < len(g.ts) && g.ts[j].s < end {
		j++
	}
	if g.ts[j-1].e != end {
		return k
	}
	return j
}

// alnumPostcode returns the end of a British, Irish or Canadian postal
// code at p, or p.
func alnumPostcode(text string, p int) int {
	up := func(i int) bool { return i < len(text) && text[i] >= 'A' && text[i] <= 'Z' }
	dig := func(i int) bool { return i < len(text) && isDigit(text[i]) }
	end := func(i int) int {
		if i == len(text) || !isAlnum(text[i]) {
			return i
		}
		return p
	}
	// Canada: A1A 1A1.
	if up(p) && dig(p+1) && up(p+2) {
		q := p + 3
		if q < len(text) && text[q] == ' ' {
			q++
		}
		if dig(q) && up(q+1) && dig(q+2) && end(q+3) > p {
			return q + 3
		}
	}
	// Ireland (Eircode): a routing key, a letter and two digits or D6W,
	// a space and four letters and digits of which the first three are
	// not all digits ("D02 X285", "T12 AB34").
	if up(p) && (dig(p+1) && dig(p+2) || text[p] == 'D' && p+2 < len(text) && text[p+1] == '6' && text[p+2] == 'W') && p+3 < len(text) && text[p+3] == ' ' {
		q, letters := p+4, 0
		for ; q < p+8 && (dig(q) || up(q)); q++ {
			letters += b2i(up(q))
		}
		if q == p+8 && letters > 0 && end(q) == q {
			return q
		}
	}
	// United Kingdom: outward code A9, A99, AA9, AA99, A9A, AA9A; then
	// a space and the inward code 9AA.
	q := p
	if !up(q) {
		return p
	}
	q++
	if up(q) {
		q++
	}
	if !dig(q) {
		return p
	}
	q++
	if dig(q) || up(q) {
		q++
	}
	if q >= len(text) || text[q] != ' ' {
		return p
	}
	q++
	if dig(q) && up(q+1) && up(q+2) {
		return end(q + 3)
	}
	return p
}

// houseNumber reports whether token k can be a house number: up to six
// digits, or digits and one letter ("221B", "4c"), not glued to the word
// before.
func (g *tagger) houseNumber(k int) bool {
	return g.isNum(k) && (!g.ts[k].ord || g.ts[k].hl) && len(g.word(k)) <= 6 && boundaryBefore(g.text, g.ts[k].s)
}

// streetMarkerStart reports whether k starts a street name without a
// house number that ends with a street type and stands after a preposition
// ("on Bezrukov Street").
func (g *tagger) streetMarkerStart(k int) bool {
	return g.isWord(k) && g.capWord(k) && (g.ts[k].f&wStreetType == 0 || g.ts[k].f&wStreetPre != 0 || g.ts[k].f&(wStreetAny|wHonorific|wNotName) == wStreetAny)
}

func (g *tagger) streetNoNumber(k int) int {
	end, marker, trailing := g.streetName(k)

	if end == k {
		return k
	}
	// An honorific and a name before a number that counts what follows
	// ("Ask Dr. Okafor 2 questions"): a person and a count.
	if trailing && g.honorificName(k, end-1) && g.countAfter(end-1) {
		return k
	}
	if !marker {
		tail := g.postalTail(end)
		// A street type of some language first (libpostal's lists),
		// then the name and the number: "Jalan Kenari 3", "Parc des
		// Tilleuls 12b"; a type that is also an English word ("Passage
		// Merle 5") only after words that announce an address or before
		// the rest of a postal address.
		if trailing && g.cased && g.ts[k].cap && g.ts[k].f&(wStreetAny|wNotName) == wStreetAny && end-k >= 3 && end-k <= 7 &&
			(tail || g.addressWordBefore(k) || g.ts[k].f&(wCommon|wFirst|wLast) == 0 && (g.lowerIs(k-1, "from") || g.lowerIs(k-1, "near") || g.lowerIs(k-1, "on"))) {
			return end
		}
		// A street name of its own language followed by its number,
		// after words that announce an address ("sent to Vesturgata
		// 66", "his address: Trg revolucije 12").
		words := 0
		for j := k; j < end; j++ {
			if g.isWord(j) && g.numberWord(j) == j {
				words++
			}
		}
		if !trailing || words > 3 || !g.addressWordBefore(k) && !tail && !g.placePrepBefore(k, end) || !tail && g.ts[k].f&(wCommon|wFirst) != 0 || !g.ts[k].cap && g.cased {
			return k
		}
		for j := k; j < end-1; j++ {
			if g.isWord(j) && g.ts[j].f&wCommon != 0 && g.ts[j].f&wConnector == 0 && g.numberWord(j) == j {
				return k
			}
		}
		return end
	}
	last := end - 1
	if g.isPunct(last, '.') {
		last--
	}
	if !trailing && !(g.isWord(last) && g.ts[last].f&wStreetType != 0) && !g.streetMarker(k) {
		return k
	}
	// (A unit after the name stands in for the house number: "Aleea
	// Trandafirilor, Bloc 12".)
	if !trailing && g.ts[last].f&wStreetType == 0 && !(g.streetMarker(k) && g.isPunct(end, ',') && g.secondaryAt(end+1) > 0) {
		return k
	}
	// Without a number, a street type in lower case after capitalised
	// words is a noun of the sentence: "a nice Thai place", "the Oak
	// park".
	if !trailing && g.cased && !g.ts[last].cap && g.ts[last].f&wStreetPre == 0 {
		return k
	}
	if last == k && !trailing {
		return k
	}
	// Only the words before the street type must not be common words.
	for j := k; j < end; j++ {
		if g.isWord(j) && g.ts[j].f&(wStreetType|wStreetPre|wConnector) == 0 && g.ts[j].f&wCommon != 0 && g.ts[j].f&(wLast|wFirst|wCity) == 0 &&
			!(g.ts[j].e-g.ts[j].s == 1 && !g.ts[j].cap) && !(g.ts[j].dot && g.ts[j].f&wStreetAny != 0) {
			return k
		}
	}
	return end
}

// honorificName reports whether the words [k, n) hold an honorific ("Dr",
// which is also a street type) and a capitalised name after it that is no
// street word ("Dr. Okafor").
func (g *tagger) honorificName(k, n int) bool {
	for j := k; j < n; j++ {
		if !g.isWord(j) || g.ts[j].f&wHonorific == 0 {
			continue
		}
		q := j + 1 + b2i(g.isPunct(j+1, '.'))
		if q < n && g.isWord(q) && g.ts[q].cap && g.ts[q].f&(wStreetType|wStreetPre) == 0 {
			return true
		}
	}
	return false
}

// countAfter reports whether the number at n counts the lower-case noun
// after it ("2 questions", "10 minutes"): a common word, not a word of an
// address, and none of the small words that a sentence goes on with after
// a street line ("12 in Madrid", "46 and").
func (g *tagger) countAfter(n int) bool {
	e := n + 1
	if !g.isNum(n) || !g.isWord(e) || !g.sameLine(e) || !g.ts[e].sp || g.ts[e].cap {
		return false
	}
	f := g.ts[e].f
	if f&wCommon == 0 || f&(wStreetType|wStreetPre|wStreetAny|wSecondary|wConnector) != 0 {
		return false
	}
	// (The small words are looked up here, not marked as cue words:
	// they are so common that every oneOf would then look them up.)
	w := g.word(e)
	var b [8]byte
	if len(w) > len(b) {
		return true
	}
	for i := 0; i < len(w); i++ {
		b[i] = lower(w[i])
	}
	return !afterStreetWords[string(b[:len(w)])]
}

// afterStreetWords are the small words that may follow a street line in a
// sentence.
var afterStreetWords = wordSet("in on at near by and or to for from of is was are were has had with which where that then but " +
	"until till since before after behind opposite next beside off")

// placePrepBefore reports whether a street name of its own language and
// its number [k, e) follow a word that says where ("leaves from Virska
// 71", "near Elvemyra 8", "could not find Zadarska 76"), and the number is
// a house number: no version ("from Ubuntu 22.04"), no time, no unit or
// count after it ("from Gate 5 minutes").
func (g *tagger) placePrepBefore(k, e int) bool {
	if !(g.lowerIs(k-1, "from") || g.lowerIs(k-1, "near") || g.lowerIs(k-1, "find") || g.lowerIs(k-1, "on")) {
		return false
	}
	// A known place and a number are a district or an event ("Praha
	// 4", "Qatar 2022").
	if e-k == 2 && g.ts[k].f&(wCity|wCountry|wRegion) != 0 {
		return false
	}
	n := e - 1
	if w := g.word(n); len(w) == 4 && (w[:2] == "19" || w[:2] == "20") {
		return false // a year
	}
	if g.isPunct(n, '.') {
		return false
	}
	if !g.isNum(n) || len(g.word(n)) > 4 || e < len(g.ts) && g.glued(e) && !g.isPunct(e, ',') && !g.isPunct(e, '.') ||
		g.isPunct(e, '.') && g.isNum(e+1) && g.glued(e+1) {
		return false
	}
	return !(g.isWord(e) && g.sameLine(e) && g.oneOf(e, unitWords))
}

// unitWords follow numbers that count or measure, not house numbers.
var unitWords = wordSet("am pm km kg mi miles mph kmh percent years year hours hour minutes minute seconds days weeks months people times points degrees mb gb tb users items pages")

// postalTail reports whether the line goes on after a street line that
// ends at e with the rest of a postal address (or the next line of a block
// holds it): a comma, then a postal code
// and a capitalised town (", 40121 Castelvetro"), or a town, an optional
// comma and state code, and a postal code (", Kellington, OH 43215",
// ", Harlow Fen NE4 7QT").
func (g *tagger) postalTail(e int) bool {
	j := e + 1
	switch {
	case !g.cased || e >= len(g.ts):
		return false
	case g.ts[e].nl == 1:
		j = e // the next line of a block
	case !g.isPunct(e, ',') || !g.sameLine(e+1):
		return false
	}
	if p := g.postcodeAt(j); p > j {
		return g.sameLine(p) && g.capWord(p)
	}
	c := g.cityAt(j)
	if c == j || !g.capWord(j) {
		return false
	}
	if g.isPunct(c, ',') && g.sameLine(c+1) {
		c++
	}
	if g.isWord(c) && g.sameLine(c) && g.ts[c].upper && len(g.word(c)) >= 2 && len(g.word(c)) <= 3 {
		c++
	}
	p := g.postcodeAt(c)
	return p > c && g.sameLine(c)
}

// addressWordBefore reports whether the words right before k announce an
// address: "to", "at", "address:", "address is", "lives at".
func (g *tagger) addressWordBefore(k int) bool {
	j := k - 1
	// Through a name joined by "and": "return to Ines and Oak Road 12".
	if g.lowerIs(j, "and") && g.capWord(j-1) && g.ts[j-1].f&wCommon == 0 {
		j -= 2
	}
	if g.isPunct(j, ':') {
		// "address:", "my address to the same:": the word in the
		// clause before the colon.
		for q := j - 1; q >= 0 && q >= j-8 && g.ts[q+1].nl == 0; q-- {
			if g.lowerIs(q, "address") || g.lowerIs(q, "addresses") {
				return true
			}
			if g.isPunct(q, '.') || g.isPunct(q, ':') || g.isPunct(q, '?') {
				break
			}
		}
		return false
	}
	if g.lowerIs(j, "is") {
		return g.lowerIs(j-1, "address")
	}
	return g.lowerIs(j, "to") || g.lowerIs(j, "at") || g.lowerIs(j, "address")
}

// addressCue reports whether the words before k announce an address.
func (g *tagger) addressCue(k int) bool {
	for j := k - 1; j >= 0 && j >= k-4; j-- {
		if g.lowerIs(j, "address") || g.lowerIs(j, "at") || g.lowerIs(j, "to") || g.lowerIs(j, "lives") || g.lowerIs(j, "live") || g.lowerIs(j, "located") {
			return true
		}
	}
	return g.lineStart(k)
}

// sep skips a separator between parts of an address (a comma, a line
// break, white space) and reports whether one was there.
func (g *tagger) sep(k int, block bool) (int, bool) {
	if k >= len(g.ts) {
		return k, false
	}
	maxNL := uint8(1)
	if block {
		maxNL = 2
	}
	if g.ts[k].nl > maxNL {
		return k, false
	}
	if g.ts[k].nl > 0 {
		// A quoting prefix at the start of the line: "> ", "??? ".
		j := k
		for j < len(g.ts) && j-k < 4 && g.ts[j].kind == tPunct && (g.ts[j].c == '>' || g.ts[j].c == '?' || g.ts[j].c == '|') && (j == k || g.ts[j].nl == 0) {
			j++
		}
		if j > k && j < len(g.ts) && g.ts[j].nl == 0 {
			return j, true
		}
	}
	if g.isPunct(k, ',') {
		k++
		if k < len(g.ts) && g.ts[k].nl > 1 {
			return k, false
		}
		return k, k < len(g.ts)
	}
	return k, g.ts[k].sp || g.ts[k].nl == 1
}

// countryAt matches a country name at k and returns its end, or k.
func (g *tagger) countryAt(k int) int {
	if !g.isWord(k) {
		return k
	}
	if e := g.placeSpan(k); e > k+1 && g.l.places[g.placeKey(k, e)]&(wCountry|wRegion) != 0 {
		return e
	}
	for n := 4; n >= 2; n-- {
		if k+n <= len(g.ts) && g.allWords(k, k+n) && g.l.lookupPlace(g.text, g.ts[k:k+n])&(wCountry|wRegion) != 0 {
			return k + n
		}
	}
	if g.ts[k].f&(wCountry|wRegion) != 0 {
		return k + 1
	}
	return k
}

func (g *tagger) allWords(a, b int) bool {
	for j := a; j < b; j++ {
		if !g.isWord(j) || j > a && (!g.sameLine(j) || !g.ts[j].sp && !g.isPunct(j-1, '-')) {
			return false
		}
	}
	return true
}

// cityAt matches a city (capitalised words, or known place words in
// caseless text) at k and returns its end, or k.
func (g *tagger) cityAt(k int) int {
	if !g.isWord(k) || g.ts[k].f&(wSecondary) != 0 {
		return k
	}
	// A line of its own in an address block is the city, in any case.
	if g.lineStart(k) {
		j := k + 1
		for j < len(g.ts) && j-k < 5 && g.sameLine(j) && (g.isWord(j) || g.isPunct(j, '-') && g.glued(j)) {
			// A lower-case English word in cased text ends the town
			// ("Laos in case of"): the line goes on as a sentence.
			if g.cased && g.isWord(j) && !g.ts[j].cap && g.ts[j].f&(wCommon|wConnector) == wCommon {
				break
			}
			j++
		}
		// A district number at the end of the line: "Praha 4".
		if j < len(g.ts) && g.isNum(j) && g.sameLine(j) && len(g.word(j)) <= 2 && !g.ts[j].ord && (j+1 == len(g.ts) || g.ts[j+1].nl > 0 || g.isPunct(j+1, ',')) {
			j++
		}
		if j == len(g.ts) || g.ts[j].nl > 0 || g.isPunct(j, ',') && j > k+1 && g.isNum(j-1) {
			if g.countryAt(k) == j {
				return k
			}
			return j
		}
	}
	if !g.capWord(k) {
		return k
	}
	if !g.cased {
		for n := 4; n >= 2; n-- {
			if k+n <= len(g.ts) && g.allWords(k, k+n) && g.l.lookupPlace(g.text, g.ts[k:k+n]) != 0 {
				return k + n
			}
		}
		if g.ts[k].f&(wCity|wRegion) != 0 {
			return k + 1
		}
		return k
	}
	j := k + 1
	// "St. Albans": a saint's abbreviation and a name.
	if g.ts[k].dot && g.ts[k].f&wConnector != 0 && g.isPunct(j, '.') && g.glued(j) && g.capWord(j+1) && g.sameLine(j+1) && g.ts[j+1].sp {
		j += 2
	}
	// (Small words of the town's language join it: "Valea lui Mihai",
	// "Kostelec na Hané".)
	for j < len(g.ts) && j-k < 5 && g.sameLine(j) && g.ts[j].sp && (g.capWord(j) || g.isWord(j) && g.capWord(j+1) && g.ts[j+1].sp && g.sameLine(j+1) &&
		(g.ts[j].f&wConnector != 0 || !g.ts[j].cap && g.ts[j].f&wCommon == 0 && utf8.RuneCountInString(g.word(j)) <= 3)) {
		if g.countryAt(j) > j || g.ts[j].upper && len(g.word(j)) <= 3 && !g.ts[k].upper || len(g.word(j)) <= 3 && g.postcodeAt(j+1) > j+1 {
			break
		}
		j++
	}
	return g.townQualifier(j)
}

// townQualifier returns the end of a qualifier after a town that ends at
// j, or j: a lower-case word of the town's own language at the end of the
// phrase ("Sorvico terme") or a region in brackets ("Halle (Saale)").
func (g *tagger) townQualifier(j int) int {
	if !g.sameLine(j) || !g.ts[j].sp {
		return j
	}
	if g.isWord(j) && !g.ts[j].cap && g.ts[j].f&(wCommon|wConnector) == 0 && len(g.word(j)) >= 4 && (j+1 >= len(g.ts) || !g.isWord(j+1) || !g.sameLine(j+1)) {
		return j + 1
	}
	return g.bracketName(j)
}

// blockSplit decides how an address that begins a line is labelled: a
// block under a single line (a name) or quoted line by line is labelled
// part by part; one under an introduction ("address:") or under several
// lines (name, title, company) as a whole.
func (g *tagger) blockSplit(k int) bool {
	if k > 0 && g.ts[k-1].kind == tPunct && g.ts[k].nl == 0 {
		return true // "> 12 Main St", "??? 12 Main St"
	}
	// Count the non-empty lines before the address in the segment; look at
	// the text itself, since a segment may begin after them.
	p := g.ts[k].s
	lines := 0
	for p > 0 {
		e := p
		for e > 0 && isSpace(g.text[e-1]) {
			e--
		}
		if e == 0 {
			break
		}
		s := e
		for s > 0 && g.text[s-1] != '\n' {
			s--
		}
		lines++
		if g.text[e-1] == ':' || lines == 1 && g.cased && endsLower(g.text[s:e]) {
			// An introduction ("address:", "Please send it to") and
			// not a name.
			return false
		}
		p = s
		if lines > 1 {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------- titles

// titles finds job titles: a line that ends with a job noun under a line
// (a name in a signature), and ", the <job>," after a name.
func (g *tagger) titles() {
	for k := 0; k < len(g.ts); k++ {
		if g.ts[k].used || !g.isWord(k) {
			continue
		}
		if g.ts[k].nl == 1 && k > 0 {
			e := k
			for e < len(g.ts) && (e == k || g.sameLine(e)) && (g.isWord(e) || g.isPunct(e, ',')) {
				e++
			}
			if (e == len(g.ts) || g.ts[e].nl > 0) && e-k <= 10 && g.isWord(e-1) && g.ts[e-1].f&wJob != 0 {
				g.emit(Title, k, e, 0.7)
				k = e - 1
				continue
			}
		}
		if g.lowerIs(k, "the") && g.isPunct(k-1, ',') {
			e := k + 1
			for e < len(g.ts) && e-k < 6 && g.isWord(e) && g.sameLine(e) {
				e++
			}
			if e > k+1 && g.isPunct(e, ',') && g.ts[e-1].f&wJob != 0 {
				g.emit(Title, k+1, e, 0.7)
				k = e
			}
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// militaryAt matches the last line of a US military address at k
// ("APO AE 09001", "FPO AP 96601", "DPO AA 34001") with the unit line
// before it ("PSC 5605, Box 8122", "Unit 8411 Box 3596", "USS Dam"), and
// returns the start and end, or -1.
func (g *tagger) militaryAt(k int) (int, int) {
	if !(g.lowerIs(k, "apo") || g.lowerIs(k, "fpo") || g.lowerIs(k, "dpo")) || g.ts[k].nl == 0 {
		return -1, -1
	}
	if !(g.lowerIs(k+1, "aa") || g.lowerIs(k+1, "ae") || g.lowerIs(k+1, "ap")) || !g.isNum(k+2) || len(g.word(k+2)) != 5 {
		return -1, -1
	}
	// The unit line: from its last unit word.
	start := -1
	for j := k - 1; j >= 0 && k-j < 8; j-- {
		if g.lowerIs(j, "psc") || g.lowerIs(j, "unit") || g.lowerIs(j, "cmr") || len(g.word(j)) >= 3 && len(g.word(j)) <= 5 && g.ts[j].upper && (g.word(j)[:2] == "US" || g.word(j)[:2] == "us") || !g.cased && len(g.word(j)) >= 3 && len(g.word(j)) <= 5 && (g.word(j)[:2] == "us") {
			start = j
		}
		if g.ts[j].nl > 0 {
			break
		}
	}
	if start < 0 {
		return -1, -1
	}
	return start, k + 3
}

// dropWithin removes the findings inside [s, e) from the end of fs.
func dropWithin(fs []Finding, s, e int) []Finding {
	out := fs[:0]
	for _, f := range fs {
		if f.Start >= s && f.End <= e {
			continue
		}
		out = append(out, f)
	}
	return out
}

// endsLower reports whether the line ends with a word in lower case
// (after which only trailing punctuation may stand): a sentence that
// introduces what follows, not a name.
func endsLower(line string) bool {
	line = strings.TrimRightFunc(line, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
	r, n := utf8.DecodeLastRuneInString(line)
	if n == 0 || !unicode.IsLower(r) {
		return false
	}
	for i := len(line) - n; i > 0; {
		r, n := utf8.DecodeLastRuneInString(line[:i])
		if !unicode.IsLetter(r) {
			break
		}
		if unicode.IsUpper(r) {
			return false // "McDonald", a name in mixed case
		}
		i -= n
	}
	return true
}

// typeFirst reports whether k is a capitalised street type that stands
// before the name (Calle, Via, Rua, Priv.) after no house number.
func (g *tagger) typeFirst(k int) bool {
	return g.isWord(k) && g.ts[k].cap && g.ts[k].f&wStreetPre != 0 && !(k > 0 && g.houseNumber(k-1) && g.sameLine(k))
}

// noNumber returns the end of "s/n" (Spanish and Portuguese "sin
// número", "sem número": a street line without a house number) at k,
// with its dot, or k.
func (g *tagger) noNumber(k int) int {
	if !(g.lowerIs(k, "s") && g.isPunct(k+1, '/') && g.glued(k+1) && g.lowerIs(k+2, "n") && g.glued(k+2)) || !g.ts[k].sp {
		return k
	}
	e := k + 3
	if g.isPunct(e, '.') && g.glued(e) && !g.sentenceEndAfter(e) {
		e++
	}
	return e
}

// lastPlace returns the end of the country that closes an address, in
// the language of the address, after its postal code and town, or k: one
// to four capitalised words ("Itálie", "Južna Afrika", "Sveti Kristofor i
// Nevis"; small words of the language between them), the first no given
// name, either after a comma or on a line of its own, ending the
// sentence, the line or the text, or before a lower-case word of the
// sentence ("…, AZ1000 Qusar, Boliviya until further notice").
func (g *tagger) lastPlace(k int) int {
	if !g.cased || !(g.isPunct(k-1, ',') || g.ts[k].nl == 1 && g.lineStart(k)) || !g.capWord(k) || g.ts[k].upper || g.ts[k].f&(wFirst|wCommon|wHonorific) != 0 {
		return k
	}
	e := k + 1
	for words := 1; words < 4 && g.sameLine(e) && g.ts[e].sp; {
		if g.capWord(e) && !g.ts[e].upper && g.ts[e].f&(wCommon|wHonorific) == 0 {
			e++
			words++
			continue
		}
		// A small word of the language between two words: "i", "y",
		// "and", "of".
		if g.isWord(e) && !g.ts[e].cap && utf8.RuneCountInString(g.word(e)) <= 3 && g.capWord(e+1) && g.sameLine(e+1) && g.ts[e+1].sp && !g.ts[e+1].upper &&
			g.ts[e+1].f&(wCommon|wHonorific) == 0 {
			e += 2
			words++
			continue
		}
		break
	}
	// On a line of its own, it fills the line.
	if g.ts[k].nl == 1 && !g.isPunct(k-1, ',') && !(e >= len(g.ts) || g.ts[e].nl > 0) {
		return k
	}
	// "Falkland Islands (Malvinas)": another name in brackets.
	e = g.bracketName(e)
	if e >= len(g.ts) || g.ts[e].nl > 0 || g.isPunct(e, '.') || g.isPunct(e, '?') || g.isPunct(e, '!') ||
		g.isWord(e) && g.sameLine(e) && !g.ts[e].cap && g.ts[e].f&wCommon != 0 && g.ts[e].f&wConnector == 0 ||
		g.isPunct(e, ',') && g.isWord(e+1) && g.sameLine(e+1) && !g.ts[e+1].cap && g.ts[e+1].f&wCommon != 0 {
		return e
	}
	return k
}

// bracketName returns the end of one to three capitalised words in
// brackets at k ("(Saale)", "(Malvinas)", "(Vatican City State)"), or k.
func (g *tagger) bracketName(k int) int {
	if !g.isPunct(k, '(') || !g.sameLine(k) || !g.ts[k].sp {
		return k
	}
	j := k + 1
	for j < len(g.ts) && j-k <= 3 && g.capWord(j) && g.sameLine(j) && (j == k+1 && g.glued(j) || j > k+1 && g.ts[j].sp) {
		j++
	}
	if j == k+1 || !g.isPunct(j, ')') || !g.glued(j) {
		return k
	}
	return j + 1
}

// slashNumber returns the end of "/4" or "/3a" glued after a house
// number at k (a flat in a building, or a unit before the number), or k.
func (g *tagger) slashNumber(k int) int {
	if g.isPunct(k, '/') && g.glued(k) && g.isNum(k+1) && g.glued(k+1) && (!g.ts[k+1].ord || g.ts[k+1].hl) && len(g.word(k+1)) <= 4 &&
		!(g.isPunct(k+2, '/') && g.glued(k+2)) {
		return k + 2
	}
	return k
}

// codeAfterTown returns the end of a code at k that ends its line, its
// clause or the text: one or two groups of capital letters and digits
// ("BS8811", "KY1-1104", "GU9 3AB"), five to nine characters with two
// digits among them and a group that mixes letters and digits (a state's
// letters and a number, "TX 75001", are two parts), or k. Text that goes on after the
// code must not be capitalised, and each of the two groups then holds a
// digit.
func (g *tagger) codeAfterTown(k int) int {
	if k >= len(g.ts) || g.ts[k].kind == tPunct || !g.sameLine(k) && g.ts[k].nl > 1 {
		return k
	}
	text := g.text
	p := g.ts[k].s
	q, n, letters, digits, groups := p, 0, 0, 0, 0
	both := true   // each group holds a digit
	mixed := false // a group holds letters and digits
	for groups < 2 {
		s, d, l := q, digits, letters
		for q < len(text) && isUpperDigit(text[q]) {
			if isDigit(text[q]) {
				digits++
			} else {
				letters++
			}
			q++
		}
		both = both && digits > d
		mixed = mixed || digits > d && letters > l
		if q-s < 2 || q-s > 5 {
			return k
		}
		n += q - s
		groups++
		if q+1 < len(text) && (text[q] == ' ' || text[q] == '-') && isUpperDigit(text[q+1]) && groups < 2 {
			q++
			continue
		}
		break
	}
	if n < 5 || n > 9 || !mixed || digits < 2 || q < len(text) && (isDigit(text[q]) || text[q] == '-' || text[q] == '/' || letterOf(text, q)) {
		return k
	}
	j := k
	for j < len(g.ts) && g.ts[j].s < q {
		j++
	}
	// (Before a word of the sentence, only two groups with digits in
	// both: "GU9 3AB tomorrow", not "X2000 printer".)
	if g.ts[j-1].e != q || !g.lineEnd(j) && !(groups == 2 && both && g.isWord(j) && g.sameLine(j) && !g.ts[j].cap) {
		return k
	}
	return j
}

func letterOf(text string, p int) bool {
	_, _, ok := letterAt(text, p)
	return ok
}

// compassPoint reports whether k is a compass point written as streets
// carry it before their name: N, S, E, W, NE, NW, SE, SW, with or without
// a dot.
func (g *tagger) compassPoint(k int) bool {
	if !g.isWord(k) || !g.sameLine(k) {
		return false
	}
	switch g.word(k) {
	case "N", "S", "E", "W", "NE", "NW", "SE", "SW":
		return true
	}
	return false
}

// lineEnd reports whether k ends a phrase of an address: the end of the
// text or the line, a comma, or a sentence's end.
func (g *tagger) lineEnd(k int) bool {
	return k >= len(g.ts) || g.ts[k].nl > 0 || g.isPunct(k, ',') || g.isPunct(k, '.') && (k+1 >= len(g.ts) || g.ts[k+1].nl > 0 || g.sentenceEndAfter(k))
}

// yearAfterTimeWord reports whether the number at k is a year after a word
// of time ("in 2019", "since 1998"): no house number.
func (g *tagger) yearAfterTimeWord(k int) bool {
	w := g.word(k)
	return len(w) == 4 && isYear(w, 0) && g.oneOf(g.prevWord(k), yearBefore)
}

// yearBefore are the words of time after which a number of four digits
// is a year ("from" and "by" lead to addresses as often).
var yearBefore = wordSet("in since until till before after during")
