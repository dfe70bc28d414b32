package privacy

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Names of people, places and organisations: runs of capitalised words,
// decided by the word lists and the words around them.

const nameFlags = wFirst | wLast

func (g *tagger) names() {
	for k := 0; k < len(g.ts); k++ {
		if g.ts[k].used {
			continue
		}
		// A known place of several words, with the small words inside it
		// ("Republic of the Congo", "Chiclana de la Frontera", "People's
		// Republic of China").
		if e := g.placeSpan(k); e > k+1 {
			g.emit(Location, k, e, 0.8)
			k = e - 1
			continue
		}
		// A word of geography, "of" and a name: "Gulf of Mexico", "The
		// Isle of Skye".
		if h := k + b2i(g.lowerIs(k, "the")); g.cased && g.isWord(h) && g.ts[h].cap && g.oneOf(h, geoHeads) && g.lowerIs(h+1, "of") && g.capWord(h+2) && g.sameLine(h+2) && !g.ts[h+2].used {
			e := h + 3
			for e < len(g.ts) && e-h < 6 && g.capWord(e) && g.ts[e].sp && g.sameLine(e) && !g.ts[e].used {
				e++
			}
			g.emit(Location, h, e, 0.75)
			k = e - 1
			continue
		}
		// Text without capitals: a word that is no common word after a
		// verb of living or moving and its preposition ("grew up in
		// onnezies", "moved here from punkaharju").
		if !g.cased && g.isWord(k) && g.ts[k].f&(wCommon|wFirst) == 0 && g.placeVerbBefore(g.prevWord(k)) {
			e := k + 1
			for e < len(g.ts) && e-k < 4 && g.isWord(e) && g.sameLine(e) && g.ts[e].f&wCommon == 0 {
				e++
			}
			g.emit(Location, k, e, 0.6)
			k = e - 1
			continue
		}
		if !g.capWord(k) {
			continue
		}
		// Honorifics: "Mr. Grimes", "Dr Ann Lee".
		if g.ts[k].f&wHonorific != 0 && len(g.word(k)) <= 5 {
			j := k + 1
			if g.isPunct(j, '.') && g.glued(j) {
				j++
			}
			if g.capWord(j) && g.sameLine(j) && !g.ts[j].used {
				g.emit(Person, k, k+1, 0.7)
				e := g.run(j)
				g.emit(Person, j, e, 0.85)
				k = e - 1
				continue
			}
		}
		// "A, B and C": a company named after its partners, or people
		// in a list.
		if e := g.partnerList(k); e > k {
			k = e - 1
			continue
		}
		if e := g.dashedFirm(k); e > k {
			k = e - 1
			continue
		}
		if e := g.twoPartners(k); e > k {
			k = e - 1
			continue
		}
		e := g.run(k)
		a := k
		// Drop capitalised common words that only start the sentence,
		// except inside the name of an organisation ("Open Data Group",
		// "Department Of Transport").
		for a < e && (g.ts[a].f&wNotName != 0 || g.ts[a].f&wConnector != 0 && !g.ts[a].cap && g.cased) {
			a++ // nor a name from a small word ("Hi y Ana")
		}
		if !g.orgRun(a, e) {
			for a < e && g.dropLeading(a, e) {
				a++
			}
		}
		if a == e {
			k = e - 1
			continue
		}
		if fe := g.dottedForm(a, e); fe > 0 {
			g.emit(Organization, a, fe, 0.8)
			k = fe - 1
			continue
		}
		if a > k {
			if pe := g.partnerList(a); pe > a {
				k = pe - 1
				continue
			}
			if pe := max(g.dashedFirm(a), g.twoPartners(a)); pe > a {
				k = pe - 1
				continue
			}
		}
		g.classify(a, e)
		k = e - 1
	}
}

// run returns the end of the run of name words from k: capitalised words
// on one line separated by single spaces, with connectors ("van", "de la")
// between them.
func (g *tagger) run(k int) int {
	j := k + 1
	for j < len(g.ts) && j-k < 6 {
		if !g.sameLine(j) || !g.ts[j].sp || g.ts[j].used {
			break
		}
		if g.capWord(j) && g.ts[j].f&wNotName == 0 {
			j++
			continue
		}
		// In text without capitals, a given name takes the unknown word
		// after it as the family name.
		if !g.cased && j == k+1 && g.ts[k].f&wFirst != 0 && g.isWord(j) && g.ts[j].f&wCommon == 0 {
			j++
			continue
		}
		if g.isWord(j) && g.ts[j].f&wConnector != 0 && !g.ts[j].cap && g.capWord(j+1) && g.sameLine(j+1) && !g.ts[j+1].used && g.cased {
			j += 2
			continue
		}
		// A short lower-case word that is no English word, or "upon",
		// between capitalised words of a place after a preposition of
		// place ("in Loka pri Zidanem Mostu", "Newcastle upon Tyne").
		if g.cased && g.isWord(j) && !g.ts[j].cap && g.ts[j].e-g.ts[j].s <= 4 && (g.ts[j].f&wCommon == 0 || g.lowerIs(j, "upon")) &&
			g.capWord(j+1) && g.sameLine(j+1) && g.ts[j+1].sp && !g.ts[j+1].used && g.strongPlaceCue(g.prevWord(k)) {
			j += 2
			continue
		}
		// "Sterling & Associates", "Procter & Gamble": a firm.
		// Not between given names: "Jay & Trish" are people.
		if g.cased && g.isPunct(j, '&') && g.ts[j].sp && g.capWord(j+1) && g.sameLine(j+1) && g.ts[j+1].sp && !g.ts[j+1].used &&
			(g.ts[j-1].f&wFirst == 0 && g.ts[j+1].f&wFirst == 0 || g.ts[j+1].f&wOrgSuffix != 0) {
			j += 2
			continue
		}
		// Two connectors: "van der", "de la", "von dem".
		if g.cased && g.isWord(j) && g.isWord(j+1) && g.ts[j].f&wConnector != 0 && g.ts[j+1].f&wConnector != 0 && !g.ts[j].cap && !g.ts[j+1].cap &&
			g.ts[j+1].sp && g.sameLine(j+1) && g.capWord(j+2) && g.sameLine(j+2) && g.ts[j+2].sp && !g.ts[j+2].used {
			j += 3
			continue
		}
		// "Department of Better Technology", "Bank of Ireland"
		if (g.lowerIs(j, "of") || g.lowerIs(j, "for")) && g.ts[j-1].f&(wOrgWord|wOrgSuffix) != 0 && !g.oneOf(j-1, placeNouns) && g.capWord(j+1) && g.sameLine(j+1) && !g.ts[j+1].used && g.cased {
			j += 2
			continue
		}
		break
	}
	// An organisation suffix with its dot: "Smith Ltd."
	return j
}

