package modelerr

import (
	"testing"

	"github.com/toolgate/toolgate"
)

func TestKindForStatus(t *testing.T) {
	for _, tt := range []struct {
		code int
		want toolgate.ModelErrorKind
	}{
		{0, toolgate.ModelErrOther},
		{-1, toolgate.ModelErrOther},
		{200, toolgate.ModelErrOther},
		{302, toolgate.ModelErrOther},
		{400, toolgate.ModelErrBadRequest},
		{401, toolgate.ModelErrAuth},
		{403, toolgate.ModelErrAuth},
		{404, toolgate.ModelErrBadRequest},
		{413, toolgate.ModelErrBadRequest},
		{429, toolgate.ModelErrRateLimit},
		{499, toolgate.ModelErrBadRequest},
		{500, toolgate.ModelErrServer},
		{529, toolgate.ModelErrServer},
		{599, toolgate.ModelErrServer},
		{600, toolgate.ModelErrOther},
		{1 << 30, toolgate.ModelErrOther},
	} {
		if got := KindForStatus(tt.code); got != tt.want {
			t.Errorf("KindForStatus(%d) = %q, want %q", tt.code, got, tt.want)
		}
	}
}
