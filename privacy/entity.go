package privacy

import (
	"slices"
	"strings"
)

// EntityType names a kind of personal or secret value. The built-in types
// use Presidio's labels where Presidio has one. Any other string is allowed
// (a custom rule may use its own type); in a token, a type is written in
// upper case with every byte outside [A-Z0-9_] replaced by '_'.
type EntityType string

// Types found by the built-in recognizers.
const (
	EmailAddress EntityType = "EMAIL_ADDRESS"
	PhoneNumber  EntityType = "PHONE_NUMBER"
	CreditCard   EntityType = "CREDIT_CARD"
	IBANCode     EntityType = "IBAN_CODE"
	IPAddress    EntityType = "IP_ADDRESS"
	MACAddress   EntityType = "MAC_ADDRESS"
	USSSN        EntityType = "US_SSN"
	URL          EntityType = "URL"
	DomainName   EntityType = "DOMAIN_NAME"
	// Crypto is a cryptocurrency wallet address (Bitcoin, Ethereum).
	Crypto EntityType = "CRYPTO"
	// Secret is a credential: cloud access keys, platform tokens, JSON web
	// tokens, private-key blocks.
	Secret EntityType = "SECRET"
)

// Types that only an external analyzer (a named-entity recognizer, see
// [Analyzer]) or a custom recognizer produces.
const (
	Person          EntityType = "PERSON"
	Location        EntityType = "LOCATION"
	Organization    EntityType = "ORGANIZATION"
	Address         EntityType = "ADDRESS"
	DateTime        EntityType = "DATE_TIME"
	NRP             EntityType = "NRP"
	USDriverLicense EntityType = "US_DRIVER_LICENSE"
	USPassport      EntityType = "US_PASSPORT"
	USBankNumber    EntityType = "US_BANK_NUMBER"
	MedicalLicense  EntityType = "MEDICAL_LICENSE"
	// Generic is the type of a finding whose label is not known (an
	// analyzer label without a mapping).
	Generic EntityType = "GENERIC"
)

// knownTypes lists the types that have a constant above; [Analyzer] maps
// these labels to themselves and every other label to [Generic].
var knownTypes = []EntityType{
	EmailAddress, PhoneNumber, CreditCard, IBANCode, IPAddress, MACAddress,
	USSSN, URL, DomainName, Crypto, Secret, Person, Location, Organization,
	Address, DateTime, NRP, USDriverLicense, USPassport, USBankNumber,
	MedicalLicense, Generic,
}

// specificity orders types when two overlapping findings have the same
// score: the more specific type labels the merged span.
func specificity(t EntityType) int {
	switch t {
	case Secret:
		return 100
	case CreditCard:
		return 95
	case IBANCode:
		return 94
	case USSSN:
		return 93
	case Crypto:
		return 92
	case EmailAddress:
		return 90
	case URL:
		return 85
	case IPAddress:
		return 80
	case MACAddress:
		return 79
	case PhoneNumber:
		return 70
	case DomainName:
		return 60
	case Generic:
		return 0
	}
	return 50
}

// tokenLabel is the type as written in a token.
func tokenLabel(t EntityType) string {
	s := string(t)
	if s == "" {
		return string(Generic)
	}
	ok := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' && i > 0 || c == '_' && i > 0) {
			ok = false
			break
		}
	}
	if ok && len(s) <= maxLabelLen {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < maxLabelLen; i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
			b.WriteByte(c - 'a' + 'A')
		case c >= 'A' && c <= 'Z', c >= '0' && c <= '9' && b.Len() > 0:
			b.WriteByte(c)
		case b.Len() > 0:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return string(Generic)
	}
	return b.String()
}

// Finding is one detected value: the byte span text[Start:End] of the
// scanned text, its type and a confidence score in [0, 1].
type Finding struct {
	Start, End int
	Type       EntityType
	Score      float64
}

// Grant is the set of entity types whose original values may be restored:
// the types a tool (or a principal) may receive. The zero Grant allows no
// type. A Grant is an immutable value, safe for concurrent use.
type Grant struct {
	all   bool
	types []EntityType // sorted, unique; unused when all
}

// AllTypes returns the Grant that allows every type.
func AllTypes() Grant { return Grant{all: true} }

// NoTypes returns the Grant that allows no type; it equals the zero Grant.
func NoTypes() Grant { return Grant{} }

// Types returns the Grant that allows exactly the given types.
func Types(ts ...EntityType) Grant {
	s := slices.Clone(ts)
	slices.Sort(s)
	return Grant{types: slices.Compact(s)}
}

// Allows reports whether the grant allows values of type t.
func (g Grant) Allows(t EntityType) bool {
	if g.all {
		return true
	}
	_, ok := slices.BinarySearch(g.types, t)
	return ok
}

// Intersect returns the Grant that allows what both g and h allow. A guard
// that grants per tool and per principal restores a value only when both
// allow its type: tool.Intersect(principal).
func (g Grant) Intersect(h Grant) Grant {
	switch {
	case g.all:
		return h
	case h.all:
		return g
	}
	var out []EntityType
	for _, t := range g.types {
		if h.Allows(t) {
			out = append(out, t)
		}
	}
	return Grant{types: out}
}

// String lists the allowed types: "all", "none" or "A,B".
func (g Grant) String() string {
	if g.all {
		return "all"
	}
	if len(g.types) == 0 {
		return "none"
	}
	ss := make([]string, len(g.types))
	for i, t := range g.types {
		ss[i] = string(t)
	}
	return strings.Join(ss, ",")
}
