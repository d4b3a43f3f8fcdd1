package surface

import (
	"net/http"
	"time"
)

// HTTPClient is the client a surface calls its platform's API with: a 15 s
// timeout, and up to 64 idle keep-alive connections to the API host where
// Go's default keeps 2, so that posts and edits made at once reuse
// connections instead of dialing (and TLS-handshaking) one each.
func HTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return &http.Client{Timeout: 15 * time.Second, Transport: t}
}
