package broker

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "github.com/weirstream/weir/connector/log"
)

// Config configures a Broker.
type Config struct {
	// DataDir is the embedded log's directory: the topics the broker
	// serves, and its own state (__consumer_offsets, __weir_broker).
	DataDir string
	// Listen is the TCP address to listen on (default 127.0.0.1:9092;
	// port 0 picks a free one, see Broker.Addr).
	Listen string
	// Advertise is the host:port clients are told to connect to (default:
	// the address the listener got).
	Advertise string
	// Sync is the fsync policy of the partitions' writers: a produce with
	// acks=1 or acks=all is answered once its batch is appended under it
	// (default wlog.SyncEveryBatch: on disk).
	Sync *wlog.SyncPolicy
	// DefaultPartitions is the number of partitions of a topic created
	// without a count (Kafka's num.partitions; default 1).
	DefaultPartitions int
	// AutoCreateTopics creates a topic that a producer or Metadata request
	// names and that does not exist (Kafka's auto.create.topics.enable).
	// Off by default: a missing topic is UNKNOWN_TOPIC_OR_PARTITION.
	AutoCreateTopics bool
	// InitialRebalanceDelay is Kafka's group.initial.rebalance.delay.ms
	// (default 3s; negative means none).
	InitialRebalanceDelay time.Duration
	// GroupMinSessionTimeout and GroupMaxSessionTimeout are Kafka's
	// group.min.session.timeout.ms and group.max.session.timeout.ms
	// (default 6s and 30m).
	GroupMinSessionTimeout, GroupMaxSessionTimeout time.Duration
	// TransactionTimeoutMax is Kafka's transaction.max.timeout.ms
	// (default 15m).
	TransactionTimeoutMax time.Duration
	// TLS, when set, serves TLS.
	TLS *tls.Config
	// Users, when set, requires SASL/PLAIN authentication with these user
	// names and passwords before any request but ApiVersions and the SASL
	// handshake (a connection that sends another is closed). Use it with
	// TLS: PLAIN sends the password as it is.
	Users map[string]string
	// Logger receives the broker's log (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock of group session timeouts and transaction timeouts
	// (default time.Now).
	Now func() time.Time
	// TickEvery is how often the broker checks those timeouts (default
	// 100ms).
	TickEvery time.Duration
}

// cleanEvery is how often the broker applies retention and compaction to
// the partitions it writes (Writer.Clean).
const cleanEvery = time.Minute

// maxRequestBytes bounds one request (Kafka's socket.request.max.bytes).
const maxRequestBytes = 100 << 20

// stateDir is the broker's own directory inside DataDir: the producer id
// block and the transaction log. Its name cannot be a topic's.
const stateDir = ".weir-broker"

// Broker serves the Kafka protocol over an embedded log directory.
type Broker struct {
	cfg    Config
	log    *slog.Logger
	ln     net.Listener
	host   string
	port   int32
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	topics *topicSet
	pids   *pidAllocator
	groups *groups
	txns   *txnCoordinator

	connsMu sync.Mutex
	conns   map[net.Conn]struct{}
}

