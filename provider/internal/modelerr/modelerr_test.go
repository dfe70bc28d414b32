package modelerr

import (
	"testing"

	"github.com/toolgate/toolgate/provider"
)

func TestKindForStatus(t *testing.T) {
	for _, tt := range []struct {
		code int
		want provider.ErrorKind
	}{
		{0, provider.KindOther},
		{-1, provider.KindOther},
		{200, provider.KindOther},
		{302, provider.KindOther},
		{400, provider.KindBadRequest},
		{401, provider.KindAuth},
		{403, provider.KindAuth},
		{404, provider.KindBadRequest},
		{413, provider.KindBadRequest},
		{429, provider.KindRateLimit},
		{499, provider.KindBadRequest},
		{500, provider.KindServer},
		{529, provider.KindServer},
		{599, provider.KindServer},
		{600, provider.KindOther},
		{1 << 30, provider.KindOther},
	} {
		if got := KindForStatus(tt.code); got != tt.want {
			t.Errorf("KindForStatus(%d) = %q, want %q", tt.code, got, tt.want)
		}
	}
}
