// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package fuzzer fills clustergate objects with random values that survive a
// round trip through every version: fields that are defaulted on decoding
// are never left empty.
package fuzzer

import (
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

// Funcs returns the fuzzer functions of the clustergate.dev API group.
var Funcs = func(runtimeserializer.CodecFactory) []any {
	return []any{
		func(t *clustergate.ClusterTarget, c randfill.Continue) {
			c.FillNoCustom(t)
			if t.SignerName == "" {
				t.SignerName = "example.com/signer"
			}
		},
		func(k *clustergate.GardenerClusterKubeconfig, c randfill.Continue) {
			c.FillNoCustom(k)
			secret := &k.Spec.Kubeconfig.Secret
			if secret.Key == "" {
				secret.Key = "config"
			}
			if secret.Namespace == "" {
				secret.Namespace = "ns"
			}
		},
	}
}
