//go:build !unix

package session

// processAlive cannot tell on this system: a claim is taken as held.
func processAlive(int) bool { return true }
