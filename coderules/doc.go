// Package coderules holds the repository's code rules, the ones a compiler
// and go vet do not check, each as a test over every Go file of the
// repository: TestNoLongFunctions fails on any function longer than
// MaxFuncLines. make lint runs them.
package coderules
