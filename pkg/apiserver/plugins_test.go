// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	genericoptions "k8s.io/apiserver/pkg/server/options"
)

// TestAllOrderedPlugins: every plugin of the order is registered and on by
// default, and the generic server's recommended plugins all run in their
// own order, so that a k8s.io/apiserver that recommends another plugin
// fails here instead of leaving it off.
func TestAllOrderedPlugins(t *testing.T) {
	admission := NewRecommendedOptions().Admission
	for _, name := range AllOrderedPlugins {
		if !slices.Contains(admission.Plugins.Registered(), name) {
			t.Errorf("%s is not registered", name)
		}
	}
	if admission.DefaultOffPlugins.Len() != 0 {
		t.Errorf("plugins off by default: %v", admission.DefaultOffPlugins)
	}
	generic := genericoptions.NewAdmissionOptions().RecommendedPluginOrder
	var ours []string
	for _, name := range AllOrderedPlugins {
		if slices.Contains(generic, name) {
			ours = append(ours, name)
		}
	}
	if diff := cmp.Diff(generic, ours); diff != "" {
		t.Errorf("the generic server's recommended plugins in AllOrderedPlugins (-recommended +ours):\n%s", diff)
	}
}