// dropLeading reports whether the word at a, at the start of the run
// [a, e), is not part of a name.
func (g *tagger) dropLeading(a, e int) bool {
	t := &g.ts[a]
	if t.f&wNotName != 0 || repeats(g.word(a)) || t.f&wNation != 0 && t.f&(wFirst|wLast|wPlaceStart) == 0 {
		return true
	}
	// Acronyms and shouted words: "SSN", "ASAP", "CAN I SPEAK".
	if g.cased && t.upper && (len(g.word(a)) <= 4 && t.f&(nameFlags|wCountry|wCity) == 0 || t.f&wCommon != 0 && !(len(g.word(a)) == 2 && t.f&wCountry != 0)) {
		return true
	}
	// In caseless text a name needs a known given name or a place.
	if !g.cased && t.f&(wFirst|wCity|wCountry|wRegion|wPlaceStart) == 0 && !g.personCueBefore(a) {
		return true
	}
	// A verb or greeting before a name ("Ask Paul", "Tell Jordan").
	if t.f&wPersonCue != 0 && t.f&wCommon != 0 && a+1 < e && g.sentenceStart(a) {
		return true
	}
	if t.f&wCommon == 0 {
		return false
	}
	// A country or region, or a town after a preposition of place, in
	// the middle of a sentence: "that Turkey is", "is from Cork".
	if e-a == 1 && !g.sentenceStart(a) && g.cased && (t.f&(wCountry|wRegion) != 0 || t.f&wCity != 0 && g.strongPlaceCue(g.prevWord(a))) {
		return false
	}
	named := t.f&(nameFlags|wCity|wCountry|wRegion|wPlaceStart) != 0
	// "Grace wrote back": a name before a verb of speaking or writing.
	if e-a == 1 && g.cased && t.f&(wFirst|wLast) != 0 && g.oneOf(e, personVerbs) {
		return false
	}
	if g.sentenceStart(a) || !g.cased {
		// A common word that starts a sentence: part of a name only when
		// it is a known name followed by more of the name.
		return !(named && a+1 < e && (g.ts[a+1].f&(nameFlags|wCity) != 0 || g.ts[a+1].f&wCommon == 0)) && !(named && g.ts[a].f&wCountry != 0)
	}
	// A run of common words only, none a given name ("Princess Royal",
	// "White Stripes"), is no name.
	allCommon := true
	for j := a; j < e; j++ {
		if g.ts[j].f&wCommon == 0 || g.ts[j].f&wFirst != 0 {
			allCommon = false
		}
	}
	// A known town of several common words after a preposition of place
	// ("in Mount Pleasant", "moved to Grand Rapids") is a place.
	if allCommon && e-a >= 2 && g.strongPlaceCue(g.prevWord(a)) && g.l.lookupPlace(g.text, g.ts[a:e])&wCity != 0 {
		return false
	}
	if allCommon && !(e-a == 1 && t.f&(wCountry|wRegion) != 0) && !(e-a >= 2 && (g.ts[e-1].f&wOrgSuffix != 0 || g.orgWords(a, e) || g.l.lookupPlace(g.text, g.ts[a:e])&(wCountry|wRegion) != 0)) &&
		!(g.cased && g.orgCue(a, e, g.prevLower(a))) && !g.orgLine(a, e) {
		return true
	}
	if t.f&wFirst != 0 || t.f&(nameFlags|wCity|wCountry|wRegion|wPlaceStart) != 0 && a+1 < e {
		return false
	}
	// Mid-sentence capitalised common words ("Wisdom", "Entertainment
	// Weekly") are names only together with an unknown word or a suffix.
	for j := a + 1; j < e; j++ {
		if g.ts[j].f&wCommon == 0 || g.ts[j].f&(nameFlags|wOrgSuffix) != 0 {
			return false
		}
	}
	return true
}

// nationality reports whether the single word at k is an adjective of
// nationality before a noun ("a nice Thai place", "the Danish
// embassy"): it has the ending of one, or is one of the irregular ones,
// is no given name, stands after an article or an adjective and before a
// lower-case word.
func (g *tagger) nationality(k int) bool {
	t := &g.ts[k]
	if !g.cased || t.f&wFirst != 0 || !g.isWord(k+1) || g.ts[k+1].cap || !g.sameLine(k+1) || g.ts[k+1].f&wCommon == 0 {
		return false
	}
	p := k - 1
	if !g.oneOf(p, nationalityBefore) {
		return false
	}
	return nationalWord(g.word(k))
}

// language reports whether the single word at k names a language after
// a word that introduces one ("reply in English", "translate it into
// German", "she speaks Danish").
func (g *tagger) language(k int) bool {
	t := &g.ts[k]
	if !g.cased || t.f&(wFirst|wCommon) != 0 || !g.oneOf(g.prevWord(k), languageBefore) {
		return false
	}
	return nationalWord(g.word(k))
}

// nationalWord reports whether the ASCII word w (any case) has the form
// of an adjective of nationality or a language.
func nationalWord(w string) bool {
	var b [24]byte
	if len(w) > len(b) {
		return false
	}
	for i := 0; i < len(w); i++ {
		if w[i] >= 0x80 {
			return false
		}
		b[i] = lower(w[i])
	}
	if w := string(b[:len(w)]); nationalities[w] || nationalSuffix(w) {
		return true
	}
	return false
}

func nationalSuffix(w string) bool {
	for _, suf := range []string{"ese", "ian", "ish", "ean", "ic"} {
		if len(w) > len(suf)+2 && strings.HasSuffix(w, suf) {
			return true
		}
	}
	return false
}

var (
	languageBefore    = wordSet("in into speak speaks spoke spoken speaking fluent translate translated learn learning")
	nationalityBefore = wordSet("a an the this that our their my your his her new nice good great best local favourite favorite " +
		"authentic traditional typical small little old cheap famous popular")
	nationalities = wordSet("thai swiss dutch french greek irish welsh scots czech iraqi israeli pakistani saudi kuwaiti nepali " +
		"somali bengali afghan german american mexican korean cuban filipino peruvian chilean kenyan english french " +
		"spanish italian russian arabic hindi urdu swahili")
)

// camelCase reports whether the ASCII word w has a capital right after a
// lower-case letter ("PayPal", "CrudeStocks"), as brands and identifiers
// do, other than after the prefixes of family names ("McDonald",
// "DeShawn", "LaToya", "VonRueden").
func camelCase(w string) bool {
	for i := 1; i < len(w); i++ {
		if w[i] >= 0x80 {
			return false
		}
		if w[i] >= 'A' && w[i] <= 'Z' && w[i-1] >= 'a' && w[i-1] <= 'z' {
			var b [4]byte
			if i > len(b) {
				return true
			}
			for j := 0; j < i; j++ {
				b[j] = lower(w[j])
			}
			return !namePrefixes[string(b[:i])]
		}
	}
	return false
}

var namePrefixes = wordSet("mc mac de di da du la le lo van von del st ben")

// repeats reports whether w holds a letter three times in a row
// ("Sooo", "YASSS", "Awww"), which no name does.
func repeats(w string) bool {
	for i := 2; i < len(w); i++ {
		if w[i] == w[i-1] && w[i] == w[i-2] && isAlpha(w[i]) {
			return true
		}
	}
	return false
}

func (g *tagger) prevLower(k int) int {
	p := g.prevWord(k)
	if p >= 0 && (g.ts[p].cap && g.cased && !g.sentenceStart(p)) {
		return -1
	}
	return p
}

