package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// committer commits the transactions of an ExactlyOnce sink. It keeps no
// client between commits: the job has no hook to close one, and a commit
// per checkpoint and subtask can afford a connection.
type committer struct {
	cfg *sinkConfig
}

// Commit implements weir.Committer: EndTxn(commit) with the producer id and
// epoch the writer recorded, from a client of its own, as any process that
// restored the checkpoint can. Committing again a committed transaction
// succeeds: the broker recognises the retry (same producer id, the epoch it
// had, or the one its commit bumped, KIP-890). A transaction that was
// aborted (timed out, or fenced by a producer with the same transactional
// id) cannot be committed: its records are lost, and Commit says so.
func (c *committer) Commit(ctx context.Context, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	var cm committable
	if err := json.Unmarshal(data, &cm); err != nil || cm.TxnID == "" {
		return fmt.Errorf("kafka: malformed committable %q", data)
	}
	cl, err := kgo.NewClient(c.cfg.client.kgoOpts()...)
	if err != nil {
		return fmt.Errorf("kafka: commit transaction %s: %w", cm.TxnID, err)
	}
	defer cl.Close()
	return retry(ctx, c.cfg.client.retryTimeout, "commit transaction "+cm.TxnID, func() error {
		return endTxn(ctx, cl, cm, true)
	})
}

// endTxn ends the transaction cm describes.
func endTxn(ctx context.Context, cl *kgo.Client, cm committable, commit bool) error {
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID = cm.TxnID
	req.ProducerID = cm.ProducerID
	req.ProducerEpoch = cm.Epoch
	req.Commit = commit
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("kafka: end transaction %s (producer id %d, epoch %d): %w", cm.TxnID, cm.ProducerID, cm.Epoch, err)
	}
	err = kerr.ErrorForCode(resp.ErrorCode)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.InvalidTxnState), errors.Is(err, kerr.ProducerFenced),
		errors.Is(err, kerr.InvalidProducerEpoch), errors.Is(err, kerr.InvalidProducerIDMapping):
		return fmt.Errorf("kafka: transaction %s (producer id %d, epoch %d) cannot be committed, its records are lost: "+
			"it was aborted (transaction timeout, or another producer with its transactional id) or has expired: %w",
			cm.TxnID, cm.ProducerID, cm.Epoch, err)
	}
	return fmt.Errorf("kafka: end transaction %s (producer id %d, epoch %d): %w", cm.TxnID, cm.ProducerID, cm.Epoch, err)
}

// abortLingering aborts the open transactions of earlier attempts of
// sink subtask `subtask`: those "<prefix>-<subtask>-<n>" with n above
// restoredID (every n when restoredID is 0), and, for subtask 0, those of
// subtasks at or above parallelism (a job restored at a lower parallelism).
// Transactions with n <= restoredID were pre-committed by checkpoints up to
// the restored one, which the job committed before calling Recover.
func abortLingering(ctx context.Context, cfg *sinkConfig, subtask, parallelism int, restoredID int64) error {
	cl, err := kgo.NewClient(cfg.client.kgoOpts()...)
	if err != nil {
		return fmt.Errorf("kafka: recover sink subtask %d: %w", subtask, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var open kadm.ListedTransactions
	err = retry(ctx, cfg.client.retryTimeout, "list open transactions", func() error {
		var err error
		open, err = adm.ListTransactions(ctx, nil, []string{"Ongoing"})
		return err
	})
	if err != nil {
		return fmt.Errorf("kafka: recover sink subtask %d: %w", subtask, err)
	}
	for _, t := range open.Sorted() {
		if t.State != "Ongoing" {
			continue // a broker that ignores the state filter (Kafka < 3.0)
		}
		sub, n, ok := parseTxnID(cfg.txnPrefix, t.TxnID)
		if !ok {
			continue
		}
		if sub != subtask && (subtask != 0 || sub < parallelism) {
			continue
		}
		if restoredID > 0 && n <= restoredID {
			continue
		}
		if err := retry(ctx, cfg.client.retryTimeout, "abort transaction "+t.TxnID, func() error {
			return fence(ctx, cl, t.TxnID, cfg.txnTimeout)
		}); err != nil {
			return fmt.Errorf("kafka: recover sink subtask %d: %w", subtask, err)
		}
	}
	return nil
}

// fence initialises a producer with transactional id id, which makes the
// coordinator abort its open transaction (Kafka's fencing).
func fence(ctx context.Context, cl *kgo.Client, id string, timeout time.Duration) error {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = &id
	req.TransactionTimeoutMillis = int32(timeout.Milliseconds())
	req.ProducerID, req.ProducerEpoch = -1, -1
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("abort transaction %s: %w", id, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		// CONCURRENT_TRANSACTIONS (the abort is under way) is retriable.
		return fmt.Errorf("abort transaction %s: %w", id, err)
	}
	return nil
}

// parseTxnID parses "<prefix>-<subtask>-<n>".
func parseTxnID(prefix, id string) (subtask int, n int64, ok bool) {
	rest, ok := strings.CutPrefix(id, prefix+"-")
	if !ok {
		return 0, 0, false
	}
	s, num, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, 0, false
	}
	sub, err1 := strconv.Atoi(s)
	n, err2 := strconv.ParseInt(num, 10, 64)
	if err1 != nil || err2 != nil || sub < 0 || n < 0 {
		return 0, 0, false
	}
	return sub, n, true
}
