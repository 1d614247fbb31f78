package filesystem

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/weirstream/weir/connector/file"
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
		if trigger == "partition-time" {
			// weir's sink writers do not see the watermark (yet): a
			// partition-time trigger cannot be honoured.
			o.Invalid("sink.partition-commit.trigger", "'partition-time' needs the watermark at the sink, which weir does not pass to sinks yet; use 'process-time'")
			return nil
		}
		if success == "" || strings.ContainsAny(success, `/\`) || success == "." || success == ".." {
			o.Invalid("sink.partition-commit.success-file.name", "must be a file name")
			return nil
		}
		p.commit = append(p.commit, file.PartitionCommit(success, delay, nil))
	default:
		o.Invalid("sink.partition-commit.policy.kind", "only 'success-file' is supported (not '%s')", policy)
	}
	return p
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
