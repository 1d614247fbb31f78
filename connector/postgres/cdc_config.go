package postgres

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// CDCConfig configures the CDC source (CDC, CDCRows). The fields carry the
// option names of Flink CDC's postgres-cdc connector (the `option` tag), so
// that a SQL table declared with 'connector' = 'postgres-cdc' maps onto it
// through FromOptions.
type CDCConfig struct {
	// Hostname is the server's host name or address, or a Unix socket
	// directory (a path starting with "/").
	Hostname string `option:"hostname"`
	// Port is the server's port (default 5432).
	Port int `option:"port"`
	// Username and Password authenticate. The role needs the REPLICATION
	// attribute (or to be a superuser) and SELECT on the captured tables.
	Username string `option:"username"`
	Password string `option:"password"`
	// DatabaseName is the database to capture.
	DatabaseName string `option:"database-name"`
	// SchemaName and TableName are regular expressions that a table's
	// schema and name must match entirely (as in Flink CDC); SchemaName
	// defaults to "public". TableName is required.
	SchemaName string `option:"schema-name"`
	TableName  string `option:"table-name"`
	// SlotName is the logical replication slot the job reads through, one
	// per job (required). The slot keeps the server's WAL from the last
	// acknowledged position: a job that stays down keeps WAL piling up on
	// the server until it comes back or the slot is dropped (DropCDC).
	SlotName string `option:"slot.name"`
	// DecodingPluginName is the logical decoding output plugin; only
	// "pgoutput" (PostgreSQL's own, built in since version 10) is supported,
	// and it is the default.
	DecodingPluginName string `option:"decoding.plugin.name"`
	// PublicationName is the publication that selects the captured tables
	// for pgoutput (default: the slot's name).
	PublicationName string `option:"debezium.publication.name"`
	// PublicationAutoCreate says what to do when the publication is
	// missing: "filtered" (default) creates it FOR TABLE the captured
	// tables, "all_tables" creates it FOR ALL TABLES (needs a superuser),
	// "disabled" fails: the user creates it.
	PublicationAutoCreate string `option:"debezium.publication.autocreate.mode"`
	// StartupMode is "initial" (default: a consistent snapshot of the
	// tables, then their changes) or "latest-offset" (changes only, from
	// the slot's position; a slot is created if missing).
	StartupMode string `option:"scan.startup.mode"`
	// SlotMaxRetries and SlotRetryDelay say how long to wait for a slot
	// that another connection holds (Debezium's slot.max.retries, default
	// 6, and slot.retry.delay.ms, default 10 s, passed through Flink CDC
	// as 'debezium.slot.max.retries' and 'debezium.slot.retry.delay.ms'):
	// the reader of a job that restarts after a failure often finds its
	// slot still held by the session of the reader it replaces, which
	// the server ends on its own time. The slot is looked at again every
	// 100 ms (or every SlotRetryDelay, if shorter) until it is free or
	// SlotMaxRetries times SlotRetryDelay have passed; then opening fails,
	// naming the process that holds it. A negative SlotMaxRetries does
	// not wait.
	SlotMaxRetries int           `option:"debezium.slot.max.retries"`
	SlotRetryDelay time.Duration `option:"debezium.slot.retry.delay.ms"`
	// DSN, when set, is a libpq connection string used instead of
	// Hostname, Port, Username, Password and DatabaseName (not a Flink
	// option).
	DSN string `option:"dsn"`
}

// cdcOptionNames are the option keys FromOptions accepts.
var cdcOptionNames = []string{
	"hostname", "port", "username", "password", "database-name", "schema-name", "table-name",
	"slot.name", "decoding.plugin.name", "debezium.publication.name",
	"debezium.publication.autocreate.mode", "scan.startup.mode", "dsn",
	"debezium.slot.max.retries", "debezium.slot.retry.delay.ms",
}

// CDCOptionNames are the option keys FromOptions accepts ('connector'
// aside), for a SQL table factory to hand over.
func CDCOptionNames() []string { return slices.Clone(cdcOptionNames) }

// FromOptions builds a CDCConfig from Flink CDC's postgres-cdc option
// names ('hostname', 'port', 'username', 'password', 'database-name',
// 'schema-name', 'table-name', 'slot.name', 'decoding.plugin.name',
// 'debezium.publication.name', 'debezium.publication.autocreate.mode',
// 'debezium.slot.max.retries', 'debezium.slot.retry.delay.ms',
// 'scan.startup.mode', and weir's 'dsn'). 'connector' is ignored. An
// unknown option or a malformed value is an error naming it, and the
// result is validated.
func FromOptions(opts map[string]string) (CDCConfig, error) {
	var c CDCConfig
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := opts[k]
		switch k {
		case "connector":
		case "hostname":
			c.Hostname = v
		case "port":
			p, err := strconv.Atoi(v)
			if err != nil || p < 1 || p > 65535 {
				return c, fmt.Errorf("postgres-cdc: option 'port' = '%s': want a port number", v)
			}
			c.Port = p
		case "username":
			c.Username = v
		case "password":
			c.Password = v
		case "database-name":
			c.DatabaseName = v
		case "schema-name":
			c.SchemaName = v
		case "table-name":
			c.TableName = v
		case "slot.name":
			c.SlotName = v
		case "decoding.plugin.name":
			c.DecodingPluginName = v
		case "debezium.publication.name":
			c.PublicationName = v
		case "debezium.publication.autocreate.mode":
			c.PublicationAutoCreate = v
		case "scan.startup.mode":
			c.StartupMode = v
		case "dsn":
			c.DSN = v
		case "debezium.slot.max.retries":
			n, err := strconv.Atoi(v)
			if err != nil {
				return c, fmt.Errorf("postgres-cdc: option '%s' = '%s': want a number of retries", k, v)
			}
			c.SlotMaxRetries = n
			if n == 0 {
				c.SlotMaxRetries = -1 // 0 in Debezium: no retries
			}
		case "debezium.slot.retry.delay.ms":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return c, fmt.Errorf("postgres-cdc: option '%s' = '%s': want a positive number of milliseconds", k, v)
			}
			c.SlotRetryDelay = time.Duration(n) * time.Millisecond
		default:
			return c, fmt.Errorf("postgres-cdc: unknown option '%s' (known: %s)", k, strings.Join(cdcOptionNames, ", "))
		}
	}
	return c, c.Validate()
}

