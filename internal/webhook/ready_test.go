package webhook

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/internal/testenv"
)

func TestCertChecker(t *testing.T) {
	testenv.Require(t, env)
	dir := env.Webhook.LocalServingCertDir
	for _, tc := range []struct {
		name    string
		dir     string
		now     func() time.Time
		wantErr string
	}{
		{name: "valid certificate", dir: dir},
		{name: "no certificate yet", dir: t.TempDir(), wantErr: "webhook serving certificate"},
		{name: "expired", dir: dir, now: func() time.Time { return time.Now().AddDate(50, 0, 0) }, wantErr: "not now"},
		{name: "not yet valid", dir: dir, now: func() time.Time { return time.Now().AddDate(-50, 0, 0) }, wantErr: "not now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CertChecker(tc.dir, "", "", tc.now)(&http.Request{})
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}
