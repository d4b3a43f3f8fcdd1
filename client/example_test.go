package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/app"
	"github.com/askbridge/askbridge/internal/config"
)

// An agent asks a question and waits for the answer. The bridge runs in
// this process, with its defaults (embedded Redis, open API, a "default"
// route answered through the API); a goroutine stands in for the person
// who answers.
func Example() {
	bridge, stop, err := startBridge(nil, app.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	ctx := context.Background()
	c, err := client.New(bridge)
	if err != nil {
		log.Fatal(err)
	}
	go answerFirstQuestion(ctx, c, client.AnswerItem{
		ID: "cleanup", Selected: []string{"Yes, delete them (Recommended)"},
	})

	ans, rec, err := c.Ask(ctx, client.QuestionRequest{Questions: []client.Question{{
		ID:       "cleanup",
		Question: "Proceed with the destructive cleanup?",
		Options: []client.Option{
			{Label: "Yes, delete them (Recommended)", Description: "Removes the three stale files."},
			{Label: "No, keep them"},
		},
	}}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rec.Status, "through the", rec.AnsweredBy.Surface)
	json.NewEncoder(os.Stdout).Encode(ans)
	// Output:
	// answered through the api
	// {"answers":[{"id":"cleanup","selected":["Yes, delete them (Recommended)"]}]}
}

// answerFirstQuestion answers the first question that turns up pending,
// as a person would from Slack or the web inbox.
func answerFirstQuestion(ctx context.Context, c *client.Client, item client.AnswerItem) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if list, err := c.Pending(ctx); err == nil && len(list.Questions) > 0 {
			c.Answer(ctx, list.Questions[0].ID, client.Answer{Answers: []client.AnswerItem{item}})
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// startBridge runs a bridge on a free loopback port with the config yaml
// (nil: the defaults) and returns its URL and a function that stops it.
func startBridge(yaml []byte, opt app.Options, adjust ...func(*config.Config)) (url string, stop func(), err error) {
	cfg, err := config.Parse(yaml)
	if err != nil {
		return "", nil, err
	}
	cfg.Listen = "127.0.0.1:0"
	for _, f := range adjust {
		f(cfg)
	}
	if err := cfg.Validate(); err != nil {
		return "", nil, err
	}
	a, err := app.New(cfg, slog.New(slog.DiscardHandler), opt)
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Run(ctx)
	}()
	return a.URL(), func() { cancel(); <-done }, nil
}
