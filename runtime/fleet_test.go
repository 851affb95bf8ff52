package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/chockhq/chock/eval/fleet"
	"github.com/chockhq/chock/eval/load"
	"github.com/chockhq/chock/internal/opaservice"
)

// fleetWait bounds each wait for the bundle or decision-log service.
const fleetWait = 20 * time.Second

// bundleOf compiles a chock.zon source into bundle bytes.
func bundleOf(t *testing.T, policy string) ([]byte, string) {
	t.Helper()
	p, ds, err := load.FromSources(context.Background(), load.Input{Configs: []load.Source{{Name: "chock.zon", Data: []byte(policy)}}, Unlinted: true})
	if err != nil {
		t.Fatalf("%v\n%v", err, ds)
	}
	var b bytes.Buffer
	if err := p.Output.WriteBundle(&b, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), p.Output.Revision
}

// fleetFixture is a session whose policy comes from a bundle service
// through OPA's plugins, decision logs going back to it.
func fleetFixture(t *testing.T, policy string, asker Asker) (*fixture, *opaservice.Service, *fleet.Fleet) {
	t.Helper()
	svc := opaservice.New()
	t.Cleanup(svc.Close)
	b, _ := bundleOf(t, policy)
	svc.Serve(b)
	fl, err := fleet.Start(context.Background(), fleet.Options{Config: svc.Config(nil, false), Name: "opa.yaml", Wait: 10 * time.Second, Log: io.Discard,
		// A swap wakes whoever waits on the service too (waitRevision).
		OnSwap: func(string) { svc.Notify() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fl.Stop(context.Background()) })
	f := newFixtureWith(t, policy, map[string]string{"GITHUB_TOKEN": values["GITHUB_TOKEN"]}, asker, func(o *Options) {
		o.Engine, o.Config = fl.Engine(), nil
	})
	return f, svc, fl
}

// waitRevision waits for the fleet to swap revision rev in (the fixture's
// OnSwap notifies svc).
func waitRevision(t *testing.T, svc *opaservice.Service, fl *fleet.Fleet, rev string) {
	t.Helper()
	svc.Until(t, fleetWait, "revision "+rev+" swapped in", func() bool { return fl.Engine().Revision() == rev })
}

const fleetV1 = `.{
    .policy = .{
        .allow = .{ "exec.path.sh", "secret.use.GITHUB_TOKEN" },
        .ask = .{ "exec.path.true" },
        .deny = .{ "exec.path.false" },
    },
    .secrets = .{ .{ .name = "GITHUB_TOKEN", .to = "exec.path.true" } },
}`

// TestFleetSwapBetweenCalls: a bundle the service swaps in reaches a
// running session between two calls; the session log records the
// revision change and each decision's decision_id, and the decision-log
// service receives those decisions.
func TestFleetSwapBetweenCalls(t *testing.T) {
	f, svc, fl := fleetFixture(t, fleetV1, answer(false))
	var refused *RefusedError
	if _, err := f.exec(t, 0, "false"); !errors.As(err, &refused) {
		t.Fatalf("false under v1: %v", err)
	}
	v2, rev2 := bundleOf(t, strings.Replace(fleetV1, `.deny = .{ "exec.path.false" }`, `.deny = .{ "exec.path.curl" }, .default = .allow`, 1))
	svc.Serve(v2)
	waitRevision(t, svc, fl, rev2)
	if _, err := f.exec(t, 0, "false"); errors.As(err, &refused) {
		t.Fatalf("false refused under v2: %v", err)
	}
	revs := events(t, f, "policy.revision")
	if len(revs) != 1 || revs[0]["to"] != rev2 {
		t.Fatalf("policy.revision events: %v", revs)
	}
	var ids []string
	for _, ev := range events(t, f, "decision") {
		id, _ := ev["decision_id"].(string)
		if id == "" {
			t.Fatalf("a decision without decision_id: %v", ev)
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		svc.Until(t, fleetWait, "decision "+id+" reaching the decision-log service", func() bool { return hasEvent(svc, id) })
	}
}

func hasEvent(svc *opaservice.Service, id string) bool {
	for _, ev := range svc.Events() {
		if ev["decision_id"] == id {
			return true
		}
	}
	return false
}

// swapAsker answers an ask yes, after swapping a new bundle in: the rest
// of the call is decided after the swap.
type swapAsker struct {
	t   *testing.T
	svc *opaservice.Service
	fl  **fleet.Fleet
	b   []byte
	rev string
}

func (a *swapAsker) Ask(context.Context, Question) (bool, error) {
	a.svc.Serve(a.b)
	waitRevision(a.t, a.svc, *a.fl, a.rev)
	return true, nil
}

// TestFleetCallFinishesOnItsPolicy: a call in flight when a new bundle
// is swapped in finishes on the policy it started on: its secret,
// allowed by that policy and denied by the new one, is given. The next
// call is decided by the new one.
func TestFleetCallFinishesOnItsPolicy(t *testing.T) {
	v2, rev2 := bundleOf(t, strings.Replace(fleetV1, `.deny = .{ "exec.path.false" }`, `.deny = .{ "exec.path.false", "secret.use.GITHUB_TOKEN" }`, 1))
	var fl *fleet.Fleet
	a := &swapAsker{t: t, fl: &fl, b: v2, rev: rev2}
	f, svc, started := fleetFixture(t, fleetV1, a)
	fl, a.svc = started, svc
	if _, err := f.exec(t, 0, "true"); err != nil {
		t.Fatalf("the call in flight: %v", err)
	}
	for _, ev := range events(t, f, "decision") {
		if ev["action"] == "secret.use.GITHUB_TOKEN" && ev["decision"] != "allow" {
			t.Fatalf("the call's secret was decided on the new policy: %v", ev)
		}
	}
	_, err := f.exec(t, 0, "true")
	if err == nil || !strings.Contains(err.Error(), "secret GITHUB_TOKEN") {
		t.Fatalf("the next call: %v", err)
	}
	// The decision log holds the secret's decisions, never its value.
	var raw []byte
	svc.Until(t, fleetWait, "the secret's decision reaching the decision log", func() bool {
		raw, _ = json.Marshal(svc.Events())
		return bytes.Contains(raw, []byte(`"secret.use.GITHUB_TOKEN"`))
	})
	assertNoForms(t, "the decision log", string(raw))
}

// TestActionHoldingASecretIsNotAsked: a call whose action holds a
// secret's value (a tool name, say) is refused without being asked, so
// neither the decision log nor any OPA sees the value.
func TestActionHoldingASecretIsNotAsked(t *testing.T) {
	f, svc, fl := fleetFixture(t, fleetV1, answer(false))
	_, err := f.s.Run(context.Background(), &Call{Tool: "mcp", MCP: &MCPRequest{Server: "notion", Tool: "x" + values["GITHUB_TOKEN"]}})
	var refused *RefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "holds a secret's value") {
		t.Fatalf("got %v", err)
	}
	assertNoForms(t, "the refusal", err.Error())
	if _, err := f.exec(t, 0, "false"); err == nil {
		t.Fatal("false ran")
	}
	fl.Stop(context.Background()) // flushes the decision log
	raw, _ := json.Marshal(svc.Events())
	if !bytes.Contains(raw, []byte(`"exec.path.false"`)) {
		t.Fatalf("the decision log has not the later call's decision: %s", raw)
	}
	assertNoForms(t, "the decision log", string(raw))
}