// classify labels the run [a, e).
func (g *tagger) classify(a, e int) {
	last := e - 1
	f := g.ts[a].f
	p := g.prevLower(a)
	// A month after a word of time ("in March", "until June", "every
	// May") is no name, even where it is also a given name or a town.
	if e-a == 1 && f&wMonth != 0 && g.oneOf(g.prevWord(a), monthBefore) {
		return
	}
	// A job title ("the Marketing Manager", "our new Research
	// Scientist") is no organisation, whatever words of institutions it
	// holds; before a given name it is cut off ("Finance Director Ann
	// Lee").
	if j := g.jobTitleEnd(a, e); j > a {
		for k := a; k < j; k++ {
			g.ts[k].used = true
		}
		if j < e {
			g.classify(j, e)
		}
		return
	}
	// A nation, a people or a faith named alone ("the Palestinians",
	// "Sunni leaders") is no name, unless the word is a name as well.
	if e-a == 1 && g.ts[a].f&wNation != 0 && g.ts[a].f&(wFirst|wLast) == 0 {
		g.ts[a].used = true
		return
	}
	if e-a == 1 && (g.nationality(a) || g.language(a)) {
		g.ts[a].used = true
		return
	}
	// Organisations: a suffix or an organisation word, or names joined
	// by "&".
	if e-a >= 2 && g.ts[last].f&wOrgSuffix != 0 || g.orgWords(a, e) || g.orgRun(a, e) || g.ampersand(a, e) {
		g.emit(Organization, a, e, 0.75)
		return
	}
	if e-a == 1 && g.ts[a].f&wOrgSuffix != 0 && g.ts[a].f&wCommon != 0 {
		return
	}
	// A lone initial or abbreviation ("St.", "J.") is no name; a country
	// in capitals ("UK", "US") is a place.
	if e-a == 1 && len(g.word(a)) <= 2 && !(g.cased && g.ts[a].upper && g.ts[a].f&wCountry != 0) {
		return
	}
	// In a list after an organisation ("Ceiba Solutions, Seeclickfix and
	// Hubbard-Thomas"), the items are organisations.
	// A known place in such a list stays a place, and a given name with
	// what follows it a person ("Globex Inc and Maria").
	if n := len(g.dst); n > 0 && g.dst[n-1].Type == Organization && g.dst[n-1].End < g.ts[a].s && !(e-a == 1 && f&(wCity|wCountry|wRegion) != 0 && f&nameFlags == 0) &&
		f&wFirst == 0 {
		switch gap := g.text[g.dst[n-1].End:g.ts[a].s]; gap {
		case ", ", " and ", ", and ", " & ":
			g.emit(Organization, a, e, 0.6)
			return
		}
	}
	personCue := p >= 0 && g.ts[p].f&wPersonCue != 0 || g.personCueBefore(a) || g.personCueAfter(e) || g.addressee(a, e)
	placeCue := p >= 0 && g.ts[p].f&wPlaceCue != 0 && !(g.lowerIs(p, "to") && g.oneOf(g.prevWord(p), toPerson))
	orgCue := g.orgCue(a, e, p)
	// "at X" after a job ("works as an engineer at X", "the head of
	// sales at X") names an employer, unless X is a known place.
	if g.lowerIs(p, "at") && g.jobBefore(p) && (e-a > 1 || f&(wCity|wCountry|wRegion) == 0) && g.l.lookupPlace(g.text, g.ts[a:e]) == 0 {
		orgCue, placeCue = true, false
	}
	// Places: the whole run is a known place.
	place := uint32(0)
	if e-a == 1 {
		place = f & (wCity | wCountry | wRegion)
	} else {
		place = g.l.lookupPlace(g.text, g.ts[a:e])
	}
	isFirst := f&wFirst != 0
	// A country that is no common word or given name is a place in any
	// case ("belize", not "chad" or "turkey").
	country := e-a == 1 && f&wCountry != 0 && f&(wCommon|wFirst|wLast) == 0
	// So is a given name that is no common word or place ("zachary",
	// not "mark" or "paris").
	given := e-a == 1 && isFirst && f&(wCommon|wCity|wCountry|wRegion) == 0
	if !g.cased && !personCue && !placeCue && !country && !given && !(e-a >= 2 && isFirst && g.ts[last].f&wCommon == 0) {
		return // text without capitals: names only where the words say so
	}
	// A single word that is a known place is no organisation on a cue
	// before it alone ("volunteered at Lisbon"); a cue after it ("Lisbon
	// hired", "is the brainchild of") still names an organisation.
	// Nor is a family name after "with" ("works with Kowalski"): people
	// are worked with as often as firms.
	if orgCue && e-a == 1 && (place != 0 || f&wLast != 0 && g.lowerIs(p, "with")) && !g.orgCue(a, e, -1) {
		orgCue = false
	}
	// The value of a form field that asks for a place: "City: X",
	// "Location: X", "Place of birth: X".
	if g.cased && g.isPunct(a-1, ':') && g.sameLine(a) && g.oneOf(g.prevWord(a), placeFields) {
		g.emit(Location, a, e, 0.75)
		return
	}
	switch {
	case place&(wCountry|wRegion) != 0 && !(isFirst && personCue):
		g.emit(Location, a, e, 0.8)
		return
	case !personCue && !orgCue && g.cased && g.placeContext(a, e, place):
		g.emit(Location, a, e, 0.75)
		return
	case orgCue && !isFirst:
		g.emit(Organization, a, e, 0.6)
		return
	case place != 0 && placeCue && !(isFirst && !placeCueStrong(g, p)):
		g.emit(Location, a, g.district(e), 0.8)
		return
	}
	// A line of capitalised words under a person's name line (and the
	// job title under it) is their organisation ("Ann Lee\nAcme Widgets\n12
	// Main St").
	if !isFirst && !(e-a == 1 && place != 0) && g.orgLine(a, e) {
		g.emit(Organization, a, e, 0.6)
		return
	}
	if orgCue && !isFirst {
		g.emit(Organization, a, e, 0.6)
		return
	}
	// After a preposition of place ("in Port Edward", "moved here from
	// Station Nord"), a run is a place unless it reads as a person's
	// name.
	if g.cased && !personCue {
		switch fullName := isFirst && e-a >= 2 && g.ts[last].f&wLast != 0 && g.ts[last].f&(wCity|wCountry|wRegion|wCommon) == 0; {
		case g.lowerIs(p, "in") || g.lowerIs(p, "near"):
			if !fullName && !(isFirst && e-a == 1 && place == 0) {
				g.emit(Location, a, g.district(e), 0.7)
				return
			}
		case g.placeVerbBefore(p):
			if !isFirst || place != 0 {
				g.emit(Location, a, e, 0.7)
				return
			}
		}
	}
	// A word with a capital inside ("PayPal", "BrightLoop") names a
	// brand or a firm, not a person.
	if e-a == 1 && g.cased && f&nameFlags == 0 && camelCase(g.word(a)) {
		g.emit(Organization, a, e, 0.6)
		return
	}
	// People: a given name, a cue, or unknown capitalised words.
	known := 0
	unknown := 0
	for j := a; j < e; j++ {
		if g.ts[j].f&nameFlags != 0 {
			known++
		} else if g.ts[j].f&(wCommon|wCity|wCountry|wRegion) == 0 {
			unknown++
		}
	}
	// A suffix after the name belongs to it: "MD", "PhD", "Jr.", "III".
	if known+unknown > 0 && g.oneOf(e, nameSuffixes) && g.sameLine(e) && (g.ts[e].sp || g.isPunct(e-1, ',')) {
		e++
	}
	switch {
	case isFirst || personCue:
		g.emit(Person, a, e, 0.8)
	case place != 0 && f&wLast != 0 && !placeCue && e-a == 1:
		g.emit(Person, a, e, 0.6)
	case place != 0:
		if placeCue || e-a > 1 {
			g.emit(Location, a, e, 0.7)
		} else {
			g.emit(Location, a, e, 0.55)
		}
	case (placeCue || g.oneOf(p, placeBefore)) && known == 0:
		g.emit(Location, a, e, 0.6)
	case g.cased && g.toponym(a, e):
		g.emit(Location, a, e, 0.6)
	case known > 0 || unknown > 0:
		if g.sentenceStart(a) && e-a == 1 && known == 0 && g.cased && !g.personCueAfter(e) {
			g.emit(Person, a, e, 0.5)
			return
		}
		g.emit(Person, a, e, 0.7)
	}
}

