// lockpick client program (workloads/PROTOCOL.md, version 1) over etcd's own
// concurrency.Mutex (Debian: golang-etcd-server-dev), against the etcd members in
// LOCKPICK_SERVERS. Build it offline with Debian's Go (examples/go-etcd/build.sh), then:
//
//	lockpick run --lock 'exec:etcd:<built binary>' --fencing on
//
// The token is the lock key's create revision. The lease is the session's, kept alive by the
// library on its own: the client promises no bound (no valid_ms, no expires_ms, no extend). It
// answers `clock` with its wall clock (time.Now), so that `skew-clients` can see it moved.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
)

type request struct {
	ID     uint64 `json:"id"`
	Op     string `json:"op"`
	WaitMs uint64 `json:"wait_ms"`
}

type answer struct {
	ID     uint64 `json:"id"`
	Result string `json:"result"`
	Token  *int64 `json:"token,omitempty"`
	WallMs *int64 `json:"wall_ms,omitempty"`
	// Kind says what a failed release means for the lease (PROTOCOL.md): both of ours
	// sent nothing, "not-held".
	Kind  string `json:"kind,omitempty"`
	Error string `json:"error,omitempty"`
}

var (
	cli     *clientv3.Client
	ttlSec  int
	key     string
	timeout time.Duration
	session *concurrency.Session
	mutex   *concurrency.Mutex
)

func acquire(wait time.Duration) answer {
	if session == nil || isDone(session) {
		s, err := concurrency.NewSession(cli, concurrency.WithTTL(ttlSec))
		if err != nil {
			return answer{Result: "unknown", Error: "no session: " + err.Error()}
		}
		session = s
	}
	m := concurrency.NewMutex(session, "/lockpick/"+key)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := m.Lock(ctx); err != nil {
		// The put may have been applied before the deadline: take the key out of the queue.
		undo, cancelUndo := context.WithTimeout(context.Background(), timeout)
		defer cancelUndo()
		if ctx.Err() != nil && m.Unlock(undo) == nil {
			return answer{Result: "fail", Error: "held by another client: " + err.Error()}
		}
		return answer{Result: "unknown", Error: err.Error()}
	}
	get, cancelGet := context.WithTimeout(context.Background(), timeout)
	defer cancelGet()
	resp, err := cli.Get(get, m.Key())
	if err != nil || len(resp.Kvs) == 0 {
		m.Unlock(get)
		return answer{Result: "unknown", Error: fmt.Sprintf("cannot read the lock key: %v", err)}
	}
	mutex = m
	token := resp.Kvs[0].CreateRevision
	return answer{Result: "ok", Token: &token}
}

func release() answer {
	if mutex == nil {
		return answer{Result: "fail", Kind: "not-held", Error: "nothing held"}
	}
	m := mutex
	mutex = nil
	if isDone(session) {
		// The session's keep-alive gave up (its lease expired by the client's own reckoning):
		// the unlock is not sent.
		return answer{Result: "fail", Kind: "not-held", Error: "the session's lease expired while held"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := m.Unlock(ctx); err != nil {
		return answer{Result: "unknown", Error: err.Error()}
	}
	return answer{Result: "ok"}
}

func isDone(s *concurrency.Session) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

func main() {
	ttlMs, _ := strconv.Atoi(os.Getenv("LOCKPICK_TTL_MS"))
	ttlSec = (ttlMs + 999) / 1000
	opMs, _ := strconv.Atoi(os.Getenv("LOCKPICK_OP_TIMEOUT_MS"))
	timeout = time.Duration(opMs) * time.Millisecond * 8 / 10
	key = os.Getenv("LOCKPICK_KEY")
	var err error
	cli, err = clientv3.New(clientv3.Config{
		Endpoints:   strings.Split(os.Getenv("LOCKPICK_SERVERS"), ","),
		DialTimeout: 5 * time.Second,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannot make an etcd client:", err)
		os.Exit(1)
	}
	out := json.NewEncoder(os.Stdout)
	out.Encode(map[string]interface{}{"protocol": 1, "library": "etcd clientv3 concurrency.Mutex",
		"clock": true})
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		var req request
		if err := json.Unmarshal(lines.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "not a request:", lines.Text())
			os.Exit(1)
		}
		var a answer
		switch req.Op {
		case "acquire":
			a = acquire(time.Duration(req.WaitMs) * time.Millisecond)
		case "release":
			a = release()
		case "clock":
			wall := time.Now().UnixNano() / int64(time.Millisecond)
			a = answer{Result: "ok", WallMs: &wall}
		default:
			a = answer{Result: "fail", Error: "unknown op " + req.Op}
		}
		a.ID = req.ID
		out.Encode(a)
	}
	if mutex != nil {
		release()
	}
}
