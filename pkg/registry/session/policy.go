// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package session

import (
	"context"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

type approvalPolicyKey struct{}

// WithApprovalPolicy returns ctx carrying the SessionApprovalPolicy that
// governs the session a create request makes: the storage reads it before
// the strategy runs, since PrepareForCreate cannot fail on a read.
func WithApprovalPolicy(ctx context.Context, p *clustergate.SessionApprovalPolicy) context.Context {
	return context.WithValue(ctx, approvalPolicyKey{}, p)
}

// approvalPolicyFrom returns the policy WithApprovalPolicy put into ctx, or nil.
func approvalPolicyFrom(ctx context.Context) *clustergate.SessionApprovalPolicy {
	p, _ := ctx.Value(approvalPolicyKey{}).(*clustergate.SessionApprovalPolicy)
	return p
}
