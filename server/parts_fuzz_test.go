package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/toolgate/toolgate"
)

// FuzzPostedParts checks the parsing of a posted message's parts: it
// never panics; what it accepts holds only plain text parts and files with
// their bytes, within the limits, and reads back the same; what it refuses
// is answered 413 or 422 with a code; and the view of accepted parts never
// carries a file's bytes.
func FuzzPostedParts(f *testing.F) {
	for _, s := range []string{
		`[]`, `null`, `[{"type":"text","text":"hi"}]`,
		`[{"type":"file","media_type":"image/png","data":"iVBORw0KGgo=","name":"a.png"}]`,
		`[{"type":"file","media_type":"image/png","url":"https://example.com/a.png"}]`,
		`[{"type":"reasoning","text":"x","provider":"anthropic"}]`,
		`[{"type":"tool_call","index":0}]`, `[{"type":"text","text":"x","opaque":{"a":1}}]`,
		`[{"type":"file","media_type":"text/plain; charset=utf-8","data":"` + string(bytes.Repeat([]byte("QUFB"), 30)) + `"}]`,
		`{"type":"text"}`, `[null]`, `[{"type":""}]`, `[{"type":"file","data":"!!"}]`,
	} {
		f.Add([]byte(s))
	}
	s := &Server{cfg: &Config{MaxFileBytes: 64, MaxMessageFileBytes: 100}}
	f.Fuzz(func(t *testing.T, raw []byte) {
		ps, problem := s.postedParts(raw)
		if problem != nil {
			if ps != nil || (problem.status != http.StatusRequestEntityTooLarge && problem.status != http.StatusUnprocessableEntity) || problem.code == "" {
				t.Fatalf("refusal %+v with parts %v", problem, ps)
			}
			return
		}
		var total int
		for _, p := range ps {
			switch p := p.(type) {
			case toolgate.TextPart:
				if p.Provider != "" || p.Signature != "" || p.Opaque != nil {
					t.Fatalf("accepted a text part with provider data: %+v", p)
				}
			case toolgate.FilePart:
				if p.URL != "" || len(p.Data) == 0 || int64(len(p.Data)) > s.cfg.MaxFileBytes {
					t.Fatalf("accepted file %+v", p)
				}
				total += len(p.Data)
			default:
				t.Fatalf("accepted a %T", p)
			}
		}
		if int64(total) > s.cfg.MaxMessageFileBytes {
			t.Fatalf("accepted %d bytes of files", total)
		}
		if ps == nil {
			return
		}
		b, err := ps.MarshalJSON()
		if err != nil {
			t.Fatalf("accepted parts do not marshal: %v", err)
		}
		again, problem := s.postedParts(b)
		if problem != nil || len(again) != len(ps) {
			t.Fatalf("accepted parts read back as %v, %+v", again, problem)
		}
		view, err := json.Marshal(messageView{m: &toolgate.UserMessage{Parts: ps}})
		if err != nil {
			t.Fatalf("view: %v", err)
		}
		for _, p := range ps {
			if fp, ok := p.(toolgate.FilePart); ok && len(fp.Data) >= 3 {
				enc, _ := json.Marshal(fp.Data)
				if bytes.Contains(view, enc[1:len(enc)-1]) {
					t.Fatalf("the view %s holds a file's bytes", view)
				}
			}
		}
	})
}

func TestMessageBodyLimit(t *testing.T) {
	for _, tc := range []struct {
		body, files, want int64
	}{
		{1 << 20, 10 << 20, 1<<20 + 13981016},
		{4096, 100, 4096 + 136},
		{1 << 20, 1 << 62, 1<<20 + (1<<62+2)/3*4},
		{1 << 20, 7 << 60, 1<<63 - 1},
		{1<<63 - 1, 1, 1<<63 - 1},
	} {
		s := &Server{cfg: &Config{MaxBodyBytes: tc.body, MaxMessageFileBytes: tc.files}}
		if got := s.messageBodyLimit(); got != tc.want {
			t.Errorf("body %d, files %d: limit %d, want %d", tc.body, tc.files, got, tc.want)
		}
	}
}
