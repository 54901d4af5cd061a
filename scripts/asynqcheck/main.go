// Command asynqcheck runs a job-queue round trip with hibiken/asynq,
// unmodified, against a Redis-compatible server (shardnode or
// redis-server) given by -addr, for scripts/asynq-check.sh. asynq keeps
// its queues in Redis through Lua scripts (EVALSHA, with EVAL when a
// script is not cached), so every step below runs them on the server:
//
//   - enqueue: 20 tasks are enqueued and each is processed once;
//   - retry: a task failing twice is retried and succeeds at its third
//     attempt (asynq.GetRetryCount 0, 1, 2);
//   - archive: a task failing past MaxRetry(1) is archived (Inspector);
//   - scheduled: a task enqueued with ProcessIn(1.5s) is listed as
//     scheduled and runs no earlier than its time (asynq's times are in
//     whole seconds);
//   - periodic: an asynq.Scheduler entry "@every 1s" runs at least twice;
//   - unique: a second Unique task of the same payload is refused with
//     ErrDuplicateTask;
//   - retention: a task with Retention(1h) is kept as completed;
//   - stats: Inspector.GetQueueInfo counts what was processed and failed.
//
// It lives in its own module so that asynq's dependencies stay out of the
// main module's go.mod. It flushes the server's data first, prints one
// line per step and exits with status 1 at the first step that fails; all
// waits are bounded.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	flag.Parse()
	if err := run(*addr); err != nil {
		fmt.Fprintln(os.Stderr, "asynqcheck:", err)
		os.Exit(1)
	}
}

// recorder keeps what the handlers saw.
type recorder struct {
	mu        sync.Mutex
	okRuns    map[string]int
	flaky     []int // retry counts seen by the flaky task's attempts
	laterAt   time.Time
	periodic  int
	doomed    int
	completed atomic.Int32
}

