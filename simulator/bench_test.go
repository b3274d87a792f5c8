package simulator

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The simulator must not be the bottleneck of a delivery benchmark: it has to take
// well over 5,000 deliveries a second on two cores.
func BenchmarkGenericHTTP(b *testing.B) {
	sim := New(Faults{})
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	body := []byte(`{"to":"E1001","msg_type":"text","title":"t","content":"hello","request_id":"m-1"}`)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("POST", srv.URL+"/tianyuan/messages", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer x")
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.ReportMetric(float64(sim.Stats().Accepted)/b.Elapsed().Seconds(), "deliveries/s")
}

func BenchmarkAccept(b *testing.B) {
	sim := New(Faults{})
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := sim.Accept(ctx, "sandbox", "E1001", "t", "hello", "m-1"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
