// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// tableAccept asks the server for its own table of sessions, the columns
// kubectl get shows.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

func newListCommand(g *globals) *cobra.Command {
	var all bool
	var output string
	cmd := &cobra.Command{
		Use:   "list [-A] [-o json|yaml|name|wide]",
		Short: "List sessions, with their owner, target, expiry, approval and reason",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch output {
			case "", "wide", "json", "yaml", "name":
			default:
				return fmt.Errorf("unknown output format %q: use json, yaml, name or wide", output)
			}
			ns, err := g.namespace()
			if err != nil {
				return err
			}
			if all {
				ns = metav1.NamespaceAll
			}
			if output == "" || output == "wide" {
				return g.printTable(cmd.Context(), ns, printers.PrintOptions{Wide: output == "wide", WithNamespace: all})
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			list, err := c.ClustergateV1alpha1().Sessions(ns).List(cmd.Context(), metav1.ListOptions{})
			if err != nil {
				return err
			}
			return printList(list, output, g.streams.Out)
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "List the sessions of every namespace.")
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json, yaml, name or wide.")
	return cmd
}

// printList prints sessions as json, yaml or names.
func printList(list *v1alpha1.SessionList, output string, out interface{ Write([]byte) (int, error) }) error {
	list.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("SessionList"))
	for i := range list.Items {
		list.Items[i].SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("Session"))
	}
	switch output {
	case "json":
		return (&printers.JSONPrinter{}).PrintObj(list, out)
	case "yaml":
		return (&printers.YAMLPrinter{}).PrintObj(list, out)
	}
	for _, s := range list.Items {
		if _, err := fmt.Fprintf(out, "session.%s/%s\n", v1alpha1.GroupName, s.Name); err != nil {
			return err
		}
	}
	return nil
}

// printTable prints the server's table of the sessions in ns.
func (g *globals) printTable(ctx context.Context, ns string, opts printers.PrintOptions) error {
	c, err := g.client()
	if err != nil {
		return err
	}
	raw, err := c.ClustergateV1alpha1().RESTClient().Get().NamespaceIfScoped(ns, ns != "").Resource("sessions").
		SetHeader("Accept", tableAccept).DoRaw(ctx)
	if err != nil {
		return err
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(raw, table); err != nil {
		return fmt.Errorf("reading the server's table: %w", err)
	}
	// The printer finds each row's namespace in its object.
	for i := range table.Rows {
		if r := table.Rows[i].Object.Raw; len(r) > 0 {
			u := &unstructured.Unstructured{}
			if err := json.Unmarshal(r, &u.Object); err == nil {
				table.Rows[i].Object = runtime.RawExtension{Object: u}
			}
		}
	}
	if len(table.Rows) == 0 {
		_, err := fmt.Fprintln(g.streams.ErrOut, "No sessions found.")
		return err
	}
	return printers.NewTablePrinter(opts).PrintObj(table, g.streams.Out)
}
