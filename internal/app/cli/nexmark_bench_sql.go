package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/nexmark"
	"github.com/weirstream/weir/sql"
	"github.com/weirstream/weir/sql/nexmarksql"
	"github.com/weirstream/weir/sql/types"
)

// nexmarkSQLResult is a --json line of `weir bench nexmark --sql`.
type nexmarkSQLResult struct {
	Query               string  `json:"query"`
	Plan                string  `json:"plan"` // "sql"
	EventsPerSec        float64 `json:"events_per_sec"`
	EventsPerSecPerCore float64 `json:"events_per_sec_per_core"`
	Rows                int64   `json:"rows"`
	// PerCoreOfGo is the SQL plan's events/s per core over the hand-written
	// query's.
	PerCoreOfGo float64 `json:"per_core_of_go"`
	// the operators' keyed state (nexmark_bench_state.go)
	stateReport
}

// benchNexmarkSQLLine runs query q's Flink SQL over the 'nexmark'
// connector with the throughput run's settings and prints its rate beside
// the hand-written query's. miniBatch > 0 runs it with Flink's
// table.exec.mini-batch options, that size; split with
// table.optimizer.distinct-agg.split.enabled.
func benchNexmarkSQLLine(ctx context.Context, out io.Writer, q string, o nexmarkBenchOpts, goRes nexmarkBenchResult, asJSON bool, miniBatch int, split bool) error {
	label, plan := q+"/sql", "sql"
	if miniBatch > 0 {
		label, plan = q+"/sql-mb", "sql-mini-batch"
	}
	if split {
		label, plan = label+"-ds", plan+"-distinct-split"
	}
	query, err := nexmarksql.Query(q)
	if err != nil {
		if !asJSON {
			fmt.Fprintf(out, "%-5s %s\n", label, "(no SQL yet)")
		}
		return nil
	}
	opts := []sql.Option{sql.Parallelism(o.parallelism), sql.Define("TPS", fmt.Sprint(o.eventRate)),
		sql.Define("EVENTS_NUM", fmt.Sprint(o.events)), sql.Define("NEXMARK_TABLE", "datagen"), sql.Stdout(io.Discard)}
	stateOpts, stateDone, err := o.state.options()
	if err != nil {
		return err
	}
	defer stateDone()
	opts = append(opts, sql.JobOptions(stateOpts...))
	if o.ckInterval > 0 {
		dir, err := os.MkdirTemp("", "weir-nexmark-sql-ck-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		opts = append(opts, sql.Checkpointing(o.ckInterval, dir))
	}
	setup, err := nexmarksql.Setup(q)
	if err != nil {
		return err
	}
	if strings.Contains(setup, "${SIDE_INPUT}") {
		// q13's side table: the suite's side_input.txt, written for the run
		side, err := writeSideInput()
		if err != nil {
			return err
		}
		defer os.Remove(side)
		opts = append(opts, sql.Define("SIDE_INPUT", side))
	}
	s := sql.NewSession(opts...)
	if miniBatch > 0 {
		if _, err := s.Exec(fmt.Sprintf("SET 'table.exec.mini-batch.enabled' = 'true'; SET 'table.exec.mini-batch.allow-latency' = '1 s'; SET 'table.exec.mini-batch.size' = '%d';", miniBatch)); err != nil {
			return err
		}
	}
	if split {
		if _, err := s.Exec("SET 'table.optimizer.distinct-agg.split.enabled' = 'true';"); err != nil {
			return err
		}
	}
	if _, err := s.Exec(nexmarksql.DDL() + "\n" + setup); err != nil {
		return err
	}
	_, st, err := s.Query(query)
	if err != nil {
		return err
	}
	var rows atomic.Int64
	st.SubscribeLent(func(rs []types.Row) error { rows.Add(int64(len(rs))); return nil })
	// as the query files' blackhole sink (the Nexmark suite's): no -U rows
	st.DropUpdateBefore()
	job, err := s.Job([]*sql.Statement{st})
	if err != nil {
		return err
	}
	runtime.GC()
	stopProfile := func() {}
	if o.cpuprofile != "" {
		// beside the hand-written query's DIR/QUERY.prof
		f, err := os.Create(filepath.Join(o.cpuprofile, q+"-sql.prof"))
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return err
		}
		stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
	}
	cpu0 := cpuTime()
	start := time.Now()
	err = job.Run(ctx)
	el, cpu := time.Since(start), cpuTime()-cpu0
	stopProfile()
	if err != nil {
		return err
	}
	res := nexmarkSQLResult{Query: q, Plan: plan, EventsPerSec: float64(o.events) / el.Seconds(),
		EventsPerSecPerCore: float64(o.events) / cpu.Seconds(), Rows: rows.Load(), stateReport: stateReportOf(job.Metrics())}
	if goRes.EventsPerSecPerCore > 0 {
		res.PerCoreOfGo = res.EventsPerSecPerCore / goRes.EventsPerSecPerCore
	}
	if asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintln(out, string(b))
		return nil
	}
	fmt.Fprintf(out, "%-8s %10.0f K %12.0f K %10s %10s %12d   %.0f%% of the hand-written query per core\n", label,
		res.EventsPerSec/1e3, res.EventsPerSecPerCore/1e3, "", "", res.Rows, 100*res.PerCoreOfGo)
	return nil
}

// writeSideInput writes the side input that the Nexmark suite generates
// (side_input.txt: key,value lines) to a temporary file.
func writeSideInput() (string, error) {
	f, err := os.CreateTemp("", "weir-nexmark-side-input-*.csv")
	if err != nil {
		return "", err
	}
	w := bufio.NewWriter(f)
	for _, r := range nexmark.SideInput(nexmark.SideInputRows) {
		fmt.Fprintf(w, "%d,%s\n", r.Key, r.Value)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
