package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/fuzzer"
)

// TestRoundTripTypes fills every kind of the group with random values and
// checks that internal → v1alpha1 → internal (JSON and YAML) loses nothing.
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripTestForAPIGroup(t, Install, fuzzer.Funcs)
}
