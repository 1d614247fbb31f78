package cli

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// No flag of weir takes a negative number or duration: a negative
// --out-of-orderness would keep the watermark from ever advancing, a
// negative --rate or --max has no meaning. Rather than check each flag
// where it is used, every command refuses negative values of the numeric
// flags it was given before it runs, and NaN or infinite floats too (a
// --rate of NaN would pace a source to nothing).

// checkedAnnotation marks a command whose flags are checked already.
const checkedAnnotation = "weir-flags-checked"

// checkFlagsTree installs the check on cmd and all its subcommands.
func checkFlagsTree(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		checkFlagsTree(c)
	}
	if cmd.Annotations[checkedAnnotation] != "" {
		return
	}
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[checkedAnnotation] = "yes"
	pre := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if err := refuseNegative(c.Flags()); err != nil {
			return err
		}
		if pre != nil {
			return pre(c, args)
		}
		return nil
	}
}

// refuseNegative returns an error naming the first flag set to a negative
// number or duration.
func refuseNegative(fs *pflag.FlagSet) error {
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if err != nil {
			return
		}
		neg := false
		switch f.Value.Type() {
		case "float32", "float64":
			v, perr := strconv.ParseFloat(f.Value.String(), 64)
			if perr == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
				err = fmt.Errorf("--%s %s: must be a finite number", f.Name, f.Value.String())
				return
			}
			neg = perr == nil && v < 0
		case "int", "int8", "int16", "int32", "int64":
			v, perr := strconv.ParseInt(f.Value.String(), 10, 64)
			neg = perr == nil && v < 0
		case "duration":
			v, perr := time.ParseDuration(f.Value.String())
			neg = perr == nil && v < 0
		}
		if neg {
			err = fmt.Errorf("--%s %s: must not be negative", f.Name, f.Value.String())
		}
	})
	return err
}
