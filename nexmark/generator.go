package nexmark

import (
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unsafe"
)

// Generator makes the events of a GeneratorConfig. Event n is a pure
// function of (Seed, n): its kind comes from n (ref: rem = n mod 50, below
// 1 a person, below 4 an auction, else a bid), its ids from n and a random
// draw from a generator seeded by (Seed, n). So any split of the event
// numbers, any parallelism and any restart produce the same events.
//
// It is safe for concurrent use: after NewGenerator it only reads.
type Generator struct {
	cfg     GeneratorConfig
	total   int64   // sum of the proportions
	delayUs float64 // inter-event delay, µs of event time

	// Pools of random text, drawn once from Seed. Strings of events are
	// windows into them, so making an event allocates nothing (a person
	// allocates one small buffer for its email and credit card).
	text  string // ref nextString's alphabet: ' ' w.p. 1/13, else a-z
	extra string // ref nextExactString's alphabet (see newExtraPool)

	names                 []string // every "First Last" of ref's lists
	hotURLs               [len(hotChannels)]string
	channels, channelURLs []string // channel-i and its url, i < channelsNumber
}

const poolSize = 1 << 20

// textPoolSize is the size of the text pool. Its strings are read when
// they are made (nextString trims them), so the pool is small enough to
// stay in a core's cache beside a query's state: a pool larger than the
// cache would make its reads a cache miss or two a string, charged to the
// query being measured. 64 K windows of up to 100 bytes are still far more
// strings than a run shows side by side.
const textPoolSize = 1 << 16

// NewGenerator returns the generator of cfg (after WithDefaults).
func NewGenerator(cfg GeneratorConfig) (*Generator, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Generator{
		cfg:     cfg,
		total:   int64(cfg.PersonProportion + cfg.AuctionProportion + cfg.BidProportion),
		delayUs: 1e6 / cfg.EventRate,
	}
	r := newRNG(cfg.Seed, math.MaxUint64) // the pools' own stream, no event's
	g.text = newTextPool(&r, ' ')
	g.extra = newExtraPool(&r)
	for _, f := range firstNames {
		for _, l := range lastNames {
			g.names = append(g.names, f+" "+l)
		}
	}
	// ref draws the hot urls and the channel urls from unseeded
	// java.util.Random (different in every JVM); here they come from Seed.
	for i := range g.hotURLs {
		g.hotURLs[i] = baseURL(&r)
	}
	g.channels = make([]string, channelsNumber)
	g.channelURLs = make([]string, channelsNumber)
	for i := range channelsNumber {
		g.channels[i] = "channel-" + strconv.Itoa(i)
		u := baseURL(&r)
		if r.intn(10) > 0 {
			// ref: "&channel_id=" + Math.abs(Integer.reverse(i)). Java's
			// abs leaves MinInt32 negative (i = 1); so does this.
			v := int32(bits.Reverse32(uint32(i)))
			if v < 0 && v != math.MinInt32 {
				v = -v
			}
			u += "&channel_id=" + strconv.Itoa(int(v))
		}
		g.channelURLs[i] = u
	}
	return g, nil
}

// Config is the generator's configuration, defaults applied.
func (g *Generator) Config() GeneratorConfig { return g.cfg }

// Timestamp is event n's date_time, epoch ms (ref
// GeneratorConfig.timestampForEvent: baseTime + (long)(n·delayUs)/1000).
func (g *Generator) Timestamp(n int64) int64 {
	return g.cfg.BaseTime + int64(float64(n)*g.delayUs)/1000
}

// EventNumberAt is the first event number whose date_time is at least t
// (the inverse of Timestamp, up to rounding).
func (g *Generator) EventNumberAt(t int64) int64 {
	n := int64(float64(t-g.cfg.BaseTime) * 1000 / g.delayUs)
	for n > 0 && g.Timestamp(n-1) >= t {
		n--
	}
	for g.Timestamp(n) < t {
		n++
	}
	return n
}

// Type is event n's kind.
func (g *Generator) Type(n int64) EventType {
	switch rem := n % g.total; {
	case rem < int64(g.cfg.PersonProportion):
		return PersonEvent
	case rem < int64(g.cfg.PersonProportion+g.cfg.AuctionProportion):
		return AuctionEvent
	}
	return BidEvent
}

