// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package authz asks the authorizer on behalf of clustergate's admission
// plugins and turns a refusal into a Forbidden error that says what is
// missing.
package authz

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Require returns nil when a allows attrs. Otherwise it returns a Forbidden
// error for the admission request req that says msg, followed by the
// authorizer's reason or error if it gave one. An authorizer that fails
// refuses: admission never lets a request in on an unanswered question.
func Require(ctx context.Context, a authorizer.UnconditionalAuthorizer, attrs authorizer.Attributes, req admission.Attributes, msg string) error {
	allowed, why := Ask(ctx, a, attrs)
	if allowed {
		return nil
	}
	return admission.NewForbidden(req, errors.New(msg+why))
}

// Ask returns whether a allows attrs and, when it does not, what it said
// as Require appends it to a refusal: ": reason" if it gave one and
// " (authorization failed: error)" if it failed. It is for a plugin that
// asks several questions before it refuses.
func Ask(ctx context.Context, a authorizer.UnconditionalAuthorizer, attrs authorizer.Attributes) (allowed bool, why string) {
	decision, reason, err := a.Authorize(ctx, attrs)
	if decision == authorizer.DecisionAllow {
		return true, ""
	}
	if reason != "" {
		why = ": " + reason
	}
	if err != nil {
		why += fmt.Sprintf(" (authorization failed: %v)", err)
	}
	return false, why
}
