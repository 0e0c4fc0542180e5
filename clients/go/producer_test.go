package baton_test

import (
	"context"
	"testing"
	"time"

	baton "github.com/baton-project/baton/clients/go"
	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

// Register makes one-shot and recurring agents from Jobs, with the fields a producer sets; a
// worker runs the one-shot one, which is then gone.
func TestProducerRegistersJobs(t *testing.T) {
	ctx := context.Background()
	p := baton.NewProducer(server.conn)
	queue := unique("go-produce")
	resp, err := p.Register(ctx, queue,
		baton.Job{Name: "once", Payload: []byte("hi"), Key: "tenant-1", Priority: 5, Labels: map[string]string{"a": "b"}},
		baton.Job{Name: "hourly", Every: time.Hour, Timeout: 20 * time.Second, MaxAttempts: 3},
		baton.Job{Name: "nightly", Cron: "0 3 * * *", TimeZone: "Europe/Stockholm"})
	if err != nil || resp.GetCreated() != 3 {
		t.Fatalf("Register = %v, %v", resp, err)
	}
	once, hourly, nightly := getAgent(t, queue, "once").GetAgent(), getAgent(t, queue, "hourly").GetAgent(), getAgent(t, queue, "nightly").GetAgent()
	if string(once.GetPayload()) != "hi" || once.GetKey() != "tenant-1" || once.GetPriority() != 5 || once.GetLabels()["a"] != "b" || once.GetInterval() != nil {
		t.Errorf("one-shot: %v", once)
	}
	if hourly.GetInterval().AsDuration() != time.Hour || hourly.GetTimeout().AsDuration() != 20*time.Second || hourly.GetMaxAttempts() != 3 {
		t.Errorf("recurring: %v", hourly)
	}
	if nightly.GetCron() != "0 3 * * *" || nightly.GetTimeZone() != "Europe/Stockholm" {
		t.Errorf("cron: %v", nightly)
	}
	stop := start(newWorker(queue), func(context.Context, *batonv1.Lease) error { return nil })
	defer stop()
	eventually(t, 10*time.Second, "the one-shot job run and removed", func() bool {
		list, err := agentClient().ListAgents(ctx, &batonv1.ListAgentsRequest{Queue: queue})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range list.GetAgents() {
			if a.GetAgent().GetName() == "once" {
				return false
			}
		}
		return true
	})
}
