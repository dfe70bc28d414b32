package privacy_test

import (
	"context"
	"fmt"
	"regexp"

	"github.com/toolgate/toolgate/privacy"
)

func Example() {
	ctx := context.Background()
	scanner := privacy.NewScanner(nil)
	r := privacy.NewRewriter(scanner, privacy.NewVault())

	msg, _ := r.Tokenize(ctx, "Mail ann@example.com, card 4111 1111 1111 1111.")
	fmt.Println(msg)

	args, _ := r.Arguments(ctx, []byte(`{"to":"[EMAIL_ADDRESS_1]","card":"[CREDIT_CARD_1]"}`),
		privacy.Types(privacy.EmailAddress))
	fmt.Println(string(args))
	// Output:
	// Mail [EMAIL_ADDRESS_1], card [CREDIT_CARD_1].
	// {"to":"ann@example.com","card":"[CREDIT_CARD_1]"}
}

func ExampleRewriter_TokenizeJSON() {
	ctx := context.Background()
	r := privacy.NewRewriter(privacy.NewScanner(nil), privacy.NewVault())
	tok, _ := r.TokenizeJSON(ctx, []byte(`{"card":4111111111111111,"ip":"10.0.0.1"}`))
	fmt.Println(string(tok))
	back, _ := r.RestoreJSON(tok, privacy.AllTypes())
	fmt.Println(string(back))
	// Output:
	// {"card":"[CREDIT_CARD_1]","ip":"[IP_ADDRESS_1]"}
	// {"card":4111111111111111,"ip":"10.0.0.1"}
}

func ExampleRewriter_Output() {
	ctx := context.Background()
	r := privacy.NewRewriter(privacy.NewScanner(nil), privacy.NewVault())
	r.Tokenize(ctx, "ann@example.com")
	reply := "I wrote to [EMAIL_ADDRESS_1] and to bob@example.org."
	for _, m := range []privacy.OutputMode{privacy.ModeBlock, privacy.ModeTokens, privacy.ModeRestore, privacy.ModeRedact} {
		out, err := r.Output(ctx, reply, m, privacy.Types(privacy.EmailAddress))
		fmt.Printf("%s: %s %v\n", m, out, err)
	}
	// Output:
	// block:  privacy: output blocked: 1 new value(s) of type EMAIL_ADDRESS
	// tokens: I wrote to [EMAIL_ADDRESS_1] and to [EMAIL_ADDRESS_2]. <nil>
	// restore: I wrote to ann@example.com and to bob@example.org. <nil>
	// redact: I wrote to [REDACTED EMAIL_ADDRESS] and to [REDACTED EMAIL_ADDRESS]. <nil>
}

func ExampleRewriter_Stream() {
	ctx := context.Background()
	r := privacy.NewRewriter(privacy.NewScanner(nil), privacy.NewVault())
	r.Tokenize(ctx, "ann@example.com")
	st := r.Stream(privacy.ModeRestore, privacy.AllTypes())
	// The stream returns text once no value can reach back into it.
	for _, chunk := range []string{"Dear [EMAIL_", "ADDRESS_1], your order", " has shipped and should be with you", " by the end of the week."} {
		out, _ := st.Write(ctx, chunk)
		fmt.Printf("%q\n", out)
	}
	out, _ := st.Flush(ctx)
	fmt.Printf("%q\n", out)
	// Output:
	// ""
	// ""
	// ""
	// "Dear ann@example.com, your order has shipped and should "
	// "be with you by the end of the week."
}

func ExampleRule() {
	employee := &privacy.Rule{Type: "EMPLOYEE_ID", Pattern: regexp.MustCompile(`\bE-[0-9]{6}\b`)}
	accounts := privacy.NewDictionary("ACCOUNT", []string{"acme corp"}, &privacy.DictionaryOptions{IgnoreCase: true})
	s := privacy.NewScanner(&privacy.ScannerOptions{Recognizers: append(privacy.Builtins(), employee, accounts)})
	r := privacy.NewRewriter(s, privacy.NewVault())
	out, _ := r.Tokenize(context.Background(), "E-123456 works for ACME Corp.")
	fmt.Println(out)
	// Output:
	// [EMPLOYEE_ID_1] works for [ACCOUNT_1].
}

func ExampleEmbedded() {
	ctx := context.Background()
	r := privacy.NewRewriter(privacy.NewScanner(nil), privacy.NewVault())
	msg, _ := r.Tokenize(ctx, "Please send the contract to Anna Schmidt, 12 Rue de la Paix, Paris. "+
		"She was born on 4/17/1986; her colleague Dr. Tomasz Nowak at Wexford Analytics Group has a copy.")
	fmt.Println(msg)
	// Output:
	// Please send the contract to [PERSON_1], [ADDRESS_1], [LOCATION_1]. She was born on [DATE_TIME_1]; her colleague [PERSON_2] [PERSON_3] at [ORGANIZATION_1] has a copy.
}
