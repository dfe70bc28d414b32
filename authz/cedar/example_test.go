package cedar_test

import (
	"context"
	"fmt"
	"log"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/authz"
	"github.com/toolgate/toolgate/authz/cedar"
)

// Finance staff may transfer less than 1000; support staff never may, even
// if they also work in finance.
func ExamplePolicy() {
	policy, err := cedar.New(nil, cedar.Source{Name: "transfers.cedar", Text: []byte(`
@id("small-transfers")
permit (principal in Role::"finance", action, resource == Tool::"transfer")
when { action == Action::"discover" || context.amount < 1000 };

@id("no-support-transfers")
forbid (principal in Role::"support", action, resource == Tool::"transfer");
`)})
	if err != nil {
		log.Fatal(err)
	}
	fay := &toolgate.Principal{ID: "fay", Roles: []string{"finance"}}
	mel := &toolgate.Principal{ID: "mel", Roles: []string{"finance", "support"}}
	transfer := toolgate.ToolDefinition{Name: "transfer"}
	for _, r := range []*authz.Request{
		{Principal: fay, Tool: transfer, Phase: authz.PhaseDefinition},
		{Principal: fay, Tool: transfer, Phase: authz.PhaseExecution, Call: &toolgate.ToolCall{Name: "transfer", Arguments: `{"amount":500}`}},
		{Principal: fay, Tool: transfer, Phase: authz.PhaseExecution, Call: &toolgate.ToolCall{Name: "transfer", Arguments: `{"amount":5000}`}},
		{Principal: mel, Tool: transfer, Phase: authz.PhaseDefinition},
	} {
		d, _ := policy.Authorize(context.Background(), r)
		fmt.Printf("%s %s: %v, %s\n", r.Principal.ID, r.Phase, d.Allowed, d.Reason)
	}
	// Output:
	// fay DEFINITION: true, permitted by policy "small-transfers" (transfers.cedar:2:1)
	// fay EXECUTION: true, permitted by policy "small-transfers" (transfers.cedar:2:1)
	// fay EXECUTION: false, no policy permits
	// mel DEFINITION: false, forbidden by policy "no-support-transfers" (transfers.cedar:6:1)
}