// placeContext reports whether the words right around the run [a, e)
// make it a place even where it is also a given name: "-based" after it
// ("Florence-based"), a country or state after a comma ("Paris, France"),
// or a place just before it in a list or a route ("from Lyon to Paris",
// "Lyon and Paris"). place holds the run's place flags; a run that is no
// known place qualifies only when it is no known name or common word.
func (g *tagger) placeContext(a, e int, place uint32) bool {
	if place == 0 {
		for j := a; j < e; j++ {
			if g.ts[j].f&(wFirst|wCommon) != 0 {
				return false
			}
			if g.ts[j].f&wLast != 0 {
				// A family name only in a list of places ("in Vrenstad,
				// Tarnby and Kelso").
				return g.afterPlace(a, e)
			}
		}
	}
	if g.isPunct(e, '-') && g.glued(e) && g.lowerIs(e+1, "based") && g.glued(e+1) {
		return true
	}
	if g.placeWords(a, e) {
		return true
	}
	// A US state's code after a comma: "Dayton, OH".
	if g.isPunct(e, ',') && g.glued(e) && g.isWord(e+1) && g.sameLine(e+1) && g.ts[e+1].upper && len(g.word(e+1)) == 2 && usStates[g.word(e+1)] {
		return true
	}
	// "Ann Lee, 44, of X," and "Ann Lee, of X,": a person's town.
	if g.lowerIs(a-1, "of") && g.isPunct(a-2, ',') && g.isPunct(e, ',') && a >= 3 && g.sameLine(a) {
		if n := len(g.dst); g.isNum(a-3) || n > 0 && g.dst[n-1].Type == Person && g.dst[n-1].End == g.ts[a-3].e {
			return true
		}
	}
	// A noun of land after it: "the Vrenstad area", "the Paris suburbs".
	if g.isWord(e) && !g.ts[e].cap && g.sameLine(e) && g.oneOf(e, placeAfter) {
		return true
	}
	if g.isPunct(e, ',') && g.glued(e) && g.sameLine(e+1) && g.capWord(e+1) && g.countryAt(e+1) > e+1 {
		return true
	}
	// A line below another that holds only the run and a postal code,
	// before or after it ("4021 Vrenstad", "Vrenstad 4021"): a town.
	if g.postcodeLine(a, e) {
		return true
	}
	// A line of its own above a line that holds only a country (with a
	// postal code or not): the town of an address.
	if g.lineStart(a) && e < len(g.ts) && g.ts[e].nl > 0 && g.capWord(e) {
		if c := g.countryAt(e); c > e && (c == len(g.ts) || g.ts[c].nl > 0 || g.isNum(c) && (c+1 == len(g.ts) || g.ts[c+1].nl > 0)) {
			return true
		}
	}
	return g.afterPlace(a, e)
}

// afterPlace reports whether the word a follows a place found just
// before it in a list or a route: "Lyon and X", "from Lyon to X".
// After a comma the list must go on ("Lyon, X and Y", "Lyon, X, Y"):
// "in Lyon, X is" starts a clause.
func (g *tagger) afterPlace(a, e int) bool {
	if n := len(g.dst); n > 0 && g.dst[n-1].Type == Location && g.dst[n-1].End < g.ts[a].s {
		switch g.text[g.dst[n-1].End:g.ts[a].s] {
		case " to ", " and ", ", and ", " or ", " & ":
			return true
		case ", ":
			return g.isPunct(e, ',') || g.lowerIs(e, "and") || g.lowerIs(e, "or")
		}
	}
	return false
}

// postcodeLine reports whether the run [a, e) and a number of four to
// six digits right before or after it are a whole line, below another.
func (g *tagger) postcodeLine(a, e int) bool {
	code := func(k int) bool {
		return g.isNum(k) && !g.ts[k].ord && !g.ts[k].dot && len(g.word(k)) >= 4 && len(g.word(k)) <= 6
	}
	eol := func(k int) bool { return k == len(g.ts) || g.ts[k].nl > 0 }
	switch {
	case g.ts[a].nl > 0 && code(e) && g.sameLine(e) && eol(e+1):
		return true
	case a > 0 && g.ts[a-1].nl > 0 && code(a-1) && g.sameLine(a) && eol(e):
		return true
	}
	return false
}

// placeWords reports the words that make a known place of the run [a,
// e) that could also be a name: a preposition of place before it
// ("around", "outside"), a noun of places before "of" ("the mayor of"),
// a noun of places after its possessive ("X's museums") or "X is a city".
func (g *tagger) placeWords(a, e int) bool {
	p := g.prevWord(a)
	if g.oneOf(p, placeBefore) && g.ts[p].e < g.ts[a].s {
		return true
	}
	if g.lowerIs(p, "of") && g.oneOf(g.prevWord(p), placeNouns) {
		return true
	}
	if (g.lowerIs(p, "is") || g.lowerIs(p, "was")) && g.oneOf(g.prevWord(p), placeNounsBefore) {
		return true
	}
	// "Hobart in Australia", "Kelso, Scotland" before a country or region.
	if g.lowerIs(e, "in") && g.sameLine(e+1) && g.capWord(e+1) && g.countryAt(e+1) > e+1 {
		return true
	}
	if g.isPunct(e, '\'') && g.glued(e) && g.isWord(e+1) && g.word(e+1) == "s" && g.oneOf(e+2, placeNouns) {
		return true
	}
	if (g.lowerIs(e, "is") || g.lowerIs(e, "was")) && (g.lowerIs(e+1, "a") || g.lowerIs(e+1, "the")) {
		return g.oneOf(e+2, placeKinds) || g.isWord(e+2) && g.oneOf(e+3, placeKinds)
	}
	return false
}

var (
	placeBefore = wordSet("around outside across throughout through via towards toward into inside between")
	placeNouns  = wordSet("city town village streets mayor suburbs outskirts centre center capital province port harbour harbor " +
		"residents citizens museums airport neighborhoods neighbourhoods skyline population inhabitants native natives " +
		"north south east west northeast northwest southeast southwest suburb heart")
	placeKinds = wordSet("city town village capital port metropolis place spot destination island")
	// placeNounsBefore name a place before "is": "my hometown is X".
	placeNounsBefore = wordSet("hometown birthplace destination city town village capital")
	placeAfter       = wordSet("area region district neighbourhood neighborhood suburb suburbs outskirts countryside coast coastline " +
		"airport harbour harbor police county province municipality residents site campus branch")
	// usStates are the postal codes of the US states.
	usStates = func() map[string]bool {
		m := map[string]bool{}
		for _, c := range strings.Fields("AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY " +
			"NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY") {
			m[c] = true
		}
		return m
	}()
)

