package postgres_test

import (
	"bytes"
	"testing"
)

func TestVaults(t *testing.T) {
	ctx := t.Context()
	s, schema := open(t)
	if got, err := s.LoadVault(ctx, "c1"); err != nil || got != nil {
		t.Fatalf("LoadVault of a conversation without a vault = %q, %v; want nil, nil", got, err)
	}
	for _, v := range [][]byte{[]byte("sealed-1"), {0, 1, 2, 255}, {}, nil} {
		if err := s.SaveVault(ctx, "c1", v); err != nil {
			t.Fatal(err)
		}
		got, err := s.LoadVault(ctx, "c1")
		if err != nil || !bytes.Equal(got, v) || got == nil {
			t.Errorf("LoadVault after saving %v = %v, %v; want %v, not nil", v, got, err, v)
		}
	}
	if got, _ := s.LoadVault(ctx, "c2"); got != nil {
		t.Errorf("another conversation sees vault %q", got)
	}
	if err := s.SaveVault(ctx, "", []byte("x")); err == nil {
		t.Error("SaveVault with an empty id succeeded")
	}
	// Another instance on the same schema sees the vault.
	if err := s.SaveVault(ctx, "c3", []byte("shared")); err != nil {
		t.Fatal(err)
	}
	if got, err := openIn(t, schema).LoadVault(ctx, "c3"); err != nil || string(got) != "shared" {
		t.Errorf("LoadVault through another Store = %q, %v; want %q", got, err, "shared")
	}
}
