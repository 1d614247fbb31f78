package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/engine"
)

func newCheckpoints() *cobra.Command {
	cmd := group("checkpoints", "List and inspect checkpoints and savepoints")
	cmd.AddCommand(&cobra.Command{
		Use:   "list DIR",
		Short: "List the checkpoints of a checkpoint directory: id, kind, time, size, operators, usable or why not",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := checkpoint.Open(filepath.Clean(args[0]), checkpoint.ReadOnly())
			if err != nil {
				return err
			}
			infos, err := s.List()
			if err != nil {
				return err
			}
			return printList(cmd.OutOrStdout(), infos)
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "inspect PATH",
		Short: "Show one checkpoint or savepoint: operators, files, sizes, checksums, source offsets (exit status 1 if it does not verify)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := checkpoint.OpenPath(filepath.Clean(args[0]))
			if err != nil {
				return err
			}
			return printInspect(cmd.OutOrStdout(), c)
		},
	})
	return cmd
}

func printList(w io.Writer, infos []checkpoint.Info) error {
	sort.Slice(infos, func(i, j int) bool { return infos[i].ID < infos[j].ID })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tCREATED\tSIZE\tOPERATORS\tSTATUS\tPATH")
	for _, i := range infos {
		status := "ok"
		switch {
		case i.InProgress:
			status = "in progress"
		case !i.Complete:
			status = "incomplete"
		case i.Err != nil:
			status = "unusable: " + i.Err.Error()
		}
		created := "-"
		if !i.Created.IsZero() {
			created = i.Created.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\t%s\n", i.ID, i.Kind, created, i.Size, i.Operators, status, i.Path)
	}
	return tw.Flush()
}

func printInspect(w io.Writer, c *checkpoint.Checkpoint) error {
	m := c.Metadata()
	fmt.Fprintf(w, "path            %s\n", c.Path())
	fmt.Fprintf(w, "id              %d\n", m.ID)
	fmt.Fprintf(w, "kind            %s\n", m.Kind)
	fmt.Fprintf(w, "job             %s\n", m.Job)
	fmt.Fprintf(w, "created         %s\n", m.Created.UTC().Format(time.RFC3339Nano))
	fmt.Fprintf(w, "format version  %d\n", m.FormatVersion)
	fmt.Fprintf(w, "max parallelism %d\n", m.MaxParallelism)
	fmt.Fprintf(w, "size            %d bytes\n", m.TotalSize())
	if m.HasShared() {
		fmt.Fprintf(w, "incremental     wrote %d bytes; %d bytes in shared files (%d written earlier, reused)\n",
			m.WrittenSize(), m.SharedSize(), m.TotalSize()-m.WrittenSize())
	}
	var keys []string
	for k := range m.JobOptions {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "option          %s = %s\n", k, m.JobOptions[k])
	}
	verify := "ok"
	verr := c.Verify()
	if verr != nil {
		verify = verr.Error()
	}
	fmt.Fprintf(w, "verify          %s\n", verify)
	for _, o := range m.Operators {
		var size int64
		for _, f := range o.Files {
			size += f.Size
		}
		fmt.Fprintf(w, "\noperator %q (uid %q) parallelism %d, %d files, %d bytes\n", o.Name, o.UID, o.Parallelism, len(o.Files), size)
		for _, f := range o.Files {
			kg := "operator state"
			if f.KeyGroups != nil {
				kg = "key groups " + f.KeyGroups.String()
			}
			name := f.Name
			if f.Shared {
				name = "shared/" + f.Name
				kg += fmt.Sprintf("  (uploaded by checkpoint %d)", f.UploadedIn)
			}
			fmt.Fprintf(w, "  %-40s subtask %d  %8d bytes  crc32c %s  %s\n", name, f.Subtask, f.Size, f.CRC32C, kg)
		}
		if offs := sourceOffsets(c, o); offs != "" {
			fmt.Fprintf(w, "  source positions: %s\n", offs)
		}
		for k, v := range o.Extra {
			var list []json.RawMessage
			if json.Unmarshal(v, &list) == nil {
				fmt.Fprintf(w, "  %s: %d entries\n", k, len(list))
			} else {
				fmt.Fprintf(w, "  %s: %s\n", k, v)
			}
		}
	}
	if verr != nil {
		// The listing above helps find the damage; the exit status must
		// still say that the checkpoint cannot be restored.
		return fmt.Errorf("%s does not verify: %w", c.Path(), verr)
	}
	return nil
}

// sourceOffsets lists, for a source operator, its splits' saved positions
// (decoded by the weir package's helper when possible).
func sourceOffsets(c *checkpoint.Checkpoint, o checkpoint.OperatorState) string {
	var parts []string
	for _, f := range o.Files {
		if f.Shared || strings.Contains(f.Name, ".db.") {
			continue // files of a Pebble database (incremental checkpoint)
		}
		data, err := c.ReadFile(f.Name)
		if err != nil {
			continue
		}
		parts = append(parts, decodeSplits(data)...)
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// decodeSplits describes split positions (the state encoding belongs to
// the engine).
func decodeSplits(data []byte) []string { return engine.DescribeOperatorState(data) }