// Event sets *e to event n.
func (g *Generator) Event(n int64, e *Event) {
	r := newRNG(g.cfg.Seed, uint64(n))
	ts := g.Timestamp(n)
	switch g.Type(n) {
	case PersonEvent:
		*e = Event{Type: PersonEvent}
		g.person(n, &r, ts, &e.Person)
	case AuctionEvent:
		*e = Event{Type: AuctionEvent}
		g.auction(n, &r, ts, &e.Auction)
	default:
		*e = Event{Type: BidEvent}
		g.bid(n, &r, ts, &e.Bid)
	}
}

// lastPerson is the latest person id (base 0) at event n: the current one
// if n is a person (ref PersonGenerator.lastBase0PersonId).
func (g *Generator) lastPerson(n int64) int64 {
	epoch, off := n/g.total, n%g.total
	pp := int64(g.cfg.PersonProportion)
	if off >= pp {
		off = pp - 1
	}
	return epoch*pp + off
}

// lastAuction is the latest auction id (base 0) at event n (ref
// AuctionGenerator.lastBase0AuctionId).
func (g *Generator) lastAuction(n int64) int64 {
	epoch, off := n/g.total, n%g.total
	pp, ap := int64(g.cfg.PersonProportion), int64(g.cfg.AuctionProportion)
	switch {
	case off < pp:
		epoch--
		off = ap - 1
	case off >= pp+ap:
		off = ap - 1
	default:
		off -= pp
	}
	return epoch*ap + off
}

// randomPerson picks one of the latest NumActivePeople people or one of the
// personIDLead not created yet (ref PersonGenerator.nextBase0PersonId).
func (g *Generator) randomPerson(n int64, r *rng) int64 {
	people := g.lastPerson(n) + 1
	active := min(people, int64(g.cfg.NumActivePeople))
	return people - active + r.int63n(active+personIDLead)
}

// randomAuction picks one of the latest NumInFlightAuctions auctions or one
// of the auctionIDLead not created yet (ref
// AuctionGenerator.nextBase0AuctionId).
func (g *Generator) randomAuction(n int64, r *rng) int64 {
	last := g.lastAuction(n)
	lo := max(last-int64(g.cfg.NumInFlightAuctions), 0)
	return lo + r.int63n(last-lo+1+auctionIDLead)
}

