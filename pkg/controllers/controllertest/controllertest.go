// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package controllertest holds what the controllers' unit tests share: a
// Gardener that answers as told, and the writes a pass made to fake clients.
package controllertest

import (
	"context"
	"time"

	clienttesting "k8s.io/client-go/testing"

	"github.com/clustergate/clustergate/pkg/gardener"
)

// Gardener answers every kubeconfig request with Kubeconfig or Err.
type Gardener struct {
	Kubeconfig gardener.Kubeconfig
	Err        error
}

// RequestKubeconfig implements gardener.Requester.
func (g Gardener) RequestKubeconfig(context.Context, gardener.Shoot, time.Duration) (gardener.Kubeconfig, error) {
	return g.Kubeconfig, g.Err
}

// Writes returns the writes among the actions fake clients recorded, in
// order, each as "verb resource" or "verb resource/subresource"; reads are
// left out.
func Writes(actions ...[]clienttesting.Action) []string {
	var ws []string
	for _, as := range actions {
		for _, a := range as {
			if a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch" {
				continue
			}
			r := a.GetResource().Resource
			if sub := a.GetSubresource(); sub != "" {
				r += "/" + sub
			}
			ws = append(ws, a.GetVerb()+" "+r)
		}
	}
	return ws
}
