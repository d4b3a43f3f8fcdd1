package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/internal/dispatch"
)

// A create refused by a stopping replica is a 503 UNAVAILABLE, which
// clients send again (to another replica, behind a load balancer).
func TestStoppingIsUnavailable(t *testing.T) {
	e := toError(fmt.Errorf("create: %w", dispatch.ErrStopping))
	if e.Status != http.StatusServiceUnavailable || e.Code != CodeUnavailable || !strings.Contains(e.Message, "stopping") {
		t.Errorf("toError(ErrStopping) = %+v; want 503 UNAVAILABLE saying the replica is stopping", e)
	}
}
