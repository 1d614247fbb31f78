// Command weir runs weir's demo and benchmark jobs; see `weir --help`.
package main

import (
	"os"

	"github.com/weirstream/weir/internal/app/cli"
)

func main() { os.Exit(cli.Main()) }
