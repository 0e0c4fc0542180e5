// Command worker is an example Baton worker, with the same flags and output as the Rust
// baton-worker: it takes agents from one queue, "works" on each for -work-ms (or until its
// lease is lost) and completes it with SUCCESS, printing every lease it acquires and every end
// as a JSON line on stdout. SIGINT/SIGTERM release held leases before exiting.
//
//	go run ./examples/worker --addr 127.0.0.1:50051 --queue demo --worker-id go-1
//
// For a Baton with TLS, mutual TLS and tokens, add --ca-file (TLS), --cert-file and --key-file
// (a client certificate) and --token (or the environment variable BATON_TOKEN):
//
//	BATON_TOKEN=baton_… go run ./examples/worker --addr localhost:50051 --ca-file ca.pem \
//	    --cert-file client.pem --key-file client.key --queue demo --worker-id go-1
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
	caFile := flag.String("ca-file", "", "connect over TLS, trusting this CA certificate (PEM)")
	certFile := flag.String("cert-file", "", "client certificate (PEM) for mutual TLS; with --key-file")
	keyFile := flag.String("key-file", "", "the client certificate's private key (PEM)")
	token := flag.String("token", "", "API token sent on every call (default: $BATON_TOKEN)")
	flag.Parse()
	if *queue == "" || *workerID == "" {
		flag.Usage()
		os.Exit(2)
	}
	if *token == "" {
		*token = os.Getenv("BATON_TOKEN")
	}
	opts := []baton.Option{baton.WithToken(*token), baton.WithClientCertificate(*certFile, *keyFile)}
	if *caFile != "" {
		opts = append(opts, baton.WithTLS(*caFile))
	}
	client, err := baton.Dial(strings.TrimPrefix(*addr, "http://"), opts...)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	w := baton.NewWorker(client, *queue, *workerID)
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
