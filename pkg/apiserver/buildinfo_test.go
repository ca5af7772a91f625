// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"strconv"
	"strings"
	"testing"

	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
)

// TestReportBuild: the metric says whether this build interns managedFields,
// as the build tag decides (go test with and without -tags=fieldsv1string).
func TestReportBuild(t *testing.T) {
	reportBuild()
	want := `
# HELP clustergate_build_info [ALPHA] How the server was built: interned_managed_fields is true with the build tag fieldsv1string (make build, the image), false for a plain go build or go install, which keeps managedFields once per object.
# TYPE clustergate_build_info gauge
clustergate_build_info{interned_managed_fields="` + strconv.FormatBool(internedFieldsV1) + `"} 1
`
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(want), "clustergate_build_info"); err != nil {
		t.Error(err)
	}
}
