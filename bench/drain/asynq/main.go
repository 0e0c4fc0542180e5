// The drain benchmark's asynq side: enqueue N no-op tasks (before the clock starts), then one
// server with the given concurrency drains them. Prints two JSON lines: {"phase":"enqueued"}
// when the queue is full, {"phase":"done"} when every task's handler has returned once (asynq
// then deletes it), with how many ran twice or never.
//
//	asynq-drain <redis unix socket> <jobs> <concurrency>
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
)

func main() {
	if len(os.Args) != 4 {
		log.Fatal("usage: asynq-drain <redis unix socket> <jobs> <concurrency>")
	}
	socket := os.Args[1]
	jobs, _ := strconv.Atoi(os.Args[2])
	concurrency, _ := strconv.Atoi(os.Args[3])
	redis := asynq.RedisClientOpt{Network: "unix", Addr: socket}

	// asynq enqueues one task per call: 16 enqueuers side by side.
	client := asynq.NewClient(redis)
	enqueueStart := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < jobs; i += 16 {
				payload := binary.LittleEndian.AppendUint64(nil, uint64(i))
				if _, err := client.Enqueue(asynq.NewTask("noop", payload)); err != nil {
					log.Fatal(err)
				}
			}
		}()
	}
	wg.Wait()
	client.Close()
	emit(map[string]any{"phase": "enqueued", "jobs": jobs, "enqueue_seconds": time.Since(enqueueStart).Seconds()})

	runs := make([]atomic.Uint32, jobs)
	var distinct atomic.Int64
	all := make(chan struct{})
	mux := asynq.NewServeMux()
	mux.HandleFunc("noop", func(_ context.Context, t *asynq.Task) error {
		i := binary.LittleEndian.Uint64(t.Payload())
		if runs[i].Add(1) == 1 && distinct.Add(1) == int64(jobs) {
			close(all)
		}
		return nil
	})
	srv := asynq.NewServer(redis, asynq.Config{Concurrency: concurrency, LogLevel: asynq.WarnLevel})
	start := time.Now()
	if err := srv.Start(mux); err != nil {
		log.Fatal(err)
	}
	<-all
	seconds := time.Since(start).Seconds()
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
	srv.Shutdown()
}

func emit(v map[string]any) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}