// district returns the end of a place name ending at e with the number
// of a district after it ("Praha 4" at the end of a sentence or before
// a comma), or e.
func (g *tagger) district(e int) int {
	if g.isNum(e) && g.sameLine(e) && g.ts[e].sp && !g.ts[e].ord && len(g.word(e)) <= 2 && !g.ts[e].dot &&
		(e+1 == len(g.ts) || g.isPunct(e+1, ',') || g.isPunct(e+1, '.') && (e+2 == len(g.ts) || g.ts[e+2].cap) || g.ts[e+1].nl > 0) {
		return e + 1
	}
	if g.isNum(e) && g.sameLine(e) && g.ts[e].sp && !g.ts[e].ord && len(g.word(e)) <= 2 && g.ts[e].dot && (e+2 >= len(g.ts) || g.ts[e+2].cap) {
		return e + 1
	}
	return e
}

// strongPlaceCue reports whether the word p introduces a place: "in",
// "near", or "from" and "to" after a verb of moving.
func (g *tagger) strongPlaceCue(p int) bool {
	return g.lowerIs(p, "in") || g.lowerIs(p, "near") || g.placeVerbBefore(p)
}

// placeVerbBefore reports whether the preposition p follows a word of
// moving or origin: "moved here from", "originally from", "flew to".
func (g *tagger) placeVerbBefore(p int) bool {
	if !(g.lowerIs(p, "from") || g.lowerIs(p, "to") || g.lowerIs(p, "in")) {
		return false
	}
	q := g.prevWord(p)
	// "I'm in", "I'm from": the tokenizer splits the contraction.
	if g.isWord(q) && g.word(q) == "m" && g.isPunct(q-1, '\'') && g.lowerIs(q-2, "i") && !g.lowerIs(p, "to") {
		return true
	}
	switch {
	case g.lowerIs(p, "from"):
		return g.oneOf(q, fromVerbs)
	case g.lowerIs(p, "in"):
		return g.oneOf(q, inVerbs)
	}
	return g.oneOf(q, toVerbs)
}

// jobTitleEnd returns the end of a job title at the start of the run [a,
// e) of cased text: common words ending with a job noun ("Marketing
// Manager", "Data Protection Officer"), of two words or more or before a
// given name ("Director Ann Lee"); or a when there is none.
func (g *tagger) jobTitleEnd(a, e int) int {
	if !g.cased {
		return a
	}
	end := a
	for j := a; j < e; j++ {
		f := g.ts[j].f
		if f&wFirst != 0 || f&(wCommon|wJob) == 0 {
			break
		}
		if f&wJob != 0 && f&wOrgSuffix == 0 {
			end = j + 1
		}
	}
	if end == a || end-a == 1 && (end == e || g.ts[end].f&wFirst == 0) {
		return a
	}
	if end < e && g.ts[end].f&wFirst == 0 {
		return a // "Sales Manager Acme": not a title before a name
	}
	return end
}

// jobBefore reports whether a job noun stands among the few words before
// token p on its line ("works as a software engineer at", "the head of
// sales at").
func (g *tagger) jobBefore(p int) bool {
	for j := p - 1; j >= 0 && j >= p-6; j-- {
		if g.ts[j+1].nl > 0 || g.ts[j].kind == tPunct && g.ts[j].c != ',' && g.ts[j].c != '-' {
			return false
		}
		if g.isWord(j) && g.ts[j].f&wJob != 0 && g.ts[j].f&wCommon != 0 {
			return true
		}
	}
	return false
}

// toponym reports whether the run [a, e), which no list knows as a place,
// has the shape of an English place name: a compass word or a word of
// landscape before a name ("East Linwood", "Port Ellis", "Lake
// Marlow"), or a last word that is no known name and ends like a town
// ("Carverton", "Hollisburgh", "Fenmouth").
func (g *tagger) toponym(a, e int) bool {
	if e-a == 1 && g.ts[a].nc && hanPlace(g.word(a)) {
		return true
	}
	if e-a >= 2 && e-a <= 3 && g.oneOf(a, placePrefixes) {
		for j := a + 1; j < e; j++ {
			if !g.isWord(j) || g.ts[j].f&wCommon != 0 {
				return false
			}
		}
		return true
	}
	last := &g.ts[e-1]
	if last.f != 0 && last.f&^wPlaceStart != 0 {
		return false
	}
	w := g.word(e - 1)
	if len(w) < 7 || len(w) > 24 {
		return false
	}
	var b [24]byte
	for i := 0; i < len(w); i++ {
		b[i] = lower(w[i])
	}
	lw := string(b[:len(w)])
	for _, suf := range townEndings {
		if strings.HasSuffix(lw, suf) {
			return true
		}
	}
	return false
}

var (
	// placePrefixes start English place names of two words.
	placePrefixes = wordSet("north south east west new port lake mount mt fort point cape glen isle upper lower")
	// townEndings end English and Germanic town names.
	townEndings = []string{"ville", "burgh", "borough", "boro", "chester", "mouth", "haven", "shire", "port", "town", "stad"}
	// monthBefore are the words of time after which a month is a date.
	monthBefore = wordSet("in until till since by before after during every next last this early late mid from through")
)

// nameSuffixes are the degrees and generations written after a name.
var nameSuffixes = wordSet("md dds phd dvm jr sr ii iii iv esq mba cpa rn dmd")

var (
	fromVerbs = wordSet("here there originally moved move moving came come comes coming fled emigrated immigrated flew " +
		"travelled traveled returned back hails hail i'm am is are was were")
	inVerbs = wordSet("up lives live living lived born based located stay stays staying stayed settled i'm am " +
		"grew raised resides reside residing")
	// Words after which "to" introduces a person: "say hello to",
	// "sent it to", "thanks to".
	toPerson = wordSet("hello hi say said says talk talked talking speak spoke speaking write wrote writing sent send sends " +
		"sending gave give gives giving reply replied replying listen listened thanks thank according belongs belong " +
		"belonged introduced married engaged questions question replies answers messages letters forwarded addressed")
	toVerbs = wordSet("moved move moving relocated relocating emigrated immigrated flew fly flying travel travelled " +
		"traveled travelling traveling trip trips going go went coming come came welcome back returned returning " +
		"flight flights ticket tickets journey train bus ferry route been heading headed head bound drive drove driving " +
		"commute commutes commuting ride rode")
)

func placeCueStrong(g *tagger, p int) bool {
	return g.lowerIs(p, "from") || g.lowerIs(p, "in") || g.lowerIs(p, "visit") || g.lowerIs(p, "visiting") || g.lowerIs(p, "visited") ||
		g.lowerIs(p, "visits") || g.lowerIs(p, "near")
}

// orgRun reports whether the run [a, e) of two or more words is an
// organisation by its words: a company suffix at its end, a word of
// institutions in it, or a suffix such as "University" followed by "of".
func (g *tagger) orgRun(a, e int) bool {
	if e-a < 2 || !g.cased {
		return false
	}
	if g.ts[e-1].f&wOrgSuffix != 0 && g.ts[e-1].f&nameFlags == 0 || g.orgWords(a, e) {
		return true
	}
	for j := a; j+1 < e; j++ {
		if g.ts[j].f&wOrgSuffix != 0 && (g.lowerIs(j+1, "of") || g.lowerIs(j+1, "for")) {
			return true
		}
	}
	return false
}

// ampersand reports whether the run [a, e) holds a "&" between words.
func (g *tagger) ampersand(a, e int) bool {
	for j := a + 1; j < e-1; j++ {
		if g.isPunct(j, '&') {
			return true
		}
	}
	return false
}

