package recording

import "testing"

func TestParse(t *testing.T) {
	f, err := Parse([]byte("What it pins.\n-- 0/request.json --\n{\"a\":1}\n-- 0/status --\n200\n-- 0/response.sse --\nevent: x\ndata: {}\n\n-- 1/request.json --\n{}\n-- 1/status --\n400\n-- 1/response.json --\n{\"error\":{}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Comment != "What it pins." || len(f.Exchanges) != 2 {
		t.Fatalf("got %+v", f)
	}
	e := f.Exchanges[0]
	if string(e.Request) != `{"a":1}` || e.Status != 200 || !e.Stream || string(e.Response) != "event: x\ndata: {}\n\n" {
		t.Errorf("exchange 0: got %+v", e)
	}
	e = f.Exchanges[1]
	if e.Status != 400 || e.Stream || string(e.Response) != `{"error":{}}` {
		t.Errorf("exchange 1: got %+v", e)
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{
		"-- request.json --\n{}\n",
		"-- x/request.json --\n{}\n",
		"-- 0/other --\n{}\n",
		"-- 0/status --\nnope\n",
		"-- 99999/status --\n1\n",
	} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("Parse(%q): got no error", in)
		}
	}
}
