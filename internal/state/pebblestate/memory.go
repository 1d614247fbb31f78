package pebblestate

import (
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// Memory is a memory budget that the databases of a process share, so
// that the budget bounds the process, however many stateful operators and
// subtasks it runs (Flink's managed memory for RocksDB does the same with a
// shared cache and write buffer manager): one block cache of three eighths
// of the budget, which every database reads through, half of it for
// memtables, and an eighth for the record caches (state.CachedKV: state
// entries kept in memory in front of each database), both divided evenly among the
// databases the Memory is made for. A database keeps at most two
// memtables (one written, one being flushed), so each gets a memtable
// size of a quarter of the budget divided by their number.
type Memory struct {
	budget      int64
	databases   int
	cache       *pebble.Cache
	memtable    uint64
	recordCache int64
	closeOnce   sync.Once
}

// minMemTable is the least memtable size: below it, flushes of tiny files
// cost more than the memory saved.
const minMemTable = 256 << 10

// minRecordCache is the least record cache size.
const minRecordCache = 64 << 10

// NewMemory makes a budget of budget bytes (0: DefaultMemoryBudget) for
// databases databases. Close it once they are closed.
func NewMemory(budget int64, databases int) *Memory {
	if budget <= 0 {
		budget = DefaultMemoryBudget
	}
	databases = max(databases, 1)
	return &Memory{
		budget:      budget,
		databases:   databases,
		cache:       pebble.NewCache(max(budget*3/8, 1<<20)),
		memtable:    uint64(max(budget/4/int64(databases), minMemTable)),
		recordCache: max(budget/8/int64(databases), minRecordCache),
	}
}

// CacheSize is the shared block cache's capacity, in bytes.
func (m *Memory) CacheSize() int64 { return m.cache.MaxSize() }

// MemTableSize is each database's memtable size, in bytes.
func (m *Memory) MemTableSize() int64 { return int64(m.memtable) }

// RecordCacheSize is each database's record cache size, in bytes.
func (m *Memory) RecordCacheSize() int64 { return m.recordCache }

// Close releases the cache: the databases still open keep it until they
// close.
func (m *Memory) Close() { m.closeOnce.Do(m.cache.Unref) }

func (m *Memory) String() string {
	return fmt.Sprintf("%d bytes for %d databases: a shared block cache of %d, memtables of %d, record caches of %d", m.budget, m.databases, m.CacheSize(), m.memtable, m.recordCache)
}
