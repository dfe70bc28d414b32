package audit_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate/audit"
)

// The expected values below were computed from the documented definitions
// by a separate implementation (a few lines of Python with hashlib), not by
// this package.
const (
	vectorHash      = "db63bb2f3f94de11f9ab986e870d79c55d1535b7cbe567dbc2f387e49cacb523"
	vectorJCSDigest = "sha256:58cbfe29fa9453cf562113291b15aba0c3e41b15dfd9d0ab55d430e983402bbc"
	vectorRawDigest = "sha256:c3f07c17117dc1953b6b514cc4e816c00a33fb6cbbe66cbb31e5e22cd1a05fd0"
	vectorKeyed     = "hmac-sha256:56e5e7dccba13c0b5b20e451c5fe0064bd38b0b981b21d641446499a63d655ed"
)

// vectorRecord is the record whose hash is vectorHash.
func vectorRecord() audit.Record {
	return audit.Record{
		Seq:            7,
		Time:           time.Date(2026, 12, 31, 23, 59, 59, 123456789, time.UTC),
		ConversationID: "conv-é",
		CallKey:        "#0",
		Tool:           "fs_write_file",
		Kind:           audit.KindRefused,
		Actor:          audit.Actor{ID: "policy:no-writes", Source: audit.SourceRule},
		Reason:         `denied by policy "no-writes"`,
		PrevHash:       "1d3a33393caae4a9" + strings.Repeat("0", 48),
	}
}

func TestComputeHashVector(t *testing.T) {
	r := vectorRecord()
	if got := r.ComputeHash(); got != vectorHash {
		t.Errorf("ComputeHash = %s, want %s", got, vectorHash)
	}
	// The time zone of Time does not matter, only the instant.
	r.Time = r.Time.In(time.FixedZone("CEST", 2*3600))
	if got := r.ComputeHash(); got != vectorHash {
		t.Errorf("ComputeHash in another zone = %s, want %s", got, vectorHash)
	}
}

func TestDigest(t *testing.T) {
	for _, tc := range []struct {
		name, args, want string
	}{
		{"canonical", `{"a":"xé","b":[1,2.5,true,null]}`, vectorJCSDigest},
		{"reordered, spaced, escaped, 2.50", "{ \"b\" : [1, 2.50, true, null],\n \"a\": \"x\\u00e9\" }", vectorJCSDigest},
		{"exponent", `{"b":[1e0,25e-1,true,null],"a":"xé"}`, vectorJCSDigest},
		{"not JSON: raw bytes", `not json {`, vectorRawDigest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := audit.Digest([]byte(tc.args)); got != tc.want {
				t.Errorf("Digest(%s) = %s, want %s", tc.args, got, tc.want)
			}
		})
	}
	if got := audit.KeyedDigest([]byte("k"), []byte(`{"b":[1,2.5,true,null],"a":"xé"}`)); got != vectorKeyed {
		t.Errorf("KeyedDigest = %s, want %s", got, vectorKeyed)
	}
	// Repeated member names make the JSON ambiguous: the raw bytes are
	// digested, so the two orders differ.
	a, b := audit.Digest([]byte(`{"a":1,"a":2}`)), audit.Digest([]byte(`{"a":2,"a":1}`))
	if a == b {
		t.Errorf("arguments with repeated names in two orders share the digest %s", a)
	}
	if audit.Digest([]byte(`{"a":1}`)) == audit.Digest([]byte(`{"a":2}`)) {
		t.Error("different arguments share a digest")
	}
}

