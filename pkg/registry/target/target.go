// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package target holds the virtual resources shoots and clusters of
// clustergate.dev. They exist for authorization only: RBAC rules on them say
// who may open sessions to which target at which access level (see
// pkg/admission/targetaccess). They are listed in discovery, without verbs,
// so that kubectl resolves shoots.clustergate.dev in `kubectl auth can-i` and
// `kubectl create role`, and nothing about them is ever served.
package target

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

// REST is a virtual resource: a name in discovery and nothing else.
type REST struct {
	singular, kind string
}

var (
	_ rest.Storage              = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.KindProvider         = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

// NewREST returns the virtual resource whose singular name and kind are given.
func NewREST(singular, kind string) *REST {
	return &REST{singular: singular, kind: kind}
}

// New returns a Session. The API installer needs an object of the group
// to register any resource; with no verb, none is ever decoded or encoded.
func (*REST) New() runtime.Object { return &clustergate.Session{} }

// Destroy does nothing: there is no storage.
func (*REST) Destroy() {}

// NamespaceScoped is true: grants on targets are given per namespace, the
// namespace of the sessions they allow.
func (*REST) NamespaceScoped() bool { return true }

// Kind is the kind discovery lists for the resource.
func (r *REST) Kind() string { return r.kind }

// GetSingularName is the singular name discovery lists for the resource.
func (r *REST) GetSingularName() string { return r.singular }
