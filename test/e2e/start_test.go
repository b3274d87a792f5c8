package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"herald/kernel"
	"herald/models"
)

// TestRolesStartTogetherOnAFreshDatabase starts a web process, two workers and a
// scheduler at the same moment on a fresh database, as an orchestrator does: they take
// turns at the first-start steps, so every one comes up and answers /readyz, the schema
// is migrated once and exactly one first admin exists.
func TestRolesStartTogetherOnAFreshDatabase(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	if env["HERALD_MYSQL_DSN"] == "" || env["HERALD_REDIS_URL"] == "" {
		t.Skip("needs HERALD_TEST_MYSQL_DSN and HERALD_TEST_REDIS_URL: split roles share MySQL and Redis")
	}
	heraldBinary(t) // build first, so the processes start together
	roles := []string{"web", "worker", "worker", "scheduler"}
	addrs := make([]string, len(roles))
	for i := range roles {
		addrs[i] = freeAddr(t)
	}
	procs := make([]*process, len(roles))
	for i, role := range roles {
		procs[i] = startRole(t, env, role, "HERALD_ADDR="+addrs[i])
	}
	// Each must come up: /readyz answers 200 within 30 s, and no process exits.
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for i, addr := range addrs {
		for {
			select {
			case <-procs[i].Done():
				t.Fatalf("the %s process exited: %v", roles[i], procs[i].Wait())
			default:
			}
			resp, err := client.Get("http://" + addr + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s process: /readyz not ready 30 s after the start: %v %v", roles[i], resp, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for i, p := range procs {
		select {
		case <-p.Done():
			t.Fatalf("the %s process exited: %v", roles[i], p.Wait())
		default:
		}
	}
	store, err := models.Open(kernel.Options{MySQLDSN: env["HERALD_MYSQL_DSN"], SecretKey: []byte(env["HERALD_SECRET_KEY"])})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if n, err := store.Access().CountUsers(context.Background()); err != nil || n != 1 {
		t.Errorf("%d console users after the start (%v), want exactly the first admin", n, err)
	}
}
