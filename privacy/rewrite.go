package privacy

import (
	"context"
	"slices"
	"strings"
)

// Rewriter replaces personal data with tokens and tokens with personal
// data, for one [Vault]. A guard makes one Rewriter per request (or per
// conversation, with a conversation-scoped vault) over a shared [Scanner]:
//
//   - [Rewriter.Tokenize] and [Rewriter.TokenizeJSON] for every text sent
//     to the model: messages, tool-call arguments, tool results;
//   - [Rewriter.Arguments] for the arguments a tool receives: everything
//     tokenized, then only tokens of granted types restored;
//   - [Rewriter.Output] and [Rewriter.Stream] for what the end user sees.
//
// A Rewriter is safe for concurrent use.
type Rewriter struct {
	scanner *Scanner
	vault   *Vault
}

// NewRewriter returns a rewriter over scanner and vault; both must not be
// nil.
func NewRewriter(s *Scanner, v *Vault) *Rewriter {
	if s == nil || v == nil {
		panic("privacy: NewRewriter with a nil scanner or vault")
	}
	return &Rewriter{scanner: s, vault: v}
}

// Vault returns the rewriter's vault.
func (r *Rewriter) Vault() *Vault { return r.vault }

// Tokenize replaces every value the scanner finds in text by its token.
// Tokens already in text are left as they are.
func (r *Rewriter) Tokenize(ctx context.Context, text string) (string, error) {
	fs, err := r.scanner.Scan(ctx, text)
	if err != nil || len(fs) == 0 {
		return text, err
	}
	var b strings.Builder
	b.Grow(len(text))
	last := 0
	for _, f := range fs {
		b.WriteString(text[last:f.Start])
		b.WriteString(r.vault.token(f.Type, text[f.Start:f.End], false))
		last = f.End
	}
	b.WriteString(text[last:])
	return b.String(), nil
}

// Restore replaces the tokens of this vault whose type g allows by their
// original values. Other tokens, and token-like text the vault did not
// issue, stay as they are.
func (r *Rewriter) Restore(text string, g Grant) string {
	return r.replaceTokens(text, func(tok string, e entry) (string, bool) {
		if g.Allows(e.Type) {
			return e.Value, true
		}
		return "", false
	})
}

// replaceTokens calls repl for every token of the vault in text and
// substitutes what it returns when ok.
func (r *Rewriter) replaceTokens(text string, repl func(tok string, e entry) (string, bool)) string {
	i := strings.IndexByte(text, tokenOpen)
	if i < 0 {
		return text
	}
	var b strings.Builder
	last := 0
	for i >= 0 && i < len(text) {
		n := tokenAt(text, i)
		if n == 0 {
			k := strings.IndexByte(text[i+1:], tokenOpen)
			if k < 0 {
				break
			}
			i += 1 + k
			continue
		}
		tok := text[i : i+n]
		if e, ok := r.vault.lookup(tok); ok {
			if s, ok := repl(tok, e); ok {
				if b.Len() == 0 {
					b.Grow(len(text))
				}
				b.WriteString(text[last:i])
				b.WriteString(s)
				last = i + n
			}
		}
		i += n
		k := strings.IndexByte(text[i:], tokenOpen)
		if k < 0 {
			break
		}
		i += k
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

// OutputMode says what the end user sees of a text from the model.
type OutputMode uint8

const (
	// ModeTokens shows tokens as they are; new personal data in the text
	// (values the model wrote that are not in the vault) is tokenized.
	ModeTokens OutputMode = iota
	// ModeRestore restores the tokens whose type the grant allows. New
	// personal data of an allowed type is shown as it is, of any other
	// type tokenized.
	ModeRestore
	// ModeRedact replaces every token of the vault and every new value by
	// "[REDACTED TYPE]". Token-like text the vault did not issue stays.
	ModeRedact
	// ModeBlock fails with a [*BlockedError] when the text holds personal
	// data that is not in the vault (values the model produced itself);
	// otherwise the text is shown as it is, tokens included.
	ModeBlock
)

var modeNames = [...]string{"tokens", "restore", "redact", "block"}

// String returns "tokens", "restore", "redact" or "block".
func (m OutputMode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "OutputMode(?)"
}

// Output rewrites a text of the model for the end user in mode m; g is the
// grant of the principal who reads it (used by [ModeRestore]).
func (r *Rewriter) Output(ctx context.Context, text string, m OutputMode, g Grant) (string, error) {
	fs, err := r.scanner.Scan(ctx, text)
	if err != nil {
		return "", err
	}
	return r.output(text, fs, m, g)
}

func (r *Rewriter) output(text string, fs []Finding, m OutputMode, g Grant) (string, error) {
	if m == ModeBlock {
		var types []EntityType
		n := 0
		for _, f := range fs {
			if !r.vault.has(text[f.Start:f.End]) {
				n++
				types = append(types, f.Type)
			}
		}
		if n > 0 {
			slices.Sort(types)
			return "", &BlockedError{Types: slices.Compact(types), Count: n}
		}
		return text, nil
	}
	var b strings.Builder
	last := 0
	seg := func(s string) {
		switch m {
		case ModeRestore:
			s = r.Restore(s, g)
		case ModeRedact:
			s = r.replaceTokens(s, func(_ string, e entry) (string, bool) {
				return redacted(e.Type), true
			})
		}
		b.WriteString(s)
	}
	for _, f := range fs {
		seg(text[last:f.Start])
		v := text[f.Start:f.End]
		switch {
		case m == ModeRedact:
			b.WriteString(redacted(f.Type))
		case m == ModeRestore && g.Allows(f.Type):
			b.WriteString(v)
		default:
			b.WriteString(r.vault.token(f.Type, v, false))
		}
		last = f.End
	}
	seg(text[last:])
	return b.String(), nil
}

func redacted(t EntityType) string { return "[REDACTED " + tokenLabel(t) + "]" }
