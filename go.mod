module github.com/toolgate/toolgate

go 1.26.8

require (
	github.com/cedar-policy/cedar-go v1.9.1
	github.com/google/go-cmp v0.7.0
	github.com/google/jsonschema-go v0.4.3
)

require (
	github.com/go-json-experiment/json v1.27.2 // indirect
	golang.org/x/exp v0.0.0-20220921023135-46d9e7742f1e // indirect
)
