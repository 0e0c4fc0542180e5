// Command worker is an example Baton worker, with the same flags and output as the Rust
// baton-worker: it takes agents from one queue, "works" on each for -work-ms (or until its
// lease is lost) and completes it with SUCCESS, printing every lease it acquires and every end
// as a JSON line on stdout. SIGINT/SIGTERM release held leases before exiting.
//
//	go run ./examples/worker --addr 127.0.0.1:50051 --queue demo --worker-id go-1
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	baton "github.com/baton-project/baton/clients/go"
	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

func emit(event string, lease *batonv1.Lease) {
	line, _ := json.Marshal(map[string]any{"event": event, "name": lease.GetName(), "token": lease.GetToken(), "t": time.Now().UnixMilli()})
	fmt.Println(string(line))
}

func main() {
	addr := flag.String("addr", "127.0.0.1:50051", "Baton's gRPC address")
	queue := flag.String("queue", "", "queue to work (required)")
	workerID := flag.String("worker-id", "", "this worker's id (required)")
	maxLeases := flag.Int("max-leases", 1, "leases held at once")
	workMs := flag.Int("work-ms", 1000, "how long each run takes")
	heartbeatMs := flag.Int("heartbeat-ms", 10_000, "heartbeat period")
	flag.Parse()
	if *queue == "" || *workerID == "" {
		flag.Usage()
		os.Exit(2)
	}
	conn, err := grpc.NewClient(strings.TrimPrefix(*addr, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	w := baton.NewWorker(conn, *queue, *workerID)
	w.MaxLeases = *maxLeases
	w.HeartbeatEvery = time.Duration(*heartbeatMs) * time.Millisecond
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	work := time.Duration(*workMs) * time.Millisecond
	_ = w.Run(ctx, func(ctx context.Context, lease *batonv1.Lease) error {
		emit("acquired", lease)
		select {
		case <-time.After(work):
			emit("done", lease)
			return nil
		case <-ctx.Done():
			emit("cancelled", lease)
			return ctx.Err()
		}
	})
	line, _ := json.Marshal(map[string]any{"event": "stopped", "worker_id": *workerID})
	fmt.Println(string(line))
}
