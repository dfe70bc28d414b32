package privacy

import (
	"context"
	"strings"
	"unicode/utf8"
)

// maxHold is the most a [Stream] holds back. Past it, the stream cuts at
// the last white space even where a value might continue.
const maxHold = 2 * maxPEM

// historyLen is how much already emitted input a [Stream] keeps to give
// context to the next segment (context words before a value).
const historyLen = 64

// Stream rewrites a text that arrives in chunks (a streamed model reply)
// the way [Rewriter.Output] rewrites it whole. [Stream.Write] returns the
// text that can no longer change, once that is at least a quarter of what
// it holds, and holds back only the suffix that could still become part
// of a token or of a value; [Stream.Flush]
// returns the rest. With the built-in recognizers, the concatenated output
// equals what Output returns for the whole text, however it is cut into
// chunks, unless the stream has to cut at its hold limit (32 KB held) or
// at the embedded recognizer's bound (about 8 KB of text where every word
// may begin a value).
// Values that contain white space (phone and card numbers in groups, IBANs
// in groups of four, private-key blocks) are held until they are complete,
// and so are the words that a finding of the embedded recognizer may still
// reach back over; custom recognizers see the text in pieces cut at white
// space. A value found to start in text already returned (a cut forced by
// the limit) is rewritten from the cut on: the stream fails closed.
//
// A Stream is not safe for concurrent use; after an error it keeps
// returning that error.
type Stream struct {
	r       *Rewriter
	mode    OutputMode
	grant   Grant
	pending string
	history string
	cased   bool // the text so far holds a capital letter
	limit   int  // the most held back (maxHold; less in tests)
	err     error
}

// Stream returns a stream rewriter in mode m for a reader with grant g.
func (r *Rewriter) Stream(m OutputMode, g Grant) *Stream {
	return &Stream{r: r, mode: m, grant: g, limit: maxHold}
}

// Write adds a chunk and returns the rewritten text that is now final.
func (s *Stream) Write(ctx context.Context, chunk string) (string, error) {
	if s.err != nil {
		return "", s.err
	}
	old := len(s.pending)
	s.pending += chunk
	// The embedded recognizer reads text without capitals case by case:
	// hold such text until a capital shows the text is cased, or to the end.
	// Only the new chunk is looked at (with the bytes before it, where a
	// letter may have begun), so that holding costs nothing per write.
	if !s.cased && hasUpper(s.pending[max(0, old-utf8.UTFMax+1):]) {
		s.cased = true
	}
	if !s.cased && s.r.scanner.readsCase() && len(s.pending) < s.limit {
		return "", nil
	}
	// What a recognizer holds back is bounded by the limit too: past it,
	// the stream cuts (and the emit rewrites a value cut in two on both
	// sides of the cut).
	keep := len(s.pending) - min(s.r.scanner.holdback(s.pending), s.limit)
	cut := safeCut(s.pending[:keep], s.limit)
	// An emit scans all the text held, so it waits until it can return at
	// least a quarter of it: a long hold (a list where every word may
	// begin a value) is then scanned a few times over, not once per write,
	// and a short one delays the output by a few bytes.
	if cut == 0 || cut < len(s.pending)/4 {
		return "", nil
	}
	return s.emit(ctx, cut)
}

// Flush returns the rewritten rest of the text. The stream can be used
// again afterwards, as if newly made (the vault keeps its tokens).
func (s *Stream) Flush(ctx context.Context) (string, error) {
	if s.err != nil {
		return "", s.err
	}
	out, err := s.emit(ctx, len(s.pending))
	s.history = ""
	s.cased = false
	return out, err
}

// emit rewrites and returns the first cut bytes of the pending text, or
// fewer. It scans all the text known (the history and all that is
// pending), so that a value is decided with every word the stream has,
// and emits no value in part: a cut that would split one moves to before
// it, unless that would hold more than the limit. A value that starts in
// text already emitted (a cut that the limit forced) is rewritten from the
// cut on all the same: the stream fails closed.
func (s *Stream) emit(ctx context.Context, cut int) (string, error) {
	text := s.history + s.pending
	s.r.vault.reserve(s.pending)
	if s.cased { // set by Write from every chunk
		ctx = context.WithValue(ctx, casedText{}, true)
	}
	fs, err := s.r.find(ctx, text)
	if err != nil {
		s.err = err
		return "", err
	}
	h := len(s.history)
	for moved := true; moved && cut < len(s.pending); {
		moved = false
		for _, f := range fs {
			if f.Start >= h && f.Start < h+cut && h+cut < f.End {
				c := safeCut(s.pending[:f.Start-h], s.limit)
				if len(s.pending)-c > s.limit {
					break // the limit forces the cut
				}
				cut, moved = c, true
				break
			}
		}
	}
	if cut == 0 {
		return "", nil
	}
	seg := s.pending[:cut]
	k := 0
	for _, f := range fs {
		if f.End <= h || f.Start >= h+cut {
			continue // in text already emitted, or still held
		}
		f.Start = max(f.Start, h) - h
		f.End = min(f.End, h+cut) - h
		fs[k] = f
		k++
	}
	err = s.r.blocked(s.mode, []string{seg}, [][]Finding{fs[:k]})
	var out string
	if err == nil {
		out, err = s.r.output(seg, fs[:k], s.mode, s.grant)
	}
	if err != nil {
		s.err = err
		return "", err
	}
	s.pending = s.pending[cut:]
	s.history = strings.Clone(keepHistory(text[:h+cut]))
	return out, nil
}