// IsLoopback reports whether the host part of a listen address is a
// loopback address or "localhost".
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Start opens the data directory, listens and serves until ctx is done or
// Close is called.
func Start(ctx context.Context, cfg Config) (*Broker, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("broker: no data directory")
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:9092"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.TickEvery <= 0 {
		cfg.TickEvery = 100 * time.Millisecond
	}
	if cfg.DefaultPartitions <= 0 {
		cfg.DefaultPartitions = 1
	}
	if cfg.InitialRebalanceDelay == 0 {
		cfg.InitialRebalanceDelay = 3 * time.Second
	} else if cfg.InitialRebalanceDelay < 0 {
		cfg.InitialRebalanceDelay = 0
	}
	if cfg.TransactionTimeoutMax <= 0 {
		cfg.TransactionTimeoutMax = 15 * time.Minute
	}
	if !IsLoopback(cfg.Listen) && (cfg.TLS == nil || len(cfg.Users) == 0) {
		return nil, fmt.Errorf("broker: listening on %s, off loopback, needs TLS and SASL users (a certificate and a users file); listen on 127.0.0.1 to run open", cfg.Listen)
	}
	if err := os.MkdirAll(filepath.Join(cfg.DataDir, stateDir), 0o755); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	b := &Broker{cfg: cfg, log: cfg.Logger, conns: map[net.Conn]struct{}{}}
	b.topics = newTopicSet(b)
	var err error
	if b.pids, err = openPIDs(filepath.Join(cfg.DataDir, stateDir)); err != nil {
		return nil, err
	}
	if b.groups, err = openGroups(groupConfig{DataDir: cfg.DataDir, Now: cfg.Now, Logger: cfg.Logger, InitialRebalanceDelay: cfg.InitialRebalanceDelay,
		MinSessionTimeout: cfg.GroupMinSessionTimeout, MaxSessionTimeout: cfg.GroupMaxSessionTimeout}); err != nil {
		return nil, fmt.Errorf("broker: consumer groups: %w", err)
	}
	if b.txns, err = openTxns(b); err != nil {
		b.groups.close()
		return nil, fmt.Errorf("broker: transactions: %w", err)
	}
	b.groups.pendingTxn = b.txns.pendingOffsets
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		b.txns.close()
		b.groups.close()
		return nil, fmt.Errorf("broker: %w", err)
	}
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS)
	}
	b.ln = ln
	adv := cfg.Advertise
	if adv == "" {
		adv = ln.Addr().String()
	}
	host, port, err := net.SplitHostPort(adv)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("broker: advertised address %q: %w", adv, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("broker: advertised port %q: %w", port, err)
	}
	b.host, b.port = host, int32(p)
	b.ctx, b.cancel = context.WithCancel(ctx)
	if len(cfg.Users) == 0 {
		b.log.Warn("weir broker: open, without authentication (loopback only)", "listen", ln.Addr().String())
	}
	b.wg.Add(2)
	go b.accept()
	go b.ticker()
	return b, nil
}

// Addr returns the address the broker listens on.
func (b *Broker) Addr() string { return b.ln.Addr().String() }

// Close stops listening, closes every connection and waits for the
// requests being served, then closes the partitions' writers.
func (b *Broker) Close() error {
	b.cancel()
	err := b.ln.Close()
	b.connsMu.Lock()
	for c := range b.conns {
		c.Close()
	}
	b.connsMu.Unlock()
	b.wg.Wait()
	b.txns.close()
	b.groups.close()
	if cerr := b.topics.close(); err == nil || errors.Is(err, net.ErrClosed) {
		err = cerr
	}
	return err
}

// Wait blocks until the broker stops (its context is done) and closes it.
func (b *Broker) Wait() error {
	<-b.ctx.Done()
	return b.Close()
}

func (b *Broker) ticker() {
	defer b.wg.Done()
	t := time.NewTicker(b.cfg.TickEvery)
	defer t.Stop()
	lastClean := b.cfg.Now()
	lastIdle := lastClean
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
			now := b.cfg.Now()
			b.groups.tick(now)
			b.txns.tick(now)
			if now.Sub(lastIdle) >= time.Second {
				lastIdle = now
				b.topics.releaseIdle(now)
			}
			if now.Sub(lastClean) >= cleanEvery {
				lastClean = now
				b.topics.clean(now)
			}
		}
	}
}

func (b *Broker) accept() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			if b.ctx.Err() == nil {
				b.log.Error("weir broker: accept", "err", err)
			}
			return
		}
		b.connsMu.Lock()
		if b.ctx.Err() != nil {
			b.connsMu.Unlock()
			c.Close()
			return
		}
		b.conns[c] = struct{}{}
		b.connsMu.Unlock()
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.serve(c)
			b.connsMu.Lock()
			delete(b.conns, c)
			b.connsMu.Unlock()
		}()
	}
}

// conn is one client connection's state.
type conn struct {
	b        *Broker
	c        net.Conn
	ctx      context.Context
	authed   bool
	sasl     saslState
	cmu      sync.Mutex     // guards cursors: a fetch reads partitions in parallel
	cursors  map[tp]*cursor // fetch positions kept between requests
	recs     []wlog.Record  // a produce's decoded records, reused
	syncs    wlog.SyncGroup // a produce's fsyncs
	stream   *produceStream // of the request being handled, if it streamed
	clientID string
}

