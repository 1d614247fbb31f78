package weir

import "github.com/weirstream/weir/internal/metrics"

// MetricsOp lets the external tests read operator metrics.
type MetricsOp = metrics.Operator
