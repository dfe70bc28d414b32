package mcptool

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Dialer returns a new transport to a server. [Connect] calls it for the
// first connection and again for every reconnection, so it must return a
// fresh transport each time (a command transport starts a new process).
// The context bounds the attempt only; the returned transport outlives it.
type Dialer func(ctx context.Context) (mcp.Transport, error)

// CommandOptions configure a server started as a command that speaks MCP
// over its standard input and output (the stdio transport). A nil
// *CommandOptions means all defaults.
type CommandOptions struct {
	// Args are the command's arguments, without the command itself. nil:
	// none.
	Args []string
	// Env holds KEY=value entries added to the environment of this process
	// for the command; a later entry wins over an earlier one and over the
	// inherited value. nil: the environment of this process.
	Env []string
	// Dir is the command's working directory. "": the current directory.
	Dir string
	// Stderr receives the command's standard error. nil: discarded.
	Stderr io.Writer
}

// Command returns a [Dialer] that starts name with opts for each connection
// and talks to it over stdio. The options are copied. Closing the
// connection closes the command's standard input and, if it does not exit,
// terminates it.
func Command(name string, opts *CommandOptions) Dialer {
	var o CommandOptions
	if opts != nil {
		o = *opts
		o.Args = slices.Clone(o.Args)
		o.Env = slices.Clone(o.Env)
	}
	return func(ctx context.Context) (mcp.Transport, error) {
		if name == "" {
			return nil, errors.New("mcptool: Command: empty command name")
		}
		cmd := exec.Command(name, o.Args...)
		if o.Env != nil {
			cmd.Env = append(os.Environ(), o.Env...)
		}
		cmd.Dir = o.Dir
		cmd.Stderr = o.Stderr
		return &mcp.CommandTransport{Command: cmd}, nil
	}
}

// HTTPOptions configure a connection to a server over streamable HTTP. A
// nil *HTTPOptions means all defaults.
type HTTPOptions struct {
	// Header holds headers sent with every request. nil: none.
	Header http.Header
	// BearerToken, when not "", is sent as "Authorization: Bearer <token>"
	// with every request, replacing an Authorization entry of Header. It is
	// never logged.
	BearerToken string
	// HTTPClient sends the requests. nil: [http.DefaultClient].
	HTTPClient *http.Client
}

// HTTP returns a [Dialer] for the streamable HTTP endpoint at url. The
// options are copied.
func HTTP(url string, opts *HTTPOptions) Dialer {
	var o HTTPOptions
	if opts != nil {
		o = *opts
		o.Header = o.Header.Clone()
	}
	base := o.HTTPClient
	if base == nil {
		base = http.DefaultClient
	}
	client := base
	if len(o.Header) > 0 || o.BearerToken != "" {
		c := *base
		rt := c.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		c.Transport = &headerTransport{next: rt, header: o.Header, token: o.BearerToken}
		client = &c
	}
	return func(ctx context.Context) (mcp.Transport, error) {
		if url == "" {
			return nil, errors.New("mcptool: HTTP: empty URL")
		}
		return &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: client}, nil
	}
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	next   http.RoundTripper
	header http.Header
	token  string
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	for k, vs := range t.header {
		r.Header.Del(k)
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	if t.token != "" {
		r.Header.Set("Authorization", "Bearer "+t.token)
	}
	return t.next.RoundTrip(r)
}

// InMemory returns a [Dialer] for servers in the same process, mostly for
// tests and examples: for each connection it makes a pair of in-memory
// transports, connects server to one of them and returns the other.
// onConnect, when not nil, receives the server's side of each connection;
// closing that session ends the connection as a dying server would.
func InMemory(server *mcp.Server, onConnect func(*mcp.ServerSession)) Dialer {
	return func(ctx context.Context) (mcp.Transport, error) {
		if server == nil {
			return nil, errors.New("mcptool: InMemory: nil server")
		}
		st, ct := mcp.NewInMemoryTransports()
		ss, err := server.Connect(ctx, st, nil)
		if err != nil {
			return nil, err
		}
		if onConnect != nil {
			onConnect(ss)
		}
		return ct, nil
	}
}
