package privacy

import (
	"embed"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// The word lists of the embedded recognizer: public name and place lists
// (see lexicon/SOURCES.md), rebuilt by privacy/internal/lexgen.
//
//go:embed lexicon/*.txt
var lexiconFS embed.FS

// Word classes of the lexicon, a bit set per lower-cased word.
const (
	wFirst      uint32 = 1 << iota // a given name
	wLast                          // a family name
	wCity                          // a city or town (one word)
	wCountry                       // a country (one word)
	wRegion                        // a state or region (one word)
	wCommon                        // a common English word
	wStreetType                    // Street, Rd., Avenue, ... after the name
	wStreetPre                     // Rue, Via, Calle, ... before the name
	wSecondary                     // Apt, Suite, Unit, ...
	wOrgSuffix                     // Inc, Ltd, GmbH, Group, ...
	wOrgWord                       // words typical inside organisation names
	wHonorific                     // Mr, Mrs, Dr, ...
	wWeekday                       // Monday, ...
	wMonth                         // January, Jan, ...
	wConnector                     // de, van, la, ... inside names
	wJob                           // head nouns of job titles
	wPlaceStart                    // first word of a multi-word place name
	wPersonCue                     // words after which a name follows
	wPlaceCue                      // words after which a place follows
	wNotName                       // capitalised words that are never names (I, OK, ...)
	wCue                           // a word of one of the cue sets of the tagger (see cueSets)
	wNation                        // a word for a nation, a people or a faith (Iraqi, Norwegians, Sunni)
	wStreetAny                     // a street type of any language or its abbreviation (libpostal): Skyway, Lk, küçəsi, Jln
	wDivision                      // a noun for an administrative division after its name (oblast, okrug, область)
)

type lexicon struct {
	words  map[string]uint32 // while the lists load; then table holds them
	table  wordTable
	places map[string]uint32 // multi-word places (lower case, single spaces): wCity or wCountry or wRegion
	heads  placeHeads        // the leading words of the longer places
}

var (
	lexOnce sync.Once
	lex     *lexicon
)

// theLexicon loads the embedded lists once (under a second and about 12 MB of heap,
// shared by every scanner).
func theLexicon() *lexicon {
	lexOnce.Do(func() {
		l := &lexicon{words: make(map[string]uint32, 280000), places: make(map[string]uint32, 20000)}
		add := func(file string, class uint32) {
			b, err := lexiconFS.ReadFile("lexicon/" + file)
			if err != nil {
				panic("privacy: embedded lexicon: " + err.Error())
			}
			for _, line := range strings.Split(string(b), "\n") {
				line = strings.TrimSpace(line)
				if line == "" {
					continue
				}
				key := strings.ToLower(line)
				if strings.IndexByte(key, ' ') >= 0 {
					key = strings.Join(strings.Fields(key), " ")
					l.places[key] |= class
					first, _, _ := strings.Cut(key, " ")
					l.words[first] |= wPlaceStart
					if a, _, ok := strings.Cut(first, "'"); ok {
						l.words[a] |= wPlaceStart // "People's Republic of China"
					}
					continue
				}
				l.words[key] |= class
			}
		}
		add("words.txt", wCommon)
		add("first.txt", wFirst)
		add("last.txt", wLast)
		add("cities.txt", wCity)
		add("towns.txt", wCity)
		add("countries.txt", wCountry)
		add("territories.txt", wCountry)
		add("regions.txt", wRegion)
		add("nations.txt", wNation)
		add("streets.txt", wStreetAny)
		for class, list := range builtinPlaces {
			for _, line := range strings.Split(list, ";") {
				key := strings.Join(strings.Fields(strings.ToLower(line)), " ")
				if key == "" {
					continue
				}
				if first, _, multi := strings.Cut(key, " "); multi {
					l.places[key] |= class
					l.words[first] |= wPlaceStart
					if a, _, ok := strings.Cut(first, "'"); ok {
						l.words[a] |= wPlaceStart
					}
				} else {
					l.words[key] |= class
				}
			}
		}
		for _, set := range cueSets {
			for w := range set {
				l.words[w] |= wCue
			}
		}
		for class, list := range builtinWords {
			for _, w := range strings.Fields(list) {
				l.words[w] |= class
			}
		}
		l.heads = newPlaceHeads(l.places)
		l.table = newWordTable(l.words)
		l.words = nil
		lex = l
	})
	return lex
}

// placeHeads is a set of the leading words of the places of several
// words (keys of lexicon.places cut where a token of a text may end inside
// them: before a space, an apostrophe or a dot, or after one), two tokens
// or more ("new york" of "new york city", "people's republic of"), kept
// as 32-bit fingerprints of their hashes. A text whose words are no head
// cannot go on to a place; has may answer true for a few other words.
type placeHeads struct {
	slots []uint32 // 0 (empty) or a fingerprint
	mask  uint64
}

func newPlaceHeads(places map[string]uint32) placeHeads {
	var hs []uint64
	for key := range places {
		for i := 1; i < len(key); i++ {
			// The look-ups begin at the second token, after a space, a
			// dot or an apostrophe.
			if c, b := key[i], key[i-1]; (c == ' ' || c == '\'' || c == '.' || b == '\'' || b == '.') && strings.ContainsAny(key[:i], " '.") {
				hs = append(hs, wordHash([]byte(key[:i])))
			}
		}
	}
	size := 1
	for size < 2*len(hs)+1 {
		size *= 2
	}
	p := placeHeads{slots: make([]uint32, size), mask: uint64(size - 1)}
	for _, h := range hs {
		fp := uint32(h>>32) | 1
		i := h & p.mask
		for p.slots[i] != 0 && p.slots[i] != fp {
			i = (i + 1) & p.mask
		}
		p.slots[i] = fp
	}
	return p
}

// has reports whether the lower-case words w may be a head of a place:
// false only when they are none. The zero placeHeads holds every word.
func (p *placeHeads) has(w []byte) bool {
	if p.slots == nil {
		return true
	}
	h := wordHash(w)
	fp := uint32(h>>32) | 1
	for i := h & p.mask; ; i = (i + 1) & p.mask {
		switch p.slots[i] {
		case fp:
			return true
		case 0:
			return false
		}
	}
}

// wordTable is the frozen form of the word classes: an open-addressing
// hash table over one block of key bytes, about a third of the memory of a
// map and looked up without hashing a string twice.
type wordTable struct {
	slots []uint32 // 0 (empty) or 1 + an index into ents
	ents  []wordEntry
	keys  []byte
	mask  uint64
}

type wordEntry struct {
	off   uint32 // the key is keys[off : off+n]
	class uint32
	n     uint16
	tag   uint16 // the top bits of the key's hash
}

func newWordTable(m map[string]uint32) wordTable {
	size := 1
	for size < len(m)+len(m)/2+1 {
		size *= 2
	}
	t := wordTable{slots: make([]uint32, size), ents: make([]wordEntry, 0, len(m)), mask: uint64(size - 1)}
	n := 0
	for k := range m {
		n += len(k)
	}
	t.keys = make([]byte, 0, n)
	for k, class := range m {
		if len(k) > 0xffff {
			continue // never looked up (lookup takes 64 bytes at most)
		}
		h := wordHash([]byte(k))
		i := h & t.mask
		for t.slots[i] != 0 {
			i = (i + 1) & t.mask
		}
		t.ents = append(t.ents, wordEntry{off: uint32(len(t.keys)), class: class, n: uint16(len(k)), tag: uint16(h >> 48)})
		t.keys = append(t.keys, k...)
		t.slots[i] = uint32(len(t.ents))
	}
	return t
}

// wordHash is FNV-1a over the bytes of w, its high bits folded into the
// low ones that index the table.
func wordHash(w []byte) uint64 {
	h := uint64(fnvOffset)
	for _, c := range w {
		h = (h ^ uint64(c)) * fnvPrime
	}
	return h ^ h>>29
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// getLower returns the classes of the ASCII word w lowered, whose hash
// (wordHash of the lowered bytes) is h, or 0.
func (t *wordTable) getLower(w string, h uint64) uint32 {
	tag := uint16(h >> 48)
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := t.slots[i]
		if s == 0 {
			return 0
		}
		e := &t.ents[s-1]
		if e.tag == tag && int(e.n) == len(w) && lowerIsKey(w, t.keys[e.off:e.off+uint32(e.n)]) {
			return e.class
		}
	}
}

// lowerIsKey reports whether the ASCII word w lowered is key (as long as w).
func lowerIsKey(w string, key []byte) bool {
	key = key[:len(w)]
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c-'A' < 26 {
			c += 'a' - 'A'
		}
		if c != key[i] {
			return false
		}
	}
	return true
}

