// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package storage

import (
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

func TestProxyCheck(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ready := func(owner clustergate.SessionOwner, expiresAt time.Time) *clustergate.Session {
		at := metav1.NewTime(expiresAt)
		return &clustergate.Session{
			ObjectMeta: metav1.ObjectMeta{Name: "fix", Namespace: ns},
			Spec:       clustergate.SessionSpec{Owner: owner},
			Status: clustergate.SessionStatus{ExpiresAt: &at, Conditions: []metav1.Condition{
				{Type: v1alpha1.SessionConditionReady, Status: metav1.ConditionTrue, Reason: "SessionReady"}}},
		}
	}
	withUID := clustergate.SessionOwner{Username: "alice", UID: "uid-1"}
	withoutUID := clustergate.SessionOwner{Username: "alice"}
	tests := []struct {
		name    string
		user    user.Info
		session *clustergate.Session
		check   func(error) bool
	}{
		{name: "owner by name and UID", user: &user.DefaultInfo{Name: "alice", UID: "uid-1"}, session: ready(withUID, now.Add(time.Hour))},
		{name: "owner's name with another UID", user: &user.DefaultInfo{Name: "alice", UID: "uid-2"}, session: ready(withUID, now.Add(time.Hour)), check: apierrors.IsForbidden},
		{name: "owner's name without the UID", user: &user.DefaultInfo{Name: "alice"}, session: ready(withUID, now.Add(time.Hour)), check: apierrors.IsForbidden},
		{name: "owner by name when the session has no UID", user: &user.DefaultInfo{Name: "alice", UID: "any"}, session: ready(withoutUID, now.Add(time.Hour))},
		{name: "someone else", user: &user.DefaultInfo{Name: "bob", UID: "uid-1"}, session: ready(withUID, now.Add(time.Hour)), check: apierrors.IsForbidden},
		{name: "no user", session: ready(withUID, now.Add(time.Hour)), check: apierrors.IsForbidden},
		{name: "expired", user: &user.DefaultInfo{Name: "alice", UID: "uid-1"}, session: ready(withUID, now), check: func(err error) bool { return apierrors.ReasonForError(err) == metav1.StatusReasonGone }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := genericapirequest.NewContext()
			if tt.user != nil {
				ctx = genericapirequest.WithUser(ctx, tt.user)
			}
			err := (&ProxyREST{clock: clocktesting.NewFakePassiveClock(now)}).check(ctx, tt.session)
			switch {
			case tt.check == nil && err != nil:
				t.Errorf("got %v, want the owner let through", err)
			case tt.check != nil && !tt.check(err):
				t.Errorf("got %v", err)
			}
		})
	}
}
