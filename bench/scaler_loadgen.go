// Load generator for bench/scaler_bench.py: a Go gRPC client, like KEDA's own.
//
// Built by the benchmark in a temporary directory (google.golang.org/grpc from the Go module
// proxy); never committed as a binary. Requests are pre-serialized by the Python side and sent
// as raw bytes, so no generated Go code is needed. One ClientConn (one HTTP/2 connection), as
// KEDA shares one connection per scaler address.
//
// Requests file: records of 1 byte method index (0 GetMetricSpec, 1 GetMetrics, 2 IsActive),
// 4 bytes big-endian length, the serialized request. Record n is the n-th request sent.
//
// Modes: -mode closed -c N: N callers, each sends its next request when the previous answered.
// -mode open -rate R: one request every 1/R s whatever the answers (latency without queueing
// of the generator's own making). Prints one JSON object: per method count and latency
// quantiles, errors by method and status code, sends late by more than 1 ms.
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

var methods = []string{"GetMetricSpec", "GetMetrics", "IsActive"}

type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append((*(v.(*[]byte)))[:0], data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

type record struct {
	method int
	body   []byte
}

type sample struct {
	method  int
	latency time.Duration
	code    string
}

type summary struct {
	N     int     `json:"n"`
	P50Ms float64 `json:"p50_ms"`
	P90Ms float64 `json:"p90_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

type result struct {
	ElapsedS float64            `json:"elapsed_s"`
	Methods  map[string]summary `json:"methods"`
	Errors   map[string]int     `json:"errors"`
	Late     int64              `json:"late"`
}

func readRecords(path string) ([]record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []record
	for len(data) >= 5 {
		n := int(binary.BigEndian.Uint32(data[1:5]))
		if len(data) < 5+n {
			return nil, fmt.Errorf("truncated record %d", len(out))
		}
		out = append(out, record{int(data[0]), data[5 : 5+n]})
		data = data[5+n:]
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no records in %s", path)
	}
	return out, nil
}

func call(ctx context.Context, conn *grpc.ClientConn, r record) sample {
	in := r.body
	var out []byte
	start := time.Now()
	err := conn.Invoke(ctx, "/externalscaler.ExternalScaler/"+methods[r.method], &in, &out,
		grpc.ForceCodec(rawCodec{}))
	s := sample{method: r.method, latency: time.Since(start)}
	if err != nil {
		st := status.Convert(err)
		msg := st.Message()
		if len(msg) > 80 {
			msg = msg[:80]
		}
		s.code = st.Code().String() + ": " + msg
	}
	return s
}

func quantile(sorted []time.Duration, q float64) float64 {
	i := int(q * float64(len(sorted)))
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return float64(sorted[i].Microseconds()) / 1000
}

func main() {
	addr := flag.String("addr", "", "host:port")
	path := flag.String("requests", "", "requests file")
	mode := flag.String("mode", "closed", "closed or open")
	callers := flag.Int("c", 8, "concurrent callers (closed)")
	rate := flag.Float64("rate", 1000, "requests per second (open)")
	duration := flag.Duration("duration", 5*time.Second, "measured time")
	flag.Parse()
	records, err := readRecords(*path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer conn.Close()
	ctx := context.Background()
	for _, r := range records[:min(len(records), 64)] { // connect and warm up
		call(ctx, conn, r)
	}

	var mu sync.Mutex
	var samples []sample
	var late int64
	keep := func(s sample) {
		mu.Lock()
		samples = append(samples, s)
		mu.Unlock()
	}
	start := time.Now()
	deadline := start.Add(*duration)
	var wg sync.WaitGroup
	if *mode == "closed" {
		var next int64 = -1
		for i := 0; i < *callers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					n := atomic.AddInt64(&next, 1)
					keep(call(ctx, conn, records[n%int64(len(records))]))
				}
			}()
		}
	} else {
		gap := time.Duration(float64(time.Second) / *rate)
		total := int(duration.Seconds() * *rate)
		for n := 0; n < total; n++ {
			due := start.Add(time.Duration(n) * gap)
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			} else if d < -time.Millisecond {
				late++
			}
			wg.Add(1)
			go func(r record) {
				defer wg.Done()
				keep(call(ctx, conn, r))
			}(records[n%len(records)])
		}
	}
	wg.Wait()
	res := result{
		ElapsedS: time.Since(start).Seconds(),
		Methods:  map[string]summary{},
		Errors:   map[string]int{},
		Late:     late,
	}
	by := make([][]time.Duration, len(methods))
	for _, s := range samples {
		if s.code != "" {
			res.Errors[methods[s.method]+" "+s.code]++
			continue
		}
		by[s.method] = append(by[s.method], s.latency)
	}
	for m, lat := range by {
		if len(lat) == 0 {
			continue
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		res.Methods[methods[m]] = summary{
			N: len(lat), P50Ms: quantile(lat, 0.5), P90Ms: quantile(lat, 0.9),
			P99Ms: quantile(lat, 0.99), MaxMs: quantile(lat, 1),
		}
	}
	json.NewEncoder(os.Stdout).Encode(res)
}
