package privacy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const proseSample = `The committee met on Tuesday to review the quarterly plan. Members agreed that the new process, which was introduced last spring, had improved the response times of the support team. Several questions remained open: how to share the workload fairly, whether the budget should grow, and which of the pending projects deserve priority. The chair asked everyone to send comments before the next meeting, e.g. notes on risks and on the schedule. After a short break, the group discussed the draft report section by section and agreed on minor edits. `

// prose returns n bytes of English text without personal data.
func prose(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(proseSample)
	}
	return b.String()[:n]
}

// piiDense returns n bytes of text with a value every few words.
func piiDense(n int) string {
	vals := []string{"john.smith@example.com", "+1 (415) 555-0132", "4111 1111 1111 1111", "GB82 WEST 1234 5698 7654 32",
		"192.168.10.20", "2001:db8::8a2e:370:7334", "078-05-1121", "https://example.org/a?b=c", "AKIAIOSFODNN7EXAMPLE", "example.com"}
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "please contact %s about it, ", vals[i%len(vals)])
	}
	return b.String()[:n]
}

func benchScan(b *testing.B, text string) {
	s := NewScanner(&ScannerOptions{Limits: Limits{MaxFindings: 1 << 20}})
	ctx := context.Background()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Scan(ctx, text); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScanProse1MB(b *testing.B) { benchScan(b, prose(1<<20)) }

// BenchmarkScanProse1MBPatterns is the prose scan with the pattern
// recognizers only (no embedded recognizer), to compare on the same
// machine at the same time.
func BenchmarkScanProse1MBPatterns(b *testing.B) {
	var rs []Recognizer
	for _, r := range Builtins() {
		if _, ok := r.(*entities); !ok {
			rs = append(rs, r)
		}
	}
	s := NewScanner(&ScannerOptions{Recognizers: rs, Limits: Limits{MaxFindings: 1 << 20}})
	text := prose(1 << 20)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Scan(context.Background(), text); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScanChat8KB scans an 8 KB chat message without numbers that
// names a few people and places.
func BenchmarkScanChat8KB(b *testing.B) {
	var sb strings.Builder
	for sb.Len() < 8<<10 {
		sb.WriteString(proseSample)
		sb.WriteString("Thanks, I will ask Maria Lopez and Peter to join us in Lisbon next week. ")
	}
	benchScan(b, sb.String()[:8<<10])
}
func BenchmarkScanPIIDense1MB(b *testing.B) { benchScan(b, piiDense(1<<20)) }
func BenchmarkScanMessage8KB(b *testing.B)  { benchScan(b, prose(6<<10)+piiDense(2<<10)) }

func BenchmarkTokenizeRestoreJSON(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"items":[`)
	for i := range 20 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"note":"customer %d wrote from user%d@example.com","card":4111111111111111,"id":%d}`, i, i, i)
	}
	sb.WriteString(`]}`)
	payload := []byte(sb.String())
	s := NewScanner(nil)
	ctx := context.Background()
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewRewriter(s, NewVault())
		t, err := r.TokenizeJSON(ctx, payload)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.RestoreJSON(t, AllTypes()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStreamChunk(b *testing.B) {
	text := prose(4<<10) + piiDense(4<<10)
	chunks := []string{}
	for i := 0; i < len(text); i += 16 {
		chunks = append(chunks, text[i:min(i+16, len(text))])
	}
	s := NewScanner(nil)
	ctx := context.Background()
	r := NewRewriter(s, NewVault())
	b.SetBytes(16)
	b.ReportAllocs()
	i := 0
	st := r.Stream(ModeRestore, AllTypes())
	for b.Loop() {
		if _, err := st.Write(ctx, chunks[i]); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(chunks) {
			i = 0
			if _, err := st.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// payload600 is a JSON payload of 600 short strings, one in ten holding an
// e-mail address.
func payload600() []byte {
	var sb strings.Builder
	sb.WriteString(`{"rows":[`)
	for i := range 600 {
		if i > 0 {
			sb.WriteByte(',')
		}
		if i%10 == 0 {
			fmt.Fprintf(&sb, `"row %d from user%d@example.com"`, i, i)
		} else {
			fmt.Fprintf(&sb, `"row %d of the report"`, i)
		}
	}
	sb.WriteString(`]}`)
	return []byte(sb.String())
}

func benchTokenize600(b *testing.B, s *Scanner) {
	payload := payload600()
	ctx := context.Background()
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewRewriter(s, NewVault())
		if _, err := r.TokenizeJSON(ctx, payload); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTokenizeJSON600Strings: built-in recognizers only.
func BenchmarkTokenizeJSON600Strings(b *testing.B) { benchTokenize600(b, NewScanner(nil)) }

// BenchmarkTokenizeJSON600StringsAnalyzer: built-ins plus an external
// analyzer (a local HTTP server answering no findings).
func BenchmarkTokenizeJSON600StringsAnalyzer(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "[]")
	}))
	defer srv.Close()
	a := NewAnalyzer(srv.URL+"/analyze", nil)
	benchTokenize600(b, NewScanner(&ScannerOptions{Recognizers: append(Builtins(), a)}))
}

// BenchmarkStreamDenseList streams 24 KB of a list in which every word may
// begin a value (names and numbers), in 4-byte chunks: one op is the whole
// list, so that a cost growing with what the stream holds shows per byte.
func BenchmarkStreamDenseList(b *testing.B) {
	text := strings.Repeat("Alice 12 Bob 34 Carol 56 ", 24<<10/25)
	ctx := context.Background()
	r := NewRewriter(NewScanner(nil), NewVault())
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		st := r.Stream(ModeTokens, NoTypes())
		for i := 0; i < len(text); i += 4 {
			if _, err := st.Write(ctx, text[i:min(i+4, len(text))]); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := st.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
