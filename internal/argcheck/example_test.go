package argcheck_test

import (
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/toolgate/toolgate/internal/argcheck"
)

func Example() {
	type booking struct {
		Flight string `json:"flight"`
		Seats  int    `json:"seats"`
	}
	schema, _ := jsonschema.For[booking](nil)
	resolved, _ := schema.Resolve(nil)
	v := argcheck.Compile(schema, resolved)

	fmt.Println(v.Fast(), v.Validate([]byte(`{"flight":"VX205","seats":2}`)))
	var e *argcheck.Error
	if err := v.Validate([]byte(`{"flight":"VX205","seats":"two"}`)); errors.As(err, &e) {
		fmt.Printf("%s %s: %v\n", e.Pointer, e.Keyword, e)
	}
	// Output:
	// true <nil>
	// /seats type: validating root: validating /properties/seats: type: two has type "string", want "integer"
}
