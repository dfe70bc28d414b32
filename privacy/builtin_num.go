package privacy

import "net/netip"

// digitRun returns the end of the run of ASCII digits starting at i.
func digitRun(text string, i int) int {
	for i < len(text) && isDigit(text[i]) {
		i++
	}
	return i
}

var addressContext = []string{"apt", "suite", "unit", "flat", "room", "box", "floor"}

// addressBefore reports whether the word right before start (skipping
// spaces, '.', '#' and ':') is one of the address words.
func addressBefore(text string, start int) bool {
	e := start
	for e > 0 && (text[e-1] == ' ' || text[e-1] == '.' || text[e-1] == '#' || text[e-1] == ':') && start-e < 4 {
		e--
	}
	s := e
	for s > 0 && isAlpha(text[s-1]) && e-s < 6 {
		s--
	}
	if s == e || s > 0 && isAlpha(text[s-1]) {
		return false
	}
	for _, w := range addressContext {
		if len(w) == e-s && hasContext(text[:e], e, []string{w}) {
			return true
		}
	}
	return false
}

var phoneContext = []string{"phone", "phones", "telephone", "call", "calling", "tel", "mobile", "cell", "cellphone", "fax",
	"reach", "contact", "dial", "answer", "answering", "office", "whatsapp", "sms", "text me", "ring"}

// notPhoneContext are words before a number that make it something else
// than a phone number: a postal code, an order or a reference.
var notPhoneContext = []string{"zip", "zipcode", "postal", "postcode", "plz", "cep", "order", "invoice", "ticket", "ref",
	"reference", "id", "sku", "tracking", "case", "build", "version", "serial", "no", "account"}

// phoneShape is a candidate phone number: digit groups with separators.
type phoneShape struct {
	start, end int
	groups     [12]int
	seps       [12]byte // seps[k] precedes groups[k+1]
	n          int
	digits     int
	plus       bool
	paren      bool
	ext        bool
}