// orgWords reports whether the run holds a word that names institutions
// ("Department of", "Bioscience") with another capitalised word.
func (g *tagger) orgWords(a, e int) bool {
	if e-a < 2 {
		return false
	}
	for j := a; j < e; j++ {
		if g.ts[j].f&wOrgWord != 0 && g.ts[j].f&nameFlags == 0 {
			return true
		}
	}
	return false
}

// addressee reports whether the run [a, e), which no list knows as a
// place, stands right before a comma and a street address found on its
// line ("shipped to Nomsa Dlamini, 12 Oak Road"): the one the address is
// for, since a town follows its street, not the reverse.
func (g *tagger) addressee(a, e int) bool {
	if !g.cased || !g.isPunct(e, ',') || !g.glued(e) || !g.sameLine(e+1) || e+1 >= len(g.ts) || !g.ts[e+1].used {
		return false
	}
	if e-a == 1 && g.ts[a].f&(wCity|wCountry|wRegion) != 0 || e-a > 1 && g.l.lookupPlace(g.text, g.ts[a:e]) != 0 {
		return false
	}
	s := g.ts[e+1].s
	for i := len(g.dst) - 1; i >= 0 && i >= len(g.dst)-16; i-- {
		if f := &g.dst[i]; f.Start == s && f.Type == Address {
			return g.isNum(e + 1) // a house number first
		}
	}
	return false
}

// personCueBefore reports phrases that introduce a name: "my name is",
// "I'm", "this is", "call me", "Name:".
func (g *tagger) personCueBefore(a int) bool {
	j := a - 1
	if g.isPunct(j, ':') {
		return g.lowerIs(j-1, "name") || g.lowerIs(j-1, "user") || g.lowerIs(j-1, "customer")
	}
	if g.lowerIs(j, "is") && (g.lowerIs(j-1, "name") || g.lowerIs(j-1, "this")) {
		return true
	}
	if g.lowerIs(j, "me") && (g.lowerIs(j-1, "call") || g.lowerIs(j-1, "calls")) {
		return true
	}
	if g.lowerIs(j, "him") || g.lowerIs(j, "her") {
		return g.lowerIs(j-1, "named") || g.lowerIs(j-1, "call")
	}
	if g.lowerIs(j, "under") || g.lowerIs(j, "add") || g.lowerIs(j, "i'm") || g.lowerIs(j, "im") {
		return true
	}
	if g.isWord(j) && g.word(j) == "m" && g.isPunct(j-1, '\'') {
		return true
	}
	return false
}

// personCueAfter reports words after a run that follow names: "said",
// "says", "'s", a colon at the start of a line (dialogue), "is a".
func (g *tagger) personCueAfter(e int) bool {
	if e >= len(g.ts) || !g.sameLine(e) {
		return false
	}
	switch {
	case g.lowerIs(e, "said") || g.lowerIs(e, "says") || g.lowerIs(e, "shouted") || g.lowerIs(e, "explained") || g.lowerIs(e, "listed"):
		return true
	case (g.lowerIs(e, "is") || g.lowerIs(e, "was")) && g.lowerIs(e+1, "from"):
		return true // "Ines is from Porto"
	case (g.lowerIs(e, "his") || g.lowerIs(e, "her")) && g.isWord(e+1) && !g.ts[e+1].cap:
		return true // "gave Ines her keys"

	case g.isPunct(e, '\'') && !g.ts[e].sp && g.isWord(e+1) && g.word(e+1) == "s":
		return !g.oneOf(e+2, placeNouns) // not "Paris's museums"
	case g.isPunct(e, ':') && g.lineStartRun(e):
		return true
	}
	return false
}

func (g *tagger) lineStartRun(e int) bool {
	j := e - 1
	for j > 0 && g.sameLine(j) && g.isWord(j-1) {
		j--
	}
	return g.lineStart(j)
}

// orgCue reports contexts that name organisations: "at X" with a place
// or time nearby, "The X office", "for X", "X Inc" handled by suffixes.
func (g *tagger) orgCue(a, e, p int) bool {
	// "The Acme office"; but "the Lisbon office" is a firm's office in
	// a known place.
	if g.lowerIs(a-1, "the") && (g.lowerIs(e, "office") || g.lowerIs(e, "offices")) &&
		!(e-a == 1 && g.ts[a].f&(wCity|wCountry|wRegion) != 0 || e-a > 1 && g.l.lookupPlace(g.text, g.ts[a:e]) != 0) {
		return true
	}
	if g.lowerIs(e, "is") && (g.lowerIs(e+1, "the") && g.lowerIs(e+2, "brainchild") || g.lowerIs(e+1, "a") && g.isNum(e+2)) {
		return true
	}
	if g.lowerIs(e, "invested") {
		return true
	}
	// After the name: "X hired", "X's employees", "X is headquartered".
	if g.oneOf(e, orgAfter) || g.isPunct(e, '\'') && g.glued(e) && g.isWord(e+1) && g.word(e+1) == "s" && g.oneOf(e+2, orgAfterPossessive) ||
		g.lowerIs(e, "is") && g.lowerIs(e+1, "headquartered") {
		return true
	}
	if p < 0 {
		return false
	}
	if g.lowerIs(p, "became") || g.lowerIs(p, "joined") || g.lowerIs(p, "works") || g.lowerIs(p, "employed") {
		return true
	}
	// Work and business before the name: "works at X", "joined the X",
	// "the CEO of X", "acquired by X", "at X as an engineer".
	q := p
	if g.lowerIs(q, "the") {
		q = g.prevWord(q)
	}
	if q >= 0 {
		switch {
		case g.oneOf(q, orgBefore):
			return true
		case (g.lowerIs(q, "at") || g.lowerIs(q, "for") || g.lowerIs(q, "by") || g.lowerIs(q, "with")) && g.oneOf(g.prevWord(q), orgBeforeAt):
			return true
		case g.lowerIs(q, "of") && g.oneOf(g.prevWord(q), orgBeforeOf):
			return true
		case g.lowerIs(q, "at") && g.lowerIs(e, "as") && (g.lowerIs(e+1, "a") || g.lowerIs(e+1, "an") || g.lowerIs(e+1, "the") || g.lowerIs(e+1, "its")):
			return true
		}
	}
	if g.lowerIs(p, "of") && g.lowerIs(p-1, "address") {
		return true
	}
	if g.lowerIs(p, "for") && g.lowerIs(p-1, "recorded") {
		return true
	}
	if g.lowerIs(p, "at") && (g.lowerIs(p-1, "year") || g.isPunct(e, ',') && g.isNum(e+1)) {
		return true
	}
	if g.lowerIs(p, "from") && g.lowerIs(p-1, "is") && !(e-a == 1 && g.ts[a].f&(wCity|wCountry|wRegion) != 0) && g.l.lookupPlace(g.text, g.ts[a:e]) == 0 {
		return true // "Ines is from Acme", not "from Cork"
	}
	return false
}

