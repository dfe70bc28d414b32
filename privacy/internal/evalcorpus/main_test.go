package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestConvert(t *testing.T) {
	in := "# sent_id = a-1\n# text = Ana López moved to São Paulo.\n1\tAna\tB-PER\n2\tLópez\tI-PER\n3\tmoved\tO\n4\tto\tO\n" +
		"5\tSão\tB-LOC\n6\tPaulo\tI-LOC\n7\t.\tO\n\n# text = I'm fine\n1-2\tI'm\t_\n1\tI\tO\n2\t'm\tO\n3\tfine\tO\n"
	var out bytes.Buffer
	if err := convert(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	want := `[{"full_text":"Ana López moved to São Paulo.","spans":[{"entity_type":"PER","start_position":0,"end_position":9},` +
		`{"entity_type":"LOC","start_position":19,"end_position":28}]},{"full_text":"I'm fine","spans":[]}]` + "\n"
	if out.String() != want {
		t.Errorf("got  %s\nwant %s", out.String(), want)
	}
	for _, bad := range []string{"1\tAna\tB-PER\n\n", "# text = Ana\n1\tBob\tB-PER\n", "# text = Ana\n1\tAna\n", "# text = Ana\n1\tAna\tB-\n", "# text = \xff\n"} {
		if err := convert(strings.NewReader(bad), &bytes.Buffer{}); err == nil {
			t.Errorf("convert(%q) accepted bad input", bad)
		}
	}
}

func FuzzConvert(f *testing.F) {
	f.Add("# text = Ana López\n1\tAna\tB-PER\n2\tLópez\tI-PER\n")
	f.Add("# text = a b\n1\ta\tI-X\n2\tb\tB-Y\n\n# text = \n")
	f.Fuzz(func(t *testing.T, in string) {
		var out bytes.Buffer
		if convert(strings.NewReader(in), &out) != nil {
			return
		}
		var recs []record
		if err := json.Unmarshal(out.Bytes(), &recs); err != nil {
			t.Fatalf("output is not JSON: %v", err)
		}
		for _, r := range recs {
			n := utf8.RuneCountInString(r.Text)
			for _, s := range r.Spans {
				if s.Start < 0 || s.Start >= s.End || s.End > n {
					t.Fatalf("span %+v outside %q", s, r.Text)
				}
			}
		}
	})
}
