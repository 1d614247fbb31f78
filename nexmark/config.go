package nexmark

import (
	"fmt"
	"time"
)

// Constants of the reference generator. "ref" below is the nexmark/nexmark
// project's Flink generator (nexmark-flink/src/main/java/com/github/nexmark/
// flink/generator/: GeneratorConfig, model/PersonGenerator, AuctionGenerator,
// BidGenerator, PriceGenerator, StringsGenerator); Beam's Nexmark suite
// (sdks/java/testing/nexmark, sources/generator/model) has the same values,
// except for the channel and url of bids, which only ref has.
const (
	// FirstPersonID and FirstAuctionID: ids start there "to help ensure the
	// queries find a match even on small synthesized dataset sizes" (ref
	// GeneratorConfig.FIRST_PERSON_ID / FIRST_AUCTION_ID).
	FirstPersonID  = 1000
	FirstAuctionID = 1000
	// FirstCategoryID and NumCategories: categories are 10..14 (ref
	// GeneratorConfig.FIRST_CATEGORY_ID, AuctionGenerator.NUM_CATEGORIES).
	FirstCategoryID = 10
	NumCategories   = 5

	// personIDLead and auctionIDLead: how many not-yet-created people and
	// auctions a random reference may point at (ref PersonGenerator.
	// PERSON_ID_LEAD, AuctionGenerator.AUCTION_ID_LEAD): a bid may name an
	// auction whose event comes a little later.
	personIDLead  = 10
	auctionIDLead = 10

	// hotSellerBatch, hotAuctionBatch, hotBidderBatch: a hot seller, auction
	// or bidder is the first (for bidders the second, so that hot bidders
	// and hot sellers differ) of the latest batch of this many people or
	// auctions (ref AuctionGenerator.HOT_SELLER_RATIO, BidGenerator.
	// HOT_AUCTION_RATIO and HOT_BIDDER_RATIO, all 100; the name "ratio" is
	// ref's).
	hotSellerBatch  = 100
	hotAuctionBatch = 100
	hotBidderBatch  = 100

	// hotChannelsRatio: a bid comes from one of the four hot channels with
	// probability 1 - 1/2, else from one of channelsNumber numbered ones
	// (ref BidGenerator.HOT_CHANNELS_RATIO, CHANNELS_NUMBER).
	hotChannelsRatio = 2
	channelsNumber   = 10_000

	// minStringLength: random strings are 3 to max-1 characters before
	// trimming (ref StringsGenerator.MIN_STRING_LENGTH).
	minStringLength = 3

	// DefaultBaseTime is the event time of event 0: 2015-07-15T00:00:00Z,
	// Beam's NexmarkUtils.BASE_TIME. ref uses the wall clock at start
	// (NexmarkConfiguration.baseTime); a fixed time makes runs repeatable.
	DefaultBaseTime = 1436918400000

	// DefaultEventRate is the event-time rate, events per second of event
	// time: the 10,000,000 TPS of ref's benchmark suite (conf/nexmark.yaml
	// nexmark.workload.suite.100m.tps, passed to the source as
	// first-event.rate). ref's class default is 10,000
	// (NexmarkConfiguration.firstEventRate), as is Beam's.
	DefaultEventRate = 10_000_000

	// WatermarkDelay is the bounded out-of-orderness of the Flink DDL:
	// WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
	// (ref queries/ddl_gen.sql).
	WatermarkDelay = 4 * time.Second
)

// hotChannels are ref's BidGenerator.HOT_CHANNELS.
var hotChannels = [4]string{"Google", "Facebook", "Baidu", "Apple"}

// People data of ref's PersonGenerator (kept small "so that the example
// queries will find results even with a small batch of events").
var (
	usStates   = []string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	usCities   = []string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
	firstNames = []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	lastNames  = []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
)

