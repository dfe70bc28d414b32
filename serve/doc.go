// Package serve builds the approval service of "toolgate serve" from a
// YAML configuration file: it reads and checks the file, opens the store
// and the audit log it names, builds each agent's client on its model
// provider with its tools (built-in and from MCP servers), Cedar policies
// and privacy guard, and returns a [server.Config] for [server.New].
//
//	fc, err := serve.LoadConfig("serve.yaml")
//	if err != nil {
//		log.Fatal(err) // a *ConfigError lists every problem with its line
//	}
//	cfg, closeAll, err := serve.Build(ctx, fc, nil)
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer closeAll()
//	srv, err := server.New(cfg)
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer srv.Close()
//	log.Fatal(http.ListenAndServe("127.0.0.1:8080", srv))
//
// The file's keys are the yaml tags of [FileConfig] and the types it
// holds; examples/serve.yaml is a complete file with comments, and
// docs/SERVICE.md the guide.
//
// This package is what links every provider SDK, both store drivers,
// Cedar and the MCP SDK. Package server links none of them: a program
// that embeds the service with its own model and store builds a
// [server.Config] in Go and does not import this package.
package serve