// get returns the classes of the lower-case word w, or 0.
func (t *wordTable) get(w []byte) uint32 {
	h := wordHash(w)
	tag := uint16(h >> 48)
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := t.slots[i]
		if s == 0 {
			return 0
		}
		e := &t.ents[s-1]
		if e.tag == tag && int(e.n) == len(w) && string(t.keys[e.off:e.off+uint32(e.n)]) == string(w) {
			return e.class
		}
	}
}

// builtinPlaces are names of countries and regions in common use that
// the country and state lists lack: older and shorter English names of
// countries, the nations of the United Kingdom, and the provinces,
// states and regions of several countries. Separated by ';'.
var builtinPlaces = map[uint32]string{
	wCountry: "Czech Republic; Cape Verde; Ivory Coast; Swaziland; Macedonia; Republic of Macedonia; Burma; East Timor; " +
		"Turkey; Congo; Réunion; People's Republic of China; Republic of China; Republic of Korea; Democratic People's Republic of Korea; Korea; " +
		"Kingdom of the Netherlands; Holland; Great Britain; Britain; England; Scotland; Wales; Northern Ireland; UK; US; " +
		"United States of America; USA; America; UAE; Russian Federation; Republic of Ireland; Federated States of Micronesia; " +
		"Sao Tome and Principe; São Tomé and Príncipe; Saint Kitts and Nevis; Saint Vincent and the Grenadines; " +
		"Saint Pierre and Miquelon; Wallis and Futuna; Heard Island and McDonald Islands; Svalbard and Jan Mayen; " +
		"Turks and Caicos Islands; British Virgin Islands; US Virgin Islands; United States Virgin Islands; " +
		"Holy See; Vatican; Vatican City; Palestine; Palestinian Territory; Occupied Palestinian Territory; " +
		"Libyan Arab Jamahiriya; Syrian Arab Republic; Lao People's Democratic Republic; Viet Nam; Republic of Moldova; " +
		"United Republic of Tanzania; Islamic Republic of Iran; Brunei Darussalam; Kingdom of Saudi Arabia; " +
		"Reunion; Curacao; Kosovo; Hong Kong; Macao; Macau; Taiwan; Greenland; Faroe Islands; The Gambia; The Bahamas; " +
		"Bosnia; Herzegovina; Democratic Republic of Congo; Congo-Brazzaville; Congo-Kinshasa; DR Congo; DRC; " +
		"Netherlands Antilles; Falkland Islands; Pitcairn Islands; Norfolk Island; Christmas Island; Cocos Islands; " +
		"Bouvet Island; French Southern Territories; British Indian Ocean Territory; United States Minor Outlying Islands; " +
		"Slovak Republic; Kyrgyz Republic; Republic of the Congo; Democratic Republic of the Congo",
	wRegion: "Ontario; Quebec; British Columbia; Alberta; Manitoba; Saskatchewan; Nova Scotia; New Brunswick; " +
		"Newfoundland and Labrador; Prince Edward Island; Yukon; Nunavut; Northwest Territories; " +
		"New South Wales; Queensland; Tasmania; Western Australia; South Australia; Northern Territory; " +
		"Australian Capital Territory; Bavaria; Bayern; Saxony; Sachsen; Hesse; Hessen; Thuringia; Brandenburg; " +
		"Baden-Württemberg; North Rhine-Westphalia; Nordrhein-Westfalen; Lower Saxony; Niedersachsen; Rhineland-Palatinate; " +
		"Schleswig-Holstein; Mecklenburg-Vorpommern; Saxony-Anhalt; Catalonia; Catalunya; Andalusia; Andalucía; " +
		"Basque Country; Galicia; Castile and León; Valencian Community; Tuscany; Toscana; Lombardy; Lombardia; " +
		"Sicily; Sicilia; Sardinia; Piedmont; Veneto; Provence; Brittany; Bretagne; Normandy; Normandie; Alsace; " +
		"Île-de-France; Flanders; Wallonia; Scania; Lapland; Cornwall; Yorkshire; " +
		"District of Columbia; Puerto Rico; Guam",
}

