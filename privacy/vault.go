package privacy

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// Vault maps tokens to the original values they replace, for one request
// (the default scope) or one conversation. The same value always gets the
// same token in a vault, and a token names exactly one value. A value seen
// as a whole JSON number gets a token of its own, so that it is restored as
// a number (see [Rewriter.TokenizeJSON]).
//
// A Vault holds original personal data: keep it out of logs and persist it
// only sealed ([Vault.Seal]). The zero Vault is not usable; call
// [NewVault]. A Vault is safe for concurrent use.
type Vault struct {
	mu      sync.Mutex        // guards the fields below
	byValue map[string]string // kind byte + value → token
	byToken map[string]entry
	counts  map[string]int // label → last counter
}

type entry struct {
	Type   EntityType
	Value  string
	Number bool
}

// NewVault returns an empty vault.
func NewVault() *Vault {
	return &Vault{byValue: map[string]string{}, byToken: map[string]entry{}, counts: map[string]int{}}
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
	return v.token(t, value, false)
}

func (v *Vault) token(t EntityType, value string, number bool) string {
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
		if _, taken := v.byToken[tok]; !taken {
			v.byValue[k] = tok
			v.byToken[tok] = entry{Type: t, Value: value, Number: number}
			return tok
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

// has reports whether value already has a token.
func (v *Vault) has(value string) bool {
	v.mu.Lock()
	_, ok := v.byValue[valueKey(value, false)]
	v.mu.Unlock()
	return ok
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
	Token  string     `json:"token"`
	Type   EntityType `json:"type"`
	Value  string     `json:"value"`
	Number bool       `json:"number,omitempty"`
}

type sealedVault struct {
	Entries []sealedEntry  `json:"entries"`
	Counts  map[string]int `json:"counts"`
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
	sv := sealedVault{Counts: make(map[string]int, len(v.counts))}
	for tok, e := range v.byToken {
		sv.Entries = append(sv.Entries, sealedEntry{Token: tok, Type: e.Type, Value: e.Value, Number: e.Number})
	}
	for l, n := range v.counts {
		sv.Counts[l] = n
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
		v.byToken[e.Token] = entry{Type: e.Type, Value: e.Value, Number: e.Number}
		v.byValue[valueKey(e.Value, e.Number)] = e.Token
	}
	for l, n := range sv.Counts {
		v.counts[l] = n
	}
	return v, nil
}
