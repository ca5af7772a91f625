// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package install

import (
	"testing"

	apitestingfuzzer "k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/fuzzer"
)

// TestRoundTripTypes fills every kind of the group with random values and
// checks that internal → v1alpha1 → internal loses nothing, through every
// encoding the server speaks.
func TestRoundTripTypes(t *testing.T) {
	for _, tc := range []struct {
		encodings string
		test      func(*testing.T, roundtrip.InstallFunc, apitestingfuzzer.FuzzerFuncs)
	}{
		{"JSON and YAML", roundtrip.RoundTripTestForAPIGroup},
		{"protobuf", roundtrip.RoundTripProtobufTestForAPIGroup},
	} {
		t.Run(tc.encodings, func(t *testing.T) { tc.test(t, Install, fuzzer.Funcs) })
	}
}
