package egress

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"
)

// SOCKS5 (RFC 1928) codes used here.
const (
	socksVersion     = 5
	socksNoAuth      = 0
	socksNoMethod    = 0xff
	socksConnect     = 1
	socksIPv4        = 1
	socksDomain      = 3
	socksIPv6        = 4
	socksOK          = 0
	socksNotAllowed  = 2
	socksHostUnreach = 4
	socksCmdNotSupp  = 7
	socksAddrNotSupp = 8
)

// socksRequest is a SOCKS5 CONNECT request: the host as sent (a name, or
// an address's text) and the port.
type socksRequest struct {
	cmd  byte
	host string
	port int
}

// errSOCKS is a reply code to send for a request that cannot be served.
type errSOCKS struct {
	code byte
	why  string
}

func (e *errSOCKS) Error() string { return e.why }

// readSOCKS reads the greeting (answering it: no authentication, or no
// acceptable method) and the request.
func readSOCKS(r *bufio.Reader, w io.Writer) (*socksRequest, error) {
	var head [2]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	if head[0] != socksVersion {
		return nil, fmt.Errorf("SOCKS version %d, not 5", head[0])
	}
	methods := make([]byte, head[1])
	if _, err := io.ReadFull(r, methods); err != nil {
		return nil, err
	}
	ok := false
	for _, m := range methods {
		ok = ok || m == socksNoAuth
	}
	if !ok {
		w.Write([]byte{socksVersion, socksNoMethod})
		return nil, errors.New("the client offers no method chock takes (no authentication)")
	}
	if _, err := w.Write([]byte{socksVersion, socksNoAuth}); err != nil {
		return nil, err
	}
	var req [4]byte
	if _, err := io.ReadFull(r, req[:]); err != nil {
		return nil, err
	}
	if req[0] != socksVersion {
		return nil, fmt.Errorf("SOCKS version %d, not 5", req[0])
	}
	out := &socksRequest{cmd: req[1]}
	switch req[3] {
	case socksIPv4:
		var a [4]byte
		if _, err := io.ReadFull(r, a[:]); err != nil {
			return nil, err
		}
		out.host = netip.AddrFrom4(a).String()
	case socksIPv6:
		var a [16]byte
		if _, err := io.ReadFull(r, a[:]); err != nil {
			return nil, err
		}
		out.host = netip.AddrFrom16(a).String()
	case socksDomain:
		n, err := r.ReadByte()
		if err != nil {
			return nil, err
		}
		name := make([]byte, n)
		if _, err := io.ReadFull(r, name); err != nil {
			return nil, err
		}
		out.host = string(name)
	default:
		return nil, &errSOCKS{socksAddrNotSupp, fmt.Sprintf("address type %d", req[3])}
	}
	var port [2]byte
	if _, err := io.ReadFull(r, port[:]); err != nil {
		return nil, err
	}
	out.port = int(binary.BigEndian.Uint16(port[:]))
	if out.cmd != socksConnect {
		return out, &errSOCKS{socksCmdNotSupp, fmt.Sprintf("SOCKS command %d (only CONNECT is served: no BIND, no UDP)", out.cmd)}
	}
	return out, nil
}

func socksReply(w io.Writer, code byte) {
	w.Write([]byte{socksVersion, code, 0, socksIPv4, 0, 0, 0, 0, 0, 0})
}

// serveSOCKS serves one connection of the SOCKS5 side: one CONNECT.
func (c *Call) serveSOCKS(conn net.Conn) {
	conn.SetDeadline(time.Now().Add(handshakeTimeout))
	br := bufio.NewReader(conn)
	req, err := readSOCKS(br, conn)
	rec := Record{Via: "socks5"}
	defer func() { c.log(rec) }()
	if err != nil {
		rec.Outcome, rec.Why = RefusedMalformed, err.Error()
		if req != nil {
			rec.Host, rec.Port = safe(req.host), req.port
		}
		var se *errSOCKS
		if errors.As(err, &se) {
			socksReply(conn, se.code)
		}
		return
	}
	conn.SetDeadline(time.Time{})
	if _, ok := c.decide(req.host, req.port, "socks5", &rec); !ok {
		// SOCKS has no room for a reason: the call's result says it.
		socksReply(conn, socksNotAllowed)
		return
	}
	up, err := c.upstream(&rec)
	if err != nil {
		code := byte(socksHostUnreach)
		if rec.Outcome == RefusedByAddress {
			code = socksNotAllowed
		}
		socksReply(conn, code)
		return
	}
	defer c.release(up)
	socksReply(conn, socksOK)
	rec.Outcome = Connected
	var pre []byte
	if n := br.Buffered(); n > 0 {
		pre, _ = br.Peek(n)
	}
	pipe(conn, up, &rec, pre)
}
