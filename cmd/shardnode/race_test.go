//go:build race

package main

// raceEnabled relaxes timing assertions: under the race detector every
// process of the deployment runs several times slower.
const raceEnabled = true
