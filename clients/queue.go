package clients

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/redis/go-redis/v9"
)

// ErrNotCaptured reports a capture that certainly captured nothing: it
// failed before its statement was sent (the connection did not open). The
// recording wrapper records it as fail; every other capture error is
// indeterminate and recorded as info.
var ErrNotCaptured = errors.New("clients: nothing captured")

// Task is one task a capture returned: its id, its queue, the token the
// capture handed out with it (0: none) and the retries left after the
// capture (nil when the implementation keeps no budget).
type Task struct {
	ID          string
	Queue       string
	Token       uint64
	RetriesLeft *int
}

// Queue is one worker's handle on a work queue built on the seeds'
// state-transition lock (docs/history.md §1, "The queue workload"). A
// Queue is used by one worker at a time.
type Queue interface {
	// Capture marks up to limit capturable tasks (done or failed, with
	// retries left) of queue in_progress and returns them. An error
	// wrapping ErrNotCaptured means it certainly captured nothing.
	Capture(ctx context.Context, queue string, limit int) ([]Task, error)
	// SetStatus sets the status of task t (StatusDone or StatusFailed).
	SetStatus(ctx context.Context, t Task, status string) error
	// Reap sets back to failed every in_progress task of queues captured
	// longer than timeout ago, by the worker's clock, and returns their ids.
	Reap(ctx context.Context, queues []string, timeout time.Duration) ([]string, error)
	// Setup creates the task table (every task done, with its budget) in
	// place of any earlier one; the runner calls it once before the
	// workers start.
	Setup(ctx context.Context, tasks []history.TaskSpec) error
	// Close releases the Queue's connections.
	Close() error
}

// QueueFactory builds one worker's Queue.
type QueueFactory func(ctx context.Context, t Target) (Queue, error)

// QueueAlgorithm describes one queue implementation under test.
type QueueAlgorithm struct {
	Name    string  // what users type: "pg-queue", ...
	System  string  // the system it runs on
	Budget  Support // it keeps a retry budget per task (ByClient: the client says, with retries_left)
	Capture string  // its capture, as it sends it
	// Options are the options its factory reads from Target.Options, and
	// OtherOptions, when set, says to whom the others go (Algorithm's).
	Options      []Option
	OtherOptions string
	New          QueueFactory
}

// QueueAlgorithms returns every queue implementation, in a fixed order.
func QueueAlgorithms() []QueueAlgorithm {
	return []QueueAlgorithm{
		{Name: "pg-queue", System: systemPostgres, Budget: With, Capture: oneLine(pgQueueCapture), Options: pgOptions, New: NewPgQueue},
		{Name: "pg-queue-skip-locked", System: systemPostgres, Budget: With, Capture: oneLine(pgQueueCaptureSkipLocked), Options: pgOptions, New: NewPgQueueSkipLocked},
		{Name: "redis-zadd-queue", System: systemRedis, Capture: "ZRANGEBYSCORE tasks:<queue> 0 0 and 2 2 (done, failed), then ZADD tasks:<queue> XX CH 1 <id> for each (1 = captured) up to the limit, then ZADD tasks:<queue>:captured <ms> <id>", Options: redisNodeOptions, New: NewRedisZaddQueue},
		{Name: "redis-zadd-queue-script", System: systemRedis, Capture: "one script: for each member of ZRANGE tasks:<queue> 0 2 BYSCORE up to the limit, ZADD tasks:<queue> XX CH 1 <id> (1 = captured) and ZADD tasks:<queue>:captured <ms> <id>", Options: redisNodeOptions, New: NewRedisZaddQueueScript},
		{Name: ExecAlgorithm, System: systemAny, Budget: ByClient, Capture: "the protocol's capture request to a program of the user's (docs/lock-protocol.md §6)", Options: execOptions, OtherOptions: "the client, in init's options", New: NewExecQueue},
	}
}

