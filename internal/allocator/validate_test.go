package allocator

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, config, err string
	}{
		{"valid", "collectors: [c0]\nconfig:\n  scrape_configs:\n  - job_name: a\n    static_configs: [{targets: [\"x:1\"]}]\n", ""},
		{"duplicate job names", "config:\n  scrape_configs:\n  - job_name: a\n    static_configs: [{targets: [\"x:1\"]}]\n  - job_name: a\n    static_configs: [{targets: [\"y:1\"]}]\n", `multiple scrape configs with job name "a"`},
		{"unknown key", "bogus: 1\n", `unknown key "bogus"`},
		{"bad strategy", "allocation_strategy: dice\n", `"dice"`},
		{"not yaml", "{", "parse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := ValidateConfig([]byte(tc.config))
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
}
