// Package audit keeps an append-only, hash-chained log of what happened to
// tool calls that waited for a decision: requested, decided (who, and by
// what: a person, a rule, a standing grant, the system), edited, executed,
// denied, expired, refused; and revealed, when a person was shown the
// original values behind privacy tokens. Records carry a digest of the call's arguments,
// never the arguments; each record holds the hash of the one before it, so
// [Verify] detects any altered, deleted, inserted or reordered record.
//
//	package main
//
//	import (
//		"context"
//		"fmt"
//		"log"
//
//		"github.com/toolgate/toolgate/audit"
//		"github.com/toolgate/toolgate/audit/sqlite"
//	)
//
//	func main() {
//		ctx := context.Background()
//		l, err := sqlite.Open(ctx, "audit.db", nil)
//		if err != nil {
//			log.Fatal(err)
//		}
//		defer l.Close()
//
//		err = l.Append(ctx, &audit.Record{
//			ConversationID: "trip-42", PauseID: "p1", CallKey: "c1", Tool: "bookFlight",
//			Kind:       audit.KindDecided,
//			Actor:      audit.Actor{ID: "alice", Source: audit.SourcePerson},
//			Reason:     "allowed",
//			ArgsDigest: audit.Digest([]byte(`{"flight":"VX205"}`)),
//		})
//		if err != nil {
//			log.Fatal(err)
//		}
//		report, err := audit.Verify(ctx, l, nil)
//		if err != nil {
//			log.Fatal(err) // a *audit.RecordError names the first broken record
//		}
//		fmt.Println(report.Records, "records intact; head", report.Head)
//	}
//
// From the command line: toolgate audit verify --db audit.db.
//
// # The chain
//
// Records are numbered from 1 without gaps. A record's hash
// ([Record.ComputeHash]) is SHA-256 over a length-prefixed encoding of all
// its other fields, the previous record's hash included ("" for record 1);
// the definition is precise enough to re-implement from the JSON form in
// any language. Appends are atomic: [Log] implementations seal a record
// after the current head while holding their write lock ([Seal]), so
// concurrent appenders, in one process or several, never fork the chain.
//
// # What verification can and cannot show
//
// Changing any field of a stored record changes its hash; deleting,
// inserting or moving a record breaks the sequence or a link. But the
// hashes use no secret: whoever can write the log can delete its last
// records, or change a record and recompute every hash after it, and the
// shortened or rewritten chain is valid. An [Anchor] (the sequence number
// and hash of the head, from [Report.Head]) published or kept where the
// log's writers cannot change it closes that gap: [VerifyOptions.Anchor]
// then requires the log to hold that very record. Anchor regularly.
//
// # Arguments
//
// A record holds [Digest] of the arguments: SHA-256 of their RFC 8785
// canonical JSON form (of the raw bytes when they are not JSON). A digest
// shows whether the arguments that ran are the ones that were approved,
// without storing them; but it confirms a guess of low-entropy arguments.
// [KeyedDigest] (HMAC-SHA-256 under a key kept apart from the log) does
// not. Reason is free text: never put argument values in it.
//
// # Stability
//
// [Kind], [Source] and [Problem] values, the JSON form (version [Version])
// and the hash definition never change; new kinds may be added
// ([KindRevealed] was), which verifiers built before them report as
// [ProblemUnknownKind]; a new form would have a new
// version, and records of an unknown version are refused, not guessed at.
package audit
