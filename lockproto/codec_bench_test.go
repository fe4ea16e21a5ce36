package lockproto

import "testing"

// BenchmarkCodec measures the harness's own work per call, apart from the
// pipes and the client: encoding an acquire request, parsing and checking
// the client's ok line (with owner, token, until, lease and both clock
// readings) and narrowing the clock mapping with it.
func BenchmarkCodec(b *testing.B) {
	p := &Process{}
	line := []byte(`{"type":"ok","id":7,"owner":"6f1c2f0e9a4b4c43","token":12,"until_ms":1153.25,"lease_ms":1000,"received_ms":153.1,"now_ms":153.4}`)
	req := Request{Type: TypeAcquire, ID: 7, Key: "k1", TTLMS: 1000}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		out, err := encodeRequest(buf[:0], req)
		buf = out
		if err != nil || len(out) == 0 {
			b.Fatal(err)
		}
		rep, err := parseLine(line)
		if err != nil {
			b.Fatal(err)
		}
		if err := checkReply(req, rep); err != nil {
			b.Fatal(err)
		}
		p.narrow(p.lo, p.lo, rep.RecvMS, rep.NowMS)
		_ = p.Time(*rep.UntilMS)
	}
}