func run(addr string) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		return fmt.Errorf("flushall: %w", err)
	}
	opt := asynq.RedisClientOpt{Addr: addr}
	client := asynq.NewClient(opt)
	defer client.Close()
	insp := asynq.NewInspector(opt)
	defer insp.Close()

	rec := &recorder{okRuns: map[string]int{}}
	mux := asynq.NewServeMux()
	mux.HandleFunc("ok", func(ctx context.Context, t *asynq.Task) error {
		rec.mu.Lock()
		rec.okRuns[string(t.Payload())]++
		rec.mu.Unlock()
		rec.completed.Add(1)
		return nil
	})
	mux.HandleFunc("flaky", func(ctx context.Context, t *asynq.Task) error {
		n, _ := asynq.GetRetryCount(ctx)
		rec.mu.Lock()
		rec.flaky = append(rec.flaky, n)
		rec.mu.Unlock()
		if n < 2 {
			return fmt.Errorf("attempt %d fails", n)
		}
		return nil
	})
	mux.HandleFunc("doomed", func(ctx context.Context, t *asynq.Task) error {
		rec.mu.Lock()
		rec.doomed++
		rec.mu.Unlock()
		return errors.New("always fails")
	})
	mux.HandleFunc("later", func(ctx context.Context, t *asynq.Task) error {
		rec.mu.Lock()
		rec.laterAt = time.Now()
		rec.mu.Unlock()
		return nil
	})
	mux.HandleFunc("periodic", func(ctx context.Context, t *asynq.Task) error {
		rec.mu.Lock()
		rec.periodic++
		rec.mu.Unlock()
		return nil
	})
	srv := asynq.NewServer(opt, asynq.Config{
		Concurrency:              4,
		Queues:                   map[string]int{"default": 1},
		RetryDelayFunc:           func(int, error, *asynq.Task) time.Duration { return 100 * time.Millisecond },
		DelayedTaskCheckInterval: 100 * time.Millisecond,
		LogLevel:                 asynq.WarnLevel,
	})
	if err := srv.Start(mux); err != nil {
		return fmt.Errorf("server start: %w", err)
	}
	defer srv.Shutdown()

	// enqueue
	for i := 0; i < 20; i++ {
		if _, err := client.Enqueue(asynq.NewTask("ok", []byte(fmt.Sprintf("job-%d", i)))); err != nil {
			return fmt.Errorf("enqueue: %w", err)
		}
	}
	if err := waitFor(ctx, 20*time.Second, func() bool { return rec.completed.Load() >= 20 }); err != nil {
		return fmt.Errorf("enqueue: %d of 20 tasks processed: %w", rec.completed.Load(), err)
	}
	rec.mu.Lock()
	for i := 0; i < 20; i++ {
		if n := rec.okRuns[fmt.Sprintf("job-%d", i)]; n != 1 {
			rec.mu.Unlock()
			return fmt.Errorf("enqueue: job-%d ran %d times", i, n)
		}
	}
	rec.mu.Unlock()
	fmt.Println("ok enqueue: 20 tasks enqueued, each processed once")

	// retry
	if _, err := client.Enqueue(asynq.NewTask("flaky", nil), asynq.MaxRetry(5)); err != nil {
		return fmt.Errorf("retry: %w", err)
	}
	if err := waitFor(ctx, 20*time.Second, func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.flaky) >= 3
	}); err != nil {
		return fmt.Errorf("retry: attempts %v: %w", rec.flaky, err)
	}
	rec.mu.Lock()
	attempts := fmt.Sprint(rec.flaky)
	rec.mu.Unlock()
	if attempts != "[0 1 2]" {
		return fmt.Errorf("retry: retry counts of the attempts %s, want [0 1 2]", attempts)
	}
	fmt.Println("ok retry: a task failing twice succeeded at its third attempt (retry counts 0 1 2)")

	// archive
	doomed, err := client.Enqueue(asynq.NewTask("doomed", nil), asynq.MaxRetry(1))
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	if err := waitFor(ctx, 20*time.Second, func() bool {
		ts, err := insp.ListArchivedTasks("default")
		return err == nil && len(ts) == 1 && ts[0].ID == doomed.ID
	}); err != nil {
		return fmt.Errorf("archive: the failing task is not archived: %w", err)
	}
	rec.mu.Lock()
	runs := rec.doomed
	rec.mu.Unlock()
	if runs != 2 {
		return fmt.Errorf("archive: a MaxRetry(1) task ran %d times, want 2", runs)
	}
	fmt.Println("ok archive: a task failing past MaxRetry(1) ran twice and was archived")

	// scheduled
	start := time.Now()
	later, err := client.Enqueue(asynq.NewTask("later", nil), asynq.ProcessIn(1500*time.Millisecond))
	if err != nil {
		return fmt.Errorf("scheduled: %w", err)
	}
	if later.State != asynq.TaskStateScheduled {
		return fmt.Errorf("scheduled: state %v after enqueue", later.State)
	}
	if ts, err := insp.ListScheduledTasks("default"); err != nil || len(ts) != 1 || ts[0].ID != later.ID {
		return fmt.Errorf("scheduled: ListScheduledTasks %v, %v", ts, err)
	}
	if err := waitFor(ctx, 20*time.Second, func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return !rec.laterAt.IsZero()
	}); err != nil {
		return fmt.Errorf("scheduled: never ran: %w", err)
	}
	rec.mu.Lock()
	ranAt := rec.laterAt
	rec.mu.Unlock()
	// asynq keeps a task's time in whole seconds: it may run up to a
	// second before the exact ProcessIn instant, never before that second.
	if ranAt.Unix() < later.NextProcessAt.Unix() {
		return fmt.Errorf("scheduled: ran at %v, before its time %v", ranAt, later.NextProcessAt)
	}
	fmt.Printf("ok scheduled: a ProcessIn(1.5s) task was listed as scheduled and ran %v after enqueue, in its second\n", ranAt.Sub(start).Round(time.Millisecond))

	// periodic
	sched := asynq.NewScheduler(opt, &asynq.SchedulerOpts{LogLevel: asynq.WarnLevel})
	if _, err := sched.Register("@every 1s", asynq.NewTask("periodic", nil)); err != nil {
		return fmt.Errorf("periodic: %w", err)
	}
	if err := sched.Start(); err != nil {
		return fmt.Errorf("periodic: %w", err)
	}
	err = waitFor(ctx, 20*time.Second, func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return rec.periodic >= 2
	})
	sched.Shutdown()
	if err != nil {
		return fmt.Errorf("periodic: %d runs: %w", rec.periodic, err)
	}
	fmt.Println("ok periodic: a Scheduler entry \"@every 1s\" ran at least twice")

	// unique
	if _, err := client.Enqueue(asynq.NewTask("ok", []byte("unique")), asynq.Unique(time.Minute), asynq.ProcessIn(time.Hour)); err != nil {
		return fmt.Errorf("unique: first: %w", err)
	}
	if _, err := client.Enqueue(asynq.NewTask("ok", []byte("unique")), asynq.Unique(time.Minute), asynq.ProcessIn(time.Hour)); !errors.Is(err, asynq.ErrDuplicateTask) {
		return fmt.Errorf("unique: second enqueue: %v, want ErrDuplicateTask", err)
	}
	fmt.Println("ok unique: a duplicate Unique task was refused (ErrDuplicateTask)")

	// retention
	kept, err := client.Enqueue(asynq.NewTask("ok", []byte("kept")), asynq.Retention(time.Hour))
	if err != nil {
		return fmt.Errorf("retention: %w", err)
	}
	if err := waitFor(ctx, 20*time.Second, func() bool {
		ti, err := insp.GetTaskInfo("default", kept.ID)
		return err == nil && ti.State == asynq.TaskStateCompleted
	}); err != nil {
		return fmt.Errorf("retention: the task is not kept as completed: %w", err)
	}
	fmt.Println("ok retention: a Retention(1h) task is kept as completed")

	// stats
	qi, err := insp.GetQueueInfo("default")
	if err != nil {
		return fmt.Errorf("stats: %w", err)
	}
	if qi.Processed < 26 || qi.Failed < 4 || qi.Archived != 1 || qi.Completed != 1 || qi.Scheduled != 1 {
		return fmt.Errorf("stats: %+v", qi)
	}
	fmt.Printf("ok stats: processed %d, failed %d, archived %d, completed %d, scheduled %d\n", qi.Processed, qi.Failed, qi.Archived, qi.Completed, qi.Scheduled)
	return nil
}

// waitFor polls cond every 20 ms until it holds, for at most limit.
func waitFor(ctx context.Context, limit time.Duration, cond func() bool) error {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return errors.New("timed out")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}
