// Package ownversion proves the version rule of docs/own-lock.md: a module
// of the user's that tests its own lock through lockapi keeps its own
// versions of the libraries the harness also uses. TestModuleKeepsItsVersions
// copies testdata/redislock (a Redis lock on go-redis v9.17.3, older than
// the harness's), tidies it, requires the pin to hold, and runs its tests:
// protocol-test and the catalog's Redis baseline against its locks, through
// the harness's command line. Tests only.
package ownversion