func findPhone(text string, i int, dst []Finding) ([]Finding, int) {
	start := i
	var ps phoneShape
	if i > 0 && (text[i-1] == '+' || text[i-1] == '(') {
		start = i - 1
		ps.plus = text[i-1] == '+'
	}
	if !boundaryBefore(text, start) {
		return dst, digitRun(text, i)
	}
	ps.start = start
	p := start
	if ps.plus {
		p++
	}
	for ps.n < len(ps.groups) {
		// A trunk prefix after the country code: "+44 (0)20 7946 0958".
		if ps.plus && ps.n == 1 && p+3 < len(text) && text[p] == '(' && text[p+1] == '0' && text[p+2] == ')' {
			p += 3
			if p+1 < len(text) && (text[p] == ' ' || text[p] == '-') && isDigit(text[p+1]) {
				p++
			}
			if p >= len(text) || !isDigit(text[p]) {
				break
			}
			ps.seps[ps.n-1] = ' '
			ps.paren = true
		}
		if p < len(text) && text[p] == '(' {
			q := digitRun(text, p+1)
			// (Up to four digits, five with the trunk prefix 0: "(02840)".)
			if q == p+1 || q-p-1 > 4 && !(q-p-1 == 5 && text[p+1] == '0') || q >= len(text) || text[q] != ')' {
				break
			}
			ps.paren = true
			ps.groups[ps.n] = q - p - 1
			ps.n++
			ps.digits += q - p - 1
			p = q + 1
			// ")" may be followed directly by the next group.
			if p < len(text) && isDigit(text[p]) {
				ps.seps[ps.n-1] = ')'
				continue
			}
		} else {
			q := digitRun(text, p)
			if q == p || q-p > 15 {
				return dst, max(q, i+1)
			}
			ps.groups[ps.n] = q - p
			ps.n++
			ps.digits += q - p
			p = q
		}
		if ps.digits > 15 {
			return dst, p
		}
		// A country code in brackets: "(+62) 21 555 0199".
		if ps.plus && ps.n == 1 && p+2 < len(text) && text[p] == ')' && ps.start > 0 && text[ps.start-1] == '(' && text[p+1] == ' ' && isDigit(text[p+2]) {
			ps.start--
			ps.paren = true
			ps.seps[0] = ' '
			p += 2
			continue
		}
		if p+1 < len(text) && (text[p] == ' ' || text[p] == '-' || text[p] == '.' || text[p] == '/' && ps.n <= 2) &&
			(isDigit(text[p+1]) || text[p+1] == '(' && ps.n == 1 && text[p] != '/') {
			ps.seps[ps.n-1] = text[p]
			p++
			continue
		}
		break
	}
	end := p
	// Extension: "x123", " x123", " ext. 123".
	for _, pre := range []string{"x", " x", " ext. ", " ext ", " ext.", ", ext. ", ", poste ", " poste "} {
		if len(text)-p > len(pre) && text[p:p+len(pre)] == pre && isDigit(text[p+len(pre)]) {
			q := digitRun(text, p+len(pre))
			if q-p-len(pre) <= 6 {
				end = q
				ps.ext = true
			}
			break
		}
	}
	ps.end = end
	if !boundaryAfter(text, end) || end < len(text) && (text[end] == ')' || text[end] == ':' && end+1 < len(text) && isDigit(text[end+1])) {
		return dst, end
	}
	// Numbers of a postal address: "Apt. 722 20 40", "Suite 680", a postal
	// code, a house number before a street; and identifiers ("INV-2024",
	// "order 12345678").
	if addressBefore(text, ps.start) || streetAfter(text, end) ||
		ps.start >= 2 && text[ps.start-1] == '-' && isAlnum(text[ps.start-2]) ||
		hasContext(text, ps.start, notPhoneContext) && !hasContext(text, ps.start, phoneContext) {
		return dst, end
	}
	score := phoneScore(text, &ps)
	// A shape that is a phone number only with context (a bare local
	// number, a trunk prefix alone) is none near a word of identifiers
	// ("call us about order 48213377"), even with a word of calling.
	if score == 0 || score < 0.3 && hasContext(text, ps.start, notPhoneContext) {
		return dst, end
	}
	if hasContext(text, ps.start, phoneContext) {
		score += 0.3
	}
	if score >= 0.5 {
		dst = append(dst, Finding{Start: ps.start, End: end, Type: PhoneNumber, Score: min(score, 0.95)})
	}
	return dst, end
}

