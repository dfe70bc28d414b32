package privacy

import (
	"context"
	"math"
	"slices"
	"strings"
)

// Rewriter replaces personal data with tokens and tokens with personal
// data, for one [Vault]. A guard makes one Rewriter per request over the
// conversation's vault and a shared [Scanner]:
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

// find returns the findings in text, cut around its token-shaped pieces:
// a token, known or not, is never tokenized again.
func (r *Rewriter) find(ctx context.Context, text string) ([]Finding, error) {
	fs, err := r.scanner.Scan(ctx, text)
	if err != nil {
		return nil, err
	}
	return exceptTokens(text, fs), nil
}

// exceptTokens removes the token-shaped pieces of text from the findings
// fs (sorted, not overlapping): a finding that covers one is cut around it,
// and what is left of it keeps its type and score.
func exceptTokens(text string, fs []Finding) []Finding {
	if len(fs) == 0 || strings.IndexByte(text, tokenOpen) < 0 {
		return fs
	}
	spans := tokenSpans(text)
	if len(spans) == 0 {
		return fs
	}
	out := make([]Finding, 0, len(fs))
	j := 0
	for _, f := range fs {
		for j < len(spans) && spans[j][1] <= f.Start {
			j++
		}
		start := f.Start
		for k := j; k < len(spans) && spans[k][0] < f.End; k++ {
			if spans[k][0] > start {
				out = append(out, Finding{Start: start, End: spans[k][0], Type: f.Type, Score: f.Score})
			}
			start = max(start, spans[k][1])
		}
		if start < f.End {
			out = append(out, Finding{Start: start, End: f.End, Type: f.Type, Score: f.Score})
		}
	}
	return out
}

// Tokenize replaces every value the scanner finds in text by its token.
// Tokens already in text are left as they are, and the token-shaped text
// that the vault did not issue is reserved: no value will ever get such a
// token from this vault.
func (r *Rewriter) Tokenize(ctx context.Context, text string) (string, error) {
	r.vault.reserve(text)
	fs, err := r.find(ctx, text)
	if err != nil || len(fs) == 0 {
		return text, err
	}
	var b strings.Builder
	b.Grow(len(text))
	last := 0
	for _, f := range fs {
		b.WriteString(text[last:f.Start])
		b.WriteString(r.vault.token(f.Type, text[f.Start:f.End], false, nil))
		last = f.End
	}
	b.WriteString(text[last:])
	return b.String(), nil
}

// Restore replaces the tokens of this vault whose type g allows by their
// original values. Other tokens, and token-like text the vault did not
// issue, stay as they are. At most the scanner's [Limits.MaxBytes] of
// output are produced: tokens past that stay tokens ([Rewriter.RestoreJSON],
// [Rewriter.Arguments] and [Rewriter.Output] fail with a [*LimitError]
// instead).
func (r *Rewriter) Restore(text string, g Grant) string {
	out, _ := r.restore(text, g, -1, r.scanner.limits.MaxBytes)
	return out
}

// restore replaces the tokens g allows that were bound at or before
// horizon (-1: any) by their values, producing at most max bytes; ok is
// false when the output was cut at max.
func (r *Rewriter) restore(text string, g Grant, horizon, max int) (string, bool) {
	return r.replaceTokens(text, max, func(_ string, e entry) (string, bool) {
		if (horizon < 0 || e.Seq <= horizon) && e.allowedBy(g) {
			return e.Value, true
		}
		return "", false
	})
}

// replaceTokens calls repl for every token of the vault in text and
// substitutes what it returns when ok. It stops substituting when the
// output would grow past max bytes, and then reports false.
func (r *Rewriter) replaceTokens(text string, max int, repl func(tok string, e entry) (string, bool)) (string, bool) {
	i := strings.IndexByte(text, tokenOpen)
	if i < 0 {
		return text, true
	}
	var b strings.Builder
	last, size, full := 0, len(text), true
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
				if size+len(s)-n > max {
					full = false
					break
				}
				size += len(s) - n
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
		return text, full
	}
	b.WriteString(text[last:])
	return b.String(), full
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
	// otherwise the text is shown as in ModeTokens: a value the vault knows
	// is shown as its token, never as it is.
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
// grant of the principal who reads it (used by [ModeRestore]). In
// [ModeBlock] the result is the one of [ModeTokens] unless the text holds a
// value the vault does not know. Restored output is capped at the
// scanner's [Limits.MaxBytes] ([*LimitError]).
func (r *Rewriter) Output(ctx context.Context, text string, m OutputMode, g Grant) (string, error) {
	r.vault.reserve(text)
	fs, err := r.find(ctx, text)
	if err != nil {
		return "", err
	}
	if err := r.blocked(m, []string{text}, [][]Finding{fs}); err != nil {
		return "", err
	}
	return r.output(text, fs, m, g)
}

// OutputContent is [Rewriter.Output] for content that may be JSON (the
// arguments of a call, a tool's result): a JSON object or array is
// rewritten value by value, like [Rewriter.TokenizeJSON], and stays valid
// JSON; any other content is rewritten as text.
func (r *Rewriter) OutputContent(ctx context.Context, content string, m OutputMode, g Grant) (string, error) {
	if isJSONDocument(content) {
		return r.outputJSON(ctx, content, m, g)
	}
	return r.Output(ctx, content, m, g)
}

// blocked returns the [*BlockedError] of mode m for the findings fss of
// texts: values the vault does not know, in [ModeBlock]; nil otherwise.
func (r *Rewriter) blocked(m OutputMode, texts []string, fss [][]Finding) error {
	if m != ModeBlock {
		return nil
	}
	var types []EntityType
	n := 0
	for i, fs := range fss {
		for _, f := range fs {
			if !r.vault.has(texts[i][f.Start:f.End]) {
				n++
				types = append(types, f.Type)
			}
		}
	}
	if n == 0 {
		return nil
	}
	slices.Sort(types)
	return &BlockedError{Types: slices.Compact(types), Count: n}
}

// output renders text with its findings fs in mode m. [ModeBlock] renders
// as [ModeTokens]: the caller checked [Rewriter.blocked] first.
func (r *Rewriter) output(text string, fs []Finding, m OutputMode, g Grant) (string, error) {
	var b strings.Builder
	last := 0
	max := r.scanner.limits.MaxBytes
	var err error
	seg := func(s string) {
		switch m {
		case ModeRestore:
			var full bool
			if s, full = r.restore(s, g, -1, max-b.Len()); !full {
				err = &LimitError{Limit: "bytes", Max: max}
			}
		case ModeRedact:
			s, _ = r.replaceTokens(s, math.MaxInt, func(_ string, e entry) (string, bool) {
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
			b.WriteString(r.vault.token(f.Type, v, false, nil))
		}
		last = f.End
	}
	seg(text[last:])
	if err == nil && m == ModeRestore && b.Len() > max {
		err = &LimitError{Limit: "bytes", Max: max}
	}
	if err != nil {
		return "", err
	}
	return b.String(), nil
}

func redacted(t EntityType) string { return "[REDACTED " + tokenLabel(t) + "]" }
