// Package privacy keeps personal data and secrets away from a model: it
// finds them in text, replaces them by tokens before the model sees them,
// and restores the original values only where a grant allows.
//
//	package main
//
//	import (
//		"context"
//		"fmt"
//
//		"github.com/toolgate/toolgate/privacy"
//	)
//
//	func main() {
//		ctx := context.Background()
//		scanner := privacy.NewScanner(nil) // all built-in recognizers
//		r := privacy.NewRewriter(scanner, privacy.NewVault())
//
//		msg, _ := r.Tokenize(ctx, "Mail ann@example.com, card 4111 1111 1111 1111.")
//		fmt.Println(msg) // Mail [EMAIL_ADDRESS_1], card [CREDIT_CARD_1].
//
//		// The model asks a tool that may receive e-mail addresses only.
//		args, _ := r.Arguments(ctx, []byte(`{"to":"[EMAIL_ADDRESS_1]","card":"[CREDIT_CARD_1]"}`),
//			privacy.Types(privacy.EmailAddress))
//		fmt.Println(string(args)) // {"to":"ann@example.com","card":"[CREDIT_CARD_1]"}
//	}
//
// # Pieces
//
//   - A [Recognizer] finds values of some [EntityType]s. [Builtins] are
//     hand-written candidate finders with validators (checksums, issuer
//     tables, invalidation rules, credentials by header, parameter name and
//     provider format) and the embedded recognizer of names, places,
//     organisations, addresses, dates, ages and titles ([Embedded]), which
//     decides with word lists shipped in the module; [Rule] wraps a Go regular expression,
//     [Dictionary] finds known values with an Aho–Corasick automaton, and
//     [Analyzer] calls an external analyzer speaking Presidio's /analyze
//     protocol.
//   - A [Scanner] runs recognizers over a text in linear time and merges
//     overlapping findings into non-overlapping [Finding]s.
//   - A [Vault] maps tokens such as [EMAIL_ADDRESS_1] to original values,
//     one per conversation, persisted sealed with AES-GCM ([Vault.Seal],
//     [OpenVault]). A token is restored only to the value its vault bound
//     to it, and a [Guard] restores in a model's reply only the tokens
//     bound before the model was called.
//   - A [Rewriter] tokenizes text and JSON payloads, restores tokens of the
//     types a [Grant] allows, rewrites output for the end user in an
//     [OutputMode] and streams ([Rewriter.Stream]).
//   - [Evaluate] scores a scanner on labelled data.
//
// Errors never contain the values found: [*LimitError], [*BlockedError]
// and [*AnalyzerError] name limits, types and counts only.
package privacy
