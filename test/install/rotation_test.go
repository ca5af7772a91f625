// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package install

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/test/utils/e2echeck"
)

// forceRotation asks for a new kubeconfig of the GardenerClusterKubeconfig
// namespace/name on demand, as users do (the force annotation), and
// waits until the Secret holds a new certificate and the annotation is
// gone. It checks that the rotation cost exactly one request to Gardener
// and returns how long it took from the annotation.
func forceRotation(t *testing.T, k *kube, namespace, name, secret string) time.Duration {
	t.Helper()
	serial := e2echeck.CertSerial(t, []byte(mustBase64(t, k.run("-n", namespace, "get", "secret", secret, "-o", "jsonpath={.data.config}"))))
	before := k.gardenerRequests()
	start := time.Now()
	k.run("-n", namespace, "annotate", "gck", name, v1alpha1.AnnotationForceRotation+"=true")
	e2echeck.Eventually(t, 2*time.Minute, "forced rotation of "+name, func() error {
		if a := k.try("-n", namespace, "get", "gck", name, "-o", "jsonpath={.metadata.annotations}"); strings.Contains(a, v1alpha1.AnnotationForceRotation) {
			return fmt.Errorf("annotation still there: %s", a)
		}
		data := k.try("-n", namespace, "get", "secret", secret, "-o", "jsonpath={.data.config}")
		if e2echeck.CertSerial(t, []byte(mustBase64(t, data))) == serial {
			return fmt.Errorf("the Secret still holds certificate %s", serial)
		}
		return nil
	})
	took := time.Since(start)
	// A second request would come right after the first; give it the time.
	time.Sleep(2 * time.Second)
	if n := k.gardenerRequests() - before; n != 1 {
		t.Errorf("the forced rotation of %s made %d kubeconfig requests to Gardener, want 1; its events:\n%s", name, n,
			k.try("-n", namespace, "get", "events", "--field-selector=involvedObject.name="+name,
				"-o", "custom-columns=LAST:.lastTimestamp,REASON:.reason,COUNT:.count,FROM:.source.host,INSTANCE:.reportingInstance,MESSAGE:.message"))
	}
	if state := k.run("-n", namespace, "get", "gck", name, "-o", "jsonpath={.status.state}"); state != "Ready" {
		t.Errorf("%s is %s after the forced rotation", name, state)
	}
	return took
}
