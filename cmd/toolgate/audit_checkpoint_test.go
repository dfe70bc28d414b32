package main

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
)

// writeKeys writes an ed25519 key pair as PEM files and returns their
// paths.
func writeKeys(t *testing.T, seed byte) (string, string) {
	t.Helper()
	key := ed25519.NewKeyFromSeed(append(make([]byte, ed25519.SeedSize-1), seed))
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	priv, pub := filepath.Join(dir, "key.pem"), filepath.Join(dir, "pub.pem")
	os.WriteFile(priv, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
	os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644)
	return priv, pub
}

// TestAuditCheckpoint makes signed checkpoints of a log's head and checks
// that deleting the end of the log, or a checkpoint signed with another
// key, is detected without any other anchor.
func TestAuditCheckpoint(t *testing.T) {
	path, head := auditLog(t, 4)
	priv, pub := writeKeys(t, 1)
	cp := filepath.Join(t.TempDir(), "checkpoint.json")

	code, out, errOut := runArgs(t, "", false, "audit", "verify", "--db", path, "--checkpoint", cp, "--key", priv)
	if code != 0 {
		t.Fatalf("first checkpoint: exit %d\n%s%s", code, out, errOut)
	}
	mustContain(t, out, "no checkpoint yet", "new checkpoint of "+head.String())
	code, out, errOut = runArgs(t, "", false, "audit", "verify", "--db", path, "--checkpoint", cp, "--public-key", pub)
	if code != 0 {
		t.Fatalf("checking the checkpoint: exit %d\n%s%s", code, out, errOut)
	}
	mustContain(t, out, "signature valid", "anchor "+head.String()+": held")

	_, otherPub := writeKeys(t, 2)
	code, _, errOut = runArgs(t, "", false, "audit", "verify", "--db", path, "--checkpoint", cp, "--public-key", otherPub)
	if code != 1 {
		t.Fatalf("a checkpoint checked with another key: exit %d, want 1", code)
	}
	mustContain(t, errOut, "signature does not match")

	tamper(t, path, `DELETE FROM audit_records WHERE seq = 4`)
	code, _, errOut = runArgs(t, "", false, "audit", "verify", "--db", path, "--checkpoint", cp, "--public-key", pub)
	if code != 1 {
		t.Fatalf("the checkpointed record deleted: exit %d, want 1", code)
	}
	mustContain(t, errOut, "BROKEN at record 4 (anchor_mismatch)")

	for _, args := range [][]string{
		{"audit", "verify", "--db", path, "--checkpoint", cp},
		{"audit", "verify", "--db", path, "--key", priv},
		{"audit", "verify", "--db", path, "--checkpoint", cp, "--key", priv, "--public-key", pub},
	} {
		if code, _, _ := runArgs(t, "", false, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code, _, errOut := runArgs(t, "", false, "audit", "verify", "--db", path, "--checkpoint", cp, "--key", pub); code != 1 {
		t.Errorf("a public key given as --key: exit %d, want 1", code)
	} else {
		mustContain(t, errOut, "not an ed25519 private key")
	}
}
