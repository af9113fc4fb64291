//go:build ignore

// generate writes issues.json, the sample tool result the README stores and
// explores: 400 issues of a fictional tracker, deterministic for a given seed.
//
//	go run generate.go
package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"time"
)

type issue struct {
	Number    int       `json:"number"`
	Title     string    `json:"title"`
	State     string    `json:"state"`
	Labels    []string  `json:"labels"`
	Author    author    `json:"author"`
	Comments  int       `json:"comments"`
	CreatedAt time.Time `json:"created_at"`
	Body      string    `json:"body"`
}

type author struct {
	Login string `json:"login"`
	Team  string `json:"team"`
}

func main() {
	r := rand.New(rand.NewPCG(7, 42))
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	subjects := []string{"timeout", "memory leak", "crash", "slow query", "wrong total", "login loop", "broken link", "race condition", "panic", "stale cache"}
	places := []string{"in the importer", "on Windows", "after upgrade", "under load", "with large files", "in the dashboard", "when offline", "in CSV export"}
	labels := []string{"bug", "performance", "ui", "security", "docs", "regression", "good first issue"}
	logins := []string{"ada", "grace", "linus", "barbara", "ken", "margaret", "edsger"}
	teams := []string{"core", "web", "infra"}
	start := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	var out []issue
	for i := 1; i <= 400; i++ {
		subject, place := pick(subjects), pick(places)
		var ls []string
		for _, l := range labels {
			if r.IntN(5) == 0 {
				ls = append(ls, l)
			}
		}
		if ls == nil {
			ls = []string{}
		}
		state := "open"
		if r.IntN(3) > 0 {
			state = "closed"
		}
		out = append(out, issue{
			Number:    i,
			Title:     fmt.Sprintf("%s %s", subject, place),
			State:     state,
			Labels:    ls,
			Author:    author{Login: pick(logins), Team: pick(teams)},
			Comments:  r.IntN(40),
			CreatedAt: start.Add(time.Duration(r.IntN(300*24)) * time.Hour),
			Body:      fmt.Sprintf("Steps: run the job %s. Expected it to finish; got a %s. Seen %d times this week.", place, subject, 1+r.IntN(20)),
		})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile("issues.json", append(b, '\n'), 0o644); err != nil {
		panic(err)
	}
}
