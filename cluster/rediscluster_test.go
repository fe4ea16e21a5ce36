package cluster

import "testing"

// TestClusterRoles checks how a CLUSTER NODES line gives its node's role
// and the plan's nodes and masters.
func TestClusterRoles(t *testing.T) {
	const reply = `a1 127.0.0.1:1@11,n1 myself,master - 0 0 7 connected 0-5460
b2 127.0.0.1:2@12,n4 slave a1 0 1 7 connected
c3 127.0.0.1:3@13,n2 master,fail - 0 1 2 disconnected
d4 127.0.0.1:4@14,n5 master - 0 1 8 connected 5461-10922 [5462->-e5]
`
	v := parseClusterNodes(reply)
	tests := []struct {
		name, id, role string
		slot0          bool
	}{
		{"a master with slots", "a1", RolePrimary, true},
		{"a replica", "b2", RoleReplica, false},
		{"a master whose slots were taken", "c3", RoleReplica, false},
		{"a master with a range and a migrating slot", "d4", RolePrimary, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, ok := v.lines[tt.id]
			if !ok {
				t.Fatalf("no line %s in %v", tt.id, v.lines)
			}
			if got := lineRole(l); got != tt.role {
				t.Errorf("role %s, want %s", got, tt.role)
			}
			if got := l.serves(0); got != tt.slot0 {
				t.Errorf("serves slot 0: %v, want %v", got, tt.slot0)
			}
		})
	}
	if v.self != "a1" {
		t.Errorf("self %q, want a1", v.self)
	}
	nodes, _ := clusterNodes(3)
	for _, c := range []struct{ replica, master string }{{"n4", "n1"}, {"n6", "n3"}, {"n1", ""}} {
		if got := ClusterMasterOf(nodes, c.replica); got != c.master {
			t.Errorf("ClusterMasterOf(%s) = %q, want %q", c.replica, got, c.master)
		}
	}
}
