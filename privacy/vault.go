package privacy

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Vault maps tokens to the original values they replace, for one
// conversation (the scope a [Guard] gives it) or any other scope its owner
// chooses. The same value always gets the same token in a vault, and a
// token names exactly one value. A value seen as a whole JSON number gets
// a token of its own, so that it is restored as a number (see
// [Rewriter.TokenizeJSON]).
//
// A vault also remembers the token-shaped text it has seen without having
// issued it (a token forged by a model, or one from a vault that is gone):
// such a token is reserved and never issued, so it can never come to name
// a value bound after the text that holds it. Bindings are numbered in the
// order they are made, which lets a guard restore, in a model's reply,
// only the tokens that were bound before the model was called.
//
// A Vault holds original personal data: keep it out of logs and persist it
// only sealed ([Vault.Seal]). The zero Vault is not usable; call
// [NewVault]. A Vault is safe for concurrent use.
type Vault struct {
	mu       sync.Mutex        // guards the fields below
	byValue  map[string]string // kind byte + value → token
	byToken  map[string]entry
	counts   map[string]int  // label → last counter
	reserved map[string]bool // token-shaped text seen, not issued
	seq      int             // the sequence number of the last binding
	mark     int             // a sequence number its owner keeps (see setMark)
	changes  int             // mutations, to tell whether to save
}

type entry struct {
	Type   EntityType
	Value  string
	Number bool
	// Seq numbers the binding: bindings made later have higher numbers;
	// 0 for a binding read from a vault sealed without numbers.
	Seq int
	// Also lists the other types found in the value (a JSON number holding
	// values of several types); restoring needs a grant of all of them.
	Also []EntityType
}

// allowedBy reports whether g allows every type of the entry.
func (e entry) allowedBy(g Grant) bool {
	if !g.Allows(e.Type) {
		return false
	}
	for _, t := range e.Also {
		if !g.Allows(t) {
			return false
		}
	}
	return true
}

// NewVault returns an empty vault.
func NewVault() *Vault {
	return &Vault{byValue: map[string]string{}, byToken: map[string]entry{}, counts: map[string]int{}, reserved: map[string]bool{}}
}

func valueKey(value string, number bool) string {
	if number {
		return "n" + value
	}
	return "s" + value
}

// Token returns the token of value, issuing a new one of type t when the
// value has none yet. A value keeps the type of its first token.
func (v *Vault) Token(t EntityType, value string) string {
	return v.token(t, value, false, nil)
}

// token returns the token of value, issuing one when it has none. A new
// token is neither bound nor reserved.
func (v *Vault) token(t EntityType, value string, number bool, also []EntityType) string {
	k := valueKey(value, number)
	v.mu.Lock()
	defer v.mu.Unlock()
	if tok, ok := v.byValue[k]; ok {
		return tok
	}
	label := tokenLabel(t)
	for {
		v.counts[label]++
		tok := formatToken(label, v.counts[label])
		if _, taken := v.byToken[tok]; taken || v.reserved[tok] {
			continue
		}
		v.seq++
		v.changes++
		v.byValue[k] = tok
		v.byToken[tok] = entry{Type: t, Value: value, Number: number, Seq: v.seq, Also: also}
		return tok
	}
}

// reserve records every token-shaped piece of text that the vault did not
// issue, so that it is never issued.
func (v *Vault) reserve(text string) {
	if strings.IndexByte(text, tokenOpen) < 0 {
		return
	}
	spans := tokenSpans(text)
	if len(spans) == 0 {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, sp := range spans {
		tok := text[sp[0]:sp[1]]
		if _, bound := v.byToken[tok]; !bound && !v.reserved[tok] {
			v.reserved[strings.Clone(tok)] = true
			v.changes++
		}
	}
}

// Lookup returns the type and the original value of a token issued by this
// vault; ok is false for any other string.
func (v *Vault) Lookup(token string) (t EntityType, value string, ok bool) {
	e, ok := v.lookup(token)
	return e.Type, e.Value, ok
}

func (v *Vault) lookup(token string) (entry, bool) {
	v.mu.Lock()
	e, ok := v.byToken[token]
	v.mu.Unlock()
	return e, ok
}

// has reports whether value already has a token, as text or as a number.
func (v *Vault) has(value string) bool {
	v.mu.Lock()
	_, ok := v.byValue[valueKey(value, false)]
	if !ok {
		_, ok = v.byValue[valueKey(value, true)]
	}
	v.mu.Unlock()
	return ok
}

// lastSeq returns the sequence number of the last binding: every binding
// made from now on has a higher one.
func (v *Vault) lastSeq() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.seq
}