// Words around the names of organisations (lower case).
var (
	orgBefore = wordSet("joined joining join rejoined founded co-founded cofounded acquired employer company firm startup " +
		"start-up subsidiary competitor rival vendor supplier contractor manufacturer distributor")
	orgBeforeAt = wordSet("works worked working work employed job intern interned internship position role career hired " +
		"acquired funded backed owned partnered partnering contracted consultant consulting employee employees staff volunteer volunteered")
	orgBeforeOf = wordSet("ceo cto cfo coo founder co-founder cofounder president chairman chairwoman employees employee " +
		"staff shareholders board subsidiary division spokesperson spokesman spokeswoman owner owners shares stock investors")
	orgAfter           = wordSet("hired announced acquired employs reported headquartered shareholders inc ltd llc gmbh")
	orgAfterPossessive = wordSet("ceo cto cfo founder founders employees staff headquarters shares stock board products customers " +
		"revenue profits spokesperson spokesman spokeswoman chairman")
)

// placeFields are the labels of form fields that ask for a place, before
// a colon.
var placeFields = wordSet("location city town village country place region state province county hometown birthplace birth destination origin")

// geoHeads name waters, coasts and lands before "of" and a name.
var geoHeads = wordSet("gulf bay sea isle isles strait straits cape lake sound firth straits coast")

// personVerbs follow a person's name: verbs of speaking and writing.
var personVerbs = wordSet("said says wrote writes called calls asked asks replied replies told tells emailed emails texted " +
	"phoned rang answered confirmed mentioned promised agreed suggested explained")

// partnerAnds join the last two names of a firm named after its
// partners, in English and other languages ("A, B und C").
var partnerAnds = wordSet("and und et e y en och og és")

// cueSets are the word sets that oneOf looks words up in; their words
// carry wCue in the lexicon, so that other words need no look-up.
var cueSets = []map[string]bool{languageBefore, nationalityBefore, placePrefixes, monthBefore, placeNounsBefore, nameSuffixes, fromVerbs, inVerbs, toVerbs, toPerson, orgBefore, orgBeforeAt, orgBeforeOf, orgAfter, orgAfterPossessive,
	placeBefore, unitWords, placeNouns, placeKinds, placeAfter, partnerAnds, personVerbs, geoHeads, placeFields, partnerWords}

func wordSet(list string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(list) {
		m[w] = true
	}
	return m
}

// oneOf reports whether token k is a word of set (ASCII case folded).
func (g *tagger) oneOf(k int, set map[string]bool) bool {
	if !g.isWord(k) || g.ts[k].f&wCue == 0 || g.ts[k].e-g.ts[k].s > 16 {
		return false
	}
	var b [16]byte
	w := g.word(k)
	for i := 0; i < len(w); i++ {
		b[i] = lower(w[i])
	}
	return set[string(b[:len(w)])]
}

// partnerList matches "A, B and C" at k (three capitalised words): a
// company named after partners, unless the words are given names or the
// list follows a colon (people).
func (g *tagger) partnerList(k int) int {
	if !(g.capWord(k) && g.isPunct(k+1, ',') && g.capWord(k+2) && g.oneOf(k+3, partnerAnds) && !g.ts[k+3].cap && g.capWord(k+4)) {
		return k
	}
	if g.isPunct(k+5, ',') && g.capWord(k+6) {
		return k
	}
	// After a preposition of place ("lived in A, B and C", "a trip to A,
	// B and C") the words are places, each decided alone; after "from"
	// only when one of them is a known place ("a call from A, B and C").
	if p := g.prevWord(k); g.strongPlaceCue(p) || g.lowerIs(p, "from") && b2i(g.ts[k].f&(wCity|wCountry|wRegion) != 0)+b2i(g.ts[k+2].f&(wCity|wCountry|wRegion) != 0)+b2i(g.ts[k+4].f&(wCity|wCountry|wRegion) != 0) >= 2 {
		return k
	}
	// places counts the known places, plain counts those that are no
	// name as well: partners are named by family names, many of which
	// are towns too ("Davis", "Reynolds").
	firsts, places, plain := 0, 0, 0
	for _, j := range []int{k, k + 2, k + 4} {
		if g.ts[j].f&wFirst != 0 {
			firsts++
		}
		if g.ts[j].f&(wCity|wCountry|wRegion) != 0 {
			places++
			if g.ts[j].f&nameFlags == 0 {
				plain++
			}
		}
		if g.ts[j].f&wCommon != 0 && g.ts[j].f&nameFlags == 0 {
			return k
		}
	}
	if places == 3 && plain >= 1 {
		return k // places in a list: each word decides alone
	}
	// After a verb of meeting or speaking ("met", "ask", "with"), the
	// words are people.
	if p := g.prevWord(k); g.isPunct(k-1, ':') && !g.oneOf(p, orgBefore) || firsts == 3 || p >= 0 && g.ts[p].f&wPersonCue != 0 && !g.ts[p].cap && !g.lowerIs(p, "with") && !g.lowerIs(p, "by") && !g.lowerIs(p, "from") {
		g.emit(Person, k, k+1, 0.7)
		g.emit(Person, k+2, k+3, 0.7)
		g.emit(Person, k+4, k+5, 0.7)
		return k + 5
	}
	g.emit(Organization, k, k+5, 0.75)
	return k + 5
}

// dashedFirm matches a firm named after two partners joined by a spaced
// dash ("Hollis - Brandtner") at k and returns its end, or k: two single
// capitalised words that are family names or in no list, not both given
// names and not both places.
func (g *tagger) dashedFirm(k int) int {
	if !g.cased || !g.isPunct(k+1, '-') || !g.ts[k+1].sp || !g.sameLine(k+1) || !g.capWord(k+2) || !g.ts[k+2].sp || !g.sameLine(k+2) {
		return k
	}
	if g.capWord(k+3) && g.ts[k+3].sp && g.sameLine(k+3) || k > 0 && g.capWord(k-1) && g.ts[k-1].f&wCommon == 0 && g.ts[k].sp && g.sameLine(k) {
		return k
	}
	if !g.partnerNames(k, k+2) {
		return k
	}
	g.emit(Organization, k, k+3, 0.7)
	return k + 3
}

// partnerNames reports whether the words at a and b can be the names of
// a firm's two partners: neither all capitals, a common word (unless also
// a family name), a month, a weekday, an honorific, a word that is no name
// or a nationality, and not both given names nor both places.
func (g *tagger) partnerNames(a, b int) bool {
	firsts, places := 0, 0
	for _, j := range [2]int{a, b} {
		f := g.ts[j].f
		if g.ts[j].upper || f&wCommon != 0 && f&wLast == 0 || f&(wMonth|wWeekday|wHonorific|wNotName|wNation) != 0 {
			return false
		}
		if f&wFirst != 0 {
			firsts++
		}
		if f&(wCity|wCountry|wRegion) != 0 {
			places++
		}
	}
	return firsts < 2 && places < 2
}

// twoPartners matches a firm of two partners at k and returns its end, or
// k: a name and a word for sons or partners ("Marrowby and Sons",
// "Ferrando e Hijos"), or two names joined by a conjunction of another
// language ("Dorvaux et Pelletier", "Quellbrunn und Tesk") that are not
// both given names nor both places. A legal form after them belongs to
// the name.
func (g *tagger) twoPartners(k int) int {
	if !g.cased || !g.capWord(k) || !g.oneOf(k+1, partnerAnds) || g.ts[k+1].cap || !g.sameLine(k+1) || !g.capWord(k+2) || !g.sameLine(k+2) {
		return k
	}
	if k > 0 && g.capWord(k-1) && g.ts[k-1].f&wCommon == 0 && g.ts[k].sp && g.sameLine(k) {
		return k // the end of a longer run
	}
	end := k + 3
	if g.capWord(end) && g.ts[end].sp && g.sameLine(end) {
		if g.ts[end].f&wOrgSuffix == 0 {
			return k
		}
		end++
	}
	if !g.oneOf(k+2, partnerWords) {
		if g.lowerIs(k+1, "and") {
			return k
		}
		if !g.partnerNames(k, k+2) {
			return k
		}
	}
	if d := g.dottedForm(end-1, end); d > 0 {
		end = d
	}
	g.emit(Organization, k, end, 0.7)
	return end
}

