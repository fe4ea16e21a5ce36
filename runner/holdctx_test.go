package runner

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/clients"
)

// TestHoldContext follows the context given to Acquire through each way
// its call and its hold can end.
func TestHoldContext(t *testing.T) {
	tests := []struct {
		name string
		// run acts on the context and returns the cause it must end with
		// (nil: it must still be live).
		run func(c *holdContext, stop context.CancelFunc) error
	}{
		{"a call past its timeout ends with a deadline", func(c *holdContext, _ context.CancelFunc) error {
			<-c.Done()
			if !errors.Is(c.Err(), context.DeadlineExceeded) {
				t.Errorf("Err = %v, want context.DeadlineExceeded", c.Err())
			}
			c.returned()
			return context.DeadlineExceeded
		}},
		{"a returned call lives on without a deadline", func(c *holdContext, _ context.CancelFunc) error {
			c.returned()
			if _, ok := c.Deadline(); ok {
				t.Error("the context has a deadline after the call returned")
			}
			return nil
		}},
		{"the end of the hold ends it", func(c *holdContext, _ context.CancelFunc) error {
			c.returned()
			c.end()
			return clients.ErrHoldEnded
		}},
		{"the end of the run ends a waiting call", func(c *holdContext, stop context.CancelFunc) error {
			stop()
			<-c.Done()
			c.returned()
			return clients.ErrRunEnded
		}},
		{"the end of the run leaves a returned call's hold", func(c *holdContext, stop context.CancelFunc) error {
			c.returned()
			stop()
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stop, cancelStop := context.WithCancel(context.Background())
			defer cancelStop()
			timeout := time.Hour
			if tt.name == "a call past its timeout ends with a deadline" {
				timeout = time.Millisecond
			}
			c := newHoldContext(context.Background(), timeout, stop, true)
			defer c.end()
			if d, ok := c.Deadline(); !ok || d.IsZero() {
				t.Error("the running call's context has no deadline")
			}
			want := tt.run(c, cancelStop)
			if want == nil {
				if c.Err() != nil {
					t.Fatalf("the context ended (%v) while the hold goes on", context.Cause(c))
				}
				return
			}
			if got := context.Cause(c); !errors.Is(got, want) {
				t.Errorf("cause %v, want %v", got, want)
			}
		})
	}
}