// keepHistory returns the end of the emitted text that the stream keeps
// for the next scans: the last historyLen bytes, and more (up to 1 KB)
// back to the start of the line before the last one, since the words
// before a value and the lines above an address decide how it is read.
func keepHistory(text string) string {
	s := max(0, len(text)-historyLen)
	lines := 0
	for p := len(text); p > 0 && len(text)-p < 1024; p-- {
		if text[p-1] == '\n' {
			if lines++; lines == 3 {
				return text[min(s, p):]
			}
		}
	}
	if lines > 0 {
		return text[max(0, len(text)-1024):]
	}
	return text[s:]
}

// safeCut returns the largest offset at which text can be cut so that no
// token and no value detected by the built-in recognizers spans the cut,
// whatever follows: a cut right after white space that ends a word that
// cannot continue into the next one. The last word is always held.
func safeCut(text string, limit int) int {
	for p := len(text); p > 0; p-- {
		c := text[p-1]
		if !isSpace(c) {
			continue
		}
		// A private-key block is cut neither inside nor before its END line.
		if k := pemStart(text, p); k >= 0 {
			p = k + 1
			continue
		}
		if c == '\n' {
			return p
		}
		// The word before the space.
		e := p - 1
		for e > 0 && isSpace(text[e-1]) && text[e-1] != '\n' {
			e--
		}
		if e == 0 || text[e-1] == '\n' {
			return p
		}
		// Its tail that could be a group of a value ("!000" ends with "000").
		s := e
		for s > 0 && groupChar(text[s-1]) {
			s--
		}
		if s == e {
			return p
		}
		if !joinable(text[s:e]) || p < len(text) && !continues(text[p]) {
			return p
		}
	}
	if len(text) > limit {
		if k := strings.LastIndexAny(text, " \t\r\n"); k >= 0 {
			return k + 1
		}
		return len(text)
	}
	return 0
}

// pemStart returns the start of the private-key block that a cut at p
// would split, or -1. A block is held until its END line is complete, or
// until it is longer than the longest block the scanner reads.
func pemStart(text string, p int) int {
	k := strings.LastIndex(text[:p], "-----BEGIN ")
	if k < 0 || len(text)-k >= maxPEM {
		return -1
	}
	e, closed := pemEnd(text, k)
	switch {
	case closed && e <= p:
		return -1
	case e == 0 && strings.Contains(text[k+11:], "-----"):
		return -1 // a header, but not of a private key
	}
	return k
}

// continues reports whether a word that starts with c could continue a
// value across a space: a digit group, "(415)", an upper-case IBAN group,
// "x12", "ext.".
func continues(c byte) bool {
	return isDigit(c) || c >= 'A' && c <= 'Z' || c == '(' || c == 'x' || c == 'e'
}

func groupChar(c byte) bool { return isAlnum(c) || strings.IndexByte("()+.-", c) >= 0 }

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// joinable reports whether a word could be one group of a value written
// in groups separated by spaces (a phone or card number, an IBAN, an SSN, a
// phone extension): made of letters, digits and ()+.- only, and holding a
// digit, or being an upper-case group of an IBAN, or "x" / "ext".
func joinable(w string) bool {
	digit, low := false, false
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case isDigit(c):
			digit = true
		case c >= 'a' && c <= 'z':
			low = true
		case c >= 'A' && c <= 'Z' || strings.IndexByte("()+.-", c) >= 0:
		default:
			return false
		}
	}
	switch {
	case digit:
		return true
	case !low:
		return len(w) <= 4
	}
	return strings.EqualFold(w, "x") || strings.EqualFold(w, "ext") || strings.EqualFold(w, "ext.")
}
