package cluster

import "testing"

func TestPeakNeverBelowAReading(t *testing.T) {
	for _, c := range []struct {
		hwm, steady float64
		series      []Sample
		want        float64
	}{
		{139.0, 139.2, nil, 139.2},
		{150, 139.2, []Sample{{RSSMiB: 140}}, 150},
		{139.0, 138, []Sample{{RSSMiB: 141.04}}, 141},
	} {
		if got := peakMiB(c.hwm, c.steady, c.series); got != c.want {
			t.Errorf("peakMiB(%v, %v, %v) = %v, want %v", c.hwm, c.steady, c.series, got, c.want)
		}
	}
}