// GeneratorConfig configures the event generator. The zero value of each
// field means its default, which is ref's (NexmarkConfiguration) unless said
// otherwise.
type GeneratorConfig struct {
	// Events is the number of events (event numbers 0..Events-1); < 0
	// generates without end. 0 means the default, 10,000,000.
	Events int64
	// Seed makes the stream deterministic: event n is a function of (Seed,
	// n) only, whatever the splits or the rate.
	Seed uint64
	// EventRate is the event-time rate in events per second: event n has
	// date_time BaseTime + n·10⁶/EventRate µs, truncated to ms (ref
	// GeneratorConfig.timestampForEvent with one generator). Default
	// DefaultEventRate.
	EventRate float64
	// BaseTime is event 0's date_time, epoch ms. Default DefaultBaseTime.
	BaseTime int64
	// RateLimit caps the wall-clock rate (events per second over all
	// splits; 0: as fast as possible). Event n is due at start +
	// n/RateLimit, start being when the first split opened.
	RateLimit float64
	// Splits divides the event numbers: split s generates n ≡ s (mod
	// Splits), so the source runs in parallel (default 1).
	Splits int

	// Proportions of people, auctions and bids: event n is a person if n
	// mod total < PersonProportion, an auction if below PersonProportion +
	// AuctionProportion, else a bid. Defaults 1, 3, 46 (ref).
	PersonProportion, AuctionProportion, BidProportion int
	// HotAuctionRatio: a bid is for the current hot auction with probability
	// 1 - 1/HotAuctionRatio (default 2, ref hotAuctionRatio).
	HotAuctionRatio int
	// HotSellersRatio: an auction's seller is the current hot seller with
	// probability 1 - 1/HotSellersRatio (default 4, ref hotSellersRatio).
	HotSellersRatio int
	// HotBiddersRatio: a bid's bidder is the current hot bidder with
	// probability 1 - 1/HotBiddersRatio (default 4, ref hotBiddersRatio).
	HotBiddersRatio int
	// NumInFlightAuctions: a cold bid names one of the latest this many
	// auctions (plus the lead); it also sets auctions' lengths (default
	// 100, ref numInFlightAuctions).
	NumInFlightAuctions int
	// NumActivePeople: a cold seller or bidder is one of the latest this
	// many people (plus the lead) (default 1000, ref numActivePeople).
	NumActivePeople int
	// AvgPersonByteSize, AvgAuctionByteSize, AvgBidByteSize: the extra
	// field pads records to these average sizes (defaults 200, 500, 100,
	// ref avgPersonByteSize etc.).
	AvgPersonByteSize, AvgAuctionByteSize, AvgBidByteSize int
}

// DefaultEvents is the default GeneratorConfig.Events.
const DefaultEvents = 10_000_000

// WithDefaults returns c with every zero field set to its default.
func (c GeneratorConfig) WithDefaults() GeneratorConfig {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	if c.Events == 0 {
		c.Events = DefaultEvents
	}
	if c.EventRate == 0 {
		c.EventRate = DefaultEventRate
	}
	if c.BaseTime == 0 {
		c.BaseTime = DefaultBaseTime
	}
	def(&c.Splits, 1)
	if c.PersonProportion == 0 && c.AuctionProportion == 0 && c.BidProportion == 0 {
		c.PersonProportion, c.AuctionProportion, c.BidProportion = 1, 3, 46
	}
	def(&c.HotAuctionRatio, 2)
	def(&c.HotSellersRatio, 4)
	def(&c.HotBiddersRatio, 4)
	def(&c.NumInFlightAuctions, 100)
	def(&c.NumActivePeople, 1000)
	def(&c.AvgPersonByteSize, 200)
	def(&c.AvgAuctionByteSize, 500)
	def(&c.AvgBidByteSize, 100)
	return c
}

// Validate reports a configuration the generator cannot use.
func (c GeneratorConfig) Validate() error {
	switch {
	case c.EventRate <= 0:
		return fmt.Errorf("nexmark: EventRate %v must be positive", c.EventRate)
	case c.RateLimit < 0:
		return fmt.Errorf("nexmark: RateLimit %v must not be negative", c.RateLimit)
	case c.Splits < 1:
		return fmt.Errorf("nexmark: Splits %d must be at least 1", c.Splits)
	case c.PersonProportion < 1 || c.AuctionProportion < 1 || c.BidProportion < 1:
		return fmt.Errorf("nexmark: proportions %d:%d:%d must all be at least 1", c.PersonProportion, c.AuctionProportion, c.BidProportion)
	case c.HotAuctionRatio < 1 || c.HotSellersRatio < 1 || c.HotBiddersRatio < 1:
		return fmt.Errorf("nexmark: hot ratios must be at least 1")
	case c.NumInFlightAuctions < 1 || c.NumActivePeople < 1:
		return fmt.Errorf("nexmark: NumInFlightAuctions and NumActivePeople must be at least 1")
	}
	return nil
}

func (c GeneratorConfig) String() string {
	return fmt.Sprintf("nexmark{events=%d seed=%d event-rate=%g/s base=%d rate-limit=%g/s splits=%d proportions=%d:%d:%d hot=%d/%d/%d in-flight=%d active=%d}",
		c.Events, c.Seed, c.EventRate, c.BaseTime, c.RateLimit, c.Splits, c.PersonProportion, c.AuctionProportion, c.BidProportion,
		c.HotAuctionRatio, c.HotSellersRatio, c.HotBiddersRatio, c.NumInFlightAuctions, c.NumActivePeople)
}