// serve reads requests and answers them in order, one at a time, as a
// Kafka broker does on one connection.
func (b *Broker) serve(nc net.Conn) {
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	defer nc.Close()
	c := &conn{b: b, c: nc, ctx: ctx, authed: len(b.cfg.Users) == 0, cursors: map[tp]*cursor{}}
	defer c.closeCursors()
	defer c.syncs.Close()
	go func() {
		// A request blocked in a long poll or a rebalance ends with the
		// connection.
		<-ctx.Done()
		nc.Close()
	}()
	r := bufio.NewReaderSize(nc, 64<<10)
	var size [4]byte
	var body []byte
	var out []byte
	var fa fetchAnswer
	// A TCP connection writes a fetch answer with writev(2); TLS would
	// make a record of each piece, so it gets the answer in one buffer.
	_, isTCP := nc.(*net.TCPConn)
	for {
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(size[:])
		if n > maxRequestBytes || n < 8 {
			b.log.Warn("weir broker: request size out of range, closing the connection", "client", nc.RemoteAddr().String(), "bytes", n)
			return
		}
		if cap(body) < int(n) {
			body = make([]byte, n)
		}
		body = body[:n]
		stream, err := c.readBody(r, body)
		if err != nil {
			stream.finish()
			return
		}
		c.stream = stream
		resp, corr, flexibleHeader, err := c.handle(body)
		c.stream = nil
		stream.finish() // what a refused request did not take
		if err != nil {
			b.log.Warn("weir broker: bad request, closing the connection", "client", nc.RemoteAddr().String(), "err", err)
			return
		}
		if resp == nil {
			continue // acks=0
		}
		if fr, ok := resp.(*kmsg.FetchResponse); ok && isTCP && fa.encode(fr, corr, flexibleHeader) {
			// The record batches are written from where they are.
			if err := fa.writeTo(nc); err != nil {
				return
			}
			continue
		}
		out = append(out[:0], 0, 0, 0, 0, 0, 0, 0, 0)
		if flexibleHeader {
			out = append(out, 0)
		}
		out = resp.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		binary.BigEndian.PutUint32(out[4:], uint32(corr))
		if _, err := nc.Write(out); err != nil {
			return
		}
		if cap(out) > 128<<20 {
			out = nil // kept for the next answer, unless unusually large
		}
		if !c.authed && c.sasl.failed {
			return
		}
	}
}

// handle parses one request and serves it. It returns a nil response for
// a request that gets none (produce with acks=0).
func (c *conn) handle(body []byte) (resp kmsg.Response, corr int32, flexibleHeader bool, err error) {
	key := int16(binary.BigEndian.Uint16(body))
	version := int16(binary.BigEndian.Uint16(body[2:]))
	corr = int32(binary.BigEndian.Uint32(body[4:]))
	rest := body[8:]
	if len(rest) < 2 {
		return nil, corr, false, errors.New("short request header")
	}
	idLen := int16(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	if idLen > 0 {
		if int(idLen) > len(rest) {
			return nil, corr, false, errors.New("short client id")
		}
		c.clientID = string(rest[:idLen])
		rest = rest[idLen:]
	}
	api, ok := apis[key]
	if key == 18 && (!ok || version > api.max) {
		// A newer ApiVersions than ours: answer in v0, as Kafka does, so
		// the client retries with one we support.
		r := kmsg.NewPtrApiVersionsResponse()
		r.ErrorCode = 35 // UNSUPPORTED_VERSION
		r.ApiKeys = apiKeys()
		return r, corr, false, nil
	}
	if !ok || version < api.min || version > api.max {
		return nil, corr, false, fmt.Errorf("unsupported request key %d version %d", key, version)
	}
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	if req.IsFlexible() {
		if rest, err = skipTags(rest); err != nil {
			return nil, corr, false, err
		}
	}
	if err := req.ReadFrom(rest); err != nil {
		return nil, corr, false, fmt.Errorf("parse request key %d version %d: %w", key, version, err)
	}
	if !c.authed && key != 17 && key != 36 && key != 18 {
		return nil, corr, false, fmt.Errorf("request key %d before SASL authentication", key)
	}
	resp = c.serveRequest(req)
	if resp == nil {
		return nil, corr, false, nil
	}
	resp.SetVersion(version)
	return resp, corr, resp.IsFlexible() && key != 18, nil
}

// skipTags skips a tagged-fields section (KIP-482).
func skipTags(b []byte) ([]byte, error) {
	n, l := binary.Uvarint(b)
	if l <= 0 {
		return nil, errors.New("bad tagged fields")
	}
	b = b[l:]
	for range n {
		_, l := binary.Uvarint(b)
		if l <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[l:]
		size, l := binary.Uvarint(b)
		if l <= 0 || uint64(len(b)-l) < size {
			return nil, errors.New("bad tag size")
		}
		b = b[l+int(size):]
	}
	return b, nil
}

// apiRange is the versions of one request the broker serves.
type apiRange struct{ min, max int16 }

// apis are the requests and versions the broker serves. Versions that
// address topics by id (Produce 13, Fetch 13+, DeleteTopics 6) and the
// KIP-848 and KIP-890 (transactions v2) versions are left out, so clients
// use the names and protocols implemented here.
var apis = map[int16]apiRange{
	0:  {3, 11}, // Produce
	1:  {4, 12}, // Fetch
	2:  {1, 8},  // ListOffsets
	3:  {1, 12}, // Metadata
	8:  {2, 8},  // OffsetCommit
	9:  {1, 8},  // OffsetFetch
	10: {0, 4},  // FindCoordinator
	11: {0, 9},  // JoinGroup
	12: {0, 4},  // Heartbeat
	13: {0, 5},  // LeaveGroup
	14: {0, 5},  // SyncGroup
	15: {0, 5},  // DescribeGroups
	16: {0, 4},  // ListGroups
	17: {0, 1},  // SASLHandshake
	18: {0, 4},  // ApiVersions
	19: {0, 7},  // CreateTopics
	20: {0, 5},  // DeleteTopics
	22: {0, 4},  // InitProducerID
	24: {0, 3},  // AddPartitionsToTxn
	25: {0, 3},  // AddOffsetsToTxn
	26: {0, 3},  // EndTxn
	28: {0, 3},  // TxnOffsetCommit
	32: {0, 4},  // DescribeConfigs
	36: {0, 2},  // SASLAuthenticate
	42: {0, 2},  // DeleteGroups
	47: {0, 0},  // OffsetDelete
	65: {0, 0},  // DescribeTransactions
	66: {0, 1},  // ListTransactions
}

func apiKeys() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(apis))
	for k := range int16(100) {
		if r, ok := apis[k]; ok {
			lo := r.min
			if k == 0 {
				// librdkafka before 2.10 compresses with gzip, snappy or
				// lz4 only if Produce v0 is listed (KAFKA-18659): list it,
				// as Kafka 4 does, and refuse v0-2 requests all the same.
				lo = 0
			}
			keys = append(keys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: lo, MaxVersion: r.max})
		}
	}
	return keys
}

