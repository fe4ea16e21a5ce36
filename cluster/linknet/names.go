package linknet

// names.go holds the naming convention of links: "from->to", with an
// optional purpose.

import (
	"strings"
)

// Separator separates the two ends of a link name: "w3->n1" is worker 3's
// link to node n1, "n2->n1" is node n2's link to node n1. When one pair of
// ends needs several links (a ZooKeeper server reaches a peer on a quorum
// port and an election port), the extra ones carry a purpose after
// PurposeSeparator: "n2->n1/election".
const Separator = "->"

// PurposeSeparator separates a link's "to" end from its purpose.
const PurposeSeparator = "/"

// Name returns the conventional name of the link from one end to another,
// for instance Name("w3", "n1") == "w3->n1".
func Name(from, to string) string { return from + Separator + to }

// SplitName returns the two ends of a link name, without the purpose
// ("n2->n1/election" gives "n2", "n1"); ok is false when the name does not
// follow the "from->to" convention.
func SplitName(name string) (from, to string, ok bool) {
	from, to, ok = strings.Cut(name, Separator)
	to, _, _ = strings.Cut(to, PurposeSeparator)
	return from, to, ok
}
