// Command presharding-migration shows moving one shard of a live
// pre-sharded deployment to a new machine with no lost writes.
//
// It starts three shardnode masters and one empty node on loopback (in this
// process), describes the deployment in a topology file, and writes
// continuously through a shardedpool.Pool that watches that file. Then it
// moves shard-2 to the new node with the same steps as
// `shardnode migrate-shard --from ... --to ... --topology ... --shard shard-2`
// and finally checks that every acknowledged write is readable.
//
//	go run ./examples/presharding-migration
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/client/shardedpool"
	"github.com/shardis/shardis/internal/migrate"
	"github.com/shardis/shardis/internal/node"
)

func startNode(ctx context.Context, dir string) (string, error) {
	cfg := node.NewConfig()
	for k, v := range map[string]string{"port": "0", "bind": "127.0.0.1", "save": "", "dir": dir} {
		if err := cfg.Set(k, v); err != nil {
			return "", err
		}
	}
	srv, err := node.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return "", err
	}
	if err := srv.Listen(); err != nil {
		return "", err
	}
	go func() { _ = srv.Run(ctx) }()
	return srv.Addr().String(), nil
}

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "presharding-*")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	var addrs []string
	for i := 0; i < 4; i++ {
		a, err := startNode(ctx, dir)
		if err != nil {
			log.Fatal(err)
		}
		addrs = append(addrs, a)
	}
	topo := filepath.Join(dir, "topology")
	content := fmt.Sprintf("shard-1 %s\nshard-2 %s\nshard-3 %s\n", addrs[0], addrs[1], addrs[2])
	if err := os.WriteFile(topo, []byte(content), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("deployment (%s):\n%s", topo, content)
	fmt.Printf("new node for shard-2: %s\n\n", addrs[3])

	pool, err := shardedpool.New(ctx, &shardedpool.Options{TopologyFile: topo})
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	// Writers: every acknowledged key is remembered with its value.
	var acked sync.Map
	var nAcked, nFailed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 10_000_000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("user:%d:%d", w, i)
				wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
				err := pool.Set(wctx, key, i, 0).Err()
				wcancel()
				if err != nil {
					nFailed.Add(1)
					time.Sleep(5 * time.Millisecond)
					continue
				}
				acked.Store(key, i)
				nAcked.Add(1)
			}
		}(w)
	}
	time.Sleep(time.Second)
	fmt.Printf("writing through the pool: %d writes acknowledged so far\n\n", nAcked.Load())

	err = migrate.Run(ctx, migrate.Options{
		From: addrs[1], To: addrs[3], TopologyFile: topo, Shard: "shard-2",
		Retire: true, Progress: os.Stdout,
	})
	if err != nil {
		log.Fatal(err)
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()

	// Every acknowledged write must be readable through the pool.
	missing := 0
	acked.Range(func(k, v any) bool {
		got, err := pool.Get(ctx, k.(string)).Int()
		if err != nil || got != v.(int) {
			missing++
		}
		return true
	})
	fmt.Printf("\nacknowledged writes: %d, failed attempts during the switch: %d, missing after the move: %d\n",
		nAcked.Load(), nFailed.Load(), missing)
	if missing > 0 {
		os.Exit(1)
	}
}
