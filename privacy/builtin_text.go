package privacy

import (
	"net/netip"
	"strings"
	"unicode"
	"unicode/utf8"
)

func isLocalChar(c byte) bool {
	return isAlnum(c) || c >= 0x80 || strings.IndexByte("._%+-'!#$&*/=?^`{|}~", c) >= 0
}

// hostAtU is hostAt for an e-mail host, which may hold letters outside
// ASCII (an internationalised domain name): it returns the same values.
func hostAtU(text string, p int) (end, labels, last int, ok bool) {
	i := p
	for {
		s := i
		for i < len(text) && (isLabelChar(text[i]) || text[i] >= 0x80) && i-s <= 63 {
			i++
		}
		if i == s || i-s > 63 || text[s] == '-' || text[i-1] == '-' {
			return 0, 0, 0, false
		}
		labels++
		last = s
		if i-p > 253 {
			return 0, 0, 0, false
		}
		if i+1 < len(text) && text[i] == '.' && (isLabelChar(text[i+1]) || text[i+1] >= 0x80) {
			i++
			continue
		}
		return i, labels, last, true
	}
}

// lettersOnly reports whether the bytes of s outside ASCII are letters
// (or marks) of valid UTF-8.
func lettersOnly(s string) bool {
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || !unicode.IsLetter(r) && !unicode.Is(unicode.Mn, r) {
			return false
		}
		i += n
	}
	return true
}

// ipLiteralEnd returns the end of "[192.0.2.1]" or "[IPv6:2001:db8::1]"
// at p, or 0.
func ipLiteralEnd(text string, p int) int {
	if p >= len(text) || text[p] != '[' {
		return 0
	}
	e := strings.IndexByte(text[p:min(len(text), p+64)], ']')
	if e < 0 {
		return 0
	}
	lit := text[p+1 : p+e]
	if len(lit) > 5 && strings.EqualFold(lit[:5], "ipv6:") {
		a, err := netip.ParseAddr(lit[5:])
		if err != nil || !a.Is6() {
			return 0
		}
	} else if a, err := netip.ParseAddr(lit); err != nil || !a.Is4() {
		return 0
	}
	return p + e + 1
}

func isLabelChar(c byte) bool { return isAlnum(c) || c == '-' }

// hostAt reads a host name starting at p: labels of letters, digits and
// '-' separated by single dots. It returns the end, the number of labels
// and the start of the last label; ok is false when the name is malformed
// (an empty or over-long label, a label that starts or ends with '-').
func hostAt(text string, p int) (end, labels, last int, ok bool) {
	i := p
	for {
		s := i
		for i < len(text) && isLabelChar(text[i]) && i-s <= 63 {
			i++
		}
		if i == s || i-s > 63 || text[s] == '-' || text[i-1] == '-' {
			return 0, 0, 0, false
		}
		labels++
		last = s
		if i-p > 253 {
			return 0, 0, 0, false
		}
		if i+1 < len(text) && text[i] == '.' && isLabelChar(text[i+1]) {
			i++
			continue
		}
		return i, labels, last, true
	}
}

func allLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isAlpha(s[i]) {
			return false
		}
	}
	return len(s) > 0
}

var emailContext = []string{"email", "e-mail", "mail", "contact"}

func findEmail(text string, i int, dst []Finding) ([]Finding, int) {
	s := i
	for s > 0 && isLocalChar(text[s-1]) {
		s--
		if i-s > 64 {
			return dst, i + 1
		}
	}
	for s < i && !isAlnum(text[s]) {
		s++
	}
	if s == i || i+1 >= len(text) {
		return dst, i + 1
	}
	// The local part begins at a letter or digit of valid text.
	for s < i && text[s] >= 0x80 && !utf8.RuneStart(text[s]) {
		s++
	}
	if !lettersOnly(text[s:i]) {
		return dst, i + 1
	}
	// A host written as an address: "admin@[192.0.2.1]".
	if e := ipLiteralEnd(text, i+1); e > 0 {
		return append(dst, Finding{Start: s, End: e, Type: EmailAddress, Score: 0.95}), e
	}
	e, labels, last, ok := hostAtU(text, i+1)
	if !ok || labels < 2 || !lettersOnly(text[i+1:e]) {
		return dst, i + 1
	}
	tld := text[last:e]
	if len(tld) < 2 || !allLetters(tld) && !(tld[0] >= 0x80 || strings.HasPrefix(tld, "xn--")) {
		return dst, i + 1
	}
	if e < len(text) && (wordChar(text[e]) || text[e] == '@') {
		return dst, i + 1
	}
	score := 0.9
	if hasContext(text, s, emailContext) {
		score = 1
	}
	return append(dst, Finding{Start: s, End: e, Type: EmailAddress, Score: score}), e
}

var urlSchemes = []string{"http", "https", "ftp", "ftps", "sftp", "ws", "wss"}

