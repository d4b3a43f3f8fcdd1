// Package faults holds fault tests that need more than one package's test
// kit: a replica run as a real process and killed with SIGKILL, and
// replicas on a Redis Cluster. The package itself is empty; see
// docs/reliability.md for what each test injects and what holds.
package faults
