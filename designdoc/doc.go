// Package designdoc holds docs/design.md to the code. Its tests read the
// doc's tables, rules and recipes and compare every claim that can be
// checked with the module as it is: §1's table of packages and their
// imports, the dependency rules, §8's table of the run's stages, the files
// and identifiers §10's recipes name, and every Go name the doc quotes.
// They also hold the links of README.md and docs/*.md to files and
// headings that exist, .ci/run to the README's two commands, and every
// ```go block of README.md and docs/*.md to the module's API: each must
// build. The package has no code of its own: when a test fails, the doc or
// the code changed without the other.
package designdoc