// builtinWords are the closed word classes, written here.
var builtinWords = map[uint32]string{
	// Administrative divisions named by an adjective before the noun,
	// in the languages that write them so (in lower case).
	wDivision: "oblast oblasti oblys okrug okrugu okruga kraj krai rayon raion raioni rajon rajoni viloyati viloyat vilayeti " +
		"voivodeship województwo powiat gmina okres kotar županija zupanija opština opstina općina opcina regija " +
		"область обл округ край район раён волость губерния республика області краї районі округа општина регион " +
		"περιφέρεια νομός δήμος",
	// Peoples and faiths that the list of nationalities lacks.
	wNation: "palestinian palestinians arab arabs asian asians african africans european europeans hispanic hispanics latino latinos westerners " +
		"sunni sunnis shiite shiites shia muslim muslims jewish jews hindu hindus sikh sikhs buddhist buddhists " +
		"catholic catholics protestant protestants christians zionist zionists kurd kurds kurdish",
	wStreetType: "street st str road rd avenue ave av drive dr lane ln boulevard blvd way court ct place pl parkway pkwy " +
		"circle cir terrace ter highway hwy square sq trail trl crescent close row alley plaza expressway freeway " +
		"pike turnpike run walk path loop bend crossing point heights hill hills park ridge view grove gardens mews " +
		"wharf quay embankment gate market strasse straße gasse allee platz chaussee tér körút rakpart köz fasor sétány " +
		"dűlő főtér országút sor cesta iela laukums gatve dambis bulvāris prospekts námestie nábrežie nábřeží třída " +
		"փողոց պողոտա նրբանցք հրապարակ խճուղի փակուղի", // Armenian, which no list above holds
	wStreetPre: "rue via viale calle avenida avda avd rua paseo praça praca strada ulica ul út utca vej gade straße " +
		"chaussée chaussee chemin route allée allee quai impasse carrer camino travessa largo vicolo piazza corso " +
		"zona vila rambla ronda carretera estrada alameda plac aleja bulevar bulevardul strada calea rr " +
		"ctra str trg náměstí namesti ulitsa prospekt sokak sokağı caddesi cad jalan jl λεωφόρος λεωφ οδός οδος πλατεία " +
		"aleea intrarea splaiul șoseaua soseaua piața piata drumul cerrada viaducto calzada privada andador circuito retorno prolongación " +
		"priv cda calz prol carr cjon callejón pje pasaje", // Spanish abbreviations (Mexico)
	wSecondary: "apt apartment suite ste unit flat room rm floor fl box po psc bldg building dept bloc",
	wOrgSuffix: "inc incorporated corp corporation co company llc llp lp ltd limited plc gmbh ag sa sarl srl bv nv " +
		"oy ab as asa kg spa pty group holdings partners associates foundation institute university college " +
		"bank systems solutions technologies technology labs laboratories industries enterprises services " +
		"consulting international worldwide global software networks media analytics insurance records studios pictures " +
		"publishing brewery aps ohg kgaa kft zrt nyrt kkt lda ltda sas snc eurl scs scop sprl bvba vof oyj sdn bhd pte pvt brothers bros " +
		"gruppen gruppe grupa grupo gruppo groupe",
	wOrgWord: "department ministry agency council bureau office association society union league club team " +
		"committee commission authority board trust fund capital ventures digital data research health medical " +
		"energy financial finance logistics marketing management communications entertainment electric motors " +
		"airlines pharmaceuticals bioscience sciences life maintenance garden",
	wHonorific: "mr mrs ms miss mx dr prof sir dame lord lady madam mme mlle herr frau rev fr sr jr",
	wWeekday:   "monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun",
	wMonth: "january february march april may june july august september october november december " +
		"jan feb mar apr jun jul aug sep sept oct nov dec",
	wConnector: "de da di do du des del della dos das la le les van von der den ter ten te y e u nad pod am an bin " +
		"al el ibn st saint san santa sainte sur lès les aan op bij",
	wJob: "manager engineer technician technologist clerk operator installer repairer surgeon scientist administrator " +
		"representative coordinator cashier lineman linemen tender drafter publicist assistant analyst accountant " +
		"architect designer developer programmer teacher professor nurse physician doctor dentist lawyer attorney " +
		"officer director executive specialist consultant supervisor inspector mechanic electrician plumber " +
		"carpenter driver pilot editor writer reporter journalist producer therapist pharmacist counselor " +
		"counsellor librarian secretary receptionist agent broker auditor economist chemist biologist physicist " +
		"mathematician statistician surveyor planner worker laborer labourer helper machinist welder painter " +
		"cook chef baker butcher farmer rancher gardener janitor custodian guard attendant aide paramedic " +
		"firefighter investigator detective sheriff dispatcher controller estimator underwriter adjuster " +
		"appraiser teller examiner instructor trainer tutor coach therapist hygienist optician audiologist " +
		"veterinarian psychologist sociologist historian curator archivist interpreter translator artist " +
		"photographer musician singer actor dancer choreographer setter fitter assembler inspector sorter " +
		"packer loader mover sewer tailor dressmaker upholsterer jeweler repairman serviceman salesman " +
		"salesperson buyer purchaser merchandiser marketer recruiter generalist scheduler expediter " +
		"processor transcriptionist typist programmer tester strategist officer president chairman founder " +
		"ceo cto cfo vp head lead chief student pupil intern trainee apprentice volunteer",
	wPersonCue: "mr mrs ms miss dr prof sir dear hi hello hey named name call calls called by with said says told tell " +
		"ask asked meet met thanks thank user customer patient client son daughter wife husband brother sister " +
		"mother father friend partner colleague boss attn attention cc signed",
	wPlaceCue: "from in to at near visit visiting visited city town village moved lives living live born grew " +
		"arrived arrive trip travel traveled travelled flew fly",
	wNotName: "i i'm ok okay yes no hi hello hey dear thanks thank please the a an this that these those it its " +
		"he she they we you my your his her our their mr mrs ms dr bot user name address phone email date when where " +
		"what who why how which there here is are was were be been am do does did can could will would should may " +
		"might must shall and or but if so as of on in at to for from by with about god call " +
		// Chat words written with a capital at the start of a message.
		"lol lmao lmfao rofl omg omfg wtf btw fyi thx tnx pls plz idk imo imho tbh smh ikr luv yeah yep yup nope nah " +
		"wow haha hahaha hehe yay ugh hmm oops aww gonna wanna gotta thats dont cant wont ive youre theyre whats",
}

