package registry

import "testing"

// TestMailboxShapeWhole: only the zero shape is push's whole mailbox;
// a cap, a rule or an activity level makes it partial.
func TestMailboxShapeWhole(t *testing.T) {
	if !(MailboxShape{}).Whole() {
		t.Error("the zero shape is not whole")
	}
	for name, s := range map[string]MailboxShape{
		"a cap":             {Cap: 10},
		"an author rule":    {PullAuthor: func(int) bool { return false }},
		"an edge rule":      {PushEdge: func(float64, float64) bool { return true }, ReadsPerPost: 38},
		"an activity level": {ActiveReads: 1},
	} {
		if s.Whole() {
			t.Errorf("a shape with %s is whole", name)
		}
	}
}
