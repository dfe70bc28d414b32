package argcheck

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/google/jsonschema-go/jsonschema"
)

// The argument shapes of the loop benchmark's scenario (bench_test.go and
// loop_bench_test.go of package toolgate), as typed tools declare them.
type (
	statusIn struct {
		Flight string `json:"flight"`
	}
	forecastIn struct {
		City string `json:"city"`
		Days int    `json:"days"`
	}
	bookIn struct {
		Flight string `json:"flight"`
		Seats  int    `json:"seats"`
		Class  string `json:"class"`
	}
)

// BenchmarkCheckDecode is what a typed call pays for its arguments: the
// schema check and the decoding into the input struct, in one pass, for
// each argument shape of the scenario.
func BenchmarkCheckDecode(b *testing.B) {
	benchCheckDecode[statusIn](b, "flightStatus", `{"flight":"VX205"}`)
	benchCheckDecode[forecastIn](b, "forecast", `{"city":"Paris","days":3}`)
	benchCheckDecode[bookIn](b, "bookFlight", `{"flight":"VX205","seats":2,"class":"economy"}`)
}

func benchCheckDecode[T any](b *testing.B, name, doc string) {
	b.Run(name, func(b *testing.B) {
		s, err := jsonschema.For[T](nil)
		if err != nil {
			b.Fatal(err)
		}
		d := NewDecoder(compile(b, s), reflect.TypeFor[T]())
		data := []byte(doc)
		b.ReportAllocs()
		for b.Loop() {
			var in T
			redecode, err := d.Decode(data, doc, unsafe.Pointer(&in))
			if err != nil || redecode {
				b.Fatalf("Decode: %v, redecode %v", err, redecode)
			}
		}
		var in T
		if _, err := d.Decode(data, doc, unsafe.Pointer(&in)); err != nil || reflect.ValueOf(in).IsZero() {
			b.Fatalf("decoded %+v, %v", in, err)
		}
	})
}