// slotName is what PostgreSQL accepts as a replication slot's name.
var slotName = regexp.MustCompile(`^[a-z0-9_]{1,63}$`)

// withDefaults fills in the defaults.
func (c CDCConfig) withDefaults() CDCConfig {
	if c.Port == 0 {
		c.Port = 5432
	}
	if c.SchemaName == "" {
		c.SchemaName = "public"
	}
	if c.DecodingPluginName == "" {
		c.DecodingPluginName = "pgoutput"
	}
	if c.PublicationName == "" {
		c.PublicationName = c.SlotName
	}
	if c.PublicationAutoCreate == "" {
		c.PublicationAutoCreate = "filtered"
	}
	if c.StartupMode == "" {
		c.StartupMode = "initial"
	}
	if c.SlotMaxRetries == 0 {
		c.SlotMaxRetries = 6
	}
	if c.SlotRetryDelay <= 0 {
		c.SlotRetryDelay = 10 * time.Second
	}
	return c
}

// Validate checks the configuration, naming the option at fault.
func (c CDCConfig) Validate() error {
	c = c.withDefaults()
	switch {
	case c.DSN == "" && c.Hostname == "":
		return fmt.Errorf("postgres-cdc: option 'hostname' is missing")
	case c.DSN == "" && c.DatabaseName == "":
		return fmt.Errorf("postgres-cdc: option 'database-name' is missing")
	case c.TableName == "":
		return fmt.Errorf("postgres-cdc: option 'table-name' is missing")
	case c.SlotName == "":
		return fmt.Errorf("postgres-cdc: option 'slot.name' is missing")
	case !slotName.MatchString(c.SlotName):
		return fmt.Errorf("postgres-cdc: option 'slot.name' = '%s': a slot name has 1 to 63 lower-case letters, digits and underscores", c.SlotName)
	case c.DecodingPluginName != "pgoutput":
		return fmt.Errorf("postgres-cdc: option 'decoding.plugin.name' = '%s': only 'pgoutput' is supported", c.DecodingPluginName)
	case !slices.Contains([]string{"filtered", "all_tables", "disabled"}, c.PublicationAutoCreate):
		return fmt.Errorf("postgres-cdc: option 'debezium.publication.autocreate.mode' = '%s': want filtered, all_tables or disabled", c.PublicationAutoCreate)
	case !slices.Contains([]string{"initial", "latest-offset"}, c.StartupMode):
		return fmt.Errorf("postgres-cdc: option 'scan.startup.mode' = '%s': want initial or latest-offset", c.StartupMode)
	}
	for opt, re := range map[string]string{"schema-name": c.SchemaName, "table-name": c.TableName} {
		if _, err := regexp.Compile(re); err != nil {
			return fmt.Errorf("postgres-cdc: option '%s' = '%s': %w", opt, re, err)
		}
	}
	return nil
}

// dsn is the connection string, with replication=database for the
// replication connection.
func (c CDCConfig) dsn(replication bool) string {
	if c.DSN != "" {
		if !replication {
			return c.DSN
		}
		if strings.Contains(c.DSN, "://") {
			if strings.Contains(c.DSN, "?") {
				return c.DSN + "&replication=database"
			}
			return c.DSN + "?replication=database"
		}
		return c.DSN + " replication=database"
	}
	q := func(s string) string {
		return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `'`, `\'`) + "'"
	}
	s := fmt.Sprintf("host=%s port=%d dbname=%s sslmode=prefer", q(c.Hostname), c.Port, q(c.DatabaseName))
	if c.Username != "" {
		s += " user=" + q(c.Username)
	}
	if c.Password != "" {
		s += " password=" + q(c.Password)
	}
	if replication {
		s += " replication=database"
	}
	return s
}

// String prints the configuration without the password.
func (c CDCConfig) String() string {
	c = c.withDefaults()
	where := c.DSN
	if where != "" {
		where = "dsn=(set)"
	} else {
		where = fmt.Sprintf("hostname=%s port=%d username=%s database-name=%s", c.Hostname, c.Port, c.Username, c.DatabaseName)
	}
	return fmt.Sprintf("postgres-cdc{%s schema-name=%s table-name=%s slot.name=%s publication=%s (%s) startup=%s}",
		where, c.SchemaName, c.TableName, c.SlotName, c.PublicationName, c.PublicationAutoCreate, c.StartupMode)
}