// setMark keeps n with the vault (sealed with it). A guard keeps there the
// last binding made before the model was last called.
func (v *Vault) setMark(n int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.mark != n {
		v.mark = n
		v.changes++
	}
}

// getMark returns what setMark kept; 0 for a new vault.
func (v *Vault) getMark() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.mark
}

// version counts the changes made to the vault.
func (v *Vault) version() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.changes
}

// Len returns the number of tokens in the vault.
func (v *Vault) Len() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.byToken)
}

// Sealed vault format, version 1:
//
//	byte 0      version (1)
//	bytes 1-12  random nonce
//	rest        AES-256-GCM ciphertext and tag of the JSON form of the
//	            entries, with the version byte as additional data.
const sealVersion = 1

// ErrVaultKey is returned when a vault cannot be sealed or opened with the
// given key: the key is not 32 bytes, or it is not the key the vault was
// sealed with, or the sealed bytes were altered.
var ErrVaultKey = errors.New("privacy: wrong key or damaged sealed vault")

type sealedEntry struct {
	Token  string       `json:"token"`
	Type   EntityType   `json:"type"`
	Value  string       `json:"value"`
	Number bool         `json:"number,omitempty"`
	Seq    int          `json:"seq,omitempty"`
	Also   []EntityType `json:"also,omitempty"`
}

// sealedVault is the sealed body. Fields added after the first release are
// optional, so that older vaults still open.
type sealedVault struct {
	Entries  []sealedEntry  `json:"entries"`
	Counts   map[string]int `json:"counts"`
	Reserved []string       `json:"reserved,omitempty"`
	Seq      int            `json:"seq,omitempty"`
	Mark     int            `json:"mark,omitempty"`
}

func newGCM(key []byte) (cipher.AEAD, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("%w: the key must be 32 bytes", ErrVaultKey)
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// Seal returns the vault encrypted with AES-256-GCM under key (32 bytes),
// for a store that keeps a conversation-scoped vault. The result is
// versioned; [OpenVault] reads it back.
func (v *Vault) Seal(key []byte) ([]byte, error) {
	aead, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	sv := sealedVault{Counts: make(map[string]int, len(v.counts)), Seq: v.seq, Mark: v.mark}
	for tok, e := range v.byToken {
		sv.Entries = append(sv.Entries, sealedEntry{Token: tok, Type: e.Type, Value: e.Value, Number: e.Number, Seq: e.Seq, Also: e.Also})
	}
	for l, n := range v.counts {
		sv.Counts[l] = n
	}
	for tok := range v.reserved {
		sv.Reserved = append(sv.Reserved, tok)
	}
	v.mu.Unlock()
	plain, err := json.Marshal(sv)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 1+aead.NonceSize(), 1+aead.NonceSize()+len(plain)+aead.Overhead())
	out[0] = sealVersion
	if _, err := rand.Read(out[1:]); err != nil {
		return nil, err
	}
	return aead.Seal(out, out[1:], plain, out[:1]), nil
}

// OpenVault decrypts a vault sealed by [Vault.Seal]. A wrong key or altered
// bytes give an error that wraps [ErrVaultKey].
func OpenVault(key, sealed []byte) (*Vault, error) {
	aead, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	ns := aead.NonceSize()
	if len(sealed) < 1+ns+aead.Overhead() {
		return nil, fmt.Errorf("%w: too short", ErrVaultKey)
	}
	if sealed[0] != sealVersion {
		return nil, fmt.Errorf("privacy: unknown sealed vault version %d", sealed[0])
	}
	plain, err := aead.Open(nil, sealed[1:1+ns], sealed[1+ns:], sealed[:1])
	if err != nil {
		return nil, ErrVaultKey
	}
	var sv sealedVault
	if err := json.Unmarshal(plain, &sv); err != nil {
		return nil, errors.New("privacy: sealed vault has an invalid body")
	}
	v := NewVault()
	for _, e := range sv.Entries {
		if _, _, ok := ParseToken(e.Token); !ok {
			return nil, errors.New("privacy: sealed vault holds an invalid token")
		}
		v.byToken[e.Token] = entry{Type: e.Type, Value: e.Value, Number: e.Number, Seq: e.Seq, Also: e.Also}
		v.byValue[valueKey(e.Value, e.Number)] = e.Token
		v.seq = max(v.seq, e.Seq)
	}
	for _, tok := range sv.Reserved {
		if _, _, ok := ParseToken(tok); !ok {
			return nil, errors.New("privacy: sealed vault holds an invalid token")
		}
		v.reserved[tok] = true
	}
	for l, n := range sv.Counts {
		v.counts[l] = n
	}
	v.seq = max(v.seq, sv.Seq)
	v.mark = min(sv.Mark, v.seq)
	return v, nil
}
