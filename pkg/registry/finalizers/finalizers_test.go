// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package finalizers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAdd(t *testing.T) {
	const mine = "clustergate.dev/cleanup"
	tests := []struct {
		name        string
		given, want []string
	}{
		{name: "none yet", want: []string{mine}},
		{name: "next to the client's", given: []string{"example.com/hold"}, want: []string{"example.com/hold", mine}},
		{name: "already there", given: []string{mine}, want: []string{mine}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{Finalizers: tt.given}
			Add(obj, mine)
			if diff := cmp.Diff(tt.want, obj.Finalizers); diff != "" {
				t.Errorf("finalizers (-want +got):\n%s", diff)
			}
		})
	}
}
