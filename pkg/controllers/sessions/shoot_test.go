// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/controllerutil"
	"github.com/clustergate/clustergate/pkg/credentials"
	"github.com/clustergate/clustergate/pkg/gardener"
)

// countingGardener answers as told and counts the requests.
type countingGardener struct {
	kubeconfig gardener.Kubeconfig
	err        error
	requests   int
}

func (g *countingGardener) RequestKubeconfig(context.Context, gardener.Shoot, time.Duration) (gardener.Kubeconfig, error) {
	g.requests++
	return g.kubeconfig, g.err
}

// local is the Shoot the shoot access tests reach.
var local = gardener.Shoot{Project: "shop", Name: "local"}

// TestShootAccess: an admin kubeconfig is asked for once and used again
// while it stays valid for more than the margin; a failure is classified
// and nothing is kept.
func TestShootAccess(t *testing.T) {
	now := created
	key, err := credentials.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	// Any certificate will do as the Shoot's CA: nothing is dialled.
	kubeconfig, err := credentials.ClientKubeconfig("https://127.0.0.1:6443", issue(t, key, "ca", nil, now.Add(time.Hour)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	issued := gardener.Kubeconfig{Data: kubeconfig, ExpiresAt: now.Add(gardener.MinExpiration)}
	for _, tt := range []struct {
		name string
		// kept is the admin kubeconfig asked for a moment ago, if any.
		kept       *gardener.Kubeconfig
		answer     gardener.Kubeconfig
		err        error
		at         time.Time
		requests   int
		wantReason string
	}{
		{name: "nothing kept: asked for", answer: issued, at: now, requests: 1},
		{name: "kept and valid for long enough: used again", kept: &issued, answer: issued, at: now.Add(4 * time.Minute), requests: 1},
		{name: "kept, within the margin of its expiry: asked for anew", kept: &issued, answer: issued, at: now.Add(5 * time.Minute), requests: 2},
		{name: "no such Shoot", err: &gardener.Error{Reason: gardener.ShootNotFound, Err: errors.New(`shoot "local" not found`)}, at: now, requests: 1,
			wantReason: v1alpha1.SessionReasonTargetNotFound},
		{name: "no such project", err: &gardener.Error{Reason: gardener.ProjectNotFound, Err: errors.New(`no project "shop"`)}, at: now, requests: 1,
			wantReason: v1alpha1.SessionReasonTargetNotFound},
		{name: "Gardener refuses the server", err: &gardener.Error{Reason: gardener.Forbidden, Err: errors.New("403")}, at: now, requests: 1,
			wantReason: v1alpha1.SessionReasonTargetForbidden},
		{name: "Gardener down", err: &gardener.Error{Reason: gardener.GardenerUnavailable, Err: errors.New("connection refused")}, at: now, requests: 1,
			wantReason: v1alpha1.SessionReasonTargetUnreachable},
		{name: "a kubeconfig that does not verify the Shoot", answer: gardener.Kubeconfig{Data: []byte("apiVersion: v1\nkind: Config\n"), ExpiresAt: issued.ExpiresAt},
			at: now, requests: 1, wantReason: v1alpha1.SessionReasonTargetInsecure},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := &countingGardener{kubeconfig: issued}
			a := newShootAccess(g)
			if tt.kept != nil {
				if _, problem := a.target(context.Background(), local, now); problem != nil {
					t.Fatal(problem.Message)
				}
			}
			g.kubeconfig, g.err = tt.answer, tt.err
			got, problem := a.target(context.Background(), local, tt.at)
			switch {
			case tt.wantReason == "" && (problem != nil || got == nil || got.server != "https://127.0.0.1:6443"):
				t.Errorf("target = %+v, %+v; want the Shoot", got, problem)
			case tt.wantReason != "" && (problem == nil || problem.Reason != tt.wantReason):
				t.Errorf("problem = %+v, want reason %s", problem, tt.wantReason)
			}
			if g.requests != tt.requests {
				t.Errorf("%d requests to Gardener, want %d", g.requests, tt.requests)
			}
		})
	}

	t.Run("a Shoot of the same name in another project is another Shoot", func(t *testing.T) {
		g := &countingGardener{kubeconfig: issued}
		a := newShootAccess(g)
		for _, shoot := range []gardener.Shoot{local, {Project: "pay", Name: "local"}, local} {
			if _, problem := a.target(context.Background(), shoot, now); problem != nil {
				t.Fatal(problem.Message)
			}
		}
		if g.requests != 2 || len(a.shoots) != 2 {
			t.Errorf("%d requests to Gardener and %d kubeconfigs kept, want 2 of each", g.requests, len(a.shoots))
		}
	})

	t.Run("an expired kubeconfig is let go when another is kept", func(t *testing.T) {
		a := newShootAccess(&countingGardener{kubeconfig: issued})
		for _, at := range []struct {
			shoot gardener.Shoot
			at    time.Time
		}{{local, now}, {gardener.Shoot{Project: "shop", Name: "other"}, issued.ExpiresAt}} {
			if _, problem := a.target(context.Background(), at.shoot, at.at); problem != nil {
				t.Fatal(problem.Message)
			}
		}
		if _, kept := a.shoots[local]; kept || len(a.shoots) != 1 {
			t.Errorf("kept %d kubeconfigs, the expired one of local among them: %v", len(a.shoots), kept)
		}
	})
}

// TestReachShootBacksOff: after Gardener failed for a session, it is not
// asked again for it before the failure's backoff ends; each failure is an
// event, and a success forgets the failures.
func TestReachShootBacksOff(t *testing.T) {
	clock := clocktesting.NewFakeClock(created)
	g := &countingGardener{err: &gardener.Error{Reason: gardener.GardenerUnavailable, Err: errors.New("connection refused")}}
	recorder := events.NewFakeRecorder(10)
	c := &Controller{opts: Options{Config: Config{RetryAfter: 30 * time.Second}}, clock: clock, recorder: recorder,
		shoots: newShootAccess(g), gardenerFailures: controllerutil.NewFailures()}
	s := session()
	for _, step := range []struct {
		name     string
		after    time.Duration
		succeed  bool
		requests int
		problem  bool
	}{
		{name: "first failure", requests: 1, problem: true},
		{name: "within the second of backoff: Gardener not asked", after: 500 * time.Millisecond, requests: 1, problem: true},
		{name: "backoff over: asked, fails again", after: 500 * time.Millisecond, requests: 2, problem: true},
		{name: "now two seconds of backoff", after: 1500 * time.Millisecond, requests: 2, problem: true},
		{name: "Gardener back", after: 500 * time.Millisecond, succeed: true, requests: 3},
	} {
		clock.Step(step.after)
		if step.succeed {
			key, err := credentials.NewPrivateKey()
			if err != nil {
				t.Fatal(err)
			}
			kubeconfig, err := credentials.ClientKubeconfig("https://127.0.0.1:6443", issue(t, key, "ca", nil, created.Add(time.Hour)), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			g.kubeconfig, g.err = gardener.Kubeconfig{Data: kubeconfig, ExpiresAt: created.Add(time.Hour)}, nil
		}
		_, problem := c.reachShoot(context.Background(), s)
		_, remembered := c.gardenerFailures.Get(s.UID)
		if g.requests != step.requests || (problem != nil) != step.problem || remembered != step.problem {
			t.Errorf("%s: %d requests, problem %+v, failure remembered %v; want %d requests, a problem and a failure %v",
				step.name, g.requests, problem, remembered, step.requests, step.problem)
		}
	}
	if n := len(recorder.Events); n != 2 {
		t.Errorf("%d events, want one a failed request", n)
	}
}
