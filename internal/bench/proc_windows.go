package bench

import "time"

// selfCPU is 0 on Windows: the bench's own CPU is not reported there.
func selfCPU() time.Duration { return 0 }

// raiseFileLimit does nothing on Windows, which has no open-file limit
// to raise.
func raiseFileLimit(need uint64) error { return nil }
