package protobuf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Schema is a compiled .proto file and the files it imports.
type Schema struct {
	// Files are the compiled files: the one asked for first, then what it
	// imports (transitively, each once).
	Files []protoreflect.FileDescriptor
	// Sources are the texts of the files read from the proto path, by
	// import path (the built-in well-known types are not among them).
	Sources map[string]string
}

// ErrOutsideProtoPath is returned for a .proto path that is absolute,
// climbs out with "..", or resolves (through a symbolic link) outside
// every import directory.
var ErrOutsideProtoPath = errors.New("protobuf: the path is not inside the proto path")

// Compile compiles file, a path relative to one of the import directories
// protoPath (protoc's -I; none means the current directory), as protoc
// would. Every file read, the imports included, is opened inside one of the
// import directories (os.OpenInRoot): a path that is absolute, that climbs
// out with "..", or that a symbolic link leads out of is refused. The
// well-known types (google/protobuf/timestamp.proto, ...) are built in
// when not found in the import directories.
func Compile(ctx context.Context, file string, protoPath []string) (*Schema, error) {
	if len(protoPath) == 0 {
		protoPath = []string{"."}
	}
	if !filepath.IsLocal(file) {
		return nil, fmt.Errorf("%w: '%s' must be a relative path inside one of the import directories (%s)", ErrOutsideProtoPath, file, strings.Join(protoPath, ";"))
	}
	var roots []*os.Root
	defer func() {
		for _, r := range roots {
			r.Close()
		}
	}()
	for _, dir := range protoPath {
		r, err := os.OpenRoot(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue // as protoc, which warns
		}
		if err != nil {
			return nil, fmt.Errorf("protobuf: proto path: %w", err)
		}
		roots = append(roots, r)
	}
	if len(roots) == 0 {
		return nil, fmt.Errorf("protobuf: no directory of the proto path (%s) exists", strings.Join(protoPath, ";"))
	}
	sources := map[string]string{}
	var mu sync.Mutex // the compiler resolves imports in parallel
	res := protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
		if !filepath.IsLocal(path) {
			return protocompile.SearchResult{}, fmt.Errorf("%w: %s", ErrOutsideProtoPath, path)
		}
		var firstErr error
		for _, r := range roots {
			b, err := r.ReadFile(filepath.FromSlash(path))
			if err == nil {
				mu.Lock()
				sources[path] = string(b)
				mu.Unlock()
				return protocompile.SearchResult{Source: bytes.NewReader(b)}, nil
			}
			if !errors.Is(err, fs.ErrNotExist) && firstErr == nil {
				firstErr = err // escapes the root, permission, ...
			}
		}
		if firstErr != nil {
			if strings.Contains(firstErr.Error(), "escapes") {
				return protocompile.SearchResult{}, fmt.Errorf("%w: %v", ErrOutsideProtoPath, firstErr)
			}
			return protocompile.SearchResult{}, firstErr
		}
		return protocompile.SearchResult{}, fmt.Errorf("%s: %w in the proto path (%s)", path, fs.ErrNotExist, strings.Join(protoPath, ";"))
	})
	s, err := compile(ctx, filepath.ToSlash(file), res)
	if err != nil {
		return nil, err
	}
	s.Sources = sources
	return s, nil
}

// compile compiles file, its imports found by res or built in.
func compile(ctx context.Context, file string, res protocompile.Resolver) (*Schema, error) {
	c := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(res),
		SourceInfoMode: protocompile.SourceInfoStandard,
		MaxParallelism: 1,
	}
	files, err := c.Compile(ctx, file)
	if err != nil {
		return nil, fmt.Errorf("protobuf: %w", err)
	}
	s := &Schema{}
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		s.Files = append(s.Files, fd)
		imps := fd.Imports()
		for i := 0; i < imps.Len(); i++ {
			add(imps.Get(i).FileDescriptor)
		}
	}
	for _, f := range files {
		add(f)
	}
	return s, nil
}

// Message finds a message of the schema's first file (the one compiled)
// or its imports by name: a Java class name as Flink's
// 'protobuf.message-class-name' takes it (java_package, java_outer_classname
// and java_multiple_files respected, nested messages as Outer$Inner or
// Outer.Inner), or the message's full protobuf name (package.Outer.Inner).
func (s *Schema) Message(name string) (protoreflect.MessageDescriptor, error) {
	var known, others []string // the first file's class names are listed
	for i, fd := range s.Files {
		k := &known
		if i > 0 {
			k = &others
		}
		if m := findMessage(fd, name, k); m != nil {
			return m, nil
		}
	}
	sort.Strings(known)
	if len(known) > 12 {
		known = append(known[:12], "...")
	}
	return nil, fmt.Errorf("protobuf: no message '%s' in %s (Java class names: %s)", name, s.Files[0].Path(), strings.Join(known, ", "))
}

