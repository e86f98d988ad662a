// A Leasehold worker in Go, on the client Swagger Codegen generates from the
// OpenAPI 3.0.3 document (docs/api.md, "A Go client"): the generated package
// sits in the `leasehold` directory of the module `leasehold-worker`. Run:
//
//	LEASEHOLD_URL=http://localhost:3000 LEASEHOLD_TOKEN=lh_... \
//	    go run . lease://acme/renderers/doc-1
//
// It opens a session, acquires the route, renews the lease, writes a
// checkpoint fenced by the lease's token, reads it back, releases and closes
// the session. Each step prints one JSON line. Fencing tokens are int64: they
// grow with every grant and never wrap, so they pass 2^31 on a busy family.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"leasehold-worker/leasehold"
)

func say(step string, fields map[string]interface{}) {
	fields["step"] = step
	line, _ := json.Marshal(fields)
	fmt.Println(string(line))
}

func check(err error) {
	if err == nil {
		return
	}
	if e, ok := err.(leasehold.GenericSwaggerError); ok {
		fmt.Fprintf(os.Stderr, "%s: %s\n", e.Error(), e.Body())
	} else {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(1)
}

// A fresh request_id: a retried call sends the same one, so the server answers it once.
func requestID(step string) string {
	return fmt.Sprintf("go-%s-%d", step, time.Now().UnixNano())
}

func main() {
	cfg := leasehold.NewConfiguration()
	// The generator does not substitute the {origin} server variable, nor apply HTTP bearer schemes: set both here.
	cfg.BasePath = os.Getenv("LEASEHOLD_URL")
	cfg.AddDefaultHeader("Authorization", "Bearer "+os.Getenv("LEASEHOLD_TOKEN"))
	api := leasehold.NewAPIClient(cfg)
	ctx := context.Background()
	// Path segments go in as they are: the generated client percent-encodes them.
	route := strings.Split(strings.TrimPrefix(os.Args[1], "lease://"), "/")
	realm, area, resource := route[0], route[1], route[2]

	opened, _, err := api.SessionsApi.OpenSession(ctx, leasehold.OpenSessionRequest{OwnerId: "go-worker", TtlMs: 15000})
	check(err)
	sessionID := opened.Session.SessionId
	say("session_opened", map[string]interface{}{"holder_incarnation": opened.Session.HolderIncarnation})

	acquired, _, err := api.LeasesApi.AcquireLease(ctx, leasehold.AcquireLeaseRequest{SessionId: sessionID, RequestId: requestID("acquire"), TtlMs: 30000}, realm, area, resource)
	check(err)
	lease := acquired.Lease
	say(acquired.Code, map[string]interface{}{"lease_id": lease.LeaseId, "fencing_token": lease.FencingToken})

	renewed, _, err := api.LeasesApi.RenewLease(ctx, leasehold.RenewLeaseRequest{
		SessionId: sessionID, RequestId: requestID("renew"), LeaseId: lease.LeaseId, FencingToken: lease.FencingToken, TtlMs: 30000,
	}, realm, area, resource)
	check(err)
	say(renewed.Code, map[string]interface{}{"fencing_token": renewed.Lease.FencingToken, "renewal_count": renewed.Lease.RenewalCount})

	// Every write the lease guards carries its fencing token: a stale holder gets lease_lost.
	var value interface{} = map[string]interface{}{"page": 12, "done": false}
	written, _, err := api.CheckpointsApi.WriteCheckpoint(ctx, leasehold.WriteCheckpointRequest{
		SessionId: sessionID, RequestId: requestID("checkpoint"), LeaseId: lease.LeaseId, FencingToken: lease.FencingToken, Value: &value,
	}, realm, area, resource)
	check(err)
	say(written.Code, map[string]interface{}{"version": written.Checkpoint.Version, "fencing_token": written.Checkpoint.FencingToken})

	read, _, err := api.CheckpointsApi.ReadCheckpoint(ctx, realm, area, resource)
	check(err)
	say(read.Code, map[string]interface{}{"value": *read.Checkpoint.Value, "fencing_token": read.Checkpoint.FencingToken})

	released, _, err := api.LeasesApi.ReleaseLease(ctx, leasehold.ReleaseLeaseRequest{
		SessionId: sessionID, RequestId: requestID("release"), LeaseId: lease.LeaseId, FencingToken: lease.FencingToken,
	}, realm, area, resource)
	check(err)
	say(released.Code, map[string]interface{}{"fencing_token": released.FencingToken})

	closed, _, err := api.SessionsApi.CloseSession(ctx, leasehold.CloseSessionRequest{SessionId: sessionID})
	check(err)
	say(closed.Code, map[string]interface{}{"released": closed.Released})
}
