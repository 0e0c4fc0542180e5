// The drain benchmark's Baton side, written as clients/go/README.md tells users to write a
// worker: register N one-shot no-op agents (Register in batches of 1000, before the clock
// starts), then one baton.Worker with MaxLeases = concurrency drains them. Prints two JSON
// lines: {"phase":"enqueued"} when the queue is full, {"phase":"done"} when every agent has run
// and the queue is empty (every completion landed: ListAgents finds nothing), with how many
// ran twice or never.
//
//	baton-drain <baton address> <jobs> <concurrency>
//
// BATON_DRAIN_CPUPROFILE=FILE writes a Go CPU profile of the drain (from the worker's start to
// the end) to FILE, for `go tool pprof -top <binary> FILE`. BATON_DRAIN_STREAMS=K runs K
// baton.Workers of concurrency/K leases each (one Session stream apiece) instead of one.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	baton "github.com/baton-project/baton/clients/go"
	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

const queue = "drain"

func main() {
	if len(os.Args) != 4 {
		log.Fatal("usage: baton-drain <baton address> <jobs> <concurrency>")
	}
	addr := os.Args[1]
	jobs, _ := strconv.Atoi(os.Args[2])
	concurrency, _ := strconv.Atoi(os.Args[3])
	// BATON_DRAIN_KEYS=K spreads the jobs over K flow-control keys (Agent.key), round-robin.
	keys, _ := strconv.Atoi(os.Getenv("BATON_DRAIN_KEYS"))
	client, err := baton.Dial(addr)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	agents := batonv1.NewAgentServiceClient(client)

	enqueueStart := time.Now()
	for i := 0; i < jobs; i += 1000 {
		req := &batonv1.RegisterRequest{Queue: queue}
		for j := i; j < min(jobs, i+1000); j++ {
			agent := &batonv1.Agent{Name: fmt.Sprintf("j%d", j), Timeout: durationpb.New(30 * time.Second)}
			if keys > 0 {
				agent.Key = fmt.Sprintf("k%d", j%keys)
			}
			req.Agents = append(req.Agents, agent)
		}
		if _, err := agents.Register(context.Background(), req); err != nil {
			log.Fatal(err)
		}
	}
	emit(map[string]any{"phase": "enqueued", "jobs": jobs, "enqueue_seconds": time.Since(enqueueStart).Seconds()})

	runs := make([]atomic.Uint32, jobs)
	var distinct atomic.Int64
	all := make(chan struct{})
	streams, _ := strconv.Atoi(os.Getenv("BATON_DRAIN_STREAMS"))
	streams = max(streams, 1)
	var ws []*baton.Worker
	for i := 0; i < streams; i++ {
		w := baton.NewWorker(client, queue, fmt.Sprintf("drain-%d", i+1))
		w.MaxLeases = concurrency / streams
		ws = append(ws, w)
	}
	ctx, stop := context.WithCancel(context.Background())
	if path := os.Getenv("BATON_DRAIN_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	stopped := make(chan error)
	for _, w := range ws {
		go func() {
			stopped <- w.Run(ctx, func(_ context.Context, lease *batonv1.Lease) error {
				i, _ := strconv.Atoi(lease.GetName()[1:])
				if runs[i].Add(1) == 1 && distinct.Add(1) == int64(jobs) {
					close(all)
				}
				return nil
			})
		}()
	}
	<-all
	// Every handler has run; done when the last completions have landed too.
	for {
		l, err := agents.ListAgents(context.Background(), &batonv1.ListAgentsRequest{Queue: queue, PageSize: 1})
		if err != nil {
			log.Fatal(err)
		}
		if len(l.GetAgents()) == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	seconds := time.Since(start).Seconds()
	stop()
	for range ws {
		if err := <-stopped; err != nil {
			log.Fatal(err)
		}
	}
	duplicates, missing := 0, 0
	for i := range runs {
		n := int(runs[i].Load())
		if n == 0 {
			missing++
		}
		if n > 1 {
			duplicates += n - 1
		}
	}
	emit(map[string]any{"phase": "done", "jobs": jobs, "seconds": seconds, "duplicates": duplicates, "missing": missing})
}

func emit(v map[string]any) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}
