package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/chockhq/chock/runtime/netguard"
	"github.com/chockhq/chock/runtime/redact"
)

// FetchRequest is a call of the fetch_url tool.
type FetchRequest struct {
	URL string `json:"url" jsonschema:"the https URL"`
}

// MaxBody bounds a fetched body.
const MaxBody = 1 << 20

// runFetch GETs an https URL with the address checks remote MCP servers
// get: checked and pinned addresses, no proxy, no redirect, a bounded body.
func (s *Session) runFetch(ctx context.Context, c *Call) (*Result, error) {
	u, err := url.Parse(c.Fetch.URL)
	if err != nil {
		return nil, fmt.Errorf("fetch_url: %w", err)
	}
	if u.Scheme != "https" {
		return nil, &RefusedError{Action: c.Action, Reason: fmt.Sprintf("fetch_url takes https only, not %s", u.Scheme)}
	}
	if u.User != nil {
		return nil, &RefusedError{Action: c.Action, Reason: "fetch_url takes no user information in the URL"}
	}
	checker := s.opts.Net
	if checker == nil {
		checker = &netguard.Checker{}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "chock")
	resp, err := checker.Client(c.budget).Do(req)
	if err != nil {
		var refused *netguard.RefusedError
		if errors.As(err, &refused) {
			return nil, &RefusedError{Action: c.Action, Reason: refused.Error()}
		}
		if errors.Is(err, netguard.ErrRedirect) {
			return nil, &RefusedError{Action: c.Action, Reason: "the server redirected, and redirects are refused"}
		}
		return nil, fmt.Errorf("fetch_url: %w", err)
	}
	defer resp.Body.Close()
	var body strings.Builder
	w := redact.NewWriter(&body, s.redact)
	n, err := io.Copy(w, io.LimitReader(resp.Body, MaxBody+1))
	w.Close()
	if err != nil {
		return nil, fmt.Errorf("fetch_url: reading the body: %w", err)
	}
	res := &Result{Status: resp.StatusCode, Body: body.String()}
	if n > MaxBody {
		res.Truncated = true
		res.Body = s.redact.String(res.Body[:min(len(res.Body), MaxBody)])
	}
	return res, nil
}
