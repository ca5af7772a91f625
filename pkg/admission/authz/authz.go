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
	decision, reason, err := a.Authorize(ctx, attrs)
	if decision == authorizer.DecisionAllow {
		return nil
	}
	if reason != "" {
		msg += ": " + reason
	}
	if err != nil {
		msg += fmt.Sprintf(" (authorization failed: %v)", err)
	}
	return admission.NewForbidden(req, errors.New(msg))
}