// serveRequest dispatches a parsed request.
func (c *conn) serveRequest(req kmsg.Request) kmsg.Response {
	b := c.b
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
		resp.ApiKeys = apiKeys()
		return resp
	case *kmsg.SASLHandshakeRequest:
		return c.saslHandshake(r)
	case *kmsg.SASLAuthenticateRequest:
		return c.saslAuthenticate(r)
	case *kmsg.MetadataRequest:
		return b.metadata(r)
	case *kmsg.CreateTopicsRequest:
		return b.createTopics(r)
	case *kmsg.DeleteTopicsRequest:
		return b.deleteTopics(r)
	case *kmsg.DescribeConfigsRequest:
		return b.describeConfigs(r)
	case *kmsg.ListOffsetsRequest:
		return b.listOffsets(r)
	case *kmsg.ProduceRequest:
		return b.produce(r, &c.recs, &c.syncs, c.stream)
	case *kmsg.FetchRequest:
		return c.fetch(r)
	case *kmsg.FindCoordinatorRequest:
		return b.findCoordinator(r)
	case *kmsg.InitProducerIDRequest:
		return b.initProducerID(r)
	case *kmsg.AddPartitionsToTxnRequest, *kmsg.AddOffsetsToTxnRequest, *kmsg.EndTxnRequest, *kmsg.TxnOffsetCommitRequest,
		*kmsg.ListTransactionsRequest, *kmsg.DescribeTransactionsRequest:
		return b.txns.handle(c.ctx, req)
	default:
		host, _, _ := net.SplitHostPort(c.c.RemoteAddr().String())
		if resp := b.groups.handle(withGroupClient(c.ctx, c.clientID, "/"+host), req); resp != nil {
			return resp
		}
		return nil
	}
}

// findCoordinator answers that this broker coordinates every group and
// transaction.
func (b *Broker) findCoordinator(r *kmsg.FindCoordinatorRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
	resp.NodeID, resp.Host, resp.Port = 0, b.host, b.port
	keys := r.CoordinatorKeys
	if r.Version < 4 {
		keys = []string{r.CoordinatorKey}
	}
	for _, k := range keys {
		co := kmsg.NewFindCoordinatorResponseCoordinator()
		co.Key, co.NodeID, co.Host, co.Port = k, 0, b.host, b.port
		if r.CoordinatorType != 0 && r.CoordinatorType != 1 {
			co.ErrorCode = 35 // UNSUPPORTED_VERSION: share coordinators are not served
		}
		resp.Coordinators = append(resp.Coordinators, co)
	}
	return resp
}