func TestRecordJSON(t *testing.T) {
	r := vectorRecord()
	r.Hash = r.ComputeHash()
	r.ArgsDigest = vectorJCSDigest
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"v":1,"seq":7,"time":"2026-12-31T23:59:59.123456789Z","conversation_id":"conv-é","pause_id":"","call_key":"#0","tool":"fs_write_file","kind":"refused","actor":{"id":"policy:no-writes","source":"rule"},"reason":"denied by policy \"no-writes\"","args_digest":"sha256:58cbfe29fa9453cf562113291b15aba0c3e41b15dfd9d0ab55d430e983402bbc","prev_hash":"1d3a33393caae4a9000000000000000000000000000000000000000000000000","hash":"db63bb2f3f94de11f9ab986e870d79c55d1535b7cbe567dbc2f387e49cacb523"}`
	if string(b) != want {
		t.Errorf("JSON form:\n got %s\nwant %s", b, want)
	}
	var back audit.Record
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, back); diff != "" {
		t.Errorf("round trip (-sent +decoded):\n%s", diff)
	}
}

func TestRecordJSONHostile(t *testing.T) {
	r := vectorRecord()
	r.Hash = r.ComputeHash()
	good, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(old, new string) string {
		t.Helper()
		if !strings.Contains(string(good), old) {
			t.Fatalf("the JSON form lacks %s", old)
		}
		return strings.Replace(string(good), old, new, 1)
	}
	for _, tc := range []struct {
		name string
		data string
		want audit.Problem
	}{
		{"not JSON", `{"v":1,`, audit.ProblemUndecodable},
		{"trailing data", string(good) + "{}", audit.ProblemUndecodable},
		{"an array", `[1]`, audit.ProblemUndecodable},
		{"null", `null`, audit.ProblemUnknownVersion},
		{"no version", `{}`, audit.ProblemUnknownVersion},
		{"version 2", edit(`"v":1`, `"v":2`), audit.ProblemUnknownVersion},
		{"version as string", edit(`"v":1`, `"v":"1"`), audit.ProblemUndecodable},
		{"unknown member", edit(`"v":1,`, `"v":1,"extra":0,`), audit.ProblemUndecodable},
		{"repeated member", edit(`"v":1,`, `"v":1,"seq":8,`), audit.ProblemUndecodable},
		{"member in other case", edit(`"seq"`, `"SEQ"`), audit.ProblemUndecodable},
		{"negative seq", edit(`"seq":7`, `"seq":-7`), audit.ProblemUndecodable},
		{"seq 0", edit(`"seq":7`, `"seq":0`), audit.ProblemInvalidField},
		{"invalid UTF-8", edit(`conv-é`, "conv-\xff"), audit.ProblemUndecodable},
		{"unknown kind", edit(`"refused"`, `"launched"`), audit.ProblemUnknownKind},
		{"unknown source", edit(`"rule"`, `"robot"`), audit.ProblemInvalidField},
		{"time with offset", edit(`59.123456789Z`, `59.123456789+02:00`), audit.ProblemInvalidField},
		{"time without nanos", edit(`59.123456789Z`, `59Z`), audit.ProblemInvalidField},
		{"short hash", edit(vectorHash, vectorHash[:10]), audit.ProblemInvalidField},
		{"upper-case hash", edit(vectorHash, strings.ToUpper(vectorHash)), audit.ProblemInvalidField},
		{"bad prev_hash", edit(`"prev_hash":"1d3a`, `"prev_hash":"zz3a`), audit.ProblemInvalidField},
		{"bad digest", edit(`"args_digest":""`, `"args_digest":"md5:00"`), audit.ProblemInvalidField},
		{"actor not an object", edit(`"actor":{"id":"policy:no-writes","source":"rule"}`, `"actor":"x"`), audit.ProblemUndecodable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got audit.Record
			err := got.UnmarshalJSON([]byte(tc.data))
			var re *audit.RecordError
			if !errors.As(err, &re) {
				t.Fatalf("UnmarshalJSON(%s): got error %v, want a *RecordError", tc.data, err)
			}
			if re.Problem != tc.want {
				t.Errorf("problem %s (%v), want %s", re.Problem, err, tc.want)
			}
			if !errors.Is(err, audit.ErrBroken) {
				t.Errorf("error %v does not match ErrBroken", err)
			}
		})
	}
}

func TestAnchorText(t *testing.T) {
	a := audit.Anchor{Seq: 42, Hash: vectorHash}
	got, err := audit.ParseAnchor(a.String())
	if err != nil || got != a {
		t.Errorf("ParseAnchor(%q) = %v, %v; want %v", a.String(), got, err, a)
	}
	for _, bad := range []string{"", "42", "42:", ":" + vectorHash, "0:" + vectorHash, "-1:" + vectorHash, "42:" + vectorHash[:63], "42:" + strings.ToUpper(vectorHash), "x:" + vectorHash} {
		if _, err := audit.ParseAnchor(bad); err == nil {
			t.Errorf("ParseAnchor(%q) succeeded", bad)
		}
	}
}

// TestEveryKindRoundTrips checks that every kind, the later KindRevealed
// included, is appended, decoded and verified like the first ones.
func TestEveryKindRoundTrips(t *testing.T) {
	if !slices.Contains(audit.Kinds(), audit.KindRevealed) {
		t.Fatalf("Kinds() = %v, want it to hold %q", audit.Kinds(), audit.KindRevealed)
	}
	l := audit.NewMemoryLog()
	for _, k := range audit.Kinds() {
		r := &audit.Record{Time: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), ConversationID: "c", Kind: k, Actor: audit.Actor{ID: "ann", Source: audit.SourcePerson}}
		if err := l.Append(t.Context(), r); err != nil {
			t.Fatalf("append a %s record: %v", k, err)
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("marshal a %s record: %v", k, err)
		}
		var back audit.Record
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("unmarshal %s: %v", b, err)
		}
		if back.Kind != k || back.Hash != r.Hash {
			t.Errorf("round trip of %s: kind %q hash %s, want %q %s", b, back.Kind, back.Hash, k, r.Hash)
		}
	}
	if rep, err := audit.Verify(t.Context(), l, nil); err != nil || rep.Records != uint64(len(audit.Kinds())) {
		t.Errorf("Verify = %+v, %v; want %d intact records", rep, err, len(audit.Kinds()))
	}
	var r audit.Record
	err := json.Unmarshal([]byte(`{"v":1,"seq":1,"time":"2026-05-01T12:00:00.000000000Z","conversation_id":"","pause_id":"","call_key":"","tool":"","kind":"peeked","actor":{"id":"","source":"system"},"reason":"","args_digest":"","prev_hash":"","hash":"`+strings.Repeat("0", 64)+`"}`), &r)
	var re *audit.RecordError
	if !errors.As(err, &re) || re.Problem != audit.ProblemUnknownKind {
		t.Errorf("a record of an unknown kind: %v, want %s", err, audit.ProblemUnknownKind)
	}
}