// QueueNames returns the names of QueueAlgorithms, in order.
func QueueNames() []string {
	var out []string
	for _, a := range QueueAlgorithms() {
		out = append(out, a.Name)
	}
	return out
}

// LookupQueue returns the queue implementation called name.
func LookupQueue(name string) (QueueAlgorithm, error) {
	var names []string
	for _, a := range QueueAlgorithms() {
		if a.Name == name {
			return a, nil
		}
		names = append(names, a.Name)
	}
	return QueueAlgorithm{}, fmt.Errorf("%w %q (known queues: %s)", ErrUnknownAlgorithm, name, strings.Join(names, ", "))
}

// oneLine joins a statement's lines with single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// pgQueueCapture is the SQL seed's capture with its Retries and Queues
// extensions, exactly as written: the queue condition and the limit in the
// sub-select, the decrement and `retries_left != 0` on the update. $1 is
// the queue, $2 the limit, $3 the capture's time (ms, the worker's clock),
// kept for the reaper.
const pgQueueCapture = `update task set status = 'in_progress', retries_left = retries_left - 1, captured_at = $3
where id in (
  select id
  from task
  where status = any(array ['done', 'failed']::task_status[]) and queue_id = $1
  limit $2
) and retries_left != 0
returning id, retries_left, queue_id`

// pgQueueCaptureSkipLocked is pgQueueCapture whose sub-select locks the rows
// it picks and skips those another capture has locked (FOR UPDATE SKIP
// LOCKED, as river and que do): a locked row is re-read at its latest
// version before it is taken, so the status condition is checked again.
const pgQueueCaptureSkipLocked = `update task set status = 'in_progress', retries_left = retries_left - 1, captured_at = $3
where id in (
  select id
  from task
  where status = any(array ['done', 'failed']::task_status[]) and queue_id = $1
  limit $2
  for update skip locked
) and retries_left != 0
returning id, retries_left, queue_id`

// pgQueueSchema adds the seed's Retries and Queues columns, and the capture
// time the reaper reads, to pg-state's task table.
var pgQueueSchema = []string{
	`alter table task add column if not exists retries_left integer not null default 0`,
	`alter table task add column if not exists queue_id text not null default 'default'`,
	`alter table task add column if not exists captured_at bigint not null default 0`,
}

// PgQueue is the SQL seed's state-transition lock as a work queue (table
// task, with retries_left, queue_id and captured_at): Capture is
// pgQueueCapture (pg-queue) or pgQueueCaptureSkipLocked
// (pg-queue-skip-locked); SetStatus is the seed's `update task set status
// = $1 where id = $2`; Reap is `update task set status = 'failed' where
// status = 'in_progress' and captured_at <= $1 returning id` with $1 the
// worker's clock less the timeout, in ms. A task without a budget has
// retries_left -1, which the decrement never brings to 0; its captures
// report no retries left. No tokens.
type PgQueue struct {
	name    string
	capture string
	p       *Postgres
}

var _ Queue = (*PgQueue)(nil)

// NewPgQueue is the pg-queue QueueFactory. It needs t.Clock.
func NewPgQueue(ctx context.Context, t Target) (Queue, error) {
	return newPgQueue(ctx, "pg-queue", pgQueueCapture, t)
}

// NewPgQueueSkipLocked is the pg-queue-skip-locked QueueFactory. It needs
// t.Clock.
func NewPgQueueSkipLocked(ctx context.Context, t Target) (Queue, error) {
	return newPgQueue(ctx, "pg-queue-skip-locked", pgQueueCaptureSkipLocked, t)
}

func newPgQueue(ctx context.Context, name, capture string, t Target) (Queue, error) {
	if t.Clock == nil {
		return nil, fmt.Errorf("clients: %s: target has no clock", name)
	}
	p, err := newPostgresNamed(ctx, name, pgState, t)
	if err != nil {
		return nil, err
	}
	if err := postgresSetup(ctx, p.conn, p.timeout, pgQueueSchema); err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("clients: %s: %w", name, err)
	}
	return &PgQueue{name: name, capture: capture, p: p}, nil
}

