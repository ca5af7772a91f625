// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package storage

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/validation"
	"github.com/clustergate/clustergate/pkg/proxy"
	"github.com/clustergate/clustergate/pkg/registry/registrytest"
)

const ns = "sre"

func newStorage(t *testing.T) SessionStorage {
	t.Helper()
	return newLimitedStorage(t, 0)
}

// newLimitedStorage is newStorage with at most maxPerOwner live sessions
// per owner. Sessions of the access group admin need approval.
func newLimitedStorage(t *testing.T, maxPerOwner int) SessionStorage {
	t.Helper()
	scheme := registrytest.Scheme()
	policy := validation.DefaultSessionLimits()
	policy.ApprovalGroups = sets.New("admin")
	s, err := NewStorage(scheme, registrytest.NewRESTOptions(t, scheme, "sessions"), Config{
		Limits: policy, MaxPerOwner: maxPerOwner,
		Proxy: ProxyConfig{Tracker: proxy.NewTracker(clock.RealClock{}, proxy.Limits{})},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Session.Destroy)
	return s
}

func newSession(name, owner, shoot string, labels map[string]string) *clustergate.Session {
	return &clustergate.Session{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: clustergate.SessionSpec{
			TTL:         metav1.Duration{Duration: time.Hour},
			Owner:       clustergate.SessionOwner{Username: owner},
			AccessLevel: clustergate.AccessLevel{Group: "viewer"},
			Target:      clustergate.SessionTarget{Shoot: &clustergate.ShootReference{Name: shoot}},
		},
	}
}

func create(t *testing.T, s SessionStorage, obj *clustergate.Session) *clustergate.Session {
	t.Helper()
	out, err := s.Session.Create(registrytest.Context(ns), obj, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s: %v", obj.Name, err)
	}
	return out.(*clustergate.Session)
}

func get(t *testing.T, s SessionStorage, name string) *clustergate.Session {
	t.Helper()
	out, err := s.Session.Get(registrytest.Context(ns), name, &metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	return out.(*clustergate.Session)
}

func update(ctx context.Context, r rest.Updater, obj *clustergate.Session) (*clustergate.Session, error) {
	out, _, err := r.Update(ctx, obj.Name, rest.DefaultUpdatedObjectInfo(obj), rest.ValidateAllObjectFunc,
		rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return out.(*clustergate.Session), nil
}

func TestCreateSetsExpiryAndEndpoint(t *testing.T) {
	s := newStorage(t)
	in := newSession("fix-etcd", "alice", "local", nil)
	in.Status.Endpoint = "/somewhere/else"
	in.Status.BackendURL = "https://evil.example.com"

	created := create(t, s, in)
	got := get(t, s, "fix-etcd")

	wantExpiry := created.CreationTimestamp.Add(time.Hour)
	if got.Status.ExpiresAt == nil || !got.Status.ExpiresAt.Time.Equal(wantExpiry) {
		t.Errorf("status.expiresAt = %v, want creationTimestamp + 1h = %v", got.Status.ExpiresAt, wantExpiry)
	}
	if want := "/apis/clustergate.dev/v1alpha1/namespaces/sre/sessions/fix-etcd/proxy"; got.Status.Endpoint != want {
		t.Errorf("status.endpoint = %q, want %q", got.Status.Endpoint, want)
	}
	if got.Status.BackendURL != "" {
		t.Errorf("status.backendURL from the client was kept: %q", got.Status.BackendURL)
	}
	if got.Generation != 1 {
		t.Errorf("generation = %d, want 1", got.Generation)
	}
}

func TestCreateRejectsInvalid(t *testing.T) {
	s := newStorage(t)
	in := newSession("fix-etcd", "alice", "local", nil)
	in.Spec.TTL.Duration = 48 * time.Hour
	_, err := s.Session.Create(registrytest.Context(ns), in, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("create with ttl 48h: got %v, want Invalid", err)
	}
	if status, ok := err.(apierrors.APIStatus); !ok || len(status.Status().Details.Causes) != 1 ||
		status.Status().Details.Causes[0].Field != "spec.ttl" {
		t.Errorf("error %v does not name spec.ttl alone", err)
	}
	if _, err := s.Session.Get(registrytest.Context(ns), "fix-etcd", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("invalid session was stored: get returned %v", err)
	}
}

func TestCreateDuplicate(t *testing.T) {
	s := newStorage(t)
	create(t, s, newSession("fix-etcd", "alice", "local", nil))
	_, err := s.Session.Create(registrytest.Context(ns), newSession("fix-etcd", "bob", "local", nil), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: got %v, want AlreadyExists", err)
	}
}

func TestUpdate(t *testing.T) {
	s := newStorage(t)
	create(t, s, newSession("fix-etcd", "alice", "local", nil))
	ctx := registrytest.Context(ns)

	t.Run("labels change, status from the client is ignored", func(t *testing.T) {
		obj := get(t, s, "fix-etcd")
		expiresAt := obj.Status.ExpiresAt
		obj.Labels = map[string]string{"ticket": "inc-1"}
		obj.Status.ExpiresAt = nil
		obj.Status.BackendURL = "https://evil.example.com"
		out, err := update(ctx, s.Session, obj)
		if err != nil {
			t.Fatal(err)
		}
		if out.Labels["ticket"] != "inc-1" {
			t.Errorf("labels not updated: %v", out.Labels)
		}
		if !out.Status.ExpiresAt.Equal(expiresAt) || out.Status.BackendURL != "" {
			t.Errorf("main resource changed status: %+v", out.Status)
		}
		if out.Generation != 1 {
			t.Errorf("generation = %d after a metadata change, want 1", out.Generation)
		}
	})

	t.Run("spec change is refused", func(t *testing.T) {
		obj := get(t, s, "fix-etcd")
		obj.Spec.Owner.Username = "mallory"
		if _, err := update(ctx, s.Session, obj); !apierrors.IsInvalid(err) {
			t.Fatalf("update of spec.owner: got %v, want Invalid", err)
		}
		if got := get(t, s, "fix-etcd"); got.Spec.Owner.Username != "alice" {
			t.Errorf("owner changed to %q", got.Spec.Owner.Username)
		}
	})

	t.Run("stale resourceVersion conflicts", func(t *testing.T) {
		stale := get(t, s, "fix-etcd")
		fresh := stale.DeepCopy()
		fresh.Labels = map[string]string{"ticket": "inc-2"}
		if _, err := update(ctx, s.Session, fresh); err != nil {
			t.Fatal(err)
		}
		stale.Labels = map[string]string{"ticket": "inc-3"}
		if _, err := update(ctx, s.Session, stale); !apierrors.IsConflict(err) {
			t.Fatalf("update with stale resourceVersion: got %v, want Conflict", err)
		}
	})
}

func TestStatusUpdate(t *testing.T) {
	s := newStorage(t)
	create(t, s, newSession("fix-etcd", "alice", "local", nil))
	ctx := registrytest.Context(ns)
	now := metav1.NewTime(time.Now().Truncate(time.Second))

	obj := get(t, s, "fix-etcd")
	obj.Spec.Owner.Username = "mallory"
	obj.Status.BackendURL = "https://127.0.0.1:6443"
	obj.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "CredentialsMinted", LastTransitionTime: now}}
	out, err := update(ctx, s.Status, obj)
	if err != nil {
		t.Fatal(err)
	}
	if out.Spec.Owner.Username != "alice" {
		t.Errorf("status subresource changed spec.owner to %q", out.Spec.Owner.Username)
	}
	if out.Status.BackendURL != "https://127.0.0.1:6443" || len(out.Status.Conditions) != 1 {
		t.Errorf("status not written: %+v", out.Status)
	}

	moved := get(t, s, "fix-etcd")
	later := metav1.NewTime(moved.Status.ExpiresAt.Add(time.Hour))
	moved.Status.ExpiresAt = &later
	if _, err := update(ctx, s.Status, moved); !apierrors.IsInvalid(err) {
		t.Fatalf("moving status.expiresAt: got %v, want Invalid", err)
	}
}

// TestSubresourcesKeepMetadata sends a decision and an extension that also
// strip the finalizer, add a dangling owner reference and change labels and
// annotations: the holder of "approve" or "extend" may not have the garbage
// collector delete the session, so only the decision or the expiry is taken.
func TestSubresourcesKeepMetadata(t *testing.T) {
	s := newStorage(t)
	tests := []struct {
		name        string
		group       string
		subresource rest.Updater
		// ask writes the decision or the expiry into the request.
		ask func(*clustergate.Session)
		// applied says whether the stored session took it.
		applied func(*clustergate.Session) bool
	}{
		{name: "approval", group: "admin", subresource: s.Approval,
			ask: func(obj *clustergate.Session) {
				obj.Status.Approvals[0].Decision, obj.Status.Approvals[0].Reason = clustergate.ApprovalApproved, "INC-1"
			},
			applied: func(got *clustergate.Session) bool {
				return got.Status.Approvals[0].Decision == clustergate.ApprovalApproved && got.Status.Approvals[0].DecidedBy == "bob" &&
					got.Status.ExpiresAt != nil
			}},
		{name: "extension", group: "viewer", subresource: s.Extension,
			ask: func(obj *clustergate.Session) {
				obj.Status.ExpiresAt = &metav1.Time{Time: obj.CreationTimestamp.Add(2 * time.Hour)}
			},
			applied: func(got *clustergate.Session) bool {
				return got.Status.ExpiresAt.Equal(&metav1.Time{Time: got.CreationTimestamp.Add(2 * time.Hour)})
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := newSession(tt.name, "alice", "local", map[string]string{"team": "sre"})
			in.Spec.AccessLevel.Group = tt.group
			in.Annotations = map[string]string{"ticket": "INC-1"}
			in.Finalizers = []string{v1alpha1.SessionFinalizer}
			stored := create(t, s, in)

			obj := stored.DeepCopy()
			obj.Finalizers = nil
			obj.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "gone", UID: "dangling"}}
			obj.Labels = map[string]string{"team": "mallory"}
			obj.Annotations = nil
			tt.ask(obj)
			if _, err := update(genericapirequest.WithUser(registrytest.Context(ns), &user.DefaultInfo{Name: "bob"}), tt.subresource, obj); err != nil {
				t.Fatal(err)
			}
			got := get(t, s, tt.name)
			if !tt.applied(got) {
				t.Errorf("not applied: %+v", got.Status)
			}
			if diff := cmp.Diff(stored.ObjectMeta, got.ObjectMeta, cmpopts.IgnoreFields(metav1.ObjectMeta{}, "ResourceVersion")); diff != "" {
				t.Errorf("metadata (-stored +got):\n%s", diff)
			}
		})
	}
}

