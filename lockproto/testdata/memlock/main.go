// Command memlock is a lock client of the lock-client protocol that keeps
// its locks in its own memory: no server, so that a benchmark measures the
// harness's side of the protocol alone. Being a Go program, it reads the
// wall clock without libc: the clock-skew library cannot reach it.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"
)

type msg map[string]any

func main() {
	in := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	send := func(m msg) {
		b, _ := json.Marshal(m)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	if !in.Scan() {
		return
	}
	zero := time.Now()
	ms := func() float64 { return float64(time.Since(zero)) / float64(time.Millisecond) }
	send(msg{"type": "init_ok", "now_ms": ms(), "wall_ms": float64(time.Now().UnixMilli()), "client": "memlock (in memory, go)", "abilities": []string{"renew"}})
	held := map[string]string{}
	n := 0
	for in.Scan() {
		recv := ms()
		var req struct {
			Type, Key, Owner string
			ID               uint64
			TTLMS            float64 `json:"ttl_ms"`
		}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		rep := msg{"id": req.ID, "received_ms": recv}
		switch req.Type {
		case "acquire":
			if _, ok := held[req.Key]; ok {
				rep["type"] = "not-acquired"
				break
			}
			n++
			owner := strconv.Itoa(n)
			held[req.Key] = owner
			rep["type"], rep["owner"], rep["token"], rep["never"] = "ok", owner, n, true
		case "release", "renew":
			if held[req.Key] != req.Owner {
				rep["type"] = "not-held"
				break
			}
			if req.Type == "release" {
				delete(held, req.Key)
			}
			rep["type"] = "ok"
		default:
			rep["type"], rep["message"] = "error", "unknown request "+req.Type
		}
		rep["now_ms"] = ms()
		send(rep)
	}
}
