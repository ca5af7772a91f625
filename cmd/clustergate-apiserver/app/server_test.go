// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package app

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
)

// TestHelpPrintsSections: --help prints the flags in sections by concern,
// clustergate's own first, then the generic server's, then the global ones.
func TestHelpPrintsSections(t *testing.T) {
	cmd := NewCommand(context.Background())
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasSuffix(line, " flags:") {
			got = append(got, line)
		}
	}
	want := []string{
		"Sessions flags:", "Session lifecycle flags:", "Proxy flags:", "Session kubeconfigs flags:", "Data plane flags:",
		"Istio flags:", "Gardener flags:", "Controllers flags:", "Recording flags:",
		"Etcd flags:", "Secure serving flags:", "Authentication flags:", "Authorization flags:", "Auditing flags:",
		"Features flags:", "Core API flags:", "Admission flags:", "Egress selector flags:", "Traces flags:",
		"Global flags:",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sections of --help (-want +got):\n%s", diff)
	}
	for _, flag := range []string{"--session-max-ttl", "--istio-gateway-port", "--etcd-servers", "--feature-gates", "--data-dir", "-v, --v"} {
		if !strings.Contains(out.String(), flag) {
			t.Errorf("--help does not print %s", flag)
		}
	}
}

// TestSectionsHoldEveryGenericFlag: the sections, one per part of the
// generic server's options, hold every flag that the options add at once.
func TestSectionsHoldEveryGenericFlag(t *testing.T) {
	o := NewOptions()
	generic := pflag.NewFlagSet("generic", pflag.ContinueOnError)
	o.RecommendedOptions.AddFlags(generic)
	sections := o.Flags()
	generic.VisitAll(func(f *pflag.Flag) {
		var in []string
		for _, name := range sections.Order {
			if sections.FlagSets[name].Lookup(f.Name) != nil {
				in = append(in, name)
			}
		}
		if len(in) != 1 {
			t.Errorf("--%s is in the sections %q, want one", f.Name, in)
		}
	})
}
