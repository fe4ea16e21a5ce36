package linknet

// proxy.go holds the latency proxies: the embedded toxiproxy every link of a
// Network made WithProxies passes through, and the latency toxic.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// toxicPrefix marks the toxics this package adds, so Heal removes exactly those.
const toxicPrefix = "jepsen-lite-"

// toxicSpec is one toxiproxy toxic in the JSON form toxiproxy parses.
type toxicSpec struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Toxicity   float32        `json:"toxicity"`
	Attributes map[string]any `json:"attributes"`
}

// latencyToxic returns the toxiproxy toxic of a latency fault.
func (f Fault) latencyToxic() toxicSpec {
	return toxicSpec{
		Name: toxicPrefix + "latency-downstream", Type: "latency", Stream: "downstream", Toxicity: 1,
		Attributes: map[string]any{"latency": f.Delay.Milliseconds(), "jitter": f.Jitter.Milliseconds()},
	}
}

// applyLatency adds the latency toxic of f to the proxy of each link of ls,
// replacing the one a link has; the caller holds the Network's mutex.
func applyLatency(f Fault, ls []*link) error {
	body, err := json.Marshal(f.latencyToxic())
	if err != nil {
		return fmt.Errorf("linknet: encode toxic: %w", err)
	}
	for _, l := range ls {
		if l.proxy.Toxics.GetToxic(f.latencyToxic().Name) != nil {
			if err := l.proxy.Toxics.RemoveToxic(context.Background(), f.latencyToxic().Name); err != nil {
				return fmt.Errorf("linknet: replace latency on link %q: %w", l.name, err)
			}
		}
		if _, err := l.proxy.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
			return fmt.Errorf("linknet: apply latency to link %q: %w", l.name, err)
		}
		l.latency = true
	}
	return nil
}

// removeLatency removes the toxics this package added to the link's proxy.
func removeLatency(l *link) error {
	var errs []error
	for _, t := range l.proxy.Toxics.GetToxicArray() {
		if w, ok := t.(*toxics.ToxicWrapper); ok && strings.HasPrefix(w.Name, toxicPrefix) {
			if err := l.proxy.Toxics.RemoveToxic(context.Background(), w.Name); err != nil {
				errs = append(errs, fmt.Errorf("linknet: heal link %q: %w", l.name, err))
			}
		}
	}
	return errors.Join(errs...)
}
