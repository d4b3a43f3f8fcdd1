package dispatch

import "time"

// SetPostFor shortens how long d's posts may take, for tests of a post
// that runs out of its lease.
func (d *Dispatcher) SetPostFor(t time.Duration) { d.postFor = t }