// partnerWords stand for the sons or partners of a firm's founder after
// "and" ("Marrowby and Sons", "Ferrando e Hijos", "Rácz és Tsa.").
var partnerWords = wordSet("sons hijos figli fils söhne zonen sønner söner tsa társa cie")

// dottedForms are legal forms of firms written with dots or a slash, in
// lower case.
var dottedForms = []string{"s.r.o.", "spol. s r.o.", "a.s.", "v.o.s.", "k.s.", "d.o.o.", "d.d.", "sp. z o.o.", "sp. k.", "sp. j.", "s.a.", "s.l.",
	"s.l.u.", "s.p.a.", "s.r.l.", "s.a.s.", "s.n.c.", "s.a.r.l.", "b.v.", "n.v.", "e.k.", "k.k.", "a/s", "i/s", "s.c."}

// dottedForm returns the end of a firm's name when a legal form written
// with dots or a slash ("Novák s.r.o.", "Kowalski Sp. z o.o.", "Bang
// A/S") begins after the first word of the run [a, e) or right after it,
// or -1.
func (g *tagger) dottedForm(a, e int) int {
	if !g.cased {
		return -1
	}
	for j := a + 1; j <= e && j < len(g.ts); j++ {
		// Every form starts with a word of up to four letters and a dot
		// or a slash.
		if !g.ts[j].sp || !g.sameLine(j) || !g.isWord(j) || len(g.word(j)) > 4 || g.ts[j].e >= len(g.text) ||
			g.text[g.ts[j].e] != '.' && g.text[g.ts[j].e] != '/' {
			continue
		}
		p := g.ts[j].s
		for _, form := range dottedForms {
			q := p + len(form)
			if q > len(g.text) || !strings.EqualFold(g.text[p:q], form) || q < len(g.text) && isAlnum(g.text[q]) {
				continue
			}
			x := j
			for x < len(g.ts) && g.ts[x].e < q {
				x++
			}
			if x < len(g.ts) && g.ts[x].e == q {
				return x + 1
			}
		}
	}
	return -1
}

// orgLine reports whether the run [a, e) is a whole line under a line
// holding a person (or a job title under one).
func (g *tagger) orgLine(a, e int) bool {
	return g.cased && g.lineStart(a) && (e == len(g.ts) || g.ts[e].nl > 0) && g.personLineAbove(a)
}

// personLineAbove reports whether the line above token a holds a person
// or a job title found by this tagger.
func (g *tagger) personLineAbove(a int) bool {
	start := g.ts[a].s
	// The start of the line above.
	p := start
	for p > 0 && g.text[p-1] != '\n' {
		p--
	}
	if p == 0 {
		return false
	}
	q := p - 1
	for q > 0 && g.text[q-1] != '\n' {
		q--
	}
	for _, f := range g.dst {
		if (f.Type == Person || f.Type == Title) && f.Start >= q && f.End <= p {
			return true
		}
	}
	return false
}

// placeKey returns the words of [a, e) as a key of the place list.
func (g *tagger) placeKey(a, e int) string {
	var b strings.Builder
	for j := a; j < e; j++ {
		if j > a && g.ts[j].sp {
			b.WriteByte(' ')
		}
		b.WriteString(strings.ToLower(g.text[g.ts[j].s:g.ts[j].e]))
	}
	return b.String()
}

// placeSpan returns the end of the longest known place of two or more
// words from k (countries and regions; cities only when a lower-case word
// or an apostrophe is inside, which a run of capitalised words cannot
// hold), or k. In cased text the first and last words are capitalised.
func (g *tagger) placeSpan(k int) int {
	if !g.isWord(k) || g.ts[k].f&wPlaceStart == 0 || g.cased && !g.ts[k].cap {
		return k
	}
	var buf [128]byte
	n := 0
	best := k
	inner := false
	for j := k; j < len(g.ts) && j-k < 9; j++ {
		t := &g.ts[j]
		if j > k && (!g.sameLine(j) || t.used) {
			break
		}
		if t.kind == tNum || t.kind == tPunct && t.c != '\'' && t.c != '.' || t.code {
			break
		}
		// Inside a place name of cased text, a lower-case English word
		// is a small word ("of", "de", "and the"); another ends the look.
		if g.cased && t.kind == tWord && !t.cap && t.sp && (t.f&(wConnector|wCommon) == wCommon && t.e-t.s > 5) {
			break
		}
		if j > k && t.sp {
			if n == len(buf) {
				break
			}
			buf[n] = ' '
			n++
		}
		w := g.text[t.s:t.e]
		if n+len(w) > len(buf) {
			break
		}
		for i := 0; i < len(w); {
			c := w[i]
			if c < utf8.RuneSelf {
				buf[n] = foldByte(c)
				n++
				i++
				continue
			}
			r, size := utf8.DecodeRuneInString(w[i:])
			i += size
			r = foldRune(r)
			if n+utf8.RuneLen(r) > len(buf) {
				return best
			}
			n += utf8.EncodeRune(buf[n:], r)
		}
		if t.kind == tPunct || g.cased && !t.cap && !g.elided(j) {
			inner = true
			if !g.l.heads.has(buf[:n]) {
				break
			}
			continue
		}
		if j == k {
			continue
		}
		if c := g.l.places[string(buf[:n])]; c&(wCountry|wRegion) != 0 || c&wCity != 0 && inner {
			best = j + 1
		}
		// No longer place starts with these words: none is further on.
		if !g.l.heads.has(buf[:n]) {
			break
		}
	}
	return best
}

// elided reports whether word k is a capitalised word after an elided
// article or preposition of French or Italian, which is written in lower
// case: "d'Ivoire", "l’Aquila".
func (g *tagger) elided(k int) bool {
	w := g.word(k)
	if len(w) < 3 || !g.isWord(k) {
		return false
	}
	a := apostropheAt(w, 1)
	if a == 0 || len(w) <= 1+a {
		return false
	}
	r, _ := utf8.DecodeRuneInString(w[1+a:])
	return isUpperRune(r)
}

// hanPlace reports whether w, a word of Han letters, ends with the word
// for a division or a settlement (市 city, 県/縣 prefecture or county,
// 省 province, 区/區 district, 州, 郡, 府, 鎮/镇; 町, 村 and 乡/鄉 only
// after two letters, since 小町 is a given name): "福建省", "栃木県",
// "関根町".
func hanPlace(w string) bool {
	last, size := utf8.DecodeLastRuneInString(w)
	if !unicode.Is(unicode.Han, last) {
		return false
	}
	n := utf8.RuneCountInString(w[:len(w)-size])
	switch last {
	case '市', '県', '縣', '省', '区', '區', '州', '郡', '府', '鎮', '镇':
		return n >= 1
	case '町', '村', '乡', '鄉':
		return n >= 2
	}
	return false
}
