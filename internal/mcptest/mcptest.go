// Package mcptest is a small MCP server for tests and the offline demo,
// built with the same SDK as Conclave's client: a weather stand-in with the
// tool names of MassGen's weather example, and tools that misbehave on
// purpose — crash mid-call, hang, send 10 MB, return an image — plus a
// call log (one JSON line per call, with its idempotency key) so tests can
// count how often a call really ran.
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// CallLogEnv names the file the server appends its call log to.
const CallLogEnv = "MCPTEST_CALL_LOG"

// IdempotencyKey is the _meta field the client puts its key in (kept in
// step with engine/mcp; the test of that package checks they agree).
const IdempotencyKey = "conclave/idempotency_key"

// Call is one line of the call log.
type Call struct {
	Tool      string          `json:"tool"`
	Key       string          `json:"key"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	At        time.Time       `json:"at"`
}

// ReadCallLog reads a call log; a missing file is an empty log.
func ReadCallLog(path string) ([]Call, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var calls []Call
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var c Call
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			return nil, fmt.Errorf("call log line %q: %w", line, err)
		}
		calls = append(calls, c)
	}
	return calls, nil
}

// Forecast is the stand-in's weather for a city, so that a test can find
// it in an answer.
func Forecast(city string) string {
	return fmt.Sprintf("Forecast for %s: 18°C, light rain, wind 12 km/h (stand-in data)", city)
}

// PNG is a 1×1 image the image tool returns.
var PNG = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0x0d, 'I', 'H', 'D', 'R', 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89}

// Serve runs the server on stdin/stdout until the client goes away.
func Serve(ctx context.Context) error {
	return NewServer(os.Getenv(CallLogEnv)).Run(ctx, &sdk.StdioTransport{})
}

type logger struct {
	mu   sync.Mutex
	path string
}

func (l *logger) log(req *sdk.CallToolRequest) {
	if l.path == "" {
		return
	}
	key, _ := req.Params.GetMeta()[IdempotencyKey].(string)
	line, _ := json.Marshal(Call{Tool: req.Params.Name, Key: key, Arguments: req.Params.Arguments, At: time.Now().UTC()})
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(l.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.Write(append(line, '\n'))
}

type cityArgs struct {
	City string `json:"city" jsonschema:"the city, e.g. Paris"`
}

type textArgs struct {
	Text string `json:"text" jsonschema:"text to echo"`
}

type sizeArgs struct {
	Bytes int `json:"bytes,omitempty" jsonschema:"how many bytes to return; default 10 MB"`
}

type secondsArgs struct {
	Seconds float64 `json:"seconds" jsonschema:"how long to take"`
}

type none struct{}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// NewServer builds the server; calls are logged to callLog when it is set.
func NewServer(callLog string) *sdk.Server {
	l := &logger{path: callLog}
	s := sdk.NewServer(&sdk.Implementation{Name: "conclave-mcptest", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "get_weather", Description: "Current weather for a city."},
		func(_ context.Context, req *sdk.CallToolRequest, in cityArgs) (*sdk.CallToolResult, any, error) {
			l.log(req)
			if strings.TrimSpace(in.City) == "" {
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "city is required"}}}, nil, nil
			}
			return text(Forecast(in.City)), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "get_forecast", Description: "Weather forecast for a city."},
		func(_ context.Context, req *sdk.CallToolRequest, in cityArgs) (*sdk.CallToolResult, any, error) {
			l.log(req)
			return text(Forecast(in.City)), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo the text back."},
		func(_ context.Context, req *sdk.CallToolRequest, in textArgs) (*sdk.CallToolResult, any, error) {
			l.log(req)
			return text(in.Text), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Exit in the middle of the call."},
		func(_ context.Context, req *sdk.CallToolRequest, _ none) (*sdk.CallToolResult, any, error) {
			l.log(req)
			fmt.Fprintln(os.Stderr, "mcptest: crashing as asked")
			os.Exit(3)
			return nil, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "hang", Description: "Never answer."},
		func(ctx context.Context, req *sdk.CallToolRequest, _ none) (*sdk.CallToolResult, any, error) {
			l.log(req)
			select {} // not even a cancellation ends it
		})
	sdk.AddTool(s, &sdk.Tool{Name: "slow", Description: "Answer after a while."},
		func(ctx context.Context, req *sdk.CallToolRequest, in secondsArgs) (*sdk.CallToolResult, any, error) {
			l.log(req)
			select {
			case <-time.After(time.Duration(in.Seconds * float64(time.Second))):
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return text(fmt.Sprintf("slept %gs", in.Seconds)), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "big", Description: "Return a large text."},
		func(_ context.Context, req *sdk.CallToolRequest, in sizeArgs) (*sdk.CallToolResult, any, error) {
			l.log(req)
			n := in.Bytes
			if n <= 0 {
				n = 10 << 20
			}
			return text(strings.Repeat("x", n)), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "image", Description: "Return a small PNG image."},
		func(_ context.Context, req *sdk.CallToolRequest, _ none) (*sdk.CallToolResult, any, error) {
			l.log(req)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a dot:"}, &sdk.ImageContent{Data: PNG, MIMEType: "image/png"}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Answer with a JSON-RPC error."},
		func(_ context.Context, req *sdk.CallToolRequest, _ none) (*sdk.CallToolResult, any, error) {
			l.log(req)
			return nil, nil, fmt.Errorf("the tool failed on purpose")
		})
	return s
}
