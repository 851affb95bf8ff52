package egress

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// serveHTTP serves one connection of the HTTP side: one CONNECT tunnel,
// or one plain request forwarded to its host (the program's later
// requests come on new connections: the answer says Connection: close).
func (c *Call) serveHTTP(conn net.Conn) {
	conn.SetReadDeadline(time.Now().Add(handshakeTimeout))
	br := bufio.NewReader(conn)
	req, err := http.ReadRequest(br)
	if err != nil {
		c.log(Record{Via: "http", Outcome: RefusedMalformed, Why: "not an HTTP request"})
		writeStatus(conn, http.StatusBadRequest, "chock's egress proxy takes HTTP requests (CONNECT host:port, or a request for an http:// URL)\n")
		return
	}
	conn.SetReadDeadline(time.Time{})
	rec := Record{}
	defer func() { c.log(rec) }()
	if req.Method == http.MethodConnect {
		host, port, err := splitAuthority(req.RequestURI, 0)
		if err != nil {
			rec.Via, rec.Outcome, rec.Why = "connect", RefusedMalformed, err.Error()
			writeStatus(conn, http.StatusBadRequest, "chock refused the connection: "+err.Error()+"\n")
			return
		}
		v, ok := c.decide(host, port, "connect", &rec)
		if !ok {
			writeRefusal(conn, v)
			return
		}
		up, err := c.upstream(&rec)
		if err != nil {
			writeStatus(conn, statusFor(rec.Outcome), "chock refused the connection: "+err.Error()+"\n")
			return
		}
		defer c.release(up)
		if _, err := conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
			return
		}
		rec.Outcome = Connected
		var pre []byte
		if n := br.Buffered(); n > 0 {
			pre, _ = br.Peek(n)
		}
		pipe(conn, up, &rec, pre)
		return
	}
	// A plain request: an absolute http:// URL, or (sent to the proxy's
	// port as if it were the host) its Host header.
	target := req.Host
	if req.URL != nil && req.URL.IsAbs() {
		if req.URL.Scheme != "http" {
			rec.Via, rec.Outcome, rec.Why = "http", RefusedMalformed, "scheme "+req.URL.Scheme
			writeStatus(conn, http.StatusBadRequest, "chock's egress proxy forwards http:// requests; for https use CONNECT (HTTPS_PROXY)\n")
			return
		}
		if req.URL.User != nil {
			rec.Via, rec.Outcome, rec.Why = "http", RefusedMalformed, "userinfo in the URL"
			writeStatus(conn, http.StatusBadRequest, "chock refused the request: a URL with user information\n")
			return
		}
		target = req.URL.Host
	}
	host, port, err := splitAuthority(target, 80)
	if err != nil {
		rec.Via, rec.Outcome, rec.Why = "http", RefusedMalformed, err.Error()
		writeStatus(conn, http.StatusBadRequest, "chock refused the request: "+err.Error()+"\n")
		return
	}
	v, ok := c.decide(host, port, "http", &rec)
	if !ok {
		writeRefusal(conn, v)
		return
	}
	up, err := c.upstream(&rec)
	if err != nil {
		writeStatus(conn, statusFor(rec.Outcome), "chock refused the request: "+err.Error()+"\n")
		return
	}
	defer c.release(up)
	rec.Outcome = Connected
	// Origin form to the host, hop-by-hop and proxy headers dropped, one
	// request on this connection.
	req.URL.Scheme, req.URL.Host, req.URL.User = "", "", nil
	req.RequestURI = ""
	for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate", "Keep-Alive", "Te", "Trailer", "Upgrade"} {
		req.Header.Del(h)
	}
	req.Close = true
	cw := &countWriter{w: up}
	if err := req.Write(cw); err != nil {
		rec.Sent = cw.n
		return
	}
	rec.Sent = cw.n
	// The answer is relayed as it comes, until the host closes.
	rec.Received = relay(conn, up)
}

type countWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// splitAuthority splits host:port (IPv6 in brackets); a missing port is
// def (0: required).
func splitAuthority(a string, def int) (string, int, error) {
	if a == "" {
		return "", 0, fmt.Errorf("%w: no host", ErrMalformed)
	}
	host, portText, err := net.SplitHostPort(a)
	if err != nil {
		if def == 0 {
			return "", 0, fmt.Errorf("%w: %q is not host:port", ErrMalformed, safe(a))
		}
		host, portText = a, strconv.Itoa(def)
		if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
			host = host[1 : len(host)-1]
		}
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("%w: %q is not a port", ErrMalformed, safe(portText))
	}
	return host, port, nil
}

func statusFor(outcome string) int {
	switch outcome {
	case RefusedByAddress:
		return http.StatusForbidden
	case RefusedUnresolved, DialFailed:
		return http.StatusBadGateway
	}
	return http.StatusBadRequest
}

// writeRefusal answers a refused request: 403, the refusal as the body.
func writeRefusal(conn net.Conn, v Verdict) {
	writeStatus(conn, http.StatusForbidden, v.Refusal+"\n")
}

func writeStatus(conn net.Conn, code int, body string) {
	conn.SetWriteDeadline(time.Now().Add(handshakeTimeout))
	fmt.Fprintf(conn, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nX-Proxy-Error: chock-%s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), strings.ReplaceAll(strings.ToLower(http.StatusText(code)), " ", "-"), len(body), body)
}
