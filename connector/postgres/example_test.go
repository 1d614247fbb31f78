package postgres_test

import (
	"context"
	"log"
	"os"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/postgres"
)

// Click is an ad click.
type Click struct {
	Ad string
	TS time.Time
}

// Clicks per ad per minute, upserted into
//
//	CREATE TABLE clicks_per_minute (ad text, minute timestamptz, clicks bigint,
//	    weir_position bigint NOT NULL, PRIMARY KEY (ad, minute))
//
// with the window's end as the position: replays after a restart are
// skipped. The Transactional variant commits each checkpoint's rows in one
// transaction instead. (Not run: it needs a server.)
func Example() {
	dsn := os.Getenv("DATABASE_URL") // e.g. postgres://weir@127.0.0.1:5432/app
	clicks := []Click{{"a", time.Unix(0, 0)}, {"b", time.Unix(30, 0)}, {"a", time.Unix(61, 0)}}

	job := weir.NewJob("clicks", weir.Checkpointing(10*time.Second, "/var/lib/clicks/checkpoints"))
	src := weir.FromSource(job, "clicks", weir.SliceSource(clicks),
		weir.BoundedOutOfOrderness(5*time.Second, func(c Click) time.Time { return c.TS }))
	counts := weir.Aggregate(weir.Window(weir.KeyBy(src, func(c Click) string { return c.Ad }), weir.Tumbling(time.Minute)), weir.Count[Click]())
	weir.To(counts, weir.Sink[weir.WindowResult[string, int64]](postgres.Upsert(dsn,
		postgres.Table{Name: "clicks_per_minute", Key: []string{"ad", "minute"}, Columns: []string{"clicks"}},
		func(r weir.WindowResult[string, int64]) ([]any, int64) {
			return []any{r.Key, r.Start, r.Value}, r.End.UnixMilli()
		})))
	// Exactly-once appends instead:
	//
	//	postgres.Transactional(dsn, postgres.Table{Name: "clicks_log", Columns: []string{"ad", "minute", "clicks"}},
	//		func(r weir.WindowResult[string, int64]) []any { return []any{r.Key, r.Start, r.Value} })
	if err := job.Run(context.Background()); err != nil {
		log.Fatal(err)
	}
}
