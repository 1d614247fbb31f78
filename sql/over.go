package sql

import (
	"github.com/weirstream/weir/sql/parser"
)

// planOver plans a select list with OVER windows: not built yet.
func (p *planner) planOver(s *parser.Select, from *rel) (*rel, error) {
	for _, it := range s.Items {
		if it.Expr != nil && hasOver(it.Expr) {
			return nil, errAt(it.Expr, "OVER windows (and ROW_NUMBER Top-N) are not supported yet")
		}
	}
	return nil, parser.Errorf(s.Pos, "OVER windows are not supported yet")
}
