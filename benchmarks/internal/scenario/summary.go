package scenario

import (
	"slices"
)

// Summary condenses a Result over its steps after the first (the initial
// assignment moves nothing and has no minimum).
type Summary struct {
	Scenario string `json:"scenario"`
	Strategy string `json:"strategy"`
	Steps    int    `json:"steps"`
	Moved    int    `json:"moved"`
	Min      int    `json:"min"`
	// Ratio is Moved/Min over all steps, 0 when Min is 0.
	Ratio float64 `json:"moved_over_min"`
	// WorstRatio is the largest per-step moved/min among steps with a
	// positive minimum.
	WorstRatio float64 `json:"worst_step_ratio"`
	// ExcessMoves sums, over steps, the moves beyond the minimum.
	ExcessMoves int     `json:"excess_moves"`
	MeanBalance float64 `json:"mean_balance"`
	MaxBalance  float64 `json:"max_balance"`
	Drift       int     `json:"drift"`
	TotalMS     float64 `json:"total_ms"`
	MedianMS    float64 `json:"median_step_ms"`
	MaxMS       float64 `json:"max_step_ms"`
}

// Summarize condenses a Result.
func Summarize(r Result) Summary {
	s := Summary{Scenario: r.Scenario, Strategy: r.Strategy, Drift: r.Drift}
	if len(r.Steps) == 0 {
		return s
	}
	var ms []float64
	for _, st := range r.Steps[1:] {
		s.Steps++
		s.Moved += st.Moved
		s.Min += st.Min
		s.ExcessMoves += max(0, st.Moved-st.Min)
		if st.Min > 0 {
			s.WorstRatio = max(s.WorstRatio, float64(st.Moved)/float64(st.Min))
		}
		s.MeanBalance += st.Balance
		s.MaxBalance = max(s.MaxBalance, st.Balance)
		s.TotalMS += st.MS
		ms = append(ms, st.MS)
	}
	if s.Min > 0 {
		s.Ratio = float64(s.Moved) / float64(s.Min)
	}
	if s.Steps > 0 {
		s.MeanBalance /= float64(s.Steps)
		slices.Sort(ms)
		s.MedianMS = ms[len(ms)/2]
		s.MaxMS = ms[len(ms)-1]
	}
	return s
}