func TestListSelectors(t *testing.T) {
	s := newStorage(t)
	create(t, s, newSession("a", "alice", "local", map[string]string{"team": "sre"}))
	create(t, s, newSession("b", "bob", "local", map[string]string{"team": "db"}))
	create(t, s, newSession("c", "alice", "other", nil))

	tests := []struct {
		name   string
		label  string
		field  string
		expect []string
	}{
		{name: "all", expect: []string{"a", "b", "c"}},
		{name: "by owner", field: "spec.owner.username=alice", expect: []string{"a", "c"}},
		{name: "by shoot", field: "spec.target.shoot.name=local", expect: []string{"a", "b"}},
		{name: "by owner and shoot", field: "spec.owner.username=alice,spec.target.shoot.name=other", expect: []string{"c"}},
		{name: "by name", field: "metadata.name=b", expect: []string{"b"}},
		{name: "by label", label: "team=sre", expect: []string{"a"}},
		{name: "by label and owner", label: "team", field: "spec.owner.username=bob", expect: []string{"b"}},
		{name: "nothing", field: "spec.owner.username=nobody", expect: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := &metainternalversion.ListOptions{LabelSelector: labels.Everything(), FieldSelector: fields.Everything()}
			var err error
			if tt.label != "" {
				if opts.LabelSelector, err = labels.Parse(tt.label); err != nil {
					t.Fatal(err)
				}
			}
			if tt.field != "" {
				if opts.FieldSelector, err = fields.ParseSelector(tt.field); err != nil {
					t.Fatal(err)
				}
			}
			out, err := s.Session.List(registrytest.Context(ns), opts)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, item := range out.(*clustergate.SessionList).Items {
				names = append(names, item.Name)
			}
			if diff := cmp.Diff(tt.expect, names); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWatch(t *testing.T) {
	s := newStorage(t)
	ctx := registrytest.Context(ns)
	w, err := s.Session.Watch(ctx, &metainternalversion.ListOptions{
		LabelSelector: labels.Everything(),
		FieldSelector: fields.OneTermEqualSelector("spec.owner.username", "alice"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	create(t, s, newSession("other", "bob", "local", nil))
	create(t, s, newSession("mine", "alice", "local", nil))
	obj := get(t, s, "mine")
	obj.Labels = map[string]string{"x": "y"}
	if _, err := update(ctx, s.Session, obj); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Session.Delete(ctx, "mine", rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	var got []string
	timeout := time.After(30 * time.Second)
	for len(got) < 3 {
		select {
		case ev := <-w.ResultChan():
			got = append(got, string(ev.Type)+" "+ev.Object.(*clustergate.Session).Name)
		case <-timeout:
			t.Fatalf("timed out; events so far: %v", got)
		}
	}
	want := []string{string(watch.Added) + " mine", string(watch.Modified) + " mine", string(watch.Deleted) + " mine"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestDelete(t *testing.T) {
	s := newStorage(t)
	create(t, s, newSession("fix-etcd", "alice", "local", nil))
	ctx := registrytest.Context(ns)
	if _, _, err := s.Session.Delete(ctx, "fix-etcd", rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Session.Get(ctx, "fix-etcd", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: got %v, want NotFound", err)
	}
	if _, _, err := s.Session.Delete(ctx, "fix-etcd", rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("second delete: got %v, want NotFound", err)
	}
}

func TestTable(t *testing.T) {
	s := newStorage(t)
	create(t, s, newSession("fix-etcd", "alice", "local", nil))
	out, err := s.Session.List(registrytest.Context(ns), &metainternalversion.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	table, err := s.Session.ConvertToTable(context.Background(), out, &metav1.TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var columns []string
	for _, c := range table.ColumnDefinitions {
		if c.Priority == 0 {
			columns = append(columns, c.Name)
		}
	}
	if diff := cmp.Diff([]string{"Name", "Owner", "Target", "Access", "Expires", "Ready", "Age"}, columns); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("rows = %d, want 1", len(table.Rows))
	}
	cells := table.Rows[0].Cells
	if diff := cmp.Diff([]any{"fix-etcd", "alice", "shoot/local", "viewer"}, cells[:4]); diff != "" {
		t.Errorf("cells (-want +got):\n%s", diff)
	}
	if cells[4] != "59m" && cells[4] != "60m" {
		t.Errorf("expires cell = %v, want about 60m", cells[4])
	}
	if cells[5] != "Unknown" {
		t.Errorf("ready cell = %v, want Unknown before any condition", cells[5])
	}
	if table.Rows[0].Object.Object == nil {
		t.Errorf("row carries no object")
	}
}