// phoneScore returns 0 for shapes that are not phone numbers (dates, IPv4
// addresses, SSNs, years, amounts) and a base score otherwise.
func phoneScore(text string, ps *phoneShape) float64 {
	d := ps.digits
	if d < 6 || d > 15 || ps.plus && d < 8 {
		return 0
	}
	g := ps.groups[:ps.n]
	seps := ps.seps[:max(ps.n-1, 0)]
	sameSep := true
	for _, s := range seps {
		if s != seps[0] {
			sameSep = false
		}
	}
	// An international prefix: "+", or "00" and the country code
	// ("00389 2 302 8462").
	intl := ps.plus || g[0] >= 4 && g[0] <= 5 && text[ps.start] == '0' && text[ps.start+1] == '0'
	slash := false
	for _, s := range seps {
		slash = slash || s == '/'
	}
	// Groups after the first have at least two digits, but for a one-digit
	// area code after the country code ("+33 1 42 68 53 00", "+972-4-6477228").
	for k, n := range g[1:] {
		if n < 2 && !(intl && k == 0 && (len(g) >= 4 || d-g[0]-n >= 6)) {
			return 0
		}
	}
	// A trunk prefix 0 alone before the number ("0 2014 8076") is a
	// phone number only with context.
	trunk := len(g) > 2 && g[0] == 1 && text[ps.start] == '0'
	if len(g) > 1 && g[0] == 1 && !ps.plus && !(g[0] == 1 && text[ps.start] == '1' && len(g) == 4) && !trunk {
		return 0
	}
	if sameSep && len(seps) > 0 {
		switch {
		case len(g) == 4 && seps[0] == '.' && g[0] <= 3 && g[1] <= 3 && g[2] <= 3 && g[3] <= 3:
			return 0 // IPv4
		case len(g) == 3 && seps[0] == '-' && g[0] == 3 && g[1] == 2 && g[2] == 4:
			return 0 // SSN shape
		}
	}
	if len(g) >= 3 && seps[0] == seps[1] && seps[0] != ' ' && isDate(text, ps) {
		return 0
	}
	years := true
	for k, n := range g {
		if n != 4 || !isYear(text, groupStart(text, ps, k)) {
			years = false
		}
	}
	if years && len(g) > 1 {
		return 0
	}
	switch {
	case len(g) == 1 && !ps.plus:
		if d < 7 || d > 12 {
			return 0
		}
		if d < 10 {
			return 0.2 // a bare local number, "38750824": only with context
		}
		return 0.3 // a bare number: only with context
	case d < 7:
		return 0.4 // "61 51 81": only with context
	case trunk || slash && !ps.plus && len(g) < 3:
		return 0.2 // "0 2014 8076", "030/1234567": only with context
	case ps.plus || ps.paren || ps.ext || len(g) >= 3:
		return 0.6
	}
	return 0.5
}

// groupStart returns the offset of the k-th digit group.
func groupStart(text string, ps *phoneShape, k int) int {
	p := ps.start
	for j := 0; ; {
		for p < len(text) && !isDigit(text[p]) {
			p++
		}
		if j == k {
			return p
		}
		p = digitRun(text, p)
		j++
	}
}

func isYear(text string, p int) bool {
	return p+4 <= len(text) && (text[p:p+2] == "19" || text[p:p+2] == "20")
}