// Setup replaces the rows of tasks: done, with their budget and queue.
func (q *PgQueue) Setup(ctx context.Context, tasks []history.TaskSpec) error {
	for _, t := range tasks {
		budget := -1
		if t.Budget != nil {
			budget = *t.Budget
		}
		if _, err := q.p.exec(ctx, `insert into task (id, status, retries_left, queue_id, captured_at) values ($1, 'done', $2, $3, 0)
on conflict (id) do update set status = 'done', retries_left = excluded.retries_left, queue_id = excluded.queue_id, captured_at = 0`, t.Task, budget, t.Queue); err != nil {
			return fmt.Errorf("clients: %s: setup %s: %w", q.name, t.Task, err)
		}
	}
	return nil
}

// Capture runs the capture once.
func (q *PgQueue) Capture(ctx context.Context, queue string, limit int) ([]Task, error) {
	conn, err := q.p.connection(ctx)
	if err != nil {
		return nil, fmt.Errorf("clients: %s: capture %s: %w: %w", q.name, queue, err, ErrNotCaptured)
	}
	cctx, cancel := context.WithTimeout(ctx, q.p.timeout)
	defer cancel()
	rows, err := conn.Query(cctx, q.capture, queue, limit, q.p.clock.Now().UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("clients: %s: capture %s: %w", q.name, queue, err)
	}
	defer rows.Close()
	var out []Task
	for rows.Next() {
		var t Task
		var left int
		if err := rows.Scan(&t.ID, &left, &t.Queue); err != nil {
			return nil, fmt.Errorf("clients: %s: capture %s: %w", q.name, queue, err)
		}
		if left >= 0 {
			// a task without a budget counts down from -1 and never
			// reaches 0: it has no retries left to report
			t.RetriesLeft = &left
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("clients: %s: capture %s: %w", q.name, queue, err)
	}
	return out, nil
}

// SetStatus sets t's status; ErrNotHeld when the task does not exist.
func (q *PgQueue) SetStatus(ctx context.Context, t Task, status string) error {
	n, err := q.p.exec(ctx, `update task set status = $1::task_status where id = $2`, status, t.ID)
	if err != nil {
		return fmt.Errorf("clients: %s: set-status %s: %w", q.name, t.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("clients: %s: set-status %s: no such task: %w", q.name, t.ID, ErrNotHeld)
	}
	return nil
}

// Reap sets back the tasks in progress for longer than timeout.
func (q *PgQueue) Reap(ctx context.Context, queues []string, timeout time.Duration) ([]string, error) {
	conn, err := q.p.connection(ctx)
	if err != nil {
		return nil, fmt.Errorf("clients: %s: reap: %w", q.name, err)
	}
	cctx, cancel := context.WithTimeout(ctx, q.p.timeout)
	defer cancel()
	cutoff := q.p.clock.Now().Add(-timeout).UnixMilli()
	rows, err := conn.Query(cctx, `update task set status = 'failed' where status = 'in_progress' and captured_at <= $1 and queue_id = any($2) returning id`, cutoff, queues)
	if err != nil {
		return nil, fmt.Errorf("clients: %s: reap: %w", q.name, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("clients: %s: reap: %w", q.name, err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("clients: %s: reap: %w", q.name, err)
	}
	slices.Sort(out)
	return out, nil
}

// Close closes the connection.
func (q *PgQueue) Close() error { return q.p.Close() }

// The scores of the NoSQL seed's state-transition lock.
const (
	zaddDone       = 0
	zaddInProgress = 1
	zaddFailed     = 2
)

// zaddQueueCaptureScript is redis-zadd-queue-script's capture: KEYS[1] the
// queue's status set, KEYS[2] its capture times; ARGV[1] the limit, ARGV[2]
// the time (ms).
var zaddQueueCaptureScript = redis.NewScript(`
local got = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, 2, 'BYSCORE')) do
  if #got >= tonumber(ARGV[1]) then break end
  if redis.call('ZADD', KEYS[1], 'XX', 'CH', 1, id) == 1 then
    redis.call('ZADD', KEYS[2], ARGV[2], id)
    got[#got + 1] = id
  end
end
return got`)

// zaddQueueReapScript is the Redis queues' reaper pass over one queue:
// KEYS[1] the status set, KEYS[2] the capture times; ARGV[1] the cutoff
// (ms). It sets every in_progress member captured at or before the cutoff
// to failed.
var zaddQueueReapScript = redis.NewScript(`
local got = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[2], '-inf', ARGV[1], 'BYSCORE')) do
  if redis.call('ZSCORE', KEYS[1], id) == '1' then
    redis.call('ZADD', KEYS[1], 'XX', 2, id)
    got[#got + 1] = id
  end
end
return got`)

// RedisZaddQueue is the NoSQL seed's state-transition lock (done 0,
// in_progress 1, failed 2) as a work queue: one sorted set per queue,
// tasks:<queue>, whose members are the queue's tasks, and tasks:<queue>:captured
// holding each task's latest capture time (ms, the worker's clock) for the
// reaper. redis-zadd-queue captures as a client of the seed would: it reads
// the capturable members (ZRANGE BYSCORE 0 0 and 2 2), then sends the seed's
// ZADD XX CH 1 for each up to the limit (1 changed = captured) and records
// the capture time with a ZADD of its own; redis-zadd-queue-script does the
// same in one script. SetStatus is the seed's ZADD XX 0 (done) or 2
// (failed). Reap is one script per queue. No budgets, no tokens.
type RedisZaddQueue struct {
	name    string
	script  bool
	client  *redis.Client
	timeout time.Duration
	clock   Clock
}

var _ Queue = (*RedisZaddQueue)(nil)

// NewRedisZaddQueue is the redis-zadd-queue QueueFactory. It needs t.Clock.
func NewRedisZaddQueue(ctx context.Context, t Target) (Queue, error) {
	return newRedisZaddQueue("redis-zadd-queue", false, t)
}

// NewRedisZaddQueueScript is the redis-zadd-queue-script QueueFactory. It
// needs t.Clock.
func NewRedisZaddQueueScript(ctx context.Context, t Target) (Queue, error) {
	return newRedisZaddQueue("redis-zadd-queue-script", true, t)
}

func newRedisZaddQueue(name string, script bool, t Target) (Queue, error) {
	ep, timeout, err := redisPrimaryTarget(name, t)
	if err != nil {
		return nil, err
	}
	if t.Clock == nil {
		return nil, fmt.Errorf("clients: %s: target has no clock", name)
	}
	return &RedisZaddQueue{name: name, script: script, client: newRedisClient(ep.Addr, timeout, t.TCP), timeout: timeout, clock: t.Clock}, nil
}

func zaddQueueSet(queue string) string      { return "tasks:" + queue }
func zaddQueueCaptured(queue string) string { return "tasks:" + queue + ":captured" }

// Setup replaces each queue's sets with its tasks, done (the seed's ZADD NX
// 0 on fresh sets).
func (r *RedisZaddQueue) Setup(ctx context.Context, tasks []history.TaskSpec) error {
	cctx, cancel := context.WithTimeout(ctx, 5*r.timeout)
	defer cancel()
	seen := map[string]bool{}
	for _, t := range tasks {
		if !seen[t.Queue] {
			seen[t.Queue] = true
			if err := r.client.Del(cctx, zaddQueueSet(t.Queue), zaddQueueCaptured(t.Queue)).Err(); err != nil {
				return fmt.Errorf("clients: %s: setup %s: %w", r.name, t.Queue, err)
			}
		}
		if err := r.client.ZAddArgs(cctx, zaddQueueSet(t.Queue), redis.ZAddArgs{NX: true, Members: []redis.Z{{Score: zaddDone, Member: t.Task}}}).Err(); err != nil {
			return fmt.Errorf("clients: %s: setup %s: %w", r.name, t.Task, err)
		}
	}
	return nil
}

// Capture captures up to limit tasks of queue.
func (r *RedisZaddQueue) Capture(ctx context.Context, queue string, limit int) ([]Task, error) {
	set, times := zaddQueueSet(queue), zaddQueueCaptured(queue)
	now := r.clock.Now().UnixMilli()
	fail := func(err error) ([]Task, error) {
		if neverSent(err) {
			err = fmt.Errorf("%w: %w", err, ErrNotCaptured)
		}
		return nil, fmt.Errorf("clients: %s: capture %s: %w", r.name, queue, err)
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	var ids []string
	if r.script {
		var err error
		if ids, err = zaddQueueCaptureScript.Run(cctx, r.client, []string{set, times}, limit, now).StringSlice(); err != nil {
			return fail(err)
		}
	} else {
		var cands []string
		for _, score := range []string{strconv.Itoa(zaddDone), strconv.Itoa(zaddFailed)} {
			ms, err := r.client.ZRangeByScore(cctx, set, &redis.ZRangeBy{Min: score, Max: score}).Result()
			if err != nil {
				// a read, before any ZADD: it captured nothing
				return nil, fmt.Errorf("clients: %s: capture %s: scan: %w: %w", r.name, queue, err, ErrNotCaptured)
			}
			cands = append(cands, ms...)
		}
		for _, id := range cands {
			if len(ids) == limit {
				break
			}
			n, err := r.client.ZAddArgs(cctx, set, redis.ZAddArgs{XX: true, Ch: true, Members: []redis.Z{{Score: zaddInProgress, Member: id}}}).Result()
			if err != nil {
				// a ZADD that may have captured id, after others that did:
				// the outcome is unknown
				return nil, fmt.Errorf("clients: %s: capture %s: %w", r.name, queue, err)
			}
			if n == 1 {
				ids = append(ids, id)
				if err := r.client.ZAdd(cctx, times, redis.Z{Score: float64(now), Member: id}).Err(); err != nil {
					return nil, fmt.Errorf("clients: %s: capture %s: capture time of %s: %w", r.name, queue, id, err)
				}
			}
		}
	}
	out := make([]Task, 0, len(ids))
	for _, id := range ids {
		out = append(out, Task{ID: id, Queue: queue})
	}
	return out, nil
}

// SetStatus sets t's score to the status's.
func (r *RedisZaddQueue) SetStatus(ctx context.Context, t Task, status string) error {
	score := zaddDone
	switch status {
	case history.StatusDone:
	case history.StatusFailed:
		score = zaddFailed
	default:
		return fmt.Errorf("clients: %s: set-status %s: unknown status %q: %w", r.name, t.ID, status, ErrNotHeld)
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if err := r.client.ZAddArgs(cctx, zaddQueueSet(t.Queue), redis.ZAddArgs{XX: true, Members: []redis.Z{{Score: float64(score), Member: t.ID}}}).Err(); err != nil {
		return fmt.Errorf("clients: %s: set-status %s: %w", r.name, t.ID, err)
	}
	return nil
}

// Reap sets back, queue by queue, the tasks in progress for longer than
// timeout.
func (r *RedisZaddQueue) Reap(ctx context.Context, queues []string, timeout time.Duration) ([]string, error) {
	cutoff := r.clock.Now().Add(-timeout).UnixMilli()
	var out []string
	for _, q := range queues {
		cctx, cancel := context.WithTimeout(ctx, r.timeout)
		ids, err := zaddQueueReapScript.Run(cctx, r.client, []string{zaddQueueSet(q), zaddQueueCaptured(q)}, cutoff).StringSlice()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("clients: %s: reap %s: %w", r.name, q, err)
		}
		out = append(out, ids...)
	}
	slices.Sort(out)
	return out, nil
}

// Close closes the client.
func (r *RedisZaddQueue) Close() error { return r.client.Close() }