func (g *Generator) person(n int64, r *rng, ts int64, p *Person) {
	p.ID = g.lastPerson(n) + FirstPersonID
	p.Name = g.names[r.intn(len(firstNames))*len(lastNames)+r.intn(len(lastNames))]
	// One buffer for email (ref: nextString(7)@nextString(5).com) and
	// credit card (ref: four groups of %04d).
	user, domain := g.nextString(r, 7), g.nextString(r, 5)
	buf := make([]byte, 0, len(user)+len(domain)+5+19)
	buf = append(append(append(append(buf, user...), '@'), domain...), ".com"...)
	emailLen := len(buf)
	for i := range 4 {
		if i > 0 {
			buf = append(buf, ' ')
		}
		v := r.intn(10000)
		buf = append(buf, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
	}
	s := unsafe.String(unsafe.SliceData(buf), len(buf))
	p.EmailAddress, p.CreditCard = s[:emailLen], s[emailLen:]
	p.City = usCities[r.intn(len(usCities))]
	p.State = usStates[r.intn(len(usStates))]
	p.DateTime = ts
	size := 8 + len(p.Name) + len(p.EmailAddress) + len(p.CreditCard) + len(p.City) + len(p.State)
	p.Extra = g.nextExtra(r, size, g.cfg.AvgPersonByteSize)
}

func (g *Generator) auction(n int64, r *rng, ts int64, a *Auction) {
	a.ID = g.lastAuction(n) + FirstAuctionID
	// ref AuctionGenerator.nextSellerIdWithRandom.
	if r.intn(g.cfg.HotSellersRatio) > 0 {
		a.Seller = g.lastPerson(n) / hotSellerBatch * hotSellerBatch
	} else {
		a.Seller = g.randomPerson(n, r)
	}
	a.Seller += FirstPersonID
	a.Category = FirstCategoryID + int64(r.intn(NumCategories))
	a.InitialBid = nextPrice(r)
	a.DateTime = ts
	a.Expires = ts + g.auctionLength(n, r, ts)
	a.ItemName = g.nextString(r, 20)
	a.Description = g.nextString(r, 100)
	a.Reserve = a.InitialBid + nextPrice(r)
	size := 8 + len(a.ItemName) + len(a.Description) + 8 + 8 + 8 + 8 + 8
	a.Extra = g.nextExtra(r, size, g.cfg.AvgAuctionByteSize)
}

// auctionLength is uniform in [1, 2·horizon], horizon being the event time
// until NumInFlightAuctions more auctions exist (ref
// AuctionGenerator.nextAuctionLengthMs). At the suite's 10M events/s the
// horizon is under a millisecond, so auctions last 1 ms.
func (g *Generator) auctionLength(n int64, r *rng, ts int64) int64 {
	ahead := int64(g.cfg.NumInFlightAuctions) * g.total / int64(g.cfg.AuctionProportion)
	horizon := g.Timestamp(n+ahead) - ts
	return 1 + r.int63n(max(horizon*2, 1))
}

func (g *Generator) bid(n int64, r *rng, ts int64, b *Bid) {
	if r.intn(g.cfg.HotAuctionRatio) > 0 {
		b.Auction = g.lastAuction(n) / hotAuctionBatch * hotAuctionBatch
	} else {
		b.Auction = g.randomAuction(n, r)
	}
	b.Auction += FirstAuctionID
	if r.intn(g.cfg.HotBiddersRatio) > 0 {
		b.Bidder = g.lastPerson(n)/hotBidderBatch*hotBidderBatch + 1
	} else {
		b.Bidder = g.randomPerson(n, r)
	}
	// ref's Flink BidGenerator adds FIRST_PERSON_ID twice, so its bidders
	// are no person's id; Beam's adds it once, as here.
	b.Bidder += FirstPersonID
	b.Price = nextPrice(r)
	if r.intn(hotChannelsRatio) > 0 {
		i := r.intn(len(hotChannels))
		b.Channel, b.URL = hotChannels[i], g.hotURLs[i]
	} else {
		i := r.intn(channelsNumber)
		b.Channel, b.URL = g.channels[i], g.channelURLs[i]
	}
	b.DateTime = ts
	b.Extra = g.nextExtra(r, 8+8+8+8, g.cfg.AvgBidByteSize)
}

// nextPrice is round(10^(6u)·100) cents for u uniform in [0, 1): from $1
// to $1M, uniform in log (ref PriceGenerator.nextPrice). math.Exp is a
// large part of the generator's time, and a large interpolation table
// misses the caches beside a large keyed state. So 10^(6u)·100 =
// 100·2^y, y = 6u·log₂10, splits as y = k + j/64 + r with r < 1/64:
// 100·2^k and 2^(j/64) from two small tables (the first exact), 2^r =
// e^(r·ln2) from a degree-5 Taylor polynomial (relative error below
// 3·10⁻¹⁵, as float64 rounding). A price is then off by a cent from
// round(10^(6u)·100) only when that lies within ~10⁻⁶ of a half cent
// (TestNextPrice).
func nextPrice(r *rng) int64 {
	// u·64y in fixed point: u is the draw times 2⁻⁶⁴ and priceScale is
	// 64y·2⁵³, so the product's top 11 bits are n = ⌊u·64y⌋ and the next
	// 53 its fraction. An integer multiplication instead of a chain of
	// float conversions (BenchmarkNextPriceChained).
	hi, _ := bits.Mul64(r.next(), priceScale)
	n := int(hi >> 53) // < 64·20
	t := float64(hi&(1<<53-1)) * (0x1p-53 * math.Ln2 / 64)
	// The polynomial in Estrin's form: its terms are computed side by
	// side, a chain of 5 operations after t instead of Horner's 10.
	t2 := t * t
	p := (1 + t) + t2*((1.0/2+t*(1.0/6))+t2*(1.0/24+t*(1.0/120)))
	return int64(pricePow2[n>>6]*priceFrac[n&63]*p + 0.5)
}

// priceScale is 64·6·log₂10·2⁵³ (< 2⁶⁴), rounded: 64 steps an octave over
// the six decades of prices, in fixed point.
var priceScale = uint64(math.Round(6 * math.Ln10 / math.Ln2 * 64 * 0x1p53))

// pricePow2[k] is 100·2^k; priceFrac[j] is 2^(j/64).
var pricePow2, priceFrac = func() (p [20]float64, f [64]float64) {
	for k := range p {
		p[k] = math.Ldexp(100, k)
	}
	for j := range f {
		f[j] = math.Exp2(float64(j) / 64)
	}
	return
}()

// nextString is ref StringsGenerator.nextString(maxLength): 3 to
// maxLength-1 characters, each a space w.p. 1/13 or a lowercase letter,
// then trimmed. Here a window of the text pool.
func (g *Generator) nextString(r *rng, maxLength int) string {
	l := minStringLength + r.intn(maxLength-minStringLength)
	off := r.intn(len(g.text) - l)
	return strings.TrimSpace(g.text[off : off+l])
}

// nextExtra pads a record of currentSize bytes to desiredAverage on
// average: a string of desired ± 20% (ref StringsGenerator.nextExtra).
func (g *Generator) nextExtra(r *rng, currentSize, desiredAverage int) string {
	if currentSize > desiredAverage {
		return ""
	}
	desired := desiredAverage - currentSize
	delta := int(math.Floor(float64(desired)*0.2 + 0.5))
	size := desired - delta
	if delta > 0 {
		size += r.intn(2 * delta)
	}
	off := r.intn(len(g.extra) - size)
	return g.extra[off : off+size]
}

func newTextPool(r *rng, special byte) string {
	b := make([]byte, textPoolSize)
	for i := range b {
		if r.intn(13) == 0 {
			b[i] = special
		} else {
			b[i] = byte('a' + r.intn(26))
		}
	}
	return string(b)
}

// newExtraPool draws ref nextExactString's characters: 'a' + rnd % 26 for
// six successive divisions of a random int32. Java's remainder keeps the
// sign, so a negative rnd gives the characters 'H'..'`' below 'a' (among
// them '\\', which JSON escapes): reproduced, since it changes how often a
// character such as 'c' occurs (query 14 counts them).
func newExtraPool(r *rng) string {
	b := make([]byte, 0, poolSize)
	for len(b) < poolSize {
		rnd := int32(r.next())
		for k := 0; k < 6 && len(b) < poolSize; k++ {
			b = append(b, byte('a'+rnd%26))
			rnd /= 26
		}
	}
	return string(b)
}

// baseURL is ref BidGenerator.getBaseUrl: three path parts of
// nextString(5, '_') (3 or 4 characters, '_' w.p. 1/13).
func baseURL(r *rng) string {
	part := func() string {
		l := minStringLength + r.intn(5-minStringLength)
		b := make([]byte, l)
		for i := range b {
			if r.intn(13) == 0 {
				b[i] = '_'
			} else {
				b[i] = byte('a' + r.intn(26))
			}
		}
		return string(b)
	}
	return "https://www.nexmark.com/" + part() + "/" + part() + "/" + part() + "/item.htm?query=1"
}

// rng is SplitMix64 (Steele, Lea, Flood 2014): a few multiplications per
// draw and a state of one word, so seeding one per event is free.
type rng struct{ s uint64 }

func newRNG(seed, stream uint64) rng {
	return rng{s: mix64(seed ^ mix64(stream+0x632be59bd9b4e019))}
}

func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix64(r.s)
}

// intn is uniform in [0, n) for 0 < n < 2³² (Lemire's multiply-shift;
// the bias, below n/2³², is far below anything the tests can see).
func (r *rng) intn(n int) int {
	return int(((r.next() >> 32) * uint64(n)) >> 32)
}

// int63n is uniform in [0, n), n > 0.
func (r *rng) int63n(n int64) int64 {
	if n < 1<<32 {
		return int64(r.intn(int(n)))
	}
	return int64(r.next() % uint64(n))
}

// float64 is uniform in [0, 1).
func (r *rng) float64() float64 { return float64(r.next()>>11) / (1 << 53) }
