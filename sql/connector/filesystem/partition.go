package filesystem

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/internal/datetime"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/format/parquet"
	"github.com/weirstream/weir/sql/types"
)

// partitioning is how a sink lays its rows out in Hive-style partition
// directories, and commits them.
type partitioning struct {
	null   string // the directory value of NULL and '' ('partition.default-name')
	keys   []int  // the partition columns, in directory order
	data   []int  // the other columns, written in the files
	enc    []func(dst []byte, v *types.Value) []byte
	names  []string
	commit []file.SinkOption
}

// partitionOptions reads the table's PARTITIONED BY columns and Flink's
// partition-commit options. nil when the table is not partitioned.
func partitionOptions(t *connector.Table, o *connector.Options) *partitioning {
	null := defaultName(o)
	trigger := o.Enum("sink.partition-commit.trigger", "process-time", "process-time", "partition-time")
	delay := o.Duration("sink.partition-commit.delay", 0)
	policy := o.String("sink.partition-commit.policy.kind", "")
	success := o.String("sink.partition-commit.success-file.name", "_SUCCESS")
	if len(t.PartitionKeys) == 0 {
		if policy != "" {
			o.Invalid("sink.partition-commit.policy.kind", "the table is not partitioned (PARTITIONED BY)")
		}
		return nil
	}
	p := &partitioning{null: null}
	isKey := map[int]bool{}
	for _, i := range t.PartitionKeys {
		if i < 0 || i >= len(t.Schema) || isKey[i] {
			o.Errorf("invalid partition keys %v", t.PartitionKeys)
			return nil
		}
		enc, err := format.TextEncoder(t.Schema[i].Type, ' ')
		if err != nil {
			o.Errorf("partition column '%s': %v", t.Schema[i].Name, err)
			return nil
		}
		isKey[i] = true
		p.keys = append(p.keys, i)
		p.enc = append(p.enc, enc)
		p.names = append(p.names, t.Schema[i].Name)
	}
	for i := range t.Schema {
		if !isKey[i] {
			p.data = append(p.data, i)
		}
	}
	if len(p.data) == 0 {
		o.Errorf("every column is a partition column (PARTITIONED BY)")
		return nil
	}
	switch policy {
	case "":
	case "success-file":
		if success == "" || strings.ContainsAny(success, `/\`) || success == "." || success == ".." {
			o.Invalid("sink.partition-commit.success-file.name", "must be a file name")
			return nil
		}
		p.commit = append(p.commit, file.PartitionCommit(success, delay, nil))
		if trigger == "partition-time" {
			extract := partitionTimeExtractor(o, p.names)
			if extract == nil {
				return nil
			}
			p.commit = append(p.commit, file.PartitionTime(extract))
		}
	default:
		o.Invalid("sink.partition-commit.policy.kind", "only 'success-file' is supported (not '%s')", policy)
	}
	return p
}

// partitionTimeExtractor reads Flink's default partition-time extractor:
// 'partition.time-extractor.timestamp-pattern' ("$dt $hour:00:00"; by
// default the first partition column) with the partition's values put in
// for $name, parsed with 'partition.time-extractor.timestamp-formatter'
// (a Java DateTimeFormatter pattern; by default 'yyyy-MM-dd HH:mm:ss',
// or a date alone) as a local time of
// 'sink.partition-commit.watermark-time-zone' (default UTC).
func partitionTimeExtractor(o *connector.Options, names []string) func(string) (time.Time, error) {
	if kind := o.String("partition.time-extractor.kind", "default"); kind != "default" {
		o.Invalid("partition.time-extractor.kind", "only 'default' is supported (a 'custom' extractor is a Java class)")
		return nil
	}
	o.Declare("partition.time-extractor.class")
	pattern := o.String("partition.time-extractor.timestamp-pattern", "$"+names[0])
	formatter := o.String("partition.time-extractor.timestamp-formatter", "")
	zone := o.String("sink.partition-commit.watermark-time-zone", "UTC")
	loc, err := time.LoadLocation(zone)
	if err != nil {
		o.Invalid("sink.partition-commit.watermark-time-zone", "%v", err)
		return nil
	}
	layouts := []string{"2006-01-02 15:04:05", "2006-01-02 15:04:05.999999999", "2006-01-02 15:04", "2006-01-02"}
	if formatter != "" {
		l, err := datetime.JavaLayout(formatter)
		if err != nil {
			o.Invalid("partition.time-extractor.timestamp-formatter", "%v", err)
			return nil
		}
		layouts = []string{l}
	}
	// longer names first, so that $hour is not read as $h + "our"
	byLen := slices.Clone(names)
	slices.SortFunc(byLen, func(a, b string) int { return len(b) - len(a) })
	return func(dir string) (time.Time, error) {
		vals := map[string]string{}
		for _, kv := range strings.Split(filepath.ToSlash(dir), "/") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return time.Time{}, fmt.Errorf("%q is not a key=value partition directory", kv)
			}
			vals[unescapePath(k)] = unescapePath(v)
		}
		text := pattern
		for _, n := range byLen {
			text = strings.ReplaceAll(text, "$"+n, vals[n])
		}
		for _, l := range layouts {
			if t, err := time.ParseInLocation(l, text, loc); err == nil {
				return t, nil
			}
		}
		return time.Time{}, fmt.Errorf("'%s' (the pattern '%s') is not a time of the form '%s'", text, pattern, cmp.Or(formatter, "yyyy-MM-dd[ HH:mm:ss]"))
	}
}

// dir is the partition directory of a row: key=value/... with Hive's
// escaping, NULL and the empty string as the default partition name.
func (p *partitioning) dir(r types.Row) (string, error) {
	var b []byte
	for j, i := range p.keys {
		if j > 0 {
			b = append(b, '/')
		}
		b = escapePath(b, p.names[j])
		b = append(b, '=')
		v := &r.Values[i]
		if v.Null {
			b = append(b, p.null...)
			continue
		}
		start := len(b)
		b = p.enc[j](b, v)
		s := string(b[start:])
		b = b[:start]
		if s == "" {
			b = append(b, p.null...)
			continue
		}
		b = escapePath(b, s)
	}
	return string(b), nil
}

// escapePath escapes s as Hive does in partition paths: the characters
// that a path or a URI would read otherwise, as %XX.
func escapePath(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte("\"#%'*/:=?\\{[]^", c) >= 0 {
			dst = append(dst, '%', "0123456789ABCDEF"[c>>4], "0123456789ABCDEF"[c&15])
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

func unescapePath(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if x, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(x))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// partitionValues parses the key=value directories of a file's directory
// relative to the table's root.
func partitionValues(root, path string) map[string]string {
	rel, err := filepath.Rel(root, filepath.Dir(path))
	if err != nil || rel == "." {
		return nil
	}
	m := map[string]string{}
	for _, seg := range strings.Split(filepath.ToSlash(rel), "/") {
		if k, v, ok := strings.Cut(seg, "="); ok {
			m[unescapePath(k)] = unescapePath(v)
		}
	}
	return m
}

// dataSchema is the schema of the columns written in the files.
func (p *partitioning) dataSchema(schema types.Schema) types.Schema {
	if p == nil {
		return schema
	}
	sub := make(types.Schema, len(p.data))
	for i, c := range p.data {
		sub[i] = schema[c]
	}
	return sub
}

// values are the partition columns' values of the file at path below
// root: NULL for the default partition name, or a key missing from the
// path.
func (p *partitioning) values(root, path string, schema types.Schema) ([]types.Value, error) {
	m := partitionValues(root, path)
	vs := make([]types.Value, len(p.keys))
	for j, c := range p.keys {
		s, ok := m[p.names[j]]
		if !ok || s == p.null {
			vs[j] = types.NullValue
			continue
		}
		dec, err := format.TextDecoder(schema[c].Type)
		if err != nil {
			return nil, err
		}
		if err := dec([]byte(s), &vs[j]); err != nil {
			return nil, fmt.Errorf("%s: partition directory %s=%s: %w", path, p.names[j], s, err)
		}
	}
	return vs, nil
}

// defaultName reads Flink's 'partition.default-name'.
func defaultName(o *connector.Options) string {
	null := o.String("partition.default-name", parquet.DefaultPartitionName)
	if null == "" || strings.ContainsAny(null, `/\=`) {
		o.Invalid("partition.default-name", "must be a non-empty directory name without '/', '\\' or '='")
	}
	return null
}