// lookup returns the word classes of w (any case).
func (l *lexicon) lookup(w string) uint32 {
	if len(w) > 64 {
		return 0
	}
	// ASCII words, lowered as they are hashed.
	h := uint64(fnvOffset)
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c >= utf8.RuneSelf {
			return l.lookupRunes(w)
		}
		if c-'A' < 26 {
			c += 'a' - 'A'
		}
		h = (h ^ uint64(c)) * fnvPrime
	}
	return l.table.getLower(w, h^h>>29)
}

// foldByte and foldRune are a letter as the lexicon keys it: lower
// case, and every apostrophe (', ’ and the backtick) as '.
func foldByte(c byte) byte {
	if c == '`' {
		return '\''
	}
	return lower(c)
}

func foldRune(r rune) rune {
	if r == '\u2019' || r == '`' {
		return '\''
	}
	return unicode.ToLower(r)
}

// lookupRunes is lookup of a word with letters outside ASCII, or with an
// apostrophe other than '.
func (l *lexicon) lookupRunes(w string) uint32 {
	var buf [64]byte
	n := 0
	for i := 0; i < len(w); {
		c := w[i]
		if c < utf8.RuneSelf {
			if n == len(buf) {
				return 0
			}
			buf[n] = foldByte(c)
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(w[i:])
		i += size
		r = foldRune(r)
		if n+utf8.RuneLen(r) > len(buf) {
			return 0
		}
		n += utf8.EncodeRune(buf[n:], r)
	}
	return l.table.get(buf[:n])
}

// lookupPlace returns the classes of a multi-word place written as the
// words of text[s:e] (any case, any single spaces or hyphens between).
func (l *lexicon) lookupPlace(text string, toks []tok) uint32 {
	var buf [96]byte
	n := 0
	for k, t := range toks {
		if k > 0 {
			if n == len(buf) {
				return 0
			}
			buf[n] = ' '
			n++
		}
		w := text[t.s:t.e]
		for i := 0; i < len(w); {
			r, size := utf8.DecodeRuneInString(w[i:])
			i += size
			r = foldRune(r)
			if n+utf8.RuneLen(r) > len(buf) {
				return 0
			}
			n += utf8.EncodeRune(buf[n:], r)
		}
	}
	return l.places[string(buf[:n])]
}
