// Command embed is the smallest program that embeds the approval service:
// a scripted model, the in-memory conversation and record stores, one API
// key. TestEmbedDependencies lists what it links.
package main

import (
	"log"
	"net/http"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/memory"
)

func main() {
	model := scripted.New(scripted.Reply{Text: "hello"})
	client := toolgate.NewClient(model, nil, &toolgate.ClientOptions{Store: memory.New()})
	srv, err := server.New(&server.Config{
		Agents:  map[string]*server.Agent{"hello": {Client: client}},
		APIKeys: []server.APIKey{{SHA256: server.HashAPIKey("key"), Principal: toolgate.Principal{ID: "ada"}}},
		Records: records.NewMemory(),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	log.Fatal(http.ListenAndServe("localhost:8080", srv))
}
