// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// Field selectors the server supports besides metadata.name and
// metadata.namespace.
const (
	// FieldOwnerUsername selects Sessions by owner.
	FieldOwnerUsername = "spec.owner.username"
	// FieldTargetShootName selects Sessions by target Shoot.
	FieldTargetShootName = "spec.target.shoot.name"
	// FieldPendingApproval selects Sessions by the request that waits for
	// an approver: Open or Extend, empty when none waits. Approvers list
	// and watch "status.pendingApproval!=".
	FieldPendingApproval = "status.pendingApproval"
	// FieldShootName selects GardenerClusterKubeconfigs by Shoot.
	FieldShootName = "spec.shoot.name"
	// FieldState selects GardenerClusterKubeconfigs by state.
	FieldState = "status.state"
)

func addFieldLabelConversionFuncs(scheme *runtime.Scheme) error {
	if err := scheme.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind("Session"),
		fieldLabelConversion(FieldOwnerUsername, FieldTargetShootName, FieldPendingApproval)); err != nil {
		return err
	}
	return scheme.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind("GardenerClusterKubeconfig"),
		fieldLabelConversion(FieldShootName, FieldState))
}

// fieldLabelConversion accepts the metadata fields and the named ones, all of
// which are spelled the same in every version.
func fieldLabelConversion(fields ...string) runtime.FieldLabelConversionFunc {
	allowed := map[string]bool{"metadata.name": true, "metadata.namespace": true}
	for _, f := range fields {
		allowed[f] = true
	}
	return func(label, value string) (string, string, error) {
		if !allowed[label] {
			return "", "", fmt.Errorf("field label not supported: %s", label)
		}
		return label, value, nil
	}
}