func num(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

// isDate reports whether three groups read as a date: 2024-05-31,
// 31.05.2024, 05-31-2024.
func isDate(text string, ps *phoneShape) bool {
	g := ps.groups
	a := groupStart(text, ps, 0)
	b := groupStart(text, ps, 1)
	c := groupStart(text, ps, 2)
	x, y, z := num(text[a:a+g[0]]), num(text[b:b+g[1]]), num(text[c:c+g[2]])
	switch {
	case g[0] == 4 && g[1] <= 2 && g[2] <= 2:
		return y >= 1 && y <= 12 && z >= 1 && z <= 31
	case g[0] <= 2 && g[1] <= 2 && (g[2] == 4 || g[2] == 2):
		return x >= 1 && y >= 1 && (x <= 12 && y <= 31 || x <= 31 && y <= 12) && (g[2] == 2 || isYear(text, c))
	}
	return false
}

var cardContext = []string{"card", "cards", "credit", "debit", "visa", "mastercard", "amex", "cc", "payment", "paid", "pay", "jcb", "discover", "maestro"}

// findCard finds 12 to 19 digits, optionally in groups separated by single
// spaces or dashes, that pass the Luhn check and match an issuer's prefix
// and length.
func findCard(text string, i int, dst []Finding) ([]Finding, int) {
	if !boundaryBefore(text, i) {
		return dst, digitRun(text, i)
	}
	var digits [19]byte
	var ends [19]int // ends[k]: offset after the k-th group
	var counts [19]int
	n, groups := 0, 0
	p := i
	var sep byte
	for {
		q := digitRun(text, p)
		if n+q-p > 19 {
			break
		}
		n += copy(digits[n:], text[p:q])
		ends[groups], counts[groups] = q, n
		groups++
		p = q
		if p+1 < len(text) && (text[p] == ' ' || text[p] == '-' || text[p] == '.') && isDigit(text[p+1]) && (sep == 0 || sep == text[p]) {
			sep = text[p]
			p++
			continue
		}
		break
	}
	for k := groups - 1; k >= 0; k-- {
		e, c := ends[k], counts[k]
		if c < 12 {
			break
		}
		if !boundaryAfter(text, e) && !(k < groups-1) {
			continue
		}
		if !luhn(digits[:c]) {
			continue
		}
		// Dotted groups must be groups of four ("4111.1111.1111.1111"),
		// not a version or an amount.
		if sep == '.' && k > 0 && !fours(counts[:k+1]) {
			continue
		}
		context := hasContext(text, i, cardContext)
		if issuerOK(digits[:c]) || context {
			score := 0.8
			if context {
				score = 1
			}
			return append(dst, Finding{Start: i, End: e, Type: CreditCard, Score: score}), e
		}
	}
	return dst, digitRun(text, i)
}

func luhn(d []byte) bool {
	sum := 0
	double := false
	for k := len(d) - 1; k >= 0; k-- {
		v := int(d[k] - '0')
		if double {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
		double = !double
	}
	return sum%10 == 0
}

// issuerOK checks the issuer identification number and the length.
func issuerOK(d []byte) bool {
	n := len(d)
	p2 := num(string(d[:2]))
	p4 := num(string(d[:4]))
	p3 := p4 / 10
	switch {
	case d[0] == '4': // Visa
		return n == 13 || n == 16 || n == 19
	case p2 >= 51 && p2 <= 55 || p4 >= 2221 && p4 <= 2720: // Mastercard
		return n == 16
	case p2 == 34 || p2 == 37: // American Express
		return n == 15
	case p4 == 6011 || p3 >= 644 && p3 <= 649 || p2 == 65: // Discover
		return n >= 16 && n <= 19
	case p2 == 35: // JCB (3528-3589) and other 35 ranges
		return n >= 16 && n <= 19
	case p4 == 2131 || p4 == 1800: // JCB, legacy 15-digit numbers
		return n == 15
	case p2 == 36 || p3 >= 300 && p3 <= 305 || p2 == 38 || p2 == 39: // Diners Club
		return n >= 14 && n <= 19
	case p2 == 62: // UnionPay
		return n >= 16 && n <= 19
	case p2 == 50 || p2 >= 56 && p2 <= 69: // Maestro
		return n >= 12 && n <= 19
	}
	return false
}

var ssnContext = []string{"ssn", "social security", "social sec", "ss#", "ss #", "taxpayer"}

// findSSN finds US social security numbers: ddd-dd-dddd (also with spaces
// or dots), or nine bare digits near a context word.
func findSSN(text string, i int, dst []Finding) ([]Finding, int) {
	if !boundaryBefore(text, i) {
		return dst, digitRun(text, i)
	}
	q := digitRun(text, i)
	var d [9]byte
	var e int
	score := 0.85
	switch {
	case q-i == 9:
		copy(d[:], text[i:q])
		e = q
		score = 0.3
	case q-i == 3 && q+7 < len(text)+0 && q+8 <= len(text):
		sep := text[q]
		if sep != '-' && sep != ' ' && sep != '.' {
			return dst, q
		}
		r := digitRun(text, q+1)
		if r-q-1 != 2 || r >= len(text) || text[r] != sep {
			return dst, q
		}
		t := digitRun(text, r+1)
		if t-r-1 != 4 {
			return dst, q
		}
		copy(d[:3], text[i:q])
		copy(d[3:5], text[q+1:r])
		copy(d[5:], text[r+1:t])
		e = t
		if sep != '-' {
			score = 0.5
		}
	default:
		return dst, q
	}
	if !boundaryAfter(text, e) || !validSSN(d[:]) {
		return dst, e
	}
	if hasContext(text, i, ssnContext) {
		score += 0.5
	}
	if score >= 0.5 {
		dst = append(dst, Finding{Start: i, End: e, Type: USSSN, Score: min(score, 1)})
	}
	return dst, e
}

// validSSN applies the invalidation rules of the Social Security
// Administration: no area 000, 666 or 900-999, no group 00, no serial 0000,
// and none of the numbers known from advertising and examples.
func validSSN(d []byte) bool {
	s := string(d)
	area, group, serial := s[:3], s[3:5], s[5:]
	if area == "000" || area == "666" || area[0] == '9' || group == "00" || serial == "0000" {
		return false
	}
	switch s {
	case "078051120", "219099999", "123456789", "457555462":
		return false
	}
	same := true
	for k := 1; k < 9; k++ {
		if d[k] != d[0] {
			same = false
		}
	}
	return !same
}

// ibanLengths is the length of the IBAN of each country.
var ibanLengths = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22,
	"BH": 22, "BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24,
	"DE": 22, "DJ": 27, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18,
	"FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27,
	"GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27,
	"JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20,
	"LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20, "MR": 27,
	"MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24, "PL": 28,
	"PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24, "SC": 31,
	"SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28,
	"TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}

var ibanContext = []string{"iban", "bank", "account", "transfer", "wire"}

// findIBAN is called at a digit; an IBAN's third and fourth characters are
// its check digits, so it looks at the two letters before.
func findIBAN(text string, i int, dst []Finding) ([]Finding, int) {
	if i < 2 || i+1 >= len(text) || !isAlpha(text[i-2]) || !isAlpha(text[i-1]) || !isDigit(text[i+1]) {
		return dst, i + 1
	}
	s := i - 2
	if s > 0 && wordChar(text[s-1]) {
		return dst, i + 1
	}
	want, ok := ibanLengths[string([]byte{text[s] &^ 0x20, text[s+1] &^ 0x20})]
	if !ok {
		return dst, i + 1
	}
	var buf [34]byte
	n := 0
	p := s
	for n < want {
		q := p
		for q < len(text) && isAlnum(text[q]) && n+q-p < want+1 {
			q++
		}
		g := q - p
		if n+g > want {
			return dst, i + 1
		}
		for k := p; k < q; k++ {
			buf[n] = text[k] &^ 0x20
			if isDigit(text[k]) {
				buf[n] = text[k]
			}
			n++
		}
		p = q
		if n == want {
			break
		}
		// Grouped form: groups of four separated by single spaces.
		if g != 4 || p+1 >= len(text) || text[p] != ' ' || !isAlnum(text[p+1]) {
			return dst, i + 1
		}
		p++
	}
	if !boundaryAfter(text, p) || !mod97(buf[:n]) {
		return dst, i + 1
	}
	// In groups of four, an IBAN is written in upper case.
	if p-s > n {
		for k := s; k < p; k++ {
			if text[k] >= 'a' && text[k] <= 'z' {
				return dst, i + 1
			}
		}
	}
	score := 0.9
	if hasContext(text, s, ibanContext) {
		score = 1
	}
	return append(dst, Finding{Start: s, End: p, Type: IBANCode, Score: score}), p
}

// mod97 checks an IBAN (upper case, no spaces): move the first four
// characters to the end, read letters as 10..35, and the number mod 97
// must be 1.
func mod97(b []byte) bool {
	r := 0
	for k := range b {
		c := b[(k+4)%len(b)]
		switch {
		case isDigit(c):
			r = (r*10 + int(c-'0')) % 97
		case c >= 'A' && c <= 'Z':
			r = (r*100 + int(c-'A'+10)) % 97
		default:
			return false
		}
	}
	return r == 1
}

var ipContext = []string{"ip", "address", "host", "server", "addr"}

func findIPv4(text string, i int, dst []Finding) ([]Finding, int) {
	if !boundaryBefore(text, i) {
		return dst, digitRun(text, i)
	}
	p := i
	for part := 0; ; part++ {
		q := digitRun(text, p)
		if q == p || q-p > 3 {
			return dst, max(q, i+1)
		}
		p = q
		if part == 3 {
			break
		}
		if p+1 >= len(text) || text[p] != '.' || !isDigit(text[p+1]) {
			return dst, p
		}
		p++
	}
	if !boundaryAfter(text, p) || p < len(text) && text[p] == '.' && p+1 < len(text) && isDigit(text[p+1]) {
		return dst, p
	}
	a, err := netip.ParseAddr(text[i:p])
	if err != nil || !a.Is4() {
		return dst, p
	}
	score := 0.7
	if hasContext(text, i, ipContext) {
		score = 0.95
	}
	return append(dst, Finding{Start: i, End: p, Type: IPAddress, Score: score}), p
}

// findColon finds IPv6 addresses and MAC addresses around a ':' (and MAC
// addresses written with '-').
func findColon(text string, i int, dst []Finding) ([]Finding, int) {
	sep := text[i]
	s := i
	for s > 0 && isHex(text[s-1]) && i-s < 4 {
		s--
	}
	if sep == '-' && i-s != 2 {
		return dst, i + 1
	}
	if s > 0 && (wordChar(text[s-1]) || text[s-1] == ':' || text[s-1] == '.') {
		return dst, i + 1
	}
	if s == i && (sep != ':' || i+1 >= len(text) || text[i+1] != ':') {
		return dst, i + 1
	}
	e := i
	for e < len(text) && e-s < 45 && (isHex(text[e]) || text[e] == sep || sep == ':' && text[e] == '.') {
		e++
	}
	for e > i+1 && (text[e-1] == '.' || text[e-1] == sep && text[e-2] != sep) {
		e--
	}
	if e < len(text) && (wordChar(text[e]) || text[e] == sep) {
		return dst, e
	}
	cand := text[s:e]
	if isMAC(cand, sep) {
		return append(dst, Finding{Start: s, End: e, Type: MACAddress, Score: 0.8}), e
	}
	if sep != ':' {
		return dst, e
	}
	hex, digit, colons := 0, false, 0
	for k := 0; k < len(cand); k++ {
		switch c := cand[k]; {
		case c == ':':
			colons++
		case isHex(c):
			hex++
			digit = digit || isDigit(c)
		}
	}
	if colons < 2 || hex < 4 || !digit {
		return dst, e
	}
	a, err := netip.ParseAddr(cand)
	if err != nil || !a.Is6() {
		return dst, e
	}
	return append(dst, Finding{Start: s, End: e, Type: IPAddress, Score: 0.8}), e
}

func isMAC(s string, sep byte) bool {
	if len(s) != 17 {
		return false
	}
	for k := 0; k < 17; k++ {
		if k%3 == 2 {
			if s[k] != sep {
				return false
			}
		} else if !isHex(s[k]) {
			return false
		}
	}
	return true
}

// streetAfter reports whether a street name follows e: up to three
// capitalised words, the last a street type ("Main Street", "Rue de la
// Paix" counts by its first word).
func streetAfter(text string, e int) bool {
	l := theLexicon()
	p := e
	for w := 0; w < 3; w++ {
		for p < len(text) && text[p] == ' ' {
			p++
		}
		s := p
		for p < len(text) && (isAlpha(text[p]) || text[p] >= 0x80) {
			p++
		}
		if s == p {
			return false
		}
		f := l.lookup(text[s:p])
		if f&wStreetType != 0 && w > 0 || f&wStreetPre != 0 && w == 0 {
			return true
		}
		if !(text[s] >= 'A' && text[s] <= 'Z') {
			return false
		}
	}
	return false
}

// fours reports whether the cumulative digit counts of groups are those of
// groups of four digits.
func fours(counts []int) bool {
	for k, c := range counts {
		if c != 4*(k+1) {
			return false
		}
	}
	return true
}
