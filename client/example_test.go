package client_test

import (
	"context"
	"encoding/json"
	"log"
	"os"
	"os/signal"

	"github.com/askbridge/askbridge/client"
)

// An agent's program asks a person a question through the bridge at
// http://127.0.0.1:8080 (bridge serve's default address) and prints the
// answer. BRIDGE_TOKEN holds a token with the ask scope; a bridge with no
// tokens configured needs none. Ctrl-C withdraws the question.
//
// It needs a running bridge, so go test compiles it but does not run it;
// TestAskInProcess runs the same against a bridge started in the test.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	c, err := client.New("http://127.0.0.1:8080", client.WithToken(os.Getenv("BRIDGE_TOKEN")))
	if err != nil {
		log.Fatal(err)
	}
	ans, _, err := c.Ask(ctx, client.QuestionRequest{Questions: []client.Question{{
		ID:       "deploy",
		Question: "Deploy to prod?",
		Options:  []client.Option{{Label: "Yes"}, {Label: "No"}},
	}}})
	if err != nil {
		log.Fatal(err) // errors.Is(err, client.ErrCancelled): a person declined; see the package doc
	}
	// The canonical answer, e.g. {"answers":[{"id":"deploy","selected":["Yes"]}]}
	json.NewEncoder(os.Stdout).Encode(ans)
}