func findMessage(fd protoreflect.FileDescriptor, name string, known *[]string) protoreflect.MessageDescriptor {
	outer, multiple := javaOuter(fd)
	var found protoreflect.MessageDescriptor
	var walk func(ms protoreflect.MessageDescriptors, javaParent string)
	walk = func(ms protoreflect.MessageDescriptors, javaParent string) {
		for i := 0; i < ms.Len() && found == nil; i++ {
			m := ms.Get(i)
			if m.IsMapEntry() {
				continue
			}
			j := javaParent + "$" + string(m.Name())
			if javaParent == "" {
				j = string(m.Name())
			}
			if len(*known) < 64 {
				*known = append(*known, j)
			}
			if name == j || name == strings.ReplaceAll(j, "$", ".") || name == string(m.FullName()) {
				found = m
				return
			}
			walk(m.Messages(), j)
		}
	}
	top := javaPackage(fd)
	if !multiple {
		top = join(top, outer)
		walk(fd.Messages(), top)
	} else {
		// Top-level classes in the package; walk joins with "$", which
		// a top-level class does not take.
		for i := 0; i < fd.Messages().Len() && found == nil; i++ {
			m := fd.Messages().Get(i)
			j := join(javaPackage(fd), string(m.Name()))
			if len(*known) < 64 {
				*known = append(*known, j)
			}
			if name == j || name == string(m.FullName()) {
				return m
			}
			walk(m.Messages(), j)
		}
	}
	return found
}

func join(pkg, name string) string {
	if pkg == "" {
		return name
	}
	return pkg + "." + name
}

// javaPackage is the file's java_package option, or its proto package.
func javaPackage(fd protoreflect.FileDescriptor) string {
	if p := fileOption(fd, "java_package"); p != "" {
		return p
	}
	return string(fd.Package())
}

// javaOuter returns the file's outer class name and whether its messages
// are classes of their own (java_multiple_files). The outer class name is
// java_outer_classname, or protoc's: the file's base name in CamelCase,
// with "OuterClass" appended when a message, enum or service of the file
// has that name.
func javaOuter(fd protoreflect.FileDescriptor) (string, bool) {
	multiple := fileOption(fd, "java_multiple_files") == "true"
	if o := fileOption(fd, "java_outer_classname"); o != "" {
		return o, multiple
	}
	base := filepath.Base(fd.Path())
	base = strings.TrimSuffix(base, ".proto")
	o := camel(base)
	if nameTaken(fd, o) {
		o += "OuterClass"
	}
	return o, multiple
}

// camel is protoc's UnderscoresToCamelCase with the first letter capital:
// letters after a non-letter are capitalized, digits are kept, every other
// character is dropped.
func camel(s string) string {
	var b strings.Builder
	up := true
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z':
			if up {
				c -= 'a' - 'A'
			}
			b.WriteRune(c)
			up = false
		case c >= 'A' && c <= 'Z':
			b.WriteRune(c)
			up = false
		case c >= '0' && c <= '9':
			b.WriteRune(c)
			up = true
		default:
			up = true
		}
	}
	return b.String()
}

func nameTaken(fd protoreflect.FileDescriptor, name string) bool {
	for i := 0; i < fd.Enums().Len(); i++ {
		if string(fd.Enums().Get(i).Name()) == name {
			return true
		}
	}
	for i := 0; i < fd.Services().Len(); i++ {
		if string(fd.Services().Get(i).Name()) == name {
			return true
		}
	}
	var msgs func(ms protoreflect.MessageDescriptors) bool
	msgs = func(ms protoreflect.MessageDescriptors) bool {
		for i := 0; i < ms.Len(); i++ {
			m := ms.Get(i)
			if string(m.Name()) == name || msgs(m.Messages()) {
				return true
			}
			for j := 0; j < m.Enums().Len(); j++ {
				if string(m.Enums().Get(j).Name()) == name {
					return true
				}
			}
		}
		return false
	}
	return msgs(fd.Messages())
}

// fileOption reads a file option of descriptor.proto's FileOptions by
// name, as text ("" when unset).
func fileOption(fd protoreflect.FileDescriptor, name protoreflect.Name) string {
	opts := fd.Options()
	if opts == nil {
		return ""
	}
	m := opts.ProtoReflect()
	f := m.Descriptor().Fields().ByName(name)
	if f == nil || !m.Has(f) {
		return ""
	}
	v := m.Get(f)
	if f.Kind() == protoreflect.BoolKind {
		if v.Bool() {
			return "true"
		}
		return "false"
	}
	return v.String()
}