func findURL(text string, i int, dst []Finding) ([]Finding, int) {
	if i+3 >= len(text) || text[i+1] != '/' || text[i+2] != '/' {
		return dst, i + 1
	}
	s := i
	for s > 0 && isAlpha(text[s-1]) && i-s < 6 {
		s--
	}
	if s > 0 && wordChar(text[s-1]) {
		return dst, i + 1
	}
	var sch [6]byte
	n := copy(sch[:], text[s:i])
	for k := range n {
		sch[k] = lower(sch[k])
	}
	found := false
	for _, u := range urlSchemes {
		if string(sch[:n]) == u {
			found = true
			break
		}
	}
	if !found || !(isAlnum(text[i+3]) || text[i+3] == '[') {
		return dst, i + 1
	}
	e := i + 3
	for e < len(text) && e-s < 2048 {
		c := text[e]
		if c <= ' ' || c == 0x7f || strings.IndexByte("\"<>`{}|^\\", c) >= 0 {
			break
		}
		e++
	}
	// Trim trailing punctuation that ends the sentence, and a closing
	// bracket that has no opening one inside the URL.
	for e > i+3 {
		c := text[e-1]
		if strings.IndexByte(".,;:!?*'", c) >= 0 {
			e--
			continue
		}
		if c == ')' && strings.Count(text[s:e], "(") < strings.Count(text[s:e], ")") ||
			c == ']' && strings.Count(text[s:e], "[") < strings.Count(text[s:e], "]") {
			e--
			continue
		}
		break
	}
	return append(dst, Finding{Start: s, End: e, Type: URL, Score: 0.9}), e
}

// tlds is the allow-list of top-level domains a bare domain name must end
// with: the country codes and the common generic domains.
var tlds = func() map[string]bool {
	m := map[string]bool{}
	cc := "ac ad ae af ag ai al am ao aq ar as at au aw ax az ba bb bd be bf bg bh bi bj bm bn bo br bs bt bw by bz ca cc cd cf cg ch ci ck cl cm cn co cr cu cv cw cx cy cz de dj dk dm do dz ec ee eg er es et eu fi fj fk fm fo fr ga gd ge gf gg gh gi gl gm gn gp gq gr gs gt gu gw gy hk hm hn hr ht hu id ie il im in io iq ir is it je jm jo jp ke kg kh ki km kn kp kr kw ky kz la lb lc li lk lr ls lt lu lv ly ma mc md me mg mh mk ml mm mn mo mp mq mr ms mt mu mv mw mx my mz na nc ne nf ng ni nl no np nr nu nz om pa pe pf pg ph pk pl pm pn pr ps pt pw py qa re ro rs ru rw sa sb sc sd se sg sh si sk sl sm sn so sr ss st sv sx sy sz tc td tf tg th tj tk tl tm tn to tr tt tv tw tz ua ug uk us uy uz va vc ve vg vi vn vu wf ws ye yt za zm zw"
	g := "com org net edu gov mil int info biz name pro mobi app dev xyz online site tech store shop blog cloud club live news page space website world today top vip work agency digital email group global media network solutions systems company center academy studio design art law legal health care finance capital fund money bank insurance travel tours hotel restaurant consulting services support software tools codes zone social life one win link click help wiki asia tel jobs museum aero coop cat post io ai ly gg zip mov"
	for _, t := range strings.Fields(cc + " " + g) {
		m[t] = true
	}
	return m
}()

// fileTLDs are top-level domains that are also common file extensions
// (setup.py, README.md, run.sh, archive.zip): a two-label name ending with
// one of them is taken for a file name unless it starts with "www.".
var fileTLDs = map[string]bool{
	"ac": true, "ai": true, "am": true, "app": true, "cc": true, "in": true,
	"md": true, "mk": true, "ml": true, "mm": true, "mov": true, "ms": true,
	"pl": true, "pm": true, "ps": true, "py": true, "rs": true, "sh": true,
	"so": true, "st": true, "sv": true, "tf": true, "zip": true, "sc": true,
	"gs": true, "hs": true, "ts": true, "js": true, "cs": true, "go": true,
}

var domainContext = []string{"domain", "website", "site", "web", "url", "visit"}

func findDomain(text string, i int, dst []Finding) ([]Finding, int) {
	if i == 0 || i+2 >= len(text) || !isAlnum(text[i-1]) || !isAlpha(text[i+1]) {
		return dst, i + 1
	}
	s := i
	for s > 0 && (isLabelChar(text[s-1]) || text[s-1] == '.') {
		s--
		if i-s > 253 {
			return dst, i + 1
		}
	}
	if s > 0 && (wordChar(text[s-1]) || strings.IndexByte("@/\\:", text[s-1]) >= 0) {
		return dst, i + 1
	}
	if !isAlnum(text[s]) {
		return dst, i + 1
	}
	e, labels, last, ok := hostAt(text, s)
	if !ok || labels < 2 || e <= i {
		return dst, i + 1
	}
	if e < len(text) && (wordChar(text[e]) || text[e] == '@' || text[e] == '-') {
		return dst, e
	}
	tld := text[last:e]
	var lt [8]byte
	if len(tld) > len(lt) {
		return dst, e
	}
	n := copy(lt[:], tld)
	upper := 0
	for k := range n {
		if lt[k] >= 'A' && lt[k] <= 'Z' {
			upper++
		}
		lt[k] = lower(lt[k])
	}
	// "Paris.It" is a missing space, not a domain: the last label is all
	// lower case or all upper case.
	if upper != 0 && upper != n || !tlds[string(lt[:n])] {
		return dst, e
	}
	www := len(text)-s >= 4 && strings.EqualFold(text[s:s+4], "www.")
	if labels == 2 && fileTLDs[string(lt[:n])] && !www {
		return dst, e
	}
	score := 0.6
	if www || hasContext(text, s, domainContext) {
		score = 0.85
	}
	return append(dst, Finding{Start: s, End: e, Type: DomainName, Score: score}), e
}
